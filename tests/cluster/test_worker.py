"""The cluster worker's ZooKeeper side (`ZooKeeperControl._sync`), against a scripted
state: the placement marker its heartbeat carries (cluster/heartbeat.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from storm_zmq.cluster.worker import ZooKeeperControl

TID = "ids-1"
EXECUTORS = [[1, "numbers", [1, 1], 0]]


def stored(slot: list[Any], launched: float) -> dict[str, Any]:
    return {"assignment": {"executors": EXECUTORS}, "slots": [slot], "launched": [launched]}


class ScriptedState:
    """What `_sync` reads (the assignment, the topology record) and writes."""

    def __init__(self, assignment: dict[str, Any]) -> None:
        self.assignment = assignment
        self.beats: list[dict[str, Any]] = []

    def get_assignment(self, topology_id: str) -> dict[str, Any]:
        return self.assignment

    def get_topology(self, topology_id: str) -> dict[str, Any]:
        return {"status": "active"}

    def heartbeat(self, topology_id: str, host: str, port: int, data: dict[str, Any]) -> None:
        self.beats.append(data)


def control(tmp_path: Path, launched_for: dict[str, Any]) -> ZooKeeperControl:
    zk = ZooKeeperControl({"worker.heartbeat.frequency.secs": 1}, TID, "s1", "h1", 6700,
                          tmp_path / "heartbeat", "active", launched_for)
    zk.worker = SimpleNamespace(index=0, update_peers=lambda slots: None)  # type: ignore[assignment]
    zk.report_stats(0, {"components": {}})
    return zk


def test_a_heartbeat_carries_the_marker_of_its_slot_in_the_assignment_just_read(
        tmp_path: Path) -> None:
    zk = control(tmp_path, stored(["s1", "h1", 6700], launched=100.0))
    state = ScriptedState(stored(["s1", "h1", 6700], launched=100.0))
    zk._sync(state)  # type: ignore[arg-type]
    assert state.beats[-1]["launched"] == 100.0 and "stats" in state.beats[-1]
    # Moved away and back while it kept running (its supervisor keeps it: same
    # worker index, same executors): a new placement, whose marker it adopts.
    state.assignment = stored(["s1", "h1", 6700], launched=250.0)
    zk._sync(state)  # type: ignore[arg-type]
    assert state.beats[-1]["launched"] == 250.0


def test_a_worker_whose_slot_is_anothers_now_stops_without_a_heartbeat(tmp_path: Path) -> None:
    zk = control(tmp_path, stored(["s1", "h1", 6700], launched=100.0))
    state = ScriptedState(stored(["s2", "h2", 6700], launched=250.0))
    zk._sync(state)  # type: ignore[arg-type]
    assert state.beats == [] and zk.poll(0) == "stop"


def test_a_worker_whose_peers_change_in_number_stops_without_a_heartbeat(tmp_path: Path) -> None:
    # Bug (a cluster audit): rebalance -n 3 of a topology of two executors kept the
    # executors' layout, so the workers stayed and were handed three peers for two:
    # their send threads died of an IndexError
    zk = control(tmp_path, stored(["s1", "h1", 6700], launched=100.0))
    more = stored(["s1", "h1", 6700], launched=100.0)
    more["slots"].append(["s2", "h2", 6701])
    more["launched"].append(250.0)
    updated: list[Any] = []
    zk.worker.update_peers = updated.append  # type: ignore[union-attr]
    state = ScriptedState(more)
    zk._sync(state)  # type: ignore[arg-type]
    assert state.beats == [] and updated == [] and zk.poll(0) == "stop"
