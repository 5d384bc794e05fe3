from spark_broken import DropBolt, MissingDataSpout

from storm_zmq import Topology


class BrokenSource(Topology):
    config = {"spark.master": "local[1]"}
    data = MissingDataSpout.spec()
    sink = DropBolt.spec(inputs=[data])
