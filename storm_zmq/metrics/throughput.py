"""Throughput of each component between successive summaries: Storm's ``monitor``. Pure.

`storm-zmq monitor NAME` reads the topology's summary every few seconds and
prints, per component, how much one counter (``emitted`` by default, as Storm's)
grew and at what rate. A rate is taken per worker between two of its own reports
(their times, not the reader's: a worker reports every
``worker.heartbeat.frequency.secs``, so the reader's interval would be off by up to
that much), then summed over the workers. A worker whose counter went down was
restarted: it counts from zero. A worker without a newer report since the last
read keeps its last rate for that one read, so a reader faster than the reports
does not see a component stop; at the next read still without one its rate is 0
(a frozen worker showed its last rate for 30 s, until its report went stale). One
that is no longer in the summary (stale, moved) counts no more.
"""

from __future__ import annotations

from dataclasses import dataclass

from storm_zmq.metrics.summary import ACKER, COUNTERS, TopologySummary

__all__ = ["ComponentThroughput", "Throughput"]

#: A worker's numbers of one component: (host, port, worker index).
_WorkerKey = tuple[str | None, int | None, int | None]


@dataclass(frozen=True)
class ComponentThroughput:
    component: str
    kind: str
    executors: int
    tasks: int
    #: how much the counter grew since the previous summary (None: first look)
    grown: int | None
    #: per second, by the workers' report times (None: not known yet)
    rate: float | None


class Throughput:
    """Feed it a topology's summaries, oldest first; each `update` returns the rows
    for that one. The acker is left out unless `components` names it."""

    def __init__(self, counter: str = "emitted", components: tuple[str, ...] = ()) -> None:
        if counter not in COUNTERS:
            raise ValueError(f"no counter {counter!r} (one of {', '.join(COUNTERS)})")
        self.counter = counter
        self.components = components
        # (time, value, pid) of the last report read of each component on each worker
        self._seen: dict[tuple[str, _WorkerKey], tuple[float, float, int | None]] = {}
        self._rates: dict[tuple[str, _WorkerKey], float] = {}
        self._kept: set[tuple[str, _WorkerKey]] = set()  # rates kept once without a report

    def update(self, summary: TopologySummary) -> list[ComponentThroughput]:
        times = {(w.host, w.port): w.time for w in summary.workers if w.time is not None}
        pids = {(w.host, w.port): w.pid for w in summary.workers}
        seen: dict[tuple[str, _WorkerKey], tuple[float, float, int | None]] = {}
        rates: dict[tuple[str, _WorkerKey], float] = {}
        kept: set[tuple[str, _WorkerKey]] = set()
        rows = []
        for component in summary.components:
            if self.components and component.name not in self.components:
                continue
            if not self.components and component.name == ACKER:
                continue
            grown: int | None = None
            rate: float | None = None
            for on_worker in component.on_workers:
                key = (component.name, (on_worker.host, on_worker.port, on_worker.worker))
                at = times.get((on_worker.host, on_worker.port))
                if at is None:
                    continue
                value = dict(on_worker.values)[self.counter]
                pid = pids.get((on_worker.host, on_worker.port))
                previous = self._seen.get(key)
                seen[key] = (at, value, pid) if previous is None or at > previous[0] else previous
                if previous is None:
                    continue
                then, before, pid_before = previous
                # restarted (another process, or a count that went down): from 0. A
                # new worker already past the old one's count was taken for growth.
                restarted = value < before or (pid != pid_before and None not in (pid, pid_before))
                delta = value if restarted else value - before
                grown = (grown or 0) + int(delta)
                if at > then:
                    rates[key] = delta / (at - then)
                elif key in self._rates and key not in self._kept:
                    rates[key] = self._rates[key]
                    kept.add(key)
                elif key in self._rates:
                    rates[key] = 0.0  # a second read without a report: it is not counting
                if key in rates:
                    rate = (rate or 0.0) + rates[key]
            rows.append(ComponentThroughput(component.name, component.kind,
                                            component.executors, component.tasks, grown, rate))
        self._seen, self._rates, self._kept = seen, rates, kept
        return rows
