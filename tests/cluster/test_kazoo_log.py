"""kazoo's repeated warnings during an outage: one a minute per kind, with a count."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from storm_zmq.cluster.kazoo_log import RepeatedWarnings, quiet_repeated_warnings


def record(msg: str, *args: object, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord("kazoo.client", level, __file__, 1, msg, args, None)


def test_one_warning_of_a_kind_per_interval_and_then_how_many_were_held_back() -> None:
    now = [0.0]
    quiet = RepeatedWarnings(60.0, clock=lambda: now[0])
    passed = []
    for second in range(0, 150, 2):  # an outage: an attempt every 2 s for 2.5 minutes
        now[0] = float(second)
        rec = record("Connection dropped: %s", "socket connection error: Connection refused")
        if quiet.filter(rec):
            passed.append((second, rec.getMessage()))
    assert [second for second, _ in passed] == [0, 60, 120]
    assert passed[0][1] == "Connection dropped: socket connection error: Connection refused"
    assert passed[1][1] == ("Connection dropped: socket connection error: Connection refused "
                            "(29 more like it since the last one logged; at most one every 60 s "
                            "is logged)")


def test_kinds_are_templates_and_errors_and_news_always_pass() -> None:
    quiet = RepeatedWarnings(60.0, clock=lambda: 0.0)
    assert quiet.filter(record("Connection dropped: %s", "a"))
    assert not quiet.filter(record("Connection dropped: %s", "b"))  # same kind, other text
    assert quiet.filter(record("Connection time-out: %s", "a"))  # another kind
    assert quiet.filter(record("Transition to CONNECTING"))
    connecting = "Connecting to %s(%s):%s, use_ssl: %r"  # INFO, at every attempt
    assert quiet.filter(record(connecting, "h", "1.2.3.4", 2181, False, level=logging.INFO))
    assert not quiet.filter(record(connecting, "h", "1.2.3.4", 2181, False, level=logging.INFO))
    for _ in range(3):
        assert quiet.filter(record("Unhandled exception in connection loop", level=logging.ERROR))
        assert quiet.filter(record("Zookeeper connection established, state: %s", "CONNECTED",
                                   level=logging.INFO))


def test_the_kinds_remembered_are_bounded() -> None:
    quiet = RepeatedWarnings(60.0, clock=lambda: 0.0, max_kinds=2)
    assert quiet.filter(record("one")) and quiet.filter(record("two"))
    assert quiet.filter(record("three"))  # "one" is forgotten ...
    assert quiet.filter(record("one"))  # ... so it passes again
    assert not quiet.filter(record("three"))


@pytest.fixture
def kazoo_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("kazoo.client")
    filters = list(logger.filters)
    yield logger
    logger.filters[:] = filters


def test_installed_once_on_kazoos_logger(kazoo_logger: logging.Logger) -> None:
    kazoo_logger.filters[:] = []
    first = quiet_repeated_warnings()
    assert quiet_repeated_warnings() is first
    assert [f for f in kazoo_logger.filters if isinstance(f, RepeatedWarnings)] == [first]


def test_flush_says_what_was_held_back_and_starts_afresh() -> None:
    quiet = RepeatedWarnings(60.0, clock=lambda: 0.0)
    for _ in range(4):
        quiet.filter(record("Connection dropped: %s", "refused"))
    quiet.filter(record("Transition to CONNECTING"))
    assert quiet.flush() == {"Connection dropped: %s": 3}
    assert quiet.flush() == {}
    assert quiet.filter(record("Connection dropped: %s", "refused"))  # a new outage: logged
