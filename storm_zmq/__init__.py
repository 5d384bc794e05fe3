"""storm-zmq: a Python-native Storm over a pluggable ZeroMQ/TCP transport.

The public API is streamparse's: a streamparse project runs after changing
``from streamparse import ...`` to ``from storm_zmq import ...`` (and
``streamparse.bolt``, ``.spout``, ``.storm``, ``.dsl`` to ``storm_zmq.bolt``, ...).
"""

__version__ = "0.1.0"
#: streamparse's VERSION: the version as a tuple of ints
VERSION = tuple(int(part) for part in __version__.split("."))

from storm_zmq.component import (  # noqa: E402
    BatchingBolt,
    Bolt,
    Component,
    ReliableSpout,
    Spout,
    StormHandler,
    TicklessBatchingBolt,
    Tuple,
)
from storm_zmq.topology import Grouping, Stream, Topology  # noqa: E402
from storm_zmq.topology.foreign import JavaBolt, JavaSpout, ShellBolt, ShellSpout  # noqa: E402

__all__ = [
    "BatchingBolt",
    "Bolt",
    "Component",
    "Grouping",
    "JavaBolt",
    "JavaSpout",
    "ReliableSpout",
    "ShellBolt",
    "ShellSpout",
    "Spout",
    "StormHandler",
    "Stream",
    "TicklessBatchingBolt",
    "Topology",
    "Tuple",
    "VERSION",
    "__version__",
]
