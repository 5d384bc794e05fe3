"""storm-zmq: a Python-native Storm over a pluggable ZeroMQ/TCP transport.

The public API is streamparse's: a streamparse project runs after changing
``from streamparse import ...`` to ``from storm_zmq import ...``.
"""

__version__ = "0.1.0"

from storm_zmq.component import (  # noqa: E402
    BatchingBolt,
    Bolt,
    ReliableSpout,
    Spout,
    TicklessBatchingBolt,
    Tuple,
)
from storm_zmq.topology import Grouping, Stream, Topology  # noqa: E402

__all__ = [
    "BatchingBolt",
    "Bolt",
    "Grouping",
    "ReliableSpout",
    "Spout",
    "Stream",
    "TicklessBatchingBolt",
    "Topology",
    "Tuple",
    "__version__",
]
