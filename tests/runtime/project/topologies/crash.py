from testparts.components import CrashBolt, NumberSpout

from storm_zmq import Topology


class Crash(Topology):
    numbers = NumberSpout.spec()
    crash = CrashBolt.spec(inputs=[numbers])
