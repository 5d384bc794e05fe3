from testparts.components import SetSpout, SinkBolt

from storm_zmq import Topology


class Unserializable(Topology):
    values = SetSpout.spec()
    sink = SinkBolt.spec(inputs=[values], par=4)
