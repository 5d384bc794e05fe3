"""Where summaries come from: ZooKeeper (real server) and a local run's RunStats."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from storm_zmq.cluster.package import build_package
from storm_zmq.metrics.sources import (
    ClusterSource,
    LocalSource,
    UnknownTopology,
    layout_from_package,
)
from storm_zmq.metrics.summary import ComponentLayout, Edge, TopologyLayout

PROJECT = Path(__file__).parents[1] / "runtime" / "project"


def test_the_layout_comes_from_the_code_package_in_a_child_process() -> None:
    package = build_package(PROJECT / "topologies" / "cluster_ids.py")
    layout = layout_from_package(package.data, package.topology_file, package.topology_class)
    assert [(c.name, c.kind, c.par) for c in layout.components] == \
        [("numbers", "spout", 2), ("relay", "bolt", 2), ("sink", "bolt", 2)]
    assert layout.edges == (Edge("numbers", "relay", "default", "fields(id)"),
                            Edge("relay", "sink", "default", "shuffle"))


def test_a_package_that_does_not_load_says_why() -> None:
    package = build_package(PROJECT / "topologies" / "cluster_ids.py")
    with pytest.raises(RuntimeError, match=r"loading topologies/cluster_ids.py failed: .*Nope"):
        layout_from_package(package.data, package.topology_file, "Nope")


def ids_topology(state: Any, num_workers: int, now: float) -> None:
    """Topology "ids" (id ids-1, cluster_ids.py) as submit stores it, launched 10 s
    before `now`."""
    package = build_package(PROJECT / "topologies" / "cluster_ids.py")
    state.put_code("ids-1", package.data)
    state.set_topology("ids-1", {
        "name": "ids", "status": "active", "num_workers": num_workers, "launch_time": now - 10,
        "conf": {}, "components": {"numbers": [2, 2], "relay": [2, 2], "sink": [2, 2]},
        "topology_file": package.topology_file, "topology_class": package.topology_class})


def test_cluster_source_reads_zookeeper_and_caches_the_graph(make_state: Any) -> None:
    state = make_state()
    now = time.time()
    ids_topology(state, 2, now)
    state.set_topology("gone-1", {"name": "gone", "status": "killed", "num_workers": 1,
                                  "launch_time": now, "conf": {}, "components": {}})
    state.heartbeat("ids-1", "127.0.0.1", 6700, {"time": now, "stats": {
        "worker": 0, "components": {"numbers": {"emitted": 5}}}})
    state.heartbeat("ids-1", "127.0.0.1", 6701, {"time": now - 60, "stats": {  # dead worker
        "worker": 1, "components": {"numbers": {"emitted": 500}}}})
    state.report_error("ids-1", "relay", "boom", host="127.0.0.1", port=6700, task=3)
    clock = [now]
    source = ClusterSource(state, clock=lambda: clock[0])
    assert [(r["name"], r["status"]) for r in source.topologies()] == \
        [("gone", "killed"), ("ids", "active")]
    summary = source.summary("ids")
    assert summary.topology_id == "ids-1" and summary.uptime_secs == 10
    assert summary.component("numbers").emitted == 5  # the stale worker is not counted
    assert [w.stale for w in summary.workers] == [False, True]
    assert [e.text for e in summary.component("relay").errors] == ["boom"]
    assert len(summary.edges) == 2  # loaded from the code package
    assert source.summary("ids") is summary  # within CACHE_SECS: not read again
    clock[0] += 1
    state.remove_code("ids-1")  # the graph is kept per topology id: not loaded again
    again = source.summary("ids")
    assert again is not summary and again.edges == summary.edges
    # killed and still draining: shown, with its status, until nimbus removes it
    assert source.summary("gone").status == "killed"
    with pytest.raises(UnknownTopology, match=r"no running topology named 'nope' \(running: ids\)"):
        source.summary("nope")


def test_only_the_workers_the_assignment_places_now_are_counted(make_state: Any) -> None:
    """A cluster audit: after a rebalance to fewer workers, the removed worker's last
    heartbeat stayed in the totals, then stale in stats and /metrics until the kill;
    a heartbeat of an earlier placement in a slot is no current worker's either."""
    state = make_state()
    now = time.time()
    ids_topology(state, 1, now)
    state.set_assignment("ids-1", {"slots": [["s1", "127.0.0.1", 6700]], "launched": [2.0]})
    for port, launched, emitted in ((6700, 2.0, 5), (6701, 1.0, 500)):  # 6701: rebalanced away
        state.heartbeat("ids-1", "127.0.0.1", port, {"time": now, "launched": launched, "stats": {
            "worker": port - 6700, "components": {"numbers": {"emitted": emitted}}}})
    summary = ClusterSource(state).summary("ids")
    assert summary.component("numbers").emitted == 5
    assert [w.port for w in summary.workers] == [6700]
    state.heartbeat("ids-1", "127.0.0.1", 6700, {"time": now, "launched": 1.0, "stats": {
        "worker": 0, "components": {"numbers": {"emitted": 7}}}})  # an earlier placement's
    assert ClusterSource(state).summary("ids").workers == ()


