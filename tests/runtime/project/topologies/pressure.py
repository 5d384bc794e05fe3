"""Two independent paths; the slow one's spout offers more than its sink takes.

Names are chosen for the placement: executors are dealt round-robin in name order,
so with two workers both sinks run in worker 0 and both spouts in worker 1, and
every tuple crosses workers."""
from testparts.pressure import DropBolt, FloodSpout, SleepyBolt

from storm_zmq import Topology


class Pressure(Topology):
    config = {"topology.acker.executors": 0}
    fast_spout = FloodSpout.spec(config={"test.start_after": 0, "test.rate": 0})
    slow_spout = FloodSpout.spec()  # test.start_after and test.rate from the run's conf
    fast_sink = DropBolt.spec(inputs=[fast_spout])
    slow_sink = SleepyBolt.spec(inputs=[slow_spout])
