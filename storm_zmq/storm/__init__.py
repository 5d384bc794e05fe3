"""streamparse's ``streamparse.storm`` names (pystorm's components), for
``from storm_zmq.storm import ...``; its modules ``.bolt``, ``.spout`` and
``.component`` are here too (``from streamparse.storm.bolt import Bolt``)."""

from storm_zmq.component import (
    BatchingBolt,
    Bolt,
    Component,
    ReliableSpout,
    Spout,
    StormHandler,
    TicklessBatchingBolt,
    Tuple,
)
from storm_zmq.topology.foreign import JavaBolt, JavaSpout, ShellBolt, ShellSpout

__all__ = ["BatchingBolt", "Bolt", "Component", "JavaBolt", "JavaSpout", "ReliableSpout",
           "ShellBolt", "ShellSpout", "Spout", "StormHandler", "TicklessBatchingBolt", "Tuple"]
