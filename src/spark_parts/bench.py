"""Components of scripts/bench_spark.py: the same spout fed by Spark or from memory,
and a bolt that only counts. Each writes what it measured in cleanup() to
``bench.output_dir``."""

from __future__ import annotations

import json
import os

from spark_parts.data import lines
from storm_zmq import Bolt
from storm_zmq.spark import ListFetcher, SparkSpout


class BenchSpout(SparkSpout):
    """``bench.rows`` lines in ``bench.partitions`` partitions (spark_parts.data).
    ``bench.source``: ``spark`` streams them as any SparkSpout does;
    ``spark-cached`` too, from a DataFrame computed and cached by Spark in
    initialize() (untimed): what is left is the spout's own path; ``memory`` fetches every partition in initialize(),
    before anything is timed, and feeds the spout from those lists: same rows, same
    partitions, same spout code, no Spark while it runs."""

    outputs = ["id", "line"]
    progress_secs = 3600.0

    def initialize(self, conf, ctx):
        self.reliable = not conf.get("bench.unreliable", False)
        self.fetch = conf.get("bench.fetch", "auto")
        super().initialize(conf, ctx)

    def source(self, spark):
        conf = self.storm_conf
        df = lines(spark, int(conf["bench.rows"]), int(conf["bench.partitions"]))
        if conf.get("bench.source") == "spark-cached":  # computed and cached, untimed
            df = df.cache()
            df.write.format("noop").mode("overwrite").save()
        return df

    def open_source(self, conf, context):
        plan = super().open_source(conf, context)
        if conf.get("bench.source") != "memory":
            return plan
        fetcher = plan()
        partitions = [fetcher.fetch(p) for p in range(fetcher.num_partitions)]
        return lambda: ListFetcher(partitions)

    def cleanup(self):
        super().cleanup()
        ledger = self._ledger
        with open(os.path.join(self.storm_conf["bench.output_dir"], f"spout-{self.task_id}.json"), "w") as out:
            json.dump({
                "first_emit_at": self.first_emit_at, "done_at": self.done_at,
                "rows": ledger.rows_acked if ledger else 0,
                "replayed": ledger.replayed if ledger else 0,
                "fetch": self._fetch_name,
            }, out)


class TupleCountBolt(Bolt):
    outputs = []

    def initialize(self, conf, ctx):
        self.conf, self.task, self.count = conf, ctx["taskid"], 0

    def process(self, tup):
        self.count += 1

    def cleanup(self):
        with open(os.path.join(self.conf["bench.output_dir"], f"count-{self.task}.json"), "w") as out:
            json.dump({"count": self.count}, out)
