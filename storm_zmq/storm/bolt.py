"""streamparse's ``streamparse.storm.bolt``."""

from storm_zmq.component import BatchingBolt, Bolt, TicklessBatchingBolt
from storm_zmq.topology.foreign import JavaBolt, ShellBolt

__all__ = ["BatchingBolt", "Bolt", "JavaBolt", "ShellBolt", "TicklessBatchingBolt"]
