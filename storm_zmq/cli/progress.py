"""Progress of long cluster commands: ``storm-zmq submit --wait`` watching a
submitted topology's workers come up.

A worker counts as ready once its slot's heartbeat under ``/workerbeats`` is its
own: it carries the marker of the worker's current placement (cluster/heartbeat.py),
so neither an earlier placement's heartbeat nor any clock counts. The cluster worker
writes its first heartbeat after it reported its executors initialized
(cluster/worker.py), so "ready" means "running tuples", not merely "process
started".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TextIO

from storm_zmq.cluster.heartbeat import current_beats

#: Seconds between polls of ZooKeeper, and the longest silence between two lines.
POLL_INTERVAL = 0.5
REPEAT_INTERVAL = 5.0


def ready_workers(assignment: dict[str, Any] | None,
                  beats: dict[str, dict[str, Any]]) -> tuple[int, int]:
    """Pure: (ready, assigned) workers of a stored assignment, given the worker
    heartbeats (``"<host>-<port>" -> {"launched": marker, ...}``)."""
    if assignment is None:
        return 0, 0
    found = current_beats(assignment, beats)
    return sum(1 for beat in found if beat is not None), len(found)


def error_lines(errors: dict[str, list[dict[str, Any]]]) -> list[tuple[tuple[Any, ...], str]]:
    """Pure: each stored error (`ClusterState.errors`) as (its identity, one line:
    where, and the exception it ends with), oldest first."""
    lines = []
    for component, records in errors.items():
        for record in records:
            text = str(record.get("text", "")).strip()
            last = text.splitlines()[-1] if text else "(no text)"
            key = (component, record.get("time"), record.get("host"), record.get("port"), text)
            lines.append((key, f"error in {component} on {record.get('host')}:"
                               f"{record.get('port')}: {last}"))
    return sorted(lines, key=lambda line: line[0][1] or 0)


def wait_for_workers(state: Any, topology_id: str, workers: int, timeout: float,
                     err: TextIO,
                     clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep) -> bool:
    """Print ``waiting for workers: n/m ready`` when n changes (and every
    `REPEAT_INTERVAL` s) until all `workers` are ready or `timeout` s pass; True
    when they all are. Errors the workers record meanwhile are printed as they come:
    a component raising in `initialize()` used to show only as "0/1 ready" until
    the timeout (a cluster audit). The same error again (a worker relaunched and
    failing alike, every few seconds) is counted, and said with the next line."""
    deadline = clock() + timeout
    last: tuple[int, int] | None = None
    last_at = clock()
    said: set[tuple[Any, ...]] = set()
    said_lines: set[str] = set()
    again = 0  # errors said before, recorded again since the last line
    while True:
        assignment = state.get_assignment(topology_id)
        beats = state.worker_beats(topology_id) if assignment is not None else {}
        ready, assigned = ready_workers(assignment, beats)
        now = clock()
        for key, line in error_lines(state.errors(topology_id)):
            if key not in said:
                said.add(key)
                if line in said_lines:
                    again += 1
                    continue
                said_lines.add(line)
                print(f"waiting for workers: {line}", file=err, flush=True)
        if (ready, assigned) != last or now - last_at >= REPEAT_INTERVAL:
            what = (f"{ready}/{workers} ready" if assignment is not None
                    else f"0/{workers} ready (not assigned yet: nimbus assigns it once it "
                         "leads and enough worker slots are free)")
            if again:
                what += f" (an error above recorded again {again} time(s) since)"
                again = 0
            print(f"waiting for workers: {what}", file=err, flush=True)
            last, last_at = (ready, assigned), now
        done = assignment is not None and ready >= workers
        if (done or now >= deadline) and again:  # not left unsaid by a last line
            print(f"waiting for workers: an error above recorded again {again} time(s) since",
                  file=err, flush=True)
        if done:
            return True
        if now >= deadline:
            return False
        sleep(min(POLL_INTERVAL, max(0.0, deadline - now)))
