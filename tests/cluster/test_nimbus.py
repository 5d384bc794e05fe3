"""Nimbus's decisions, one monitoring round at a time, against a real ZooKeeper (no
daemons): what counts as a live worker, what is cleaned up, when leading stops.

`nimbus.monitor(now=...)` gives nimbus's clock. Supervisors and workers write times
by clocks of their own, here often an hour off nimbus's: nimbus must judge them by
when it saw their values change, never by the values (cluster/liveness.py). A
round is run every 10 s of nimbus time, with what each host writes in between.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from storm_zmq.cli.main import main
from storm_zmq.cluster.heartbeat import worker_beat
from storm_zmq.cluster.nimbus import Nimbus, stored_assignment
from storm_zmq.cluster.scheduler import Slot
from storm_zmq.cluster.state import ClusterState
from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.assignment import WorkerSlot, assign
from tests.zk_fixtures import cli_overrides

Factory = Callable[..., ClusterState]
TID = "ids-1"
HOUR = 3600.0
#: DEFAULTS' nimbus.supervisor.timeout.secs, nimbus.task.timeout.secs, nimbus.task.launch.secs
SUPERVISOR_TIMEOUT, TASK_TIMEOUT, LAUNCH_GRACE = 60, 30, 120
S1, S2 = Slot("s1", "h1", 6700), Slot("s2", "h2", 6700)


@pytest.fixture
def nimbus(make_state: Factory, zk_conf: dict[str, Any]) -> Nimbus:
    leader = Nimbus({**DEFAULTS, **zk_conf, "nimbus.monitor.freq.secs": 1})
    leader.state = make_state()
    return leader


def one_worker_topology(state: ClusterState, slot: Slot, launched: float) -> None:
    state.set_topology(TID, {"name": "ids", "status": "active", "num_workers": 1,
                             "components": {"numbers": [1, 1]}, "ackers": 0, "conf": {}})
    assignment = assign(TID, {"numbers": (1, 1)}, [WorkerSlot(slot.host, slot.port)], 0)
    state.set_assignment(TID, stored_assignment(assignment, [slot], [launched]))


def register(state: ClusterState, supervisor: str, at: float) -> None:
    """A supervisor's registration (refreshed by calling this again), written at
    `at` by its clock. Supervisor "s<n>" is on host "h<n>"."""
    state.register_supervisor(supervisor, {"host": "h" + supervisor[1:], "ports": [6700, 6701],
                                           "time": at})


def beat(state: ClusterState, slot: Slot, launched: float, at: float) -> None:
    """A heartbeat of the worker in `slot` with placement marker `launched`, written
    at `at` by its clock."""
    state.heartbeat(TID, slot.host, slot.port, worker_beat(at, launched, {}))


def placed_on_s1(nimbus: Nimbus, *, beating: bool) -> tuple[ClusterState, float]:
    """One worker placed on s1 now, s1 and s2 registered, the worker's first
    heartbeat written (if `beating`) and nimbus's first round run: (state, start)."""
    state, start = nimbus.state, time.time()
    one_worker_topology(state, S1, launched=start)
    register(state, "s1", start)
    register(state, "s2", start)
    if beating:
        beat(state, S1, start, start)
    nimbus.monitor(now=start)
    return state, start


def slots(state: ClusterState) -> list[list[Any]]:
    return (state.get_assignment(TID) or {})["slots"]


def marker(state: ClusterState) -> float:
    """The placement marker of worker 0, as nimbus wrote it."""
    return (state.get_assignment(TID) or {})["launched"][0]


@pytest.mark.parametrize("skew", [-HOUR, +HOUR, 0])
def test_a_supervisor_with_a_skewed_clock_lives_while_its_registration_changes(
        nimbus: Nimbus, skew: float) -> None:
    # Its worker never heartbeats and has all the launch grace it wants: it lives
    # exactly as long as its supervisor, the one that would start it, does.
    nimbus.conf["nimbus.task.launch.secs"] = 10**6
    state, start = nimbus.state, time.time()
    one_worker_topology(state, S1, launched=start)
    for elapsed in range(0, 301, 10):  # longer than every timeout
        register(state, "s1", start + skew + elapsed)
        register(state, "s2", start + elapsed)
        nimbus.monitor(now=start + elapsed)
        assert slots(state) == [["s1", "h1", 6700]], elapsed
    # s1 stops refreshing its registration (its node stays): its worker is moved
    # once nimbus has not seen s1 change for the timeout
    for elapsed in range(310, 300 + SUPERVISOR_TIMEOUT + 1, 10):
        register(state, "s2", start + elapsed)
        nimbus.monitor(now=start + elapsed)
        assert slots(state) == [["s1", "h1", 6700]], elapsed
    register(state, "s2", start + 300 + SUPERVISOR_TIMEOUT + 1)
    nimbus.monitor(now=start + 300 + SUPERVISOR_TIMEOUT + 1)
    assert slots(state) == [["s2", "h2", 6700]]


