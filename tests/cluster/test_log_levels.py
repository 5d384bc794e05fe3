"""set_log_level's requests as a worker applies them: pure."""

from __future__ import annotations

import logging

import pytest

from storm_zmq.cluster.log_levels import LogLevels, parse_request


def test_requests_parse_as_storm_writes_them() -> None:
    assert parse_request("ROOT=DEBUG:30") == ("ROOT", "DEBUG", 30.0)
    assert parse_request("storm_zmq.component.count=warn") == (
        "storm_zmq.component.count", "WARN", 0.0)
    assert parse_request(" a.b = info : 2.5 ") == ("a.b", "INFO", 2.5)


@pytest.mark.parametrize(("spec", "says"), [
    ("ROOT", "expected LOGGER=LEVEL or LOGGER=LEVEL:SECONDS"),
    ("=DEBUG", "expected LOGGER=LEVEL"),
    ("ROOT=", "expected LOGGER=LEVEL"),
    ("ROOT=LOUD", "unknown level 'LOUD' (one of ALL, TRACE, DEBUG"),
    ("ROOT=DEBUG:-1", "the timeout must be a number of seconds >= 0"),
    ("ROOT=DEBUG:soon", "got 'soon'"),
    ("ROOT=DEBUG:inf", "got 'inf'"),
])
def test_a_bad_request_says_what_is_wrong(spec: str, says: str) -> None:
    with pytest.raises(ValueError, match=None) as caught:
        parse_request(spec)
    assert says in str(caught.value) and repr(spec) in str(caught.value)


def levels_of(changes: list) -> list[tuple[str, int]]:
    return [(c.logger, c.level) for c in changes]


def test_a_timed_request_is_applied_once_and_the_level_put_back_when_its_time_is_up() -> None:
    own = {"a": logging.ERROR}
    levels = LogLevels()
    requests = {"a": {"level": "DEBUG", "timeout_secs": 30, "requested": 1.0},
                "ROOT": {"level": "WARN", "timeout_secs": 0, "requested": 1.0}}
    changes = levels.update(requests, 100.0, lambda name: own.get(name, 0))
    assert levels_of(changes) == [("a", logging.DEBUG), ("ROOT", logging.WARNING)]
    assert [c.why for c in changes] == ["DEBUG for 30 s", "WARN until reset"]
    assert levels.update(requests, 129.0, lambda name: 0) == []  # nothing new
    (back,) = levels.update(requests, 130.0, lambda name: 0)
    assert (back.logger, back.level, back.reset) == ("a", logging.ERROR, True)
    assert back.why == "back to ERROR (time is up)"
    assert levels.update(requests, 500.0, lambda name: 0) == []  # done: not applied again


def test_a_reset_puts_back_the_level_from_before_the_first_request() -> None:
    levels = LogLevels()
    first = {"a": {"level": "DEBUG", "requested": 1.0}}
    assert levels_of(levels.update(first, 0.0, lambda name: logging.NOTSET)) == [
        ("a", logging.DEBUG)]
    second = {"a": {"level": "ERROR", "requested": 2.0}}  # another request, no reset between
    assert levels_of(levels.update(second, 1.0, lambda name: logging.DEBUG)) == [
        ("a", logging.ERROR)]
    (back,) = levels.update({}, 2.0, lambda name: logging.ERROR)  # -r a
    assert (back.level, back.why) == (logging.NOTSET, "back to its parent")


def test_a_new_request_after_one_whose_time_is_up_applies_again() -> None:
    levels = LogLevels()
    old = {"a": {"level": "DEBUG", "timeout_secs": 1, "requested": 1.0}}
    levels.update(old, 0.0, lambda name: logging.INFO)
    assert levels_of(levels.update(old, 1.0, lambda name: 0)) == [("a", logging.INFO)]
    new = {"a": {"level": "DEBUG", "timeout_secs": 1, "requested": 2.0}}
    assert levels_of(levels.update(new, 2.0, lambda name: logging.INFO)) == [
        ("a", logging.DEBUG)]


def test_damaged_requests_are_ignored() -> None:
    levels = LogLevels()
    requests = {"a": "DEBUG", "b": {"level": "LOUD"}, "c": {"level": "info", "timeout_secs": "x"}}
    assert levels_of(levels.update(requests, 0.0, lambda name: 0)) == [("c", logging.INFO)]


def test_a_worker_that_sees_a_timed_request_late_applies_what_is_left_of_it() -> None:
    requests = {"a": {"level": "DEBUG", "timeout_secs": 30, "requested": 1000.0}}
    late = LogLevels()  # started 20 s after the request (by its wall clock)
    assert levels_of(late.update(requests, 5.0, lambda name: 0, wall=1020.0)) == [
        ("a", logging.DEBUG)]
    assert late.update(requests, 14.9, lambda name: 0, wall=1029.9) == []
    assert levels_of(late.update(requests, 15.0, lambda name: 0, wall=1030.0)) == [("a", 0)]
    over = LogLevels()  # started after it was over: a rebalance a week later
    assert over.update(requests, 0.0, lambda name: 0, wall=1000.0 + 7 * 86400) == []
    assert over.update(requests, 1.0, lambda name: 0, wall=1000.0 + 7 * 86400 + 1) == []
    untimed = {"a": {"level": "DEBUG", "requested": 1500.0}}  # until reset: any time
    assert levels_of(over.update(untimed, 2.0, lambda name: 0, wall=2e9)) == [
        ("a", logging.DEBUG)]


def test_a_newer_request_already_over_puts_back_the_one_in_force() -> None:
    levels = LogLevels()
    assert levels_of(levels.update({"a": {"level": "DEBUG", "requested": 1000.0}}, 0.0,
                                   lambda name: logging.WARNING, wall=1000.0)) == [
        ("a", logging.DEBUG)]
    # ERROR for 5 s, requested by a host whose clock is 10 s behind this one's
    newer = {"a": {"level": "ERROR", "timeout_secs": 5, "requested": 1010.0}}
    (back,) = levels.update(newer, 20.0, lambda name: logging.DEBUG, wall=1020.0)
    assert (back.level, back.why) == (logging.WARNING, "back to WARNING (a newer request is over)")
    assert levels.update(newer, 21.0, lambda name: 0, wall=1021.0) == []


def test_a_late_worker_says_what_is_left_of_the_timeout() -> None:
    (change,) = LogLevels().update({"a": {"level": "DEBUG", "timeout_secs": 30,
                                          "requested": 1000.0}}, 0.0, lambda name: 0,
                                   wall=1012.0)
    assert change.why == "DEBUG for 18.0 s, what is left of 30"


def test_a_timed_request_is_over_by_the_requesters_time_plus_its_timeout() -> None:
    from storm_zmq.cluster.log_levels import request_over

    timed = {"level": "DEBUG", "timeout_secs": 30, "requested": 1000.0}
    assert not request_over(timed, 1029.9) and request_over(timed, 1030.0)
    assert not request_over({"level": "DEBUG", "requested": 1000.0}, 1e12)  # until reset
    assert not request_over("DEBUG", 1e12) and not request_over({"timeout_secs": 1}, 1e12)
