from testparts.components import NumberSpout
from testparts.faultparts import SlowInitBolt

from storm_zmq import Topology


class InitSlow(Topology):
    numbers = NumberSpout.spec()
    slow = SlowInitBolt.spec(inputs=[numbers], par=2)