def test_a_heartbeating_worker_outlives_its_supervisor(nimbus: Nimbus) -> None:
    # Storm's workers run on when their supervisor stops or restarts: nimbus keeps
    # one where it is while it heartbeats, and moves it once its heartbeats stop.
    state, start = nimbus.state, time.time()
    one_worker_topology(state, S1, launched=start)
    register(state, "s1", start)
    for elapsed in range(0, 301, 10):  # s1 refreshes no more: dead to nimbus after 60 s
        register(state, "s2", start + elapsed)
        beat(state, S1, start, start + elapsed)
        nimbus.monitor(now=start + elapsed)
        assert slots(state) == [["s1", "h1", 6700]], elapsed
    for elapsed in range(310, 300 + TASK_TIMEOUT + 1, 10):  # its heartbeats stop
        register(state, "s2", start + elapsed)
        nimbus.monitor(now=start + elapsed)
        assert slots(state) == [["s1", "h1", 6700]], elapsed
    register(state, "s2", start + 300 + TASK_TIMEOUT + 1)
    nimbus.monitor(now=start + 300 + TASK_TIMEOUT + 1)
    assert slots(state) == [["s2", "h2", 6700]]  # not to s1's free port: s1 is dead


def test_a_worker_whose_supervisor_left_before_it_heartbeat_gets_the_task_timeout(
        nimbus: Nimbus) -> None:
    # A supervisor restarted just after its worker was placed: the worker may yet
    # heartbeat (the supervisor started it, and adopts it), but if it never
    # does, nobody will start it: not the launch grace, the task timeout.
    state, start = placed_on_s1(nimbus, beating=False)
    state.unregister_supervisor("s1")  # stopped: its node goes at once
    for elapsed in range(10, TASK_TIMEOUT + 1, 10):
        register(state, "s2", start + elapsed)
        nimbus.monitor(now=start + elapsed)
        assert slots(state) == [["s1", "h1", 6700]], elapsed
    register(state, "s2", start + TASK_TIMEOUT + 1)
    nimbus.monitor(now=start + TASK_TIMEOUT + 1)
    assert slots(state) == [["s2", "h2", 6700]]


def test_a_worker_whose_address_another_supervisor_registers_is_moved(nimbus: Nimbus) -> None:
    # s1 came back with another storm.local.dir, so another id: it does not adopt
    # the worker, and a worker it was given on that port could not bind
    state, start = placed_on_s1(nimbus, beating=True)
    state.unregister_supervisor("s1")
    beat(state, S1, start, start + 10)
    register(state, "s2", start + 10)
    nimbus.monitor(now=start + 10)
    assert slots(state) == [["s1", "h1", 6700]]  # heartbeating: it stays
    state.register_supervisor("s1-new", {"host": "h1", "ports": [6700], "time": start + 20})
    beat(state, S1, start, start + 20)
    register(state, "s2", start + 20)
    nimbus.monitor(now=start + 20)
    assert slots(state) != [["s1", "h1", 6700]]


def test_a_worker_whose_address_another_supervisor_registers_is_moved_there_when_nothing_else_is_free(
        nimbus: Nimbus) -> None:
    # as above, with no other supervisor: its one slot is that address, which the
    # old worker, still running, kept "used", so nothing was free and the worker
    # was left as it was (a recovery audit: killed, never started again)
    state, start = placed_on_s1(nimbus, beating=True)
    state.unregister_supervisor("s1")
    state.register_supervisor("s1-new", {"host": "h1", "ports": [6700], "time": start + 10})
    beat(state, S1, start, start + 10)
    nimbus.monitor(now=start + 10)
    assert slots(state) == [["s1-new", "h1", 6700]]


def test_supervisors_that_disagree_on_a_transport_setting_are_warned_about_once(
        nimbus: Nimbus, caplog: pytest.LogCaptureFixture) -> None:
    state, start = nimbus.state, time.time()
    for sid, frame in (("s1", 1 << 24), ("s2", 1 << 20)):
        state.register_supervisor(sid, {"host": "h" + sid[1:], "ports": [6700], "time": start,
                                        "transport": {"storm.messaging.zmq.max.frame.size": frame}})
    with caplog.at_level(logging.WARNING):
        for elapsed in (0, 10):
            nimbus.monitor(now=start + elapsed)
    said = [r.getMessage() for r in caplog.records if "different transport settings" in r.getMessage()]
    assert len(said) == 1, said
    assert "storm.messaging.zmq.max.frame.size: 16777216 (s1), 1048576 (s2)" in said[0]


