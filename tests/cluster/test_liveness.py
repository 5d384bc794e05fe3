"""`ChangeClock`: ages measured by the observer's clock from when a reported value
last changed, whatever clock wrote the value."""

from __future__ import annotations

import pytest

from storm_zmq.cluster.liveness import ChangeClock

HOUR = 3600.0


def test_a_key_seen_for_the_first_time_is_fresh_from_that_moment() -> None:
    clock: ChangeClock[str] = ChangeClock()
    clock.observe("s1", 5.0, now=1000.0)
    assert clock.age("s1", now=1000.0) == 0
    assert clock.is_fresh("s1", 30, now=1000.0)


def test_an_unchanged_value_ages_and_a_changed_one_starts_again() -> None:
    clock: ChangeClock[str] = ChangeClock()
    clock.observe("s1", 5.0, now=1000.0)
    clock.observe("s1", 5.0, now=1010.0)
    assert clock.age("s1", now=1010.0) == 10
    clock.observe("s1", 6.0, now=1020.0)
    assert clock.age("s1", now=1020.0) == 0
    assert clock.age("s1", now=1025.0) == 5


def test_the_timeout_boundary_is_inclusive() -> None:
    clock: ChangeClock[str] = ChangeClock()
    clock.observe("w", "beat-1", now=100.0)
    assert clock.is_fresh("w", 30, now=130.0)
    assert not clock.is_fresh("w", 30, now=130.001)
    clock.observe("w", "beat-1", now=131.0)  # observing the same value again changes nothing
    assert not clock.is_fresh("w", 30, now=131.0)


@pytest.mark.parametrize("skew", [-HOUR, +HOUR, -1e9, +1e9])
def test_a_reported_clock_far_ahead_or_behind_is_judged_only_by_its_changes(skew: float) -> None:
    clock: ChangeClock[str] = ChangeClock()
    observer = 1000.0
    for step in range(10):  # the reporter's clock ticks once a second, offset by `skew`
        clock.observe("s1", observer + skew + step, now=observer + step)
        assert clock.is_fresh("s1", 1, now=observer + step)
    # it stops reporting: timed out one timeout after its last change, not before
    last = observer + 9
    clock.observe("s1", last + skew, now=last + 30)
    assert clock.is_fresh("s1", 30, now=last + 30)
    clock.observe("s1", last + skew, now=last + 31)
    assert not clock.is_fresh("s1", 30, now=last + 31)


def test_a_value_going_backwards_is_a_change() -> None:
    clock: ChangeClock[str] = ChangeClock()
    clock.observe("s1", 500.0, now=0.0)
    clock.observe("s1", 400.0, now=60.0)  # its clock was stepped back
    assert clock.age("s1", now=60.0) == 0


def test_values_compare_by_equality_whatever_their_type() -> None:
    clock: ChangeClock[tuple[str, int]] = ChangeClock()
    key = ("topology-1", 6700)
    clock.observe(key, (1.5, None), now=0.0)
    clock.observe(key, (1.5, None), now=10.0)
    assert clock.age(key, now=10.0) == 10
    clock.observe(key, (1.5, 99.0), now=20.0)  # a first heartbeat
    assert clock.age(key, now=20.0) == 0
    clock.observe(key, (2.5, 99.0), now=30.0)  # a new placement, the same old beat
    assert clock.age(key, now=30.0) == 0


def test_keys_are_independent() -> None:
    clock: ChangeClock[str] = ChangeClock()
    clock.observe("a", 1, now=0.0)
    clock.observe("b", 1, now=0.0)
    clock.observe("a", 2, now=50.0)
    clock.observe("b", 1, now=50.0)
    assert clock.is_fresh("a", 30, now=50.0) and not clock.is_fresh("b", 30, now=50.0)


def test_retain_forgets_every_other_key_and_a_key_that_comes_back_starts_afresh() -> None:
    clock: ChangeClock[str] = ChangeClock()
    clock.observe("a", 1, now=0.0)
    clock.observe("b", 1, now=0.0)
    clock.retain(["a"])
    assert "a" in clock and "b" not in clock and len(clock) == 1
    with pytest.raises(KeyError):
        clock.age("b", now=100.0)
    clock.observe("b", 1, now=100.0)  # the same value as before it was forgotten
    assert clock.age("b", now=100.0) == 0
    clock.retain(iter(["a", "b", "never-seen"]))  # any iterable; unknown keys are no-ops
    assert len(clock) == 2 and "never-seen" not in clock


def test_memory_stays_bounded_by_the_keys_retained_each_round() -> None:
    clock: ChangeClock[int] = ChangeClock()
    for round_ in range(100):
        keys = range(round_ * 10, round_ * 10 + 10)  # a fresh set of keys every round
        for key in keys:
            clock.observe(key, round_, now=float(round_))
        clock.retain(keys)
        assert len(clock) == 10


def test_clear_forgets_everything() -> None:
    clock: ChangeClock[str] = ChangeClock()
    clock.observe("a", 1, now=0.0)
    clock.clear()
    assert len(clock) == 0
    clock.observe("a", 1, now=500.0)
    assert clock.is_fresh("a", 30, now=500.0)


def test_an_unknown_key_has_no_age() -> None:
    with pytest.raises(KeyError):
        ChangeClock[str]().is_fresh("nobody", 30, now=0.0)
