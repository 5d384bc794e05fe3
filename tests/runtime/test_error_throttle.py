"""Storm's error throttle (storm_zmq.runtime.error_throttle): pure, every case."""

from __future__ import annotations

import pytest

from storm_zmq.runtime.error_throttle import ErrorThrottle, ErrorVerdict


def test_the_first_errors_of_an_interval_are_written_the_rest_counted_and_said_once() -> None:
    throttle = ErrorThrottle(limit=2, interval=10)
    verdicts = [throttle.admit(t) for t in (0.0, 1.0, 2.0, 3.0, 4.0)]
    assert verdicts == [ErrorVerdict(True), ErrorVerdict(True), ErrorVerdict(False, first_held=True),
                        ErrorVerdict(False), ErrorVerdict(False)]
    # a new interval: written again, with what was held back since the last written
    assert throttle.admit(10.0) == ErrorVerdict(True, held_before=3)
    assert throttle.admit(11.0) == ErrorVerdict(True)
    assert throttle.admit(12.0) == ErrorVerdict(False, first_held=True)  # said again, once
    assert throttle.admit(25.0) == ErrorVerdict(True, held_before=1)


def test_errors_below_the_limit_are_all_written() -> None:
    throttle = ErrorThrottle(limit=5, interval=10)
    assert all(throttle.admit(t * 3.0).write for t in range(100))  # at most 4 an interval


@pytest.mark.parametrize(("limit", "interval"), [(0, 10), (5, 0)])
def test_a_throttle_that_would_write_nothing_is_refused(limit: int, interval: float) -> None:
    with pytest.raises(ValueError):
        ErrorThrottle(limit, interval)
