"""The workers' weights in the shuffles, from how busy each is (pure)."""

from __future__ import annotations

import math

import pytest

from storm_zmq.runtime.balance import (
    BUSY_HIGH,
    DEADBAND,
    MIN_WEIGHT,
    BusyMeter,
    WorkerBalance,
)


def test_busy_meter_is_the_share_of_one_core_between_samples() -> None:
    meter = BusyMeter()
    assert meter.sample(10.0, 100.0) is None, "the first sample has nothing to compare"
    assert meter.sample(10.45, 100.5) == pytest.approx(0.9)
    assert meter.sample(11.45, 101.0) == 1.0, "more than a core (threads outside the lock) counts as 1"
    assert meter.sample(11.45, 101.0) is None, "the clock did not move"
    assert meter.sample(11.45, 102.0) == 0.0


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
    assert math.exp(-2 * 0.175) == pytest.approx(first), "one step: exp(gain x distance from the mean), twice"
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


def test_below_the_high_mark_weights_relax_to_the_even_spread() -> None:
    balance = WorkerBalance(2)
    now = settle(balance, {0: 0.95, 1: 0.6}, 6)
    assert balance.weights[0] < 0.5
    settle(balance, {0: BUSY_HIGH, 1: 0.3}, 10, start=now)  # nobody is short of CPU
    assert balance.weights == {0: 1.0, 1: 1.0}
    assert balance.task_weights({7: 0, 8: 1}) == {}, "even again: the plain round-robin"


def test_a_peer_not_heard_from_lately_gets_the_even_weight() -> None:
    balance = WorkerBalance(3, expiry_secs=3.0)
    balance.observe(2, 0.99, 0.0)  # worker 2 says it is the busiest, once
    now = settle(balance, {0: 0.95, 1: 0.6}, 1)
    assert balance.weights[2] < balance.weights[0] < balance.weights[1] == 1.0
    now = settle(balance, {0: 0.95, 1: 0.6}, 6, start=now)  # 3 s later 2 is unknown
    assert balance.weights[2] == 1.0
    assert balance.weights[0] < 0.5, "the two that report go on balancing"
    settle(balance, {1: 0.95}, 16, start=now)  # and then only 1 reports (0 expires after 3 s)
    assert balance.weights == {0: 1.0, 1: 1.0, 2: 1.0}, "one known worker has nothing to balance against"


def test_nonsense_is_not_observed() -> None:
    balance = WorkerBalance(2)
    balance.observe(5, 0.9, 0.0)  # no such worker
    balance.observe(0, math.nan, 0.0)
    balance.observe(1, 0.2, 0.0)
    assert not balance.update(0.5)
    assert balance.weights == {0: 1.0, 1: 1.0}
