from testparts.components import BigValueSpout, SinkBolt

from storm_zmq import Topology


class Oversized(Topology):
    values = BigValueSpout.spec()
    sink = SinkBolt.spec(inputs=[values], par=4)
