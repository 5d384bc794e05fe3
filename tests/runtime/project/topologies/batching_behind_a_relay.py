from testparts.components import NumberSpout, SlowRelayBolt, TickBatchBolt

from storm_zmq import Topology


class BatchingBehindARelay(Topology):
    """A BatchingBolt without ticks behind a slow bolt: tuples reach it after a stop's
    deactivation."""

    numbers = NumberSpout.spec()
    relay = SlowRelayBolt.spec(inputs=[numbers])
    batcher = TickBatchBolt.spec(inputs=[relay])
