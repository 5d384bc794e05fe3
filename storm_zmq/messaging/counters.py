"""Counting and rate-limited logging of what a transport refused.

Bad input must never pass silently and never flood the log: every refused frame
is counted by kind, and each kind logs at most one line per interval, saying how
many were suppressed since the last line.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

#: Characters of a refusal's detail logged, at most (a data-plane audit: a 4 MB
#: frame's repr made one log line of 10 MB).
MAX_DETAIL = 300


class RefusalLog:
    """Counters of refused input by kind, with at most one log line per kind per
    `interval` seconds."""

    def __init__(
        self,
        logger: logging.Logger,
        where: str,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.counts: Counter[str] = Counter()
        self._logger = logger
        self._where = where
        self._interval = interval
        self._clock = clock
        self._last_logged: dict[str, float] = {}
        self._suppressed: Counter[str] = Counter()

    def record(self, kind: str, detail: str) -> bool:
        """Count one refusal; return whether it was logged."""
        self.counts[kind] += 1
        now = self._clock()
        last = self._last_logged.get(kind)
        if last is not None and now - last < self._interval:
            self._suppressed[kind] += 1
            return False
        suppressed = self._suppressed.pop(kind, 0)
        more = f" ({suppressed} more since the last report)" if suppressed else ""
        if len(detail) > MAX_DETAIL:  # it may quote what a stranger sent: 10 MB lines
            detail = f"{detail[:MAX_DETAIL]}... ({len(detail):,} characters)"
        self._logger.warning("%s: dropped %s%s", self._where, detail, more)
        self._last_logged[kind] = now
        return True


class ServerCounters:
    """What a receiving connection counts, in the shape `Connection.stats()` returns."""

    def __init__(self, refused: RefusalLog) -> None:
        self.refused = refused
        self.frames = self.messages = self.bytes = 0
        self.accepted = self.disconnects = 0

    def snapshot(self) -> dict[str, int]:
        counts = {
            "frames_received": self.frames,
            "messages_received": self.messages,
            "bytes_received": self.bytes,
            "connections_accepted": self.accepted,
            "disconnects": self.disconnects,
        }
        # copied in one step: the receive thread may add a kind while stats() reads
        counts.update({f"refused_{kind}": n for kind, n in dict(self.refused.counts).items()})
        return counts
