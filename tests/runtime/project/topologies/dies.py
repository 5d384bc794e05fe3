from testparts.components import DyingBolt, NumberSpout

from storm_zmq import Topology


class Dies(Topology):
    numbers = NumberSpout.spec()
    dying = DyingBolt.spec(inputs=[numbers])
