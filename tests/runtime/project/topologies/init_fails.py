from testparts.components import NumberSpout
from testparts.faultparts import InitFailBolt

from storm_zmq import Topology


class InitFails(Topology):
    numbers = NumberSpout.spec()
    broken = InitFailBolt.spec(inputs=[numbers], par=2)
