"""The spout: lines of text from Spark."""

from __future__ import annotations

from spark_parts.data import lines
from storm_zmq.spark import SparkSpout


class LinesSpout(SparkSpout):
    """Streams ``lines(spark, spark_wordcount.lines, spark_wordcount.partitions)``.

    `outputs` could be left out (they would be the DataFrame's columns, learned at
    topology load by running `source` in a small local Spark session); declaring
    them saves that session's start-up in the `storm-zmq` command."""

    outputs = ["id", "line"]

    def source(self, spark):
        conf = self.storm_conf
        self.progress_secs = float(conf.get("spark_wordcount.progress_secs", self.progress_secs))
        return lines(spark, int(conf.get("spark_wordcount.lines", 20000)),
                     int(conf.get("spark_wordcount.partitions", 8)))
