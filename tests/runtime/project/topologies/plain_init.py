from testparts.components import SinkBolt
from testparts.pystormparts import PlainInitBolt, PlainInitSpout

from storm_zmq import Grouping, Topology


class PlainInit(Topology):
    numbers = PlainInitSpout.spec(par=2)
    plain = PlainInitBolt.spec(inputs={numbers: Grouping.fields("id")}, par=2)
    sink = SinkBolt.spec(inputs=[plain])
