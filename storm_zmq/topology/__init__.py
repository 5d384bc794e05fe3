"""The topology DSL (streamparse compatible), its validation and resolved model.

Declare a topology as a :class:`Topology` subclass of component specs; the class is
validated when it is created, and :meth:`Topology.definition` gives the resolved
:class:`TopologyDefinition` the runtime runs. :func:`load_topology` imports one from
a streamparse project's ``topologies/`` directory.
"""

from storm_zmq.topology.definition import ComponentDefinition, InputDefinition, TopologyDefinition
from storm_zmq.topology.errors import TopologyError
from storm_zmq.topology.grouping import Grouping, GroupingSpec
from storm_zmq.topology.loader import load_topology
from storm_zmq.topology.spec import ComponentSpec, StreamRef
from storm_zmq.topology.stream import Stream
from storm_zmq.topology.topology import Topology

__all__ = [
    "ComponentDefinition",
    "ComponentSpec",
    "Grouping",
    "GroupingSpec",
    "InputDefinition",
    "Stream",
    "StreamRef",
    "Topology",
    "TopologyDefinition",
    "TopologyError",
    "load_topology",
]
