from testparts.components import DirectSpout, NumberSpout, TaskSinkBolt, TickBatchBolt

from storm_zmq import Grouping, Topology


class Groupings(Topology):
    numbers = NumberSpout.spec()
    batcher = TickBatchBolt.spec(inputs=[numbers], config={"topology.tick.tuple.freq.secs": 1})
    everyone = TaskSinkBolt.spec(inputs={batcher: Grouping.ALL}, par=3)
    one = TaskSinkBolt.spec(inputs={batcher: Grouping.GLOBAL}, par=3)
    direct = DirectSpout.spec()
    chosen = TaskSinkBolt.spec(inputs={direct: Grouping.DIRECT}, par=3)
