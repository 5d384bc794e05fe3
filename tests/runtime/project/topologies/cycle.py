"""A cycle under backpressure: bounce -> relay -> bounce, and bounce -> bounce,
every id six hops round before it reaches the sink; acking on."""
from testparts.components import NumberSpout, SinkBolt
from testparts.pressure import BounceBolt, RelayBolt

from storm_zmq import Grouping, Topology
from storm_zmq.topology import StreamRef


class Cycle(Topology):
    numbers = NumberSpout.spec(par=2)
    bounce = BounceBolt.spec(
        inputs={numbers: Grouping.SHUFFLE, StreamRef("relay", "back"): Grouping.SHUFFLE,
                StreamRef("bounce", "again"): Grouping.SHUFFLE},
        par=2,
    )
    relay = RelayBolt.spec(inputs={bounce["loop"]: Grouping.SHUFFLE}, par=2)
    sink = SinkBolt.spec(inputs=[bounce], par=1)
