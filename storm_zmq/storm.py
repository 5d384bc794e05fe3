"""streamparse's ``streamparse.storm`` names (pystorm's components), for
``from storm_zmq.storm import ...``."""

from storm_zmq.component import (
    BatchingBolt,
    Bolt,
    ReliableSpout,
    Spout,
    StormHandler,
    TicklessBatchingBolt,
    Tuple,
)

__all__ = ["BatchingBolt", "Bolt", "ReliableSpout", "Spout", "StormHandler",
           "TicklessBatchingBolt", "Tuple"]
