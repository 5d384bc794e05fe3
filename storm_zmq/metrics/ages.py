"""How old each worker's newest report is, as a viewer that keeps watching judges it.

A worker's report carries the worker's own wall-clock ``time``. A one-shot viewer
(`storm-zmq stats`) has nothing better than comparing that with its own clock, so a
worker whose host clock is behind looks stale, and a dead one whose clock is ahead
looks alive. A viewer that keeps watching (the web UI, the Prometheus endpoint) can
do what nimbus does (`storm_zmq.cluster.liveness`): once it has seen a worker's
report time change, it judges the age by its own clock alone, from when it last saw
that value change. Until then the clocks' comparison stands, but a report is never
younger than the time the viewer has watched it not change.

Pure: ``now`` is passed in (the viewer's monotonic clock), no I/O, no threads.
"""

from __future__ import annotations

from collections.abc import Mapping

from storm_zmq.cluster.liveness import ChangeClock

__all__ = ["ReportAges"]


class ReportAges:
    """Per worker key ("host:port") of one topology: the report time last seen,
    and whether it has been seen to change."""

    def __init__(self) -> None:
        self._changes: ChangeClock[str] = ChangeClock()
        self._first: dict[str, object] = {}  # key -> the first report time seen
        self._changed: set[str] = set()

    def ages(self, reports: Mapping[str, tuple[object, float | None]], now: float) -> dict[str, float | None]:
        """The age to show for each worker key, from its newest report's ``time``
        value and that value's age by the clocks' comparison (None: unknown). Keys
        not in `reports` are forgotten: a worker that comes back starts afresh."""
        result: dict[str, float | None] = {}
        for key, (value, clock_age) in reports.items():
            if key not in self._first:
                self._first[key] = value
            elif value != self._first[key]:
                self._changed.add(key)
            self._changes.observe(key, value, now)
            unchanged_for = self._changes.age(key, now)
            if key in self._changed:
                result[key] = unchanged_for
            elif clock_age is None:
                result[key] = None if unchanged_for == 0 else unchanged_for
            else:
                result[key] = max(clock_age, unchanged_for)
        self._changes.retain(reports)
        self._first = {key: value for key, value in self._first.items() if key in reports}
        self._changed &= set(reports)
        return result
