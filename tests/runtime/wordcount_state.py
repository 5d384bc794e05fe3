"""The word count's `WorkerState`, for tests that drive a worker's pure parts and
its executors by hand (no threads, no sockets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.assignment import WorkerSlot, acker_executors, assign
from storm_zmq.runtime.worker import WorkerState
from storm_zmq.topology import load_topology

WORDCOUNT = Path(__file__).resolve().parents[2] / "topologies" / "wordcount.py"


def word_count_state(
    conf: dict[str, Any] | None = None,
    parallelism: dict[str, tuple[int, int]] | None = None,
    workers: int = 1,
    topology: Path = WORDCOUNT,
) -> WorkerState:
    """Worker 0 of the word count (or of another `topology` file) assigned to
    `workers` workers on loopback, with `conf` over the defaults and `parallelism`
    ((executors, tasks) by component) over the topology's own."""
    definition = load_topology(topology).definition()
    full_conf = {**DEFAULTS, **(conf or {})}
    par = {name: (c.par, c.num_tasks) for name, c in definition.components.items()}
    par.update(parallelism or {})
    slots = [WorkerSlot("127.0.0.1", 6700 + i) for i in range(workers)]
    assignment = assign("test-1", par, slots, acker_executors(full_conf, workers))
    return WorkerState(full_conf, definition, assignment, 0)
