from testparts.components import IdleSpout, SinkBolt

from storm_zmq import Topology


class IdleSpouts(Topology):
    """Two spouts that never emit, one waiting 200 ms between calls (its own config)."""

    patient = IdleSpout.spec(config={"topology.sleep.spout.wait.strategy.time.ms": 200})
    eager = IdleSpout.spec()
    sink = SinkBolt.spec(inputs=[patient, eager])
