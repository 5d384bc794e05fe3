"""A Spark spout whose source() fails: the run must stop with a clear error."""

from storm_zmq import Bolt
from storm_zmq.spark import SparkSpout


class MissingDataSpout(SparkSpout):
    outputs = ["value"]

    def source(self, spark):
        return spark.read.text(self.storm_conf["test.missing_path"])


class DropBolt(Bolt):
    outputs = []

    def process(self, tup):
        pass
