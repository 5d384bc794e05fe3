"""A cluster worker's ZooKeeper heartbeat, and which placement of a worker wrote it.

A heartbeat lives at ``/workerbeats/<topology>/<host>-<port>``: one node per slot,
which outlives the worker that wrote it. When nimbus places a worker in a slot
(again), the node may still hold the last heartbeat of a worker that ran there
before, which says nothing about the new one. Telling them apart by time would
compare the worker's clock with nimbus's. Instead every placement has a marker:
the ``launched`` value nimbus writes for that worker index in the assignment (a
new one at each placement), and a worker copies into each heartbeat the marker of
its slot in the assignment in which it has just checked that it still holds that
slot (`ZooKeeperControl._sync` reads it from ZooKeeper before every heartbeat). A
slot's heartbeat is the current worker's only when its marker equals the slot's
marker now: nimbus's own value compared with itself, for equality only.

A worker left running in its slot while nimbus moved it away and back (a new
marker, the same worker index and executors: its supervisor keeps it) adopts the
new marker with its next heartbeat; one whose slot is another's now stops without
writing one (cluster/worker.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storm_zmq.portable import STRICT

__all__ = ["current_beats", "placed_beats", "worker_beat"]


def worker_beat(time: float, launched: Any, stats: dict[str, Any]) -> dict[str, Any]:
    """The heartbeat a worker writes: `time` (its own clock: for people and the UI,
    never compared with another host's by nimbus), the `launched` marker of its
    slot, and its stats report (docs/observability.md)."""
    return {"time": time, "launched": launched, "stats": stats}


def current_beats(assignment: Mapping[str, Any],
                  beats: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any] | None]:
    """For each worker index of a stored assignment (``slots``, ``launched``), the
    heartbeat of the worker placed in its slot now, or None when its slot has no
    heartbeat or only one of an earlier placement (or of a worker from before
    heartbeats carried a marker). `beats`: ``"<host>-<port>" -> heartbeat``."""
    placed = placed_beats(assignment, beats)
    return [placed.get(node) for node in _slot_nodes(assignment)]


def placed_beats(assignment: Mapping[str, Any],
                 beats: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The heartbeats of the workers a stored assignment places now, by node: the
    stats of a topology. A worker removed by a rebalance to fewer workers left its
    node until the kill, and its last report stayed in the totals, then stale in
    `stats`, the UI and `/metrics` for good (a cluster audit)."""
    return {node: beats[node]
            for node, marker in zip(_slot_nodes(assignment), assignment["launched"], **STRICT)
            if node in beats and beats[node].get("launched") == marker}


def _slot_nodes(assignment: Mapping[str, Any]) -> list[str]:
    return [f"{host}-{int(port)}" for _, host, port in assignment["slots"]]
