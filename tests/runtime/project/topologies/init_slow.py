from testparts.components import NumberSpout
from testparts.faultparts import QuickBolt, SlowInitBolt

from storm_zmq import Topology


class InitSlow(Topology):
    numbers = NumberSpout.spec()
    slow = SlowInitBolt.spec(inputs=[numbers], par=2)
    z_quick = QuickBolt.spec(inputs=[numbers], par=2)  # tasks after slow's: starts after it
