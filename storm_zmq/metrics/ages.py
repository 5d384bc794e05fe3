"""How old each worker's newest report is, as a viewer that keeps watching judges it.

A worker's report carries the worker's own wall-clock ``time``. A one-shot viewer
(`storm-zmq stats`) has nothing better than comparing that with its own clock, so a
worker whose host clock is behind looks stale, and a dead one whose clock is ahead
looks alive. A viewer that keeps watching (the web UI, the Prometheus endpoint) can
do what nimbus does (`storm_zmq.cluster.liveness`): once it has seen a worker's
report time change, it judges the age by its own clock alone. Until then the
clocks' comparison stands, but a report is never younger than the time the viewer
has watched it not change.

A change is dated at the viewer's previous look, the earliest it can have happened,
so the age shown is an upper bound: a live worker seen at every look is never older
than the gap between looks, and a dead one turns stale one look after its last
change. Looks further apart than `max_gap` (a Prometheus scraping less often than
the stale timeout, a page left alone for an hour) cannot tell a live worker from
one that changed once and died: the viewer then starts afresh, as if at first sight.

Pure: ``now`` is passed in (the viewer's monotonic clock), no I/O, no threads.
"""

from __future__ import annotations

from collections.abc import Mapping

from storm_zmq.cluster.liveness import ChangeClock

__all__ = ["ReportAges"]


class ReportAges:
    """Per worker key ("host:port") of one topology: the report time last seen,
    and whether it has been seen to change."""

    def __init__(self, max_gap: float) -> None:
        self.max_gap = max_gap
        self._changes: ChangeClock[str] = ChangeClock()
        self._first: dict[str, object] = {}  # key -> the first report time seen
        self._changed: set[str] = set()
        self._last_look: float | None = None

    def ages(
        self, reports: Mapping[str, tuple[object, float | None]], now: float
    ) -> dict[str, float | None]:
        """The age to show for each worker key, from its newest report's ``time``
        value and that value's age by the clocks' comparison (None: unknown). Keys
        not in `reports` are forgotten: a worker that comes back starts afresh. A
        report without a time keeps the clocks' answer (it cannot be seen to change)."""
        previous_look = self._last_look
        if previous_look is None or now - previous_look > self.max_gap:
            self._forget()
            previous_look = now
        self._last_look = now
        result: dict[str, float | None] = {}
        tracked = []
        for key, (value, clock_age) in reports.items():
            if value is None:
                result[key] = clock_age
                continue
            tracked.append(key)
            if key not in self._first:
                self._first[key] = value
                self._changes.observe(key, value, now)
            else:
                if value != self._first[key]:
                    self._changed.add(key)
                self._changes.observe(key, value, previous_look)
            unchanged_for = self._changes.age(key, now)
            if key in self._changed:
                result[key] = unchanged_for
            elif clock_age is None:
                result[key] = unchanged_for
            else:
                result[key] = max(clock_age, unchanged_for)
        self._changes.retain(tracked)
        self._first = {key: self._first[key] for key in tracked}
        self._changed.intersection_update(tracked)
        return result

    def _forget(self) -> None:
        self._changes.clear()
        self._first.clear()
        self._changed.clear()
