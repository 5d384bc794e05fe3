"""`storm-zmq submit --wait`: counting ready workers and the lines it prints (pure
parts; the real thing runs in tests/cli/test_logs_cmd.py against a real cluster)."""

from __future__ import annotations

import io
from typing import Any

from storm_zmq.cli.progress import ready_workers, wait_for_workers

ASSIGNMENT = {"slots": [["s1", "h1", 6700], ["s2", "h2", 6701]]}


def test_ready_workers_counts_slots_with_a_heartbeat_since_the_launch() -> None:
    assert ready_workers(None, {}, 0) == (0, 0)
    assert ready_workers(ASSIGNMENT, {}, 0) == (0, 2)
    beats = {"h1-6700": {"time": 105.0}, "h2-6701": {"time": 99.0}, "h3-1": {"time": 200}}
    assert ready_workers(ASSIGNMENT, beats, 100.0) == (1, 2)
    assert ready_workers(ASSIGNMENT, beats, 0.0) == (2, 2)


class ScriptedState:
    """The two reads wait_for_workers makes, answering from a script per poll."""

    def __init__(self, script: list[tuple[dict[str, Any] | None, dict[str, Any]]]) -> None:
        self.script = script
        self.polls = 0

    def get_assignment(self, topology_id: str) -> dict[str, Any] | None:
        self.polls += 1
        return self.script[min(self.polls, len(self.script)) - 1][0]

    def worker_beats(self, topology_id: str) -> dict[str, Any]:
        return self.script[min(self.polls, len(self.script)) - 1][1]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wait_prints_each_change_until_every_worker_is_ready() -> None:
    one = {"h1-6700": {"time": 1}}
    state = ScriptedState([(None, {}), (ASSIGNMENT, {}), (ASSIGNMENT, one), (ASSIGNMENT, one),
                           (ASSIGNMENT, {**one, "h2-6701": {"time": 2}})])
    err, clock = io.StringIO(), FakeClock()
    assert wait_for_workers(state, "t-1", 2, 0.0, 30, err, clock, clock.sleep)
    assert err.getvalue().splitlines() == [
        "waiting for workers: 0/2 ready (not assigned yet: waiting for nimbus)",
        "waiting for workers: 0/2 ready",
        "waiting for workers: 1/2 ready",
        "waiting for workers: 2/2 ready",
    ]


def test_wait_gives_up_at_the_timeout_repeating_its_line_while_nothing_changes() -> None:
    state = ScriptedState([(ASSIGNMENT, {"h1-6700": {"time": 1}})])
    err, clock = io.StringIO(), FakeClock()
    assert not wait_for_workers(state, "t-1", 2, 0.0, 12, err, clock, clock.sleep)
    assert clock.now == 12
    assert err.getvalue().splitlines() == ["waiting for workers: 1/2 ready"] * 3  # 0, 5, 10 s
