"""streamparse's ``streamparse.storm.component`` (pystorm's ``pystorm.component``)."""

from storm_zmq.component import Component, StormHandler, Tuple

__all__ = ["Component", "StormHandler", "Tuple"]
