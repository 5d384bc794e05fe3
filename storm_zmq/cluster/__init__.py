"""Cluster mode's shared state in ZooKeeper (`ClusterState`); see `state` for the layout
and the threading rules every daemon relies on."""

from storm_zmq.cluster.state import (
    CODE_CHUNK_SIZE,
    KINDS,
    MAX_ERRORS,
    ClusterState,
    ClusterStateError,
    ClusterUnavailable,
    CodeError,
    VersionConflict,
    Watch,
    zookeeper_hosts,
)

__all__ = [
    "CODE_CHUNK_SIZE",
    "KINDS",
    "MAX_ERRORS",
    "ClusterState",
    "ClusterStateError",
    "ClusterUnavailable",
    "CodeError",
    "VersionConflict",
    "Watch",
    "zookeeper_hosts",
]
