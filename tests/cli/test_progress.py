"""`storm-zmq submit --wait`: counting ready workers and the lines it prints (pure
parts; the real thing runs in tests/cli/test_logs_cmd.py against a real cluster)."""

from __future__ import annotations

import io
from typing import Any

from storm_zmq.cli.progress import ready_workers, wait_for_workers

ASSIGNMENT = {"slots": [["s1", "h1", 6700], ["s2", "h2", 6701]], "launched": [50.0, 60.0]}


def beat(launched: float, time: float = 1.0) -> dict[str, Any]:
    return {"time": time, "launched": launched, "stats": {}}


def test_ready_workers_counts_slots_with_a_heartbeat_of_their_current_placement() -> None:
    assert ready_workers(None, {}) == (0, 0)
    assert ready_workers(ASSIGNMENT, {}) == (0, 2)
    # h2's heartbeat is an earlier placement's (another marker), whatever its time;
    # h3 is no slot of the assignment
    beats = {"h1-6700": beat(50.0, time=1.0), "h2-6701": beat(55.0, time=1e12),
             "h3-1": beat(60.0)}
    assert ready_workers(ASSIGNMENT, beats) == (1, 2)
    assert ready_workers(ASSIGNMENT, {**beats, "h2-6701": beat(60.0, time=-1e12)}) == (2, 2)
    assert ready_workers(ASSIGNMENT, {"h1-6700": {"time": 1.0}}) == (0, 2)  # no marker


class ScriptedState:
    """The reads wait_for_workers makes, answering from a script per poll:
    (assignment, heartbeats[, errors])."""

    def __init__(self, script: list[tuple[Any, ...]]) -> None:
        self.script = script
        self.polls = 0

    def get_assignment(self, topology_id: str) -> dict[str, Any] | None:
        self.polls += 1
        return self.script[min(self.polls, len(self.script)) - 1][0]

    def worker_beats(self, topology_id: str) -> dict[str, Any]:
        return self.script[min(self.polls, len(self.script)) - 1][1]

    def errors(self, topology_id: str) -> dict[str, Any]:
        entry = self.script[min(self.polls, len(self.script)) - 1]
        return entry[2] if len(entry) > 2 else {}  # type: ignore[misc]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wait_prints_each_change_until_every_worker_is_ready() -> None:
    one = {"h1-6700": beat(50.0)}
    state = ScriptedState([(None, {}), (ASSIGNMENT, {}), (ASSIGNMENT, one), (ASSIGNMENT, one),
                           (ASSIGNMENT, {**one, "h2-6701": beat(60.0)})])
    err, clock = io.StringIO(), FakeClock()
    assert wait_for_workers(state, "t-1", 2, 30, err, clock, clock.sleep)
    assert err.getvalue().splitlines() == [
        "waiting for workers: 0/2 ready (not assigned yet: nimbus assigns it once it leads and "
        "enough worker slots are free)",
        "waiting for workers: 0/2 ready",
        "waiting for workers: 1/2 ready",
        "waiting for workers: 2/2 ready",
    ]


def test_wait_gives_up_at_the_timeout_repeating_its_line_while_nothing_changes() -> None:
    state = ScriptedState([(ASSIGNMENT, {"h1-6700": beat(50.0)})])
    err, clock = io.StringIO(), FakeClock()
    assert not wait_for_workers(state, "t-1", 2, 12, err, clock, clock.sleep)
    assert clock.now == 12
    assert err.getvalue().splitlines() == ["waiting for workers: 1/2 ready"] * 3  # 0, 5, 10 s


def test_wait_prints_the_errors_workers_record_as_they_come() -> None:
    """A cluster audit: a component raising in initialize() showed as "0/1 ready" until
    the timeout; its error is in ZooKeeper now (cluster/worker.py), and said at once."""
    failed = {"time": 5.0, "host": "h1", "port": 6700,
              "text": "component 'bad' task 3 failed:\nTraceback (most recent call last):\n"
                      "  ...\nRuntimeError: cannot connect to db:5432\n"}
    state = ScriptedState([(ASSIGNMENT, {}, {}), (ASSIGNMENT, {}, {"bad": [failed]})])
    err, clock = io.StringIO(), FakeClock()
    assert not wait_for_workers(state, "t-1", 2, 6, err, clock, clock.sleep)
    assert err.getvalue().splitlines() == [
        "waiting for workers: 0/2 ready",
        "waiting for workers: error in bad on h1:6700: RuntimeError: cannot connect to db:5432",
        "waiting for workers: 0/2 ready",  # 5 s later; the error is said once
    ]


def test_the_same_error_of_a_relaunched_worker_is_counted_not_said_again() -> None:
    def failed(at: float) -> dict[str, Any]:
        return {"time": at, "host": "h1", "port": 6700,
                "text": "component 'bad' task 3 failed:\nRuntimeError: init failed\n"}

    state = ScriptedState([(ASSIGNMENT, {}, {"bad": [failed(1.0)]}),
                           (ASSIGNMENT, {}, {"bad": [failed(1.0), failed(2.0)]}),
                           (ASSIGNMENT, {}, {"bad": [failed(1.0), failed(2.0), failed(3.0)]})])
    err, clock = io.StringIO(), FakeClock()
    assert not wait_for_workers(state, "t-1", 2, 6, err, clock, clock.sleep)
    assert err.getvalue().splitlines() == [
        "waiting for workers: error in bad on h1:6700: RuntimeError: init failed",
        "waiting for workers: 0/2 ready",
        "waiting for workers: 0/2 ready (an error above recorded again 2 time(s) since)",
    ]
