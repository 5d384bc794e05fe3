from testparts.components import NumberSpout, SinkBolt, SlowRelayBolt

from storm_zmq import Topology


class SlowRelay(Topology):
    """Acking off: the spout is done as soon as it emitted, and only the relay's
    input says that more is to come."""

    config = {"topology.acker.executors": 0}
    numbers = NumberSpout.spec()
    relay = SlowRelayBolt.spec(inputs=[numbers])
    sink = SinkBolt.spec(inputs=[relay])
