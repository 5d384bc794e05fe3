"""streamparse's ``streamparse.spout`` names, for ``from storm_zmq.spout import ...``."""

from storm_zmq.component import ReliableSpout, Spout
from storm_zmq.topology.foreign import JavaSpout, ShellSpout

__all__ = ["JavaSpout", "ReliableSpout", "ShellSpout", "Spout"]
