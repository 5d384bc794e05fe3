"""Nimbus's decisions, one monitoring round at a time, against a real ZooKeeper (no
daemons): what counts as a live worker, what is cleaned up, when leading stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from storm_zmq.cluster.nimbus import Nimbus, stored_assignment
from storm_zmq.cluster.scheduler import Slot
from storm_zmq.cluster.state import ClusterState
from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.assignment import WorkerSlot, assign

Factory = Callable[..., ClusterState]
TID = "ids-1"


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


def test_a_heartbeat_from_before_a_workers_launch_does_not_end_its_launch_grace(
        nimbus: Nimbus) -> None:
    # The slot ran a worker of the same topology before; its last heartbeat is old.
    # The worker just launched there has its nimbus.task.launch.secs to write its own.
    state, now = nimbus.state, time.time()
    state.register_supervisor("s1", {"host": "h1", "ports": [6700, 6701], "time": now})
    one_worker_topology(state, Slot("s1", "h1", 6700), launched=now)
    state.heartbeat(TID, "h1", 6700, {"time": now - 600})
    nimbus.monitor()
    assert (state.get_assignment(TID) or {})["slots"] == [["s1", "h1", 6700]]
    # Without a heartbeat of its own once the grace has passed, it is moved.
    one_worker_topology(state, Slot("s1", "h1", 6700), launched=now - 600)
    nimbus.monitor()
    assert (state.get_assignment(TID) or {})["slots"] == [["s1", "h1", 6701]]


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
    state, now = nimbus.state, time.time()
    state.register_supervisor("s1", {"host": "h1", "ports": [6700, 6701], "time": now})
    one_worker_topology(state, Slot("s1", "h1", 6700), launched=now - 600)  # no heartbeat
    record = state.get_topology(TID) or {}
    state.set_topology(TID, {**record, "num_workers": 5, "rebalance": True})  # 2 slots only
    nimbus.monitor()
    assert (state.get_assignment(TID) or {})["slots"] == [["s1", "h1", 6701]]
    assert (state.get_topology(TID) or {})["rebalance"] is True  # still waiting


def test_code_and_secrets_of_an_interrupted_submit_are_removed_once_expired(
        make_state: Factory, zk_conf: dict[str, Any]) -> None:
    def monitor_after(seconds: float) -> Nimbus:
        leader = Nimbus({**DEFAULTS, **zk_conf, "nimbus.inbox.jar.expiration.secs": 3600})
        leader.state = make_state()
        leader.monitor(now=time.time() + seconds)
        return leader

    state = make_state()
    state.put_code("half-1", b"zip")  # a submit stopped here: no topology record
    state.set_secrets("half-1", {"hmac_key": "00"})
    one_worker_topology(state, Slot("s1", "h1", 6700), launched=time.time())
    state.put_code(TID, b"zip")
    monitor_after(60)  # a submit may still be writing its topology
    assert state.get_code("half-1") == b"zip" and state.get_secrets("half-1") is not None
    monitor_after(3600 + 60)
    assert state.get_code("half-1") is None and state.get_secrets("half-1") is None
    assert state.get_code(TID) == b"zip"  # a topology's own code stays
