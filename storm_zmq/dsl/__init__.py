"""streamparse's ``streamparse.dsl`` names, for ``from storm_zmq.dsl import ...``; its
modules ``.topology`` and ``.stream`` are here too
(``from streamparse.dsl.topology import Topology``)."""

from storm_zmq.topology import Grouping, Stream, Topology
from storm_zmq.topology.foreign import JavaBolt, JavaSpout, ShellBolt, ShellSpout

__all__ = ["Grouping", "JavaBolt", "JavaSpout", "ShellBolt", "ShellSpout", "Stream", "Topology"]
