"""ClusterState against a real ZooKeeper: every operation round-trips, code chunking and
its checks, ephemerals, leader election, error pruning, unreachable servers, session
loss (server restart and real session expiry) and the threading of callbacks."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from storm_zmq.cluster import (
    CODE_CHUNK_SIZE,
    MAX_ERRORS,
    ClusterState,
    ClusterStateError,
    ClusterUnavailable,
    CodeError,
    VersionConflict,
    zookeeper_hosts,
)
from storm_zmq.cluster.state import RECONNECT_MAX_DELAY
from storm_zmq.runtime.assignment import Assignment, WorkerSlot, assign
from tests.zk_fixtures import ZooKeeperServer, expire_session, free_port, wait_for

Factory = Callable[..., ClusterState]


def test_hosts_string() -> None:
    conf = {"storm.zookeeper.servers": ["a", "b:2182", "::1"], "storm.zookeeper.port": 2181}
    assert zookeeper_hosts(conf) == "a:2181,b:2182,[::1]:2181"


def test_a_topology_name_is_claimed_by_one_submit_at_a_time(make_state: Factory) -> None:
    # Bug (a cluster audit): two submits of one name both passed the name check
    # while the first uploaded its code, and both topologies ran
    first, second = make_state(), make_state()
    with first.name_claimed("wc"):
        with pytest.raises(ClusterStateError, match="another submit of a topology named 'wc' "
                                                    "is under way"):
            with second.name_claimed("wc"):
                pass
        with second.name_claimed("other"):  # another name is free
            pass
    with second.name_claimed("wc"):  # released at the end of the first
        pass
    dying = make_state()
    dying.name_claimed("x").__enter__()  # a submitter that dies midway ...
    dying.stop()
    with second.name_claimed("x"):  # ... releases the name with its session
        pass


def test_topology_round_trip(make_state: Factory) -> None:
    state = make_state()
    assert state.get_topology("t-1") is None
    assert state.topologies() == []
    record = {"name": "wordcount", "status": "active", "conf": {"topology.workers": 2},
              "num_workers": 2, "launch_time": 1700000000.5, "owner": "ünïcode"}
    state.set_topology("t-1", record)
    state.set_topology("t-0", {"name": "other", "status": "inactive"})
    assert state.get_topology("t-1") == record
    assert state.topologies() == ["t-0", "t-1"]
    state.set_topology("t-1", {**record, "status": "killed"})
    assert state.get_topology("t-1")["status"] == "killed"
    state.remove_topology("t-1")
    state.remove_topology("t-1")  # removing twice is fine
    assert state.get_topology("t-1") is None
    assert state.topologies() == ["t-0"]


def test_update_topology_runs_its_change_again_when_another_writer_came_in_between(
        make_state: Factory) -> None:
    state, other = make_state(), make_state()
    state.set_topology("t-1", {"name": "t", "status": "rebalancing"})
    seen: list[dict] = []

    def kill(record: dict) -> dict:
        seen.append(record)
        if len(seen) == 1:  # nimbus ends the rebalance between this read and write
            other.set_topology("t-1", {**record, "status": "active", "rebalance": True})
        return {**record, "status": "killed"}

    written = state.update_topology("t-1", kill)
    assert [r["status"] for r in seen] == ["rebalancing", "active"]  # ran again on the new one
    assert written == state.get_topology("t-1") == {"name": "t", "status": "killed",
                                                      "rebalance": True}  # nimbus's kept
    assert state.update_topology("t-1", lambda r: None) == written  # nothing to change
    assert state.update_topology("gone-2", lambda r: {**r, "x": 1}) is None
    with pytest.raises(VersionConflict, match="changed 2 times while it was being updated"):
        state.update_topology("t-1", lambda r: other.set_topology("t-1", r) or {**r, "n": 1},
                              attempts=2)


def test_bad_ids_and_values_are_refused(make_state: Factory) -> None:
    state = make_state()
    for bad in ("", "a/b", "..", "."):
        with pytest.raises(ValueError, match="invalid topology id"):
            state.set_topology(bad, {})
    with pytest.raises(ValueError, match="not JSON-serializable"):
        state.set_topology("t", {"x": object()})
    with pytest.raises(ValueError, match="limit of a ZooKeeper node"):
        state.set_topology("t", {"x": "y" * 2_000_000})


def test_assignment_round_trip_and_compare_and_set(make_state: Factory) -> None:
    state = make_state()
    assignment = assign("t-1", {"spout": (2, 2), "bolt": (3, 6)},
                        [WorkerSlot("h1", 6700), WorkerSlot("h2", 6701)], num_ackers=2)
    assert state.get_assignment("t-1") is None
    version = state.set_assignment("t-1", assignment.to_dict())
    assert Assignment.from_dict(state.get_assignment("t-1")) == assignment
    assert state.assignments() == ["t-1"]
    data, current = state.get_assignment_with_version("t-1")
    assert current == version
    new_version = state.set_assignment("t-1", {**data, "storm_id": "t-1"},
                                       expected_version=current)
    assert new_version == current + 1
    with pytest.raises(VersionConflict):
        state.set_assignment("t-1", data, expected_version=current)  # stale
    state.remove_assignment("t-1")
    assert state.get_assignment("t-1") is None
    assert state.assignments() == []
    with pytest.raises(VersionConflict):
        state.set_assignment("t-1", data, expected_version=0)


def test_code_is_chunked_and_checked(make_state: Factory, raw_client: KazooClient) -> None:
    state = make_state()
    assert state.get_code("t-1") is None
    code = os.urandom(3 * CODE_CHUNK_SIZE - 1000)  # ~1.5 MiB: three chunks
    state.put_code("t-1", code)
    assert state.get_code("t-1") == code
    base = f"{state.root}/code/t-1"
    assert sorted(raw_client.get_children(base)) == ["0", "1", "2"]
    assert all(len(raw_client.get(f"{base}/{n}")[0]) <= CODE_CHUNK_SIZE for n in range(3))

    raw_client.set(f"{base}/1", b"x" * CODE_CHUNK_SIZE)  # same size, wrong bytes
    with pytest.raises(CodeError, match="corrupt.*sha256"):
        state.get_code("t-1")
    raw_client.delete(f"{base}/2")
    with pytest.raises(CodeError, match="incomplete: chunk 2 of 3"):
        state.get_code("t-1")
    raw_client.set(base, b"")  # as left by an upload that died before its header
    with pytest.raises(CodeError, match="incomplete"):
        state.get_code("t-1")

    state.put_code("t-1", b"small")  # replaces whatever was there
    assert state.get_code("t-1") == b"small"
    assert raw_client.get_children(base) == ["0"]
    state.put_code("t-2", b"")
    assert state.get_code("t-2") == b""
    state.remove_code("t-1")
    assert state.get_code("t-1") is None


def test_supervisor_is_ephemeral(make_state: Factory) -> None:
    observer = make_state()
    supervisor = make_state()
    info = {"host": "node-1", "ports": [6700, 6701], "time": 1.5}
    supervisor.register_supervisor("sup-1", info)
    assert observer.supervisors() == {"sup-1": info}
    supervisor.register_supervisor("sup-1", {**info, "time": 2.5})  # an update
    assert observer.supervisors()["sup-1"]["time"] == 2.5
    supervisor.stop()
    wait_for(lambda: observer.supervisors() == {}, what="the ephemeral node to go")


def test_ephemeral_left_by_a_previous_process_is_taken_over(
        make_state: Factory, raw_client: KazooClient) -> None:
    state = make_state()
    path = f"{state.root}/supervisors/sup-1"
    raw_client.create(path, b"{}", ephemeral=True)  # a dead process's session, still alive
    state.register_supervisor("sup-1", {"host": "new"})
    assert raw_client.exists(path).ephemeralOwner == state.session_id
    assert state.supervisors() == {"sup-1": {"host": "new"}}
    state.unregister_supervisor("sup-1")
    assert state.supervisors() == {}


def test_nimbus_registration(make_state: Factory) -> None:
    state = make_state()
    state.register_nimbus("nimbus-a", {"host": "a", "port": 6627})
    state.register_nimbus("nimbus-b", {"host": "b", "port": 6627})
    assert state.nimbuses() == {"nimbus-a": {"host": "a", "port": 6627},
                                "nimbus-b": {"host": "b", "port": 6627}}
    state.unregister_nimbus("nimbus-a")
    assert list(state.nimbuses()) == ["nimbus-b"]


def test_worker_beats(make_state: Factory) -> None:
    state = make_state()
    assert state.worker_beats("t-1") == {}
    state.heartbeat("t-1", "h1", 6700, {"time": 1.0, "executors": [[1, 2]]})
    state.heartbeat("t-1", "h1", 6700, {"time": 2.0, "executors": [[1, 2]]})
    state.heartbeat("t-1", "h2", 6701, {"time": 2.5})
    assert state.worker_beats("t-1") == {
        "h1-6700": {"time": 2.0, "executors": [[1, 2]]}, "h2-6701": {"time": 2.5}}
    state.remove_worker_beats("t-1")
    assert state.worker_beats("t-1") == {}


def test_errors_keep_the_newest_ten(make_state: Factory) -> None:
    state = make_state()
    assert state.errors("t-1") == {}
    for n in range(MAX_ERRORS + 3):
        state.report_error("t-1", "split", f"error {n}", host="h1", port=6700, task=3,
                           time=1000.0 + n)
    state.report_error("t-1", "__acker", "boom", host="h2", port=6701)
    errors = state.errors("t-1")
    assert [e["text"] for e in errors["split"]] == [f"error {n}" for n in range(12, 2, -1)]
    assert errors["split"][0] == {"time": 1012.0, "host": "h1", "port": 6700, "task": 3,
                                  "text": "error 12"}
    assert [e["text"] for e in errors["__acker"]] == ["boom"]
    assert errors["__acker"][0]["time"] > 1e9  # defaulted to now
    state.remove_errors("t-1")
    assert state.errors("t-1") == {}


def test_leader_election_fails_over(make_state: Factory, raw_client: KazooClient) -> None:
    first, second = make_state(), make_state()
    assert first.leader() is None
    leading: list[str] = []
    release = threading.Event()
    raised: dict[str, Exception] = {}

    def contend(state: ClusterState, name: str) -> None:
        try:
            state.run_as_leader(name, lambda: (leading.append(name), release.wait(20)))
        except Exception as exc:  # the first contender's client is stopped under it
            raised[name] = exc

    threads = [threading.Thread(target=contend, args=(first, "nimbus-a"), daemon=True)]
    threads[0].start()
    wait_for(lambda: leading == ["nimbus-a"], what="nimbus-a to lead")
    threads.append(threading.Thread(target=contend, args=(second, "nimbus-b"), daemon=True))
    threads[1].start()
    wait_for(lambda: len(raw_client.get_children(f"{second.root}/leader")) == 2,
             what="nimbus-b to contend")
    assert second.leader() == "nimbus-a"
    assert leading == ["nimbus-a"]

    first.stop()  # its session and so its election node end
    wait_for(lambda: leading == ["nimbus-a", "nimbus-b"], what="nimbus-b to take over")
    assert second.leader() == "nimbus-b"
    release.set()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    assert "nimbus-b" not in raised, raised  # only the stopped one may have raised
    wait_for(lambda: second.leader() is None, what="leadership to be given up")


def test_unreachable_zookeeper_is_a_clear_error(zk_conf: dict[str, Any]) -> None:
    port = free_port()  # nothing listens there
    state = ClusterState({**zk_conf, "storm.zookeeper.port": port})
    started = time.monotonic()
    with pytest.raises(ClusterUnavailable, match=f"127.0.0.1:{port} within 2 s"):
        state.start(timeout=2)
    assert time.monotonic() - started < 4
    assert not state.connected.is_set()
    state.stop()


def test_watch_callbacks_run_on_the_dispatcher_and_may_call_zookeeper(
        make_state: Factory) -> None:
    state, other = make_state(), make_state()
    seen: list[tuple[str, list[str], dict[str, Any]]] = []

    def on_supervisors(children: list[str]) -> None:
        # Calling ZooKeeper from the callback must not deadlock.
        seen.append((threading.current_thread().name, children, state.supervisors()))

    watch = state.watch_children("supervisors", on_supervisors)
    wait_for(lambda: seen, what="the initial callback")
    assert seen[0] == ("storm-zk-dispatch", [], {})
    other.register_supervisor("sup-1", {"host": "h"})
    wait_for(lambda: seen[-1][1] == ["sup-1"], what="the watch to fire")
    assert seen[-1] == ("storm-zk-dispatch", ["sup-1"], {"sup-1": {"host": "h"}})
    watch.cancel()
    count = len(seen)
    other.register_supervisor("sup-2", {"host": "h"})
    other.unregister_supervisor("sup-2")
    assert other.supervisors() == {"sup-1": {"host": "h"}}
    assert len(seen) == count  # cancelled: no more calls (checked after a round trip)

    beats: list[list[str]] = []
    state.watch_children("workerbeats/t-1", beats.append)  # parent does not exist yet
    wait_for(lambda: beats == [[]], what="the initial callback")
    other.heartbeat("t-1", "h1", 6700, {"time": 1.0})
    wait_for(lambda: beats[-1] == ["h1-6700"], what="creation of the watched parent")


def test_assignment_watches(make_state: Factory) -> None:
    state, nimbus = make_state(), make_state()
    values: list[tuple[str, Any, Any]] = []

    def on_assignment(value: dict[str, Any] | None) -> None:
        values.append((threading.current_thread().name, value, state.get_assignment("t-1")))

    state.watch_assignment("t-1", on_assignment)
    wait_for(lambda: values, what="the initial callback")
    assert values[0] == ("storm-zk-dispatch", None, None)
    nimbus.set_assignment("t-1", {"storm_id": "t-1", "n": 1})
    wait_for(lambda: values[-1][1] == {"storm_id": "t-1", "n": 1}, what="creation")
    nimbus.set_assignment("t-1", {"storm_id": "t-1", "n": 2})
    wait_for(lambda: values[-1][1] == {"storm_id": "t-1", "n": 2}, what="a change")
    assert values[-1][2] == values[-1][1]
    nimbus.remove_assignment("t-1")
    wait_for(lambda: values[-1][1] is None, what="deletion")
    assert {name for name, _, _ in values} == {"storm-zk-dispatch"}

    fired: list[tuple[str, str, Any]] = []

    def once(topology_id: str) -> None:
        value = state.get_assignment(topology_id, watch=once)  # re-arm, from the callback
        fired.append((threading.current_thread().name, topology_id, value))

    assert state.get_assignment("t-1", watch=once) is None
    nimbus.set_assignment("t-1", {"n": 3})
    wait_for(lambda: len(fired) == 1, what="the one-shot watch on a missing node")
    nimbus.set_assignment("t-1", {"n": 4})
    wait_for(lambda: len(fired) == 2, what="the re-armed one-shot watch")
    assert fired == [("storm-zk-dispatch", "t-1", {"n": 3}), ("storm-zk-dispatch", "t-1", {"n": 4})]


def test_session_survives_a_server_restart(
        zookeeper: ZooKeeperServer, make_state: Factory) -> None:
    # A session outlives the restart if its client is back within the timeout of the
    # server's start (which restarts the timers): 6 s, not the fixture's 4, as a
    # loaded CI machine took longer once; the 8 s outage below still outlasts it.
    state = make_state(**{"storm.zookeeper.connection.timeout": 1000,
                          "storm.zookeeper.retry.times": 1,
                          "storm.zookeeper.session.timeout": 6000})
    # Operation retries back off up to a ceiling (Storm's default: 30 s). Reconnecting
    # backed off the same way, so after an outage of several seconds a worker noticed
    # ZooKeeper back many seconds after a nimbus that happened to try sooner, and
    # nimbus could time out the heartbeats it had no way to write. (From 0.2 s, the
    # attempts came about 6 s and 13 s into the outage, jitter aside: ZooKeeper, up
    # again after 8 s, waited 4-7 s for the second.)
    patient = make_state(**{"storm.zookeeper.retry.interval": 200,
                            "storm.zookeeper.retry.intervalceiling.millis": 30000})
    events: list[tuple[str, str]] = []
    state.on_session_change(lambda s: events.append((threading.current_thread().name, s)))
    state.register_supervisor("sup-1", {"host": "h"})
    children: list[list[str]] = []
    state.watch_children("supervisors", children.append)
    wait_for(lambda: children == [["sup-1"]], what="the initial callback")
    session = state.session_id

    zookeeper.stop()
    try:
        wait_for(lambda: not state.connected.is_set(), what="connected to clear")
        wait_for(lambda: not patient.connected.is_set(), what="connected to clear")
        # longer than the session timeout, and long enough for a backoff to grow
        outage_end = time.monotonic() + 8
        # kazoo would hold this request until the server is back; ClusterState gives
        # up after (1 retry + 1) x 1 s of waiting for a connection.
        started = time.monotonic()
        with pytest.raises(ClusterUnavailable, match="gave up after 1 retries, waiting up to 1 s "
                           "for a connection each time \\(storm.zookeeper.retry.times, "
                           "storm.zookeeper.connection.timeout\\)"):
            state.get_topology("t-1")
        assert time.monotonic() - started < 4
        # Let the outage last its full length (a duration, not synchronisation).
        time.sleep(max(0.0, outage_end - time.monotonic()))
        assert not state.connected.is_set()
    finally:
        zookeeper.start()
    back = time.monotonic()
    wait_for(patient.connected.is_set, 30, what="reconnection")
    assert time.monotonic() - back < RECONNECT_MAX_DELAY + 2, "back within seconds, whatever the ceiling"
    wait_for(state.connected.is_set, 30, what="reconnection")
    wait_for(lambda: "CONNECTED" in [s for _, s in events], what="the CONNECTED event")
    assert [s for _, s in events] == ["SUSPENDED", "CONNECTED"], events
    assert {name for name, _ in events} == {"storm-zk-session"}
    # ZooKeeper restores sessions from its snapshot and restarts their timers, so a
    # client back within the timeout keeps its session and its ephemeral nodes.
    assert state.session_id == session
    assert state.supervisors() == {"sup-1": {"host": "h"}}
    state.register_supervisor("sup-2", {"host": "h2"})  # the watch was re-armed
    wait_for(lambda: children[-1] == ["sup-1", "sup-2"], what="the re-armed watch")


def test_expired_session_recreates_ephemerals_and_watches(
        zookeeper: ZooKeeperServer, make_state: Factory, raw_client: KazooClient) -> None:
    state, observer = make_state(), make_state()
    events: list[str] = []
    reconnected_view: list[dict[str, Any]] = []

    def on_change(new_state: str) -> None:
        if new_state == "CONNECTED":  # ephemerals are back before daemons hear of it
            reconnected_view.append(state.supervisors())
        events.append(new_state)

    state.on_session_change(on_change)
    state.register_supervisor("sup-1", {"host": "h", "ports": [6700]})
    state.register_nimbus("nimbus-1", {"host": "h"})
    assignment_values: list[Any] = []
    state.watch_assignment("t-1", assignment_values.append)
    wait_for(lambda: assignment_values == [None], what="the initial callback")
    old_session = state.session_id

    # Expire the session for real (a second client takes it over and closes it):
    # the server drops the ephemeral nodes and the client is told it expired.
    expire_session(state, zookeeper.hosts, timeout=20)
    assert "LOST" in events, events
    wait_for(lambda: events[-1] == "CONNECTED" and state.connected.is_set(), what="CONNECTED")
    assert state.session_id != old_session
    assert reconnected_view[-1] == {"sup-1": {"host": "h", "ports": [6700]}}
    path = f"{state.root}/supervisors/sup-1"
    assert raw_client.exists(path).ephemeralOwner == state.session_id
    assert observer.nimbuses() == {"nimbus-1": {"host": "h"}}
    observer.set_assignment("t-1", {"n": 1})
    wait_for(lambda: assignment_values[-1] == {"n": 1}, what="the re-armed watch")