def test_a_worker_on_a_port_its_supervisor_no_longer_has_is_moved(nimbus: Nimbus) -> None:
    # s1 restarted with other supervisor.slots.ports and stopped the worker on
    # 6700: its last heartbeat is still fresh, but nobody runs it any more
    state, start = placed_on_s1(nimbus, beating=True)
    state.register_supervisor("s1", {"host": "h1", "ports": [6800], "time": start + 1})
    beat(state, S1, start, start + 1)
    nimbus.monitor(now=start + 1)
    assert slots(state) != [["s1", "h1", 6700]]


@pytest.mark.parametrize("skew", [-HOUR, +HOUR, 0])
def test_a_worker_with_a_skewed_clock_lives_while_its_heartbeat_changes(
        nimbus: Nimbus, skew: float) -> None:
    state, start = nimbus.state, time.time()
    one_worker_topology(state, S1, launched=start)
    for elapsed in range(0, 301, 10):  # longer than the launch grace and the timeout
        register(state, "s1", start + elapsed)
        register(state, "s2", start + elapsed)
        beat(state, S1, start, start + skew + elapsed)
        nimbus.monitor(now=start + elapsed)
        assert slots(state) == [["s1", "h1", 6700]], elapsed
    # its heartbeat stops changing: moved once the timeout has passed, not before
    for elapsed in range(310, 300 + TASK_TIMEOUT + 1, 10):
        register(state, "s1", start + elapsed)
        register(state, "s2", start + elapsed)
        nimbus.monitor(now=start + elapsed)
        assert slots(state) == [["s1", "h1", 6700]], elapsed
    register(state, "s1", start + 300 + TASK_TIMEOUT + 1)
    register(state, "s2", start + 300 + TASK_TIMEOUT + 1)
    nimbus.monitor(now=start + 300 + TASK_TIMEOUT + 1)
    assert slots(state) != [["s1", "h1", 6700]]  # moved (to a free slot)


def test_a_worker_placed_by_nimbus_with_a_clock_behind_is_not_moved(nimbus: Nimbus) -> None:
    # Its heartbeats are all older than its placement by nimbus's clock.
    state, start = nimbus.state, time.time()
    register(state, "s1", start)
    state.set_topology(TID, {"name": "ids", "status": "active", "num_workers": 1,
                             "components": {"numbers": [1, 1]}, "ackers": 0, "conf": {}})
    nimbus.monitor(now=start)
    placed, launched = slots(state), marker(state)
    for elapsed in range(10, 301, 10):  # beyond the launch grace
        register(state, "s1", start + elapsed)
        beat(state, Slot(*placed[0]), launched, start - HOUR + elapsed)
        nimbus.monitor(now=start + elapsed)
        assert slots(state) == placed and marker(state) == launched, elapsed


@pytest.mark.parametrize("written", [-600, +HOUR], ids=["long-ago", "clock-ahead"])
def test_a_heartbeat_of_an_earlier_placement_in_the_slot_is_none(
        nimbus: Nimbus, written: float) -> None:
    # The slot ran a worker of the same topology before; its last heartbeat is
    # still there, with that placement's marker, whatever its time. The worker
    # just placed there has its nimbus.task.launch.secs to write its own.
    state, start = nimbus.state, time.time()
    one_worker_topology(state, S1, launched=start)
    beat(state, S1, start - 1000, start + written)
    for elapsed in range(0, LAUNCH_GRACE, 10):  # past nimbus.task.timeout.secs
        register(state, "s1", start + elapsed)
        nimbus.monitor(now=start + elapsed)
        assert slots(state) == [["s1", "h1", 6700]], elapsed
    # without a heartbeat of its own once the grace has passed, it is moved
    register(state, "s1", start + LAUNCH_GRACE + 1)
    nimbus.monitor(now=start + LAUNCH_GRACE + 1)
    assert slots(state) == [["s1", "h1", 6701]]
    assert marker(state) != start  # a new placement, a new marker


