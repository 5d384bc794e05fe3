"""A paced spout shuffling over two sink tasks, one of them in a worker short of
CPU: what the CPU-aware weights of load-aware shuffles (`storm_zmq.runtime.balance`)
are for. With two workers, worker 0 runs a bolt that burns the interpreter behind
a flooding spout (so its queue is full: the worker's figure counts) beside the
sink's highest task; worker 1 runs the paced spout and the other sink task."""
from testparts.pressure import BurnBolt, FloodSpout, OneSlowTaskBolt

from storm_zmq import Topology


class Busy(Topology):
    config = {"topology.acker.executors": 0}
    pour = FloodSpout.spec(config={"test.start_after": 0, "test.rate": 0})
    burn = BurnBolt.spec(inputs=[pour], config={"test.burn_ms": 1})
    paced = FloodSpout.spec(config={"test.start_after": 0, "test.rate": 2000})
    sink = OneSlowTaskBolt.spec(inputs=[paced], par=2, config={"test.sleep_ms": 0})
