from testparts.components import ClockedSinkBolt, NumberSpout, SlowRelayBolt

from storm_zmq import Topology


class SlowRelayClocked(Topology):
    """A slow relay between a spout that emits its ids in one batch and a sink that
    notes when each arrives."""

    config = {"topology.acker.executors": 0}
    numbers = NumberSpout.spec()
    relay = SlowRelayBolt.spec(inputs=[numbers])
    sink = ClockedSinkBolt.spec(inputs=[relay])