def test_a_new_leader_gives_every_worker_a_full_timeout(
        nimbus: Nimbus, make_state: Factory, zk_conf: dict[str, Any]) -> None:
    # As in Storm: a new leader knows no ages, so a worker that died shortly
    # before the leader changed is moved one whole timeout after the change.
    state, start = nimbus.state, time.time()
    one_worker_topology(state, S1, launched=start)
    register(state, "s1", start)
    beat(state, S1, start, start)  # its last
    nimbus.monitor(now=start)
    successor = Nimbus({**DEFAULTS, **zk_conf})
    successor.state = make_state()
    register(state, "s1", start + 40)
    successor.monitor(now=start + 40)
    assert slots(state) == [["s1", "h1", 6700]]
    register(state, "s1", start + 40 + TASK_TIMEOUT + 1)
    successor.monitor(now=start + 40 + TASK_TIMEOUT + 1)
    assert slots(state) == [["s1", "h1", 6701]]


def test_a_nimbus_that_leads_again_starts_every_age_afresh(nimbus: Nimbus) -> None:
    # Between two terms another nimbus may have led, or ZooKeeper was down and
    # nobody could write: what this one saw before its new term says nothing.
    state, start = nimbus.state, time.time()
    one_worker_topology(state, S1, launched=start)
    register(state, "s1", start)
    beat(state, S1, start, start)  # its last
    nimbus.monitor(now=start)
    nimbus.stopping.set()  # so that the term ends as soon as it began
    nimbus._lead()
    register(state, "s1", start + TASK_TIMEOUT + 1)
    nimbus.monitor(now=start + TASK_TIMEOUT + 1)
    assert slots(state) == [["s1", "h1", 6700]], "a full timeout from the new term"
    register(state, "s1", start + 2 * TASK_TIMEOUT + 2)
    nimbus.monitor(now=start + 2 * TASK_TIMEOUT + 2)
    assert slots(state) == [["s1", "h1", 6701]]


def test_heartbeats_and_errors_left_by_a_removed_topology_are_removed(nimbus: Nimbus) -> None:
    # A worker of a topology nimbus just removed may write once more before it stops.
    state = nimbus.state
    state.heartbeat("gone-1", "h1", 6700, {"time": time.time()})
    state.report_error("gone-1", "numbers", "boom", host="h1", port=6700)
    state.heartbeat("kept-1", "h1", 6701, {"time": time.time()})
    state.set_topology("kept-1", {"name": "kept", "status": "inactive", "num_workers": 1,
                                  "components": {}, "ackers": 0, "conf": {}})
    nimbus.monitor()
    assert state.worker_beat_topologies() == ["kept-1"]
    assert state.error_topologies() == []


def test_a_leader_whose_session_was_interrupted_stops_leading_though_it_is_back(
        nimbus: Nimbus) -> None:
    nimbus._session_ok.set()
    leading = threading.Thread(target=nimbus._lead)
    leading.start()
    try:
        assert nimbus._leading.wait(5)
        # Lost and re-established between two of the leader's checks: another
        # nimbus may have been elected meanwhile.
        nimbus._session_changed("LOST")
        nimbus._session_changed("CONNECTED")
        leading.join(5)
        assert not leading.is_alive() and not nimbus._leading.is_set()
    finally:
        nimbus.stopping.set()
        leading.join(5)


def test_a_rebalance_waiting_for_slots_still_has_its_dead_workers_moved(nimbus: Nimbus) -> None:
    state, start = nimbus.state, time.time()
    register(state, "s1", start)
    one_worker_topology(state, S1, launched=start)  # no heartbeat, ever
    record = state.get_topology(TID) or {}
    state.set_topology(TID, {**record, "num_workers": 5, "rebalance": True})  # 2 slots only
    nimbus.monitor(now=start)
    register(state, "s1", start + LAUNCH_GRACE + 1)
    nimbus.monitor(now=start + LAUNCH_GRACE + 1)
    assert slots(state) == [["s1", "h1", 6701]]
    assert (state.get_topology(TID) or {})["rebalance"] is True  # still waiting


@pytest.mark.parametrize("skew", [-HOUR, +HOUR])
def test_the_kill_wait_is_counted_by_nimbus_from_when_it_sees_the_kill(
        nimbus: Nimbus, zk_conf: dict[str, Any], skew: float) -> None:
    # nimbus's clock is an hour off the clock of the host `kill` ran on
    state = nimbus.state
    one_worker_topology(state, S1, launched=time.time())
    assert main(["kill", "ids", "-w", "20", *cli_overrides(zk_conf)]) == 0
    start = time.time() + skew
    for elapsed in (0, 10, 19):
        nimbus.monitor(now=start + elapsed)
        assert (state.get_topology(TID) or {}).get("status") == "killed", elapsed
    nimbus.monitor(now=start + 20)
    assert state.get_topology(TID) is None and state.get_assignment(TID) is None


