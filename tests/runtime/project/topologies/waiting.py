from testparts.components import ClockedSinkBolt, NumberSpout, WaitingSpout

from storm_zmq import Topology


class Waiting(Topology):
    waiting = WaitingSpout.spec()
    numbers = NumberSpout.spec()
    sink = ClockedSinkBolt.spec(inputs=[waiting, numbers])
