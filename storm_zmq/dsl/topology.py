"""streamparse's ``streamparse.dsl.topology``: `Topology`, and `TopologyType`, its
metaclass (``isinstance(obj, TopologyType)`` is how streamparse's tools find a
topology class in a module)."""

from storm_zmq.topology import Topology
from storm_zmq.topology.topology import TopologyMeta as TopologyType

__all__ = ["Topology", "TopologyType"]
