"""A paced spout shuffling over two sink tasks, one of them in the worker of a
spout that keeps its interpreter busy: what the CPU-aware weights of load-aware
shuffles (`storm_zmq.runtime.balance`) are for. With two workers, the burner and
the sink's lowest task share worker 0; the paced spout and the other sink task
run in worker 1."""
from testparts.pressure import BurnerSpout, FloodSpout, OneSlowTaskBolt

from storm_zmq import Topology


class Busy(Topology):
    config = {"topology.acker.executors": 0}
    burner = BurnerSpout.spec()
    paced = FloodSpout.spec(config={"test.start_after": 0})  # test.rate: the run's conf
    sink = OneSlowTaskBolt.spec(inputs=[paced], par=2)