def test_a_broken_topology_record_is_logged_and_the_others_are_still_assigned(
        nimbus: Nimbus, caplog: pytest.LogCaptureFixture) -> None:
    # "broken-1" sorts first: a round that stopped at it would never reach "ids-1"
    state, start = nimbus.state, time.time()
    register(state, "s1", start)
    state.set_topology("broken-1", {"name": "broken", "status": "killed", "kill_wait": "soon",
                                    "num_workers": 1, "components": {}, "ackers": 0, "conf": {}})
    state.set_topology(TID, {"name": "ids", "status": "active", "num_workers": 1,
                             "components": {"numbers": [1, 1]}, "ackers": 0, "conf": {}})
    with caplog.at_level("WARNING", logger="storm_zmq.cluster.nimbus"):
        nimbus.monitor(now=start)
    assert slots(state) == [["s1", "h1", 6700]]
    assert "broken-1" in caplog.text and "kill_wait 'soon' is not a number" in caplog.text
    assert (state.get_topology("broken-1") or {}).get("status") == "killed"  # kept, for a person to fix


def test_a_kill_recorded_as_a_deadline_by_an_older_client_waits_the_message_timeout(
        nimbus: Nimbus) -> None:
    # `kill_at`: that client's clock, not comparable with nimbus's; ignored
    state, start = nimbus.state, time.time()
    one_worker_topology(state, S1, launched=start)
    record = state.get_topology(TID) or {}
    state.set_topology(TID, {**record, "status": "killed", "kill_at": start - HOUR,
                             "conf": {"topology.message.timeout.secs": 25}})
    nimbus.monitor(now=start)
    nimbus.monitor(now=start + 24)
    assert state.get_topology(TID) is not None
    nimbus.monitor(now=start + 25)
    assert state.get_topology(TID) is None


@pytest.mark.parametrize("skew", [0, -2 * HOUR, +2 * HOUR])
def test_code_and_secrets_of_an_interrupted_submit_are_removed_once_expired(
        nimbus: Nimbus, skew: float) -> None:
    # The uploads' creation times are ZooKeeper's clock; nimbus's is `skew` off it.
    state = nimbus.state
    state.put_code("half-1", b"zip")  # a submit stopped here: no topology record
    state.set_secrets("half-1", {"hmac_key": "00"})
    one_worker_topology(state, S1, launched=time.time())
    state.put_code(TID, b"zip")
    start = time.time() + skew
    for elapsed in (0, 60, 3599):  # a submit may still be writing its topology
        nimbus.monitor(now=start + elapsed)
        assert state.get_code("half-1") == b"zip" and state.get_secrets("half-1") is not None
    nimbus.monitor(now=start + 3600)  # nimbus.inbox.jar.expiration.secs
    assert state.get_code("half-1") is None and state.get_secrets("half-1") is None
    assert state.get_code(TID) == b"zip"  # a topology's own code stays


def test_a_dead_worker_no_free_slot_can_take_is_said_once(
        nimbus: Nimbus, caplog: pytest.LogCaptureFixture) -> None:
    """A cluster audit: with every slot in use, a worker whose supervisor died stayed
    dead without a word while `list` said active."""
    state, start = nimbus.state, time.time()
    one_worker_topology(state, S1, launched=start)
    state.register_supervisor("s1", {"host": "h1", "ports": [6700], "time": start})
    beat(state, S1, start, start)
    with caplog.at_level(logging.WARNING, logger="storm_zmq.cluster.nimbus"):
        for elapsed in (0, LAUNCH_GRACE + 1, LAUNCH_GRACE + 10):  # s1 stops refreshing
            nimbus.monitor(now=start + elapsed)
    assert slots(state) == [["s1", "h1", 6700]], "nowhere to go"
    (said,) = [r.getMessage() for r in caplog.records if "no free slot" in r.getMessage()]
    assert said.startswith(f"worker 0 of {TID} on h1:6700 is down")


def test_the_end_of_a_rebalance_wait_applies_its_workers_and_executors() -> None:
    from storm_zmq.cluster.nimbus import end_rebalance_wait

    asked = {"name": "ids", "status": "rebalancing", "num_workers": 2, "rebalance_wait": 1,
             "rebalance_status": "inactive", "rebalance_workers": 3, "rebalance_requested": 5.0,
             "rebalance_components": {"relay": 4},
             "components": {"numbers": [1, 1], "relay": [2, 4]}}
    ended = end_rebalance_wait(asked)
    assert ended == {"name": "ids", "status": "inactive", "num_workers": 3, "rebalance": True,
                     "components": {"numbers": [1, 1], "relay": [4, 4]}}