def test_local_source_before_and_after_the_run_starts() -> None:
    layout = TopologyLayout((ComponentLayout("s", "spout", 1, 1),))
    source = LocalSource(layout, "t", num_workers=2)
    assert source.topologies()[0]["status"] == "starting"
    assert source.summary("t").component("s").emitted == 0
    stats = SimpleNamespace(latest={}, started_at=None, stopped_at=None)
    source.attach(stats)
    stats.latest[0] = {"worker": 0, "components": {"s": {"emitted": 3}}}
    stats.latest[1] = {"worker": 1, "components": {"s": {"emitted": 4}}}
    stats.started_at = time.monotonic() - 30
    summary = source.summary("t")
    assert summary.status == "active" and summary.component("s").emitted == 7
    assert summary.uptime_secs is not None and 29 < summary.uptime_secs < 40
    stats.stopped_at = time.monotonic()
    assert source.topologies()[0]["status"] == "stopped"
    with pytest.raises(UnknownTopology, match=r"running: t\)"):
        source.summary("other")


def test_a_watching_cluster_source_judges_workers_by_its_own_clock(make_state: Any) -> None:
    """Two workers whose host clocks are an hour off: the one behind looks stale
    until the UI sees its report change, the dead one ahead looks alive until the
    UI has watched it not change for `nimbus.task.timeout.secs`."""
    state = make_state()
    now = time.time()
    state.set_topology("ids-1", {
        "name": "ids", "status": "active", "num_workers": 2, "launch_time": now,
        "conf": {}, "components": {"numbers": [2, 2]},
        "layout": {"components": [{"name": "numbers", "kind": "spout", "par": 2, "tasks": 2}]}})

    def beat(port: int, worker: int, at: float, emitted: int) -> None:
        state.heartbeat("ids-1", "127.0.0.1", port, {"time": at, "stats": {
            "worker": worker, "time": at, "components": {"numbers": {"emitted": emitted}}}})

    behind, ahead = now - 3600, now + 3600
    beat(6700, 0, behind, 1)
    beat(6701, 1, ahead, 10)
    monotonic = [0.0]
    source = ClusterSource(state, clock=lambda: now, monotonic=lambda: monotonic[0], cache_secs=0)
    first = source.summary("ids")
    assert [w.stale for w in first.workers] == [True, False]  # the clocks' word, at first sight
    assert first.component("numbers").emitted == 10

    monotonic[0] += 2
    beat(6700, 0, behind + 2, 2)  # the worker behind goes on reporting; the one ahead died
    second = source.summary("ids")
    assert [w.stale for w in second.workers] == [False, False]
    assert second.workers[0].age_secs == 2.0  # changed since the look 2 s ago
    assert second.component("numbers").emitted == 12

    monotonic[0] += 29
    beat(6700, 0, behind + 31, 3)
    third = source.summary("ids")
    assert [w.stale for w in third.workers] == [False, True], "watched unchanged for 31 s > 30 s"
    assert third.workers[1].age_secs == 31.0
    assert third.component("numbers").emitted == 3

    assert third.workers[0].age_secs == 29.0

    one_shot = ClusterSource(state, clock=lambda: now).summary("ids")  # `storm-zmq stats`
    assert [w.stale for w in one_shot.workers] == [True, False]

    monotonic[0] += 3600  # looks further apart than the timeout: the clocks' word again
    beat(6700, 0, behind + 40, 4)  # (the viewer's wall clock stands still in this test)
    assert [w.stale for w in source.summary("ids").workers] == [True, False]


def test_an_unconnected_source_says_so_at_once_and_when_it_last_read_zookeeper() -> None:
    """The age is of this viewer's own last complete read (not of the cluster's data)."""
    import threading

    from storm_zmq.metrics.sources import SourceUnavailable

    connected = threading.Event()
    connected.set()
    state = SimpleNamespace(conf={}, hosts="zk1:2181", connected=connected)
    now = [100.0]
    source = ClusterSource(state, monotonic=lambda: now[0])  # type: ignore[arg-type]
    source.check()  # connected: nothing to say
    connected.clear()
    with pytest.raises(SourceUnavailable, match=r"^ZooKeeper at zk1:2181 is unreachable "
                       r"\(not connected\); reconnecting by itself$"):
        source.check()
    source._answer()
    now[0] = 112.0
    with pytest.raises(SourceUnavailable, match=r"the last complete read of it here was 12 s ago"):
        source.check()
