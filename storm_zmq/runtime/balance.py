"""How short of CPU each worker is, and how much shuffled traffic each should get: pure.

Why: a Python worker runs its executors under one interpreter lock, so it is full
when its process uses about one core, whatever its queues say. Storm's load-aware
shuffles look at queues only, and so did ours; but the word count with two workers
showed the worker that hosts the spout (and its acker) at 90-96 % of a core while
the other used 60 %. Shifting some of the spout's sentences to the other worker's
split task made the topology faster (docs/benchmarks.md, "Session 10").

A worker's figure (`short_of_cpu`) is the share of a core its process used over
the last `REPORT_SECS` (`BusyMeter`), or the share in which one of its executor
threads was runnable if that is more (it waited for a core other processes also
want; `storm_zmq.runtime.tuning.RunnableMeter`), but only while its executors fall behind
(some queue at least a quarter full): a batching runtime uses much of a core at
half its maximum rate too, with short queues and time to spare, and moving
traffic to another worker then only adds hops. A quarter, that is, of a queue of
up to 4096 tuples, CPython's size; of a larger one, `BEHIND_TUPLES` (1024) are
enough: a PyPy worker's queues hold 32768, and in the word count the PyPy worker
with the spout ran at 99 % of a core, the other at 77-83 %, without a queue ever a
quarter full; at 1024 tuples the weights moved, the other worker rose to 95-98 %
and the two counted 961k words/s on average against 892k (four alternating pairs,
docs/benchmarks.md, session 40). Each worker tells its peers its
figure with its backpressure status, and `WorkerBalance` turns what it knows into
a weight per worker: the shuffles of every executor give a task a share of their
tuples in proportion to its worker's weight (`storm_zmq.topology.grouping`,
`_ShuffleChooser.refresh`).

The weights move slowly on purpose. Sending everything to the least busy worker
would make it the busiest a moment later, and the next report would send
everything back. A worker above `BUSY_HIGH` and above the mean by more than
`DEADBAND` has its weight multiplied by ``exp(GAIN * (mean - its figure))`` a
report, down to `MIN_WEIGHT`; a worker below the mean by more than that, or every
worker once none is above `BUSY_LOW`, moves back toward 1 by `RELAX` of the
distance; in between weights hold (so that a worker steered just below
`BUSY_HIGH` does not swing back at once).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: How often a worker measures itself and tells its peers.
REPORT_SECS = 0.5
#: A peer not heard from in this long counts as unknown (its weight is 1).
EXPIRY_SECS = 3.0
#: Only a worker above this share of a core loses weight...
BUSY_HIGH = 0.8
#: ...and only once every worker is below this do all weights go back to 1.
BUSY_LOW = 0.7
#: A queue at least this full (of its capacity) says its executor falls behind...
BEHIND = 0.25
#: ...or one holding this many tuples, whichever is fewer.
BEHIND_TUPLES = 1024
#: Differences from the mean smaller than this leave a weight alone.
DEADBAND = 0.05
#: A weight is multiplied by exp(GAIN * difference) per report (two a second).
GAIN = 1.0
#: The least share a worker keeps, relative to the most favoured one: traffic
#: never stops going anywhere, so what a worker measures stays current.
MIN_WEIGHT = 0.1
#: Per report, the fraction of a weight's distance to 1 closed when it relaxes.
RELAX = 0.2


def falls_behind(backlog: int, capacity: int) -> bool:
    """Whether an executor whose queue holds `backlog` tuples of `capacity` falls
    behind: `BEHIND` of the capacity, or `BEHIND_TUPLES` if that is fewer."""
    return backlog >= min(BEHIND * capacity, BEHIND_TUPLES)


def short_of_cpu(busy: float, behind: bool) -> float:
    """A worker's figure: its busy share, or at most `BUSY_HIGH` while none of its
    executors falls behind (`behind`, from `falls_behind`)."""
    return busy if behind else min(busy, BUSY_HIGH)


class BusyMeter:
    """The share of one core a process used between two samples (0 to 1; more than
    one core counts as 1, since the interpreter lock is what saturates)."""

    def __init__(self) -> None:
        self._last: tuple[float, float] | None = None

    def sample(self, cpu_secs: float, wall_secs: float) -> float | None:
        """None for the first sample, or when the clock has not moved."""
        last, self._last = self._last, (cpu_secs, wall_secs)
        if last is None or wall_secs <= last[1]:
            return None
        busy = (cpu_secs - last[0]) / (wall_secs - last[1])
        return min(max(busy, 0.0), 1.0)


def largest_share(before: Mapping[int, int], after: Mapping[int, int], span_secs: float) -> float | None:
    """The largest growth of a counter of nanoseconds from `before` to `after` as a
    share of `span_secs` (at most 1), among the keys in both; None if there are
    none. A counter that went down is a new thread with a reused id: left out."""
    grown = [after[key] - ns for key, ns in before.items() if key in after and after[key] >= ns]
    if not grown:
        return None
    return min(max(grown) / 1e9 / span_secs, 1.0)


class WorkerBalance:
    """The weight of each worker in the shuffles, from how busy each one is.

    One instance per worker, driven by its receive thread: `observe` what this
    worker measured and what peers said, `update` once a report."""

    def __init__(self, workers: int, expiry_secs: float = EXPIRY_SECS) -> None:
        self._expiry = expiry_secs
        self._busy: dict[int, tuple[float, float]] = {}  # worker -> (busy, when)
        self.weights: dict[int, float] = dict.fromkeys(range(workers), 1.0)

    def observe(self, worker: int, busy: float, now: float) -> None:
        if worker in self.weights and math.isfinite(busy):
            self._busy[worker] = (min(max(busy, 0.0), 1.0), now)

    def update(self, now: float) -> bool:
        """Move the weights one step; True if any changed."""
        known = {w: busy for w, (busy, when) in self._busy.items() if now - when <= self._expiry}
        before = dict(self.weights)
        if len(known) < 2 or max(known.values()) < BUSY_LOW:
            for worker, weight in self.weights.items():
                self.weights[worker] = _relaxed(weight)
        else:
            mean = sum(known.values()) / len(known)
            for worker, busy in known.items():
                if busy > BUSY_HIGH and busy > mean + DEADBAND:
                    self.weights[worker] *= math.exp(GAIN * (mean - busy))
                elif busy < mean - DEADBAND:
                    self.weights[worker] = _relaxed(self.weights[worker])
            top = max(self.weights[worker] for worker in known)
            for worker, weight in self.weights.items():
                # the most favoured has 1, and so has a worker nothing is known of
                # (a peer starting, or gone): Storm's even spread, for all we know
                self.weights[worker] = max(weight / top, MIN_WEIGHT) if worker in known else 1.0
        return self.weights != before

    def task_weights(self, task_worker: Mapping[int, int]) -> dict[int, float]:
        """Task -> its worker's weight; empty while every weight is 1 (the shuffles'
        plain round-robin)."""
        if all(weight == 1.0 for weight in self.weights.values()):
            return {}
        return {task: self.weights[worker] for task, worker in task_worker.items()}


def _relaxed(weight: float) -> float:
    relaxed = weight + (1.0 - weight) * RELAX
    return 1.0 if relaxed > 0.99 else relaxed
