from testparts.components import BufferingBolt, ListSinkBolt, NumberSpout

from storm_zmq import Grouping, Topology


class Buffers(Topology):
    numbers = NumberSpout.spec()
    buffers = BufferingBolt.spec(inputs={numbers: Grouping.GLOBAL})
    lists = ListSinkBolt.spec(inputs=[buffers], par=2)
