from testparts.components import CarryOnBolt, NumberSpout, SinkBolt

from storm_zmq import Topology


class CarryOn(Topology):
    """A bolt with exit_on_exception off whose process() raises now and then."""

    numbers = NumberSpout.spec()
    carry_on = CarryOnBolt.spec(inputs=[numbers])
    sink = SinkBolt.spec(inputs=[carry_on])
