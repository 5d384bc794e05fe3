"""streamparse's ``streamparse.dsl.topology``."""

from storm_zmq.topology import Topology

__all__ = ["Topology"]
