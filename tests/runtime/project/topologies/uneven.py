"""A spout shuffling over two sink tasks of which one is slow: what load-aware
messaging (`topology.disable.loadaware.messaging`) is for. With two workers the
spout and the fast sink task share worker 0 and the slow one (the sink's lowest
task) runs in worker 1; with one worker both are local to the spout."""
from testparts.pressure import FloodSpout, OneSlowTaskBolt

from storm_zmq import Topology


class Uneven(Topology):
    config = {"topology.acker.executors": 0}
    flood = FloodSpout.spec(config={"test.start_after": 0})  # test.rate: the run's conf
    sink = OneSlowTaskBolt.spec(inputs=[flood], par=2)
