"""The workers' weights in the shuffles, from how short of CPU each is (pure)."""

from __future__ import annotations

import math

import pytest

from storm_zmq.runtime.balance import (
    BEHIND,
    BEHIND_TUPLES,
    BUSY_HIGH,
    DEADBAND,
    MIN_WEIGHT,
    BusyMeter,
    WorkerBalance,
    falls_behind,
    largest_share,
    short_of_cpu,
)


def test_busy_meter_is_the_share_of_one_core_between_samples() -> None:
    meter = BusyMeter()
    assert meter.sample(10.0, 100.0) is None, "the first sample has nothing to compare"
    assert meter.sample(10.45, 100.5) == pytest.approx(0.9)
    assert meter.sample(11.45, 101.0) == 1.0, "more than a core (threads outside the lock) counts as 1"
    assert meter.sample(11.45, 101.0) is None, "the clock did not move"
    assert meter.sample(11.45, 102.0) == 0.0


def test_a_worker_is_short_of_cpu_only_while_some_executor_falls_behind() -> None:
    assert short_of_cpu(0.95, True) == 0.95
    assert short_of_cpu(0.95, False) == BUSY_HIGH, "busy with time to spare: not above the mark"
    assert short_of_cpu(0.5, False) == 0.5


@pytest.mark.parametrize(("capacity", "mark"), [
    (100, 25), (1000, 250), (4096, 1024),  # a quarter, CPython's 4096 included
    (8192, BEHIND_TUPLES), (32768, BEHIND_TUPLES),  # PyPy's: 1024 tuples, not 8192
])
def test_an_executor_falls_behind_at_a_quarter_of_its_queue_or_1024_tuples(capacity: int, mark: int) -> None:
    assert BEHIND == 0.25 and BEHIND_TUPLES == 1024
    assert falls_behind(mark, capacity)
    assert not falls_behind(mark - 1, capacity)


def settle(balance: WorkerBalance, busy: dict[int, float], reports: int, start: float = 0.0) -> float:
    now = start
    for _ in range(reports):
        now += 0.5
        for worker, value in busy.items():
            balance.observe(worker, value, now)
        balance.update(now)
    return now


def test_the_busier_worker_loses_weight_step_by_step_down_to_the_floor() -> None:
    balance = WorkerBalance(2)
    busy = {0: 0.95, 1: 0.6}
    settle(balance, busy, 1)
    first = balance.weights[0]
    assert balance.weights[1] == 1.0
    assert math.exp(-0.175) == pytest.approx(first), "one step: exp(gain x distance from the mean)"
    settle(balance, busy, 1, start=0.5)
    assert balance.weights[0] < first, "a worker that stays busier keeps losing"
    settle(balance, busy, 40, start=1.0)
    assert balance.weights == {0: MIN_WEIGHT, 1: 1.0}, "never below the floor"
    assert balance.task_weights({7: 0, 8: 1}) == {7: MIN_WEIGHT, 8: 1.0}


def test_weights_hold_once_the_workers_are_about_as_busy() -> None:
    balance = WorkerBalance(2)
    now = settle(balance, {0: 0.95, 1: 0.6}, 3)
    held = dict(balance.weights)
    for _ in range(10):
        now += 0.5
        balance.observe(0, 0.9, now)
        balance.observe(1, 0.9 - DEADBAND, now)  # each within the dead band of the mean
        assert not balance.update(now)
    assert balance.weights == held


def test_weights_hold_just_below_the_mark_and_relax_well_below_it() -> None:
    balance = WorkerBalance(2)
    now = settle(balance, {0: 0.95, 1: 0.6}, 6)
    steered = balance.weights[0]
    assert steered < 0.5
    now = settle(balance, {0: 0.75, 1: 0.65}, 10, start=now)  # steered to below the mark
    assert balance.weights[0] == steered, "no swing back while a worker is still busy"
    settle(balance, {0: 0.65, 1: 0.3}, 30, start=now)  # nobody is short of CPU
    assert balance.weights == {0: 1.0, 1: 1.0}
    assert balance.task_weights({7: 0, 8: 1}) == {}, "even again: the plain round-robin"


def test_only_a_worker_above_the_mark_loses_weight() -> None:
    balance = WorkerBalance(3)
    settle(balance, {0: 0.95, 1: 0.45, 2: 0.35}, 20)
    assert balance.weights == {0: MIN_WEIGHT, 1: 1.0, 2: 1.0}, "1 is above the mean, yet far from short"


def test_a_peer_not_heard_from_lately_gets_the_even_weight() -> None:
    balance = WorkerBalance(3, expiry_secs=3.0)
    balance.observe(2, 0.99, 0.0)  # worker 2 says it is the busiest, once
    now = settle(balance, {0: 0.95, 1: 0.6}, 1)
    assert balance.weights[2] < balance.weights[0] < balance.weights[1] == 1.0
    now = settle(balance, {0: 0.95, 1: 0.6}, 6, start=now)  # 3 s later 2 is unknown
    assert balance.weights[2] == 1.0
    assert balance.weights[0] < 0.5, "the two that report go on balancing"
    settle(balance, {1: 0.95}, 32, start=now)  # and then only 1 reports (0 expires after 3 s)
    assert balance.weights == {0: 1.0, 1: 1.0, 2: 1.0}, "one known worker has nothing to balance against"


def test_nonsense_is_not_observed() -> None:
    balance = WorkerBalance(2)
    balance.observe(5, 0.9, 0.0)  # no such worker
    balance.observe(0, math.nan, 0.0)
    balance.observe(1, 0.2, 0.0)
    assert not balance.update(0.5)
    assert balance.weights == {0: 1.0, 1: 1.0}


@pytest.mark.parametrize("base", [0.3, 0.45, 0.55, 0.7])
def test_two_workers_settle_without_swinging(base: float) -> None:
    """A model of the word count: worker 0 has `base` of a core of its own work
    (spout, acker) plus 0.6 x its share of the shuffled work; worker 1 only the
    latter; both queues fall behind. The weights must come to rest, not swing."""
    balance = WorkerBalance(2)
    history = []
    now = 0.0
    for _ in range(80):
        share = balance.weights[0] / (balance.weights[0] + balance.weights[1])
        now += 0.5
        balance.observe(0, min(1.0, base + 0.6 * share), now)
        balance.observe(1, min(1.0, 0.6 * (1 - share)), now)
        balance.update(now)
        history.append(balance.weights[0])
    assert len(set(history[-40:])) == 1, f"still moving: {history[-10:]}"
    share = history[-1] / (history[-1] + 1.0)
    busy0, busy1 = base + 0.6 * share, 0.6 * (1 - share)
    assert busy0 <= BUSY_HIGH or busy0 - busy1 <= 2 * DEADBAND + 0.05, (busy0, busy1)


def test_the_largest_share_is_one_threads_not_the_sum_and_leaves_out_new_and_reused_ids() -> None:
    before = {1: 0, 2: 100_000_000, 3: 900_000_000}
    after = {1: 300_000_000, 2: 500_000_000, 3: 5, 4: 2_000_000_000}
    # 1 grew 0.3 s, 2 grew 0.4 s; 3 went down (a new thread on a reused id), 4 is new
    assert largest_share(before, after, 0.5) == pytest.approx(0.8)
    assert largest_share(before, after, 0.2) == 1.0  # at most one core
    assert largest_share({3: 9}, {3: 5}, 0.5) is None
    assert largest_share({}, after, 0.5) is None
