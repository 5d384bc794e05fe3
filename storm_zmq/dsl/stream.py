"""streamparse's ``streamparse.dsl.stream``."""

from storm_zmq.topology import Grouping, Stream

__all__ = ["Grouping", "Stream"]
