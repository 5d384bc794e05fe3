"""How many of a task's reported errors are written out: Storm's error throttle, pure.

Why: a bolt with pystorm's `exit_on_exception = False` that fails on every tuple
reports an error per tuple, each with its traceback; one such run wrote 22,610 log
lines in 4 s, burying everything else and filling the worker's log files. Storm
lets a task report `topology.max.error.report.per.interval` errors per
`topology.error.throttle.interval.secs` and drops the rest; here the rest are
counted (the stats' ``errors_reported``, the local summary's line) and said once
per interval, not written one by one.
"""

from __future__ import annotations

from typing import NamedTuple


class ErrorVerdict(NamedTuple):
    #: Write this error out (log with traceback, keep for stats and the UI).
    write: bool
    #: When written: errors held back since the last one written, to mention.
    held_before: int = 0
    #: When held back: the first of its interval, the moment to say that the rest
    #: of the interval is counted, not written.
    first_held: bool = False


class ErrorThrottle:
    """One task's: at most `limit` errors written out per `interval` seconds."""

    def __init__(self, limit: int, interval: float) -> None:
        if limit < 1 or interval <= 0:
            raise ValueError(f"an error throttle needs limit >= 1 and interval > 0, "
                             f"got {limit} and {interval}")
        self.limit = limit
        self.interval = interval
        self._window_start: float | None = None
        self._written = 0  # in the current interval
        self._said = False  # in the current interval: that the rest is held back
        self._held = 0  # since the last error written

    def admit(self, now: float) -> ErrorVerdict:
        """The verdict on an error reported at `now` (time.monotonic)."""
        if self._window_start is None or now - self._window_start >= self.interval:
            self._window_start, self._written, self._said = now, 0, False
        if self._written < self.limit:
            self._written += 1
            held, self._held = self._held, 0
            return ErrorVerdict(True, held_before=held)
        self._held += 1
        first, self._said = not self._said, True
        return ErrorVerdict(False, first_held=first)

    @property
    def held(self) -> int:
        """Errors held back since the last one written."""
        return self._held
