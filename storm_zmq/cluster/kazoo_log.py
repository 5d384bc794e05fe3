"""kazoo's warnings during a ZooKeeper outage, one line a minute instead of one per attempt.

Why: kazoo warns at every failed attempt to reconnect ("Connection dropped: ...",
"Failed connecting to Zookeeper within the connection retry policy."), and a
daemon tries again every 2 s at most (`state.RECONNECT_MAX_DELAY`): an hour's
outage wrote thousands of the same lines into every nimbus, supervisor and worker
log, burying the few that say what happened. `RepeatedWarnings` lets the first of
each kind through and then one per `interval`, saying how many it held back (the
kind is the message's template: the same warning with other arguments is the same
kind). Errors always pass. Installed on kazoo's logger by `quiet_repeated_warnings`,
once per process, whoever starts a `ClusterState`, which says what was held back
when its session is connected again (`flush`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from storm_zmq.runtime.error_throttle import ErrorThrottle

__all__ = ["KAZOO_LOGGER", "PER_ATTEMPT_INFO", "RedactedAuth", "RepeatedWarnings",
           "quiet_repeated_warnings"]

#: The logger kazoo's client and connection log to (KazooClient's default).
KAZOO_LOGGER = "kazoo.client"
#: Seconds between two lines of one kind of warning.
INTERVAL = 60.0
#: Kinds remembered at most (the least recently seen is forgotten first).
MAX_KINDS = 64
#: kazoo's INFO records of each attempt to connect, throttled with its warnings;
#: its other INFO records (a connection established, a session closed) say what
#: happened, once each, and always pass.
PER_ATTEMPT_INFO = ("Connecting to %s(%s):%s, use_ssl: %r",)


class RepeatedWarnings(logging.Filter):
    """At most one record of each kind of warning (and of `PER_ATTEMPT_INFO`) per
    `interval` seconds; the one let through after others were held back says how
    many."""

    def __init__(self, interval: float = INTERVAL, *,
                 clock: Callable[[], float] = time.monotonic, max_kinds: int = MAX_KINDS) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self.max_kinds = max_kinds
        self._kinds: OrderedDict[str, ErrorThrottle] = OrderedDict()
        self._lock = threading.Lock()  # several kazoo clients may log at once

    def filter(self, record: logging.LogRecord) -> bool:
        kind = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
        if record.levelno != logging.WARNING and kind not in PER_ATTEMPT_INFO:
            return True
        with self._lock:
            throttle = self._kinds.get(kind)
            if throttle is None:
                throttle = self._kinds[kind] = ErrorThrottle(1, self.interval)
                while len(self._kinds) > self.max_kinds:
                    self._kinds.popitem(last=False)
            else:
                self._kinds.move_to_end(kind)
            verdict = throttle.admit(self.clock())
        if not verdict.write:
            return False
        if verdict.held_before:
            record.msg = (f"{record.getMessage()} ({verdict.held_before} more like it "
                          f"since the last one logged; at most one every {self.interval:g} s "
                          "is logged)")
            record.args = None
        return True


    def flush(self) -> dict[str, int]:
        """Forget every kind, returning those with records held back since the last
        one logged (template -> how many): said when ZooKeeper is back, so that the
        count belongs to the outage it was about, and the next outage's first
        warning is logged again."""
        with self._lock:
            held = {kind: throttle.held for kind, throttle in self._kinds.items()
                    if throttle.held}
            self._kinds.clear()
        return held


class RedactedAuth(logging.Filter):
    """kazoo logs every request at DEBUG, the authentication's too, with the
    digest's ``user:password`` (``Auth(... auth='storm:s3cret')``): a
    ``set_log_level ROOT=DEBUG`` and one reconnect put the daemons' ZooKeeper
    password into a worker's log, which its supervisor's log viewer serves to
    anyone (a security review). The credential is replaced, the record kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(
                type(arg).__name__ == "Auth" for arg in record.args):
            record.args = tuple(
                f"Auth(auth_type={arg.auth_type!r}, scheme={arg.scheme!r}, auth=<redacted>)"
                if type(arg).__name__ == "Auth" else arg for arg in record.args)
        return True


def quiet_repeated_warnings(logger_name: str = KAZOO_LOGGER) -> RepeatedWarnings:
    """Install a `RepeatedWarnings` on `logger_name` unless one is there already
    (and a `RedactedAuth`); return the one installed."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(existing, RedactedAuth) for existing in logger.filters):
        logger.addFilter(RedactedAuth())
    for existing in logger.filters:
        if isinstance(existing, RepeatedWarnings):
            return existing
    installed = RepeatedWarnings()
    logger.addFilter(installed)
    return installed
