from testparts.components import BurstSpout, SinkBolt

from storm_zmq import Topology


class Burst(Topology):
    config = {"topology.acker.executors": 0}
    burst = BurstSpout.spec()
    sink = SinkBolt.spec(inputs=[burst])
