from testparts.components import NumberSpout, TickBatchBolt

from storm_zmq import Topology


class BatchingWithoutTicks(Topology):
    """A BatchingBolt with no topology.tick.tuple.freq.secs: its batches never run."""

    numbers = NumberSpout.spec()
    batcher = TickBatchBolt.spec(inputs=[numbers])
