"""streamparse's ``streamparse.storm.spout``."""

from storm_zmq.component import ReliableSpout, Spout
from storm_zmq.topology.foreign import JavaSpout, ShellSpout

__all__ = ["JavaSpout", "ReliableSpout", "ShellSpout", "Spout"]
