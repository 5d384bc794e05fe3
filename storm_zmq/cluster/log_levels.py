"""Storm's ``set_log_level``: a running topology's loggers at another level, for a while.

``storm-zmq set_log_level NAME -l LOGGER=LEVEL[:SECS] -r LOGGER`` stores requests in
the topology's record (``log_levels``: logger -> level, timeout, and a marker that
tells one request from the next, the requester's `time.time()`). Every worker reads
the record at each heartbeat, and `LogLevels` (pure) says which of its loggers to
set to what: a new request is applied and the logger's own level kept; once its
timeout has passed, or once the request is removed (``-r``), the kept level is put
back. A request whose time is up stays done until another request for that logger
comes. The timeout is counted by the worker's monotonic clock from when it first
saw the request, and ends no later than the request time plus the timeout by its
wall clock, as Storm's does: a worker started (or restarted by a rebalance) after
the request applies only what is left of it, none once it is over.
``ROOT`` is the root logger; levels are Storm's (log4j's) names or Python's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from storm_zmq.cluster.requests import seconds

__all__ = ["LEVELS", "ROOT", "LevelChange", "LogLevels", "parse_request", "python_logger",
           "request_over"]

#: Level names accepted: log4j's, as Storm users write them, and Python's.
LEVELS = {"ALL": 1, "TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
          "WARN": logging.WARNING, "WARNING": logging.WARNING, "ERROR": logging.ERROR,
          "FATAL": logging.CRITICAL, "CRITICAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}
#: The root logger's name here, as in Storm.
ROOT = "ROOT"
#: A worker that sees a timed request this much after it was made says how much of
#: it is left (a heartbeat's delay, a second, is not worth saying).
LATE_SECS = 2.0


def python_logger(name: str) -> logging.Logger:
    return logging.getLogger(None if name == ROOT else name)


def parse_request(spec: str) -> tuple[str, str, float]:
    """``LOGGER=LEVEL[:SECS]`` -> (logger, level name, seconds; 0: until reset).
    ValueError saying what is wrong."""
    logger, sep, rest = spec.partition("=")
    level, _, timeout = rest.partition(":")
    if not sep or not logger.strip() or not level.strip():
        raise ValueError(f"{spec!r}: expected LOGGER=LEVEL or LOGGER=LEVEL:SECONDS "
                         "(e.g. ROOT=DEBUG:30)")
    level = level.strip().upper()
    if level not in LEVELS:
        raise ValueError(f"{spec!r}: unknown level {level!r} (one of {', '.join(LEVELS)})")
    try:
        secs = seconds(timeout, "the timeout") if timeout.strip() else 0.0
    except ValueError as exc:
        raise ValueError(f"{spec!r}: {exc} (0: until reset)") from None
    return logger.strip(), level, secs


def request_over(request: Any, wall: float) -> bool:
    """Whether a timed request's time is up at `wall` (`time.time()`) by the
    requester's clock: its "requested" plus its timeout. One until reset never is."""
    try:
        requested = float(request["requested"])
        timeout = float(request.get("timeout_secs") or 0)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return timeout > 0 and wall >= requested + timeout


@dataclass(frozen=True)
class LevelChange:
    logger: str
    level: int  # logging.NOTSET (0): inherit the parent's again
    #: for the worker's log line: "LEVEL for N s", "until reset", "back to ..."
    why: str
    #: the level kept from before the request is put back
    reset: bool = False


class LogLevels:
    """One worker's: what its loggers' levels must be after each read of the
    requests (see the module docstring)."""

    def __init__(self) -> None:
        self._applied: dict[str, tuple[Any, float | None]] = {}  # logger -> (marker, ends at)
        self._kept: dict[str, int] = {}  # logger -> its own level before the first request
        self._done: dict[str, Any] = {}  # logger -> marker of a request whose time is up

    def update(self, requests: Mapping[str, Any], now: float, own_level: Callable[[str], int],
               wall: float | None = None) -> list[LevelChange]:
        """The changes to make given the record's `requests` at `now` (a monotonic
        clock) and `wall` (`time.time()`, None: not known); `own_level(logger)` is a
        logger's own level now."""
        changes = []
        wanted = {name: r for name, r in requests.items()
                  if isinstance(r, Mapping) and str(r.get("level", "")).upper() in LEVELS}
        for name in list(self._done):
            if name not in wanted or wanted[name].get("requested") != self._done[name]:
                del self._done[name]
        for name, request in wanted.items():
            marker = request.get("requested")
            if name in self._done:  # this request's time is up (others were forgotten above)
                continue
            if name in self._applied and self._applied[name][0] == marker:
                continue
            timeout = request.get("timeout_secs") or 0
            timeout = float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else 0.0
            left = timeout
            if timeout and wall is not None and isinstance(marker, (int, float)):
                left = min(timeout, marker + timeout - wall)
                if left <= 0:  # over before this worker saw it
                    self._done[name] = marker
                    if name in self._applied:  # and it replaced the one in force
                        del self._applied[name]
                        changes.append(self._put_back(name, " (a newer request is over)"))
                    continue
            self._kept.setdefault(name, own_level(name))
            self._applied[name] = (marker, now + left if timeout else None)
            level = str(request["level"]).upper()
            late = timeout - left >= LATE_SECS  # not just the heartbeat's delay
            changes.append(LevelChange(name, LEVELS[level], (
                f"{level} until reset" if not timeout else f"{level} for {timeout:g} s"
                if not late else f"{level} for {left:.1f} s, what is left of {timeout:g}")))
        for name, (marker, ends) in list(self._applied.items()):
            removed = name not in wanted  # with -r (a newer request was applied above)
            expired = ends is not None and now >= ends
            if not removed and not expired:
                continue
            del self._applied[name]
            if not removed:
                self._done[name] = marker
            changes.append(self._put_back(name, "" if removed else " (time is up)"))
        return changes

    def _put_back(self, name: str, why: str) -> LevelChange:
        kept = self._kept.pop(name)
        return LevelChange(name, kept, "back to "
                           f"{logging.getLevelName(kept) if kept else 'its parent'}{why}",
                           reset=True)
