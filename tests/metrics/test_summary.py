"""summarize() and its inputs: pure, every rule of storm_zmq/metrics/summary.py."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.metrics.summary import (
    ACKER,
    MAX_ERRORS,
    ComponentLayout,
    Edge,
    TopologyLayout,
    reports_from_beats,
    summarize,
)
from storm_zmq.runtime.stats import RunStats
from storm_zmq.topology import load_topology

PROJECT = Path(__file__).parents[1] / "runtime" / "project"

LAYOUT = TopologyLayout(
    (ComponentLayout("words", "spout", 1, 2), ComponentLayout("split", "bolt", 2, 4),
     ComponentLayout("count", "bolt", 3, 3)),
    (Edge("words", "split"), Edge("split", "count", "default", "fields(word)")),
)


def report(worker: int, port: int, components: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"worker": worker, "host": "127.0.0.1", "port": port, "time": 1000.0,
            "components": components, **extra}


def test_no_reports_gives_the_declared_components_with_zeros() -> None:
    summary = summarize(LAYOUT, [], name="wc")
    assert [c.name for c in summary.components] == ["words", "split", "count"]
    words = summary.component("words")
    assert (words.kind, words.tasks, words.executors, words.emitted, words.capacity) == \
        ("spout", 2, 1, 0, None)
    assert words.execute_latency_ms is None and words.workers == ()
    assert summary.workers == () and summary.errors == {}
    assert summary.totals()["workers_reporting"] == 0


def test_counters_are_summed_latencies_divided_once_capacity_is_the_maximum() -> None:
    reports = [
        report(0, 6700, {"split": {"tasks": [3], "executors": 1, "emitted": 10, "transferred": 12,
                                   "executed": 5, "acked": 4, "failed": 1, "malformed": 2,
                                   "errors_reported": 1, "queued": 7, "queue_capacity": 100,
                                   "execute_ms_total": 9.0, "execute_samples": 1,
                                   "process_ms_total": 1.0, "process_samples": 1,
                                   "capacity": 0.25}}),
        report(1, 6701, {"split": {"tasks": [4, 5], "executors": 1, "emitted": 30,
                                   "transferred": 31, "executed": 15, "acked": 15,
                                   "queued": 1, "queue_capacity": 100,
                                   "execute_ms_total": 3.0, "execute_samples": 3,
                                   "process_ms_total": 5.0, "process_samples": 1,
                                   "capacity": 0.75}}),
    ]
    split = summarize(LAYOUT, reports, name="wc").component("split")
    assert (split.emitted, split.transferred, split.executed, split.acked, split.failed,
            split.malformed, split.errors_reported) == (40, 43, 20, 19, 1, 2, 1)
    assert (split.queued, split.queue_capacity) == (8, 200)
    # (9 + 3) / (1 + 3) = 3, not the mean of the means (9 and 1) = 5
    assert split.execute_latency_ms == 3.0
    assert split.process_latency_ms == 3.0
    assert split.complete_latency_ms is None
    assert split.capacity == 0.75
    assert (split.tasks, split.executors) == (3, 2)
    assert split.workers == ("127.0.0.1:6700", "127.0.0.1:6701")


def test_the_subset_the_first_workers_send_is_enough() -> None:
    # what storm_zmq.runtime.worker sent before the full schema: no kind, tasks,
    # transferred, latencies or capacity
    old = {"components": {"words": {"emitted": 5, "executed": 0, "acked": 5, "failed": 0,
                                    "malformed": 0, "queued": 0, "pending": 1,
                                    "exhausted_tasks": 0, "latencies_ms": [1.0, 2.0]}},
           "transfer_queued": 3, "refused": {"unknown_task": 1}, "transport": {}}
    summary = summarize(LAYOUT, [old], name="wc")
    words = summary.component("words")
    assert (words.emitted, words.acked, words.pending, words.transferred) == (5, 5, 1, 0)
    assert words.capacity is None and words.complete_latency_ms is None
    assert words.tasks == 2  # declared, as no report lists task ids
    (worker,) = summary.workers
    assert (worker.worker, worker.key, worker.transfer_queued, worker.refused_total) == \
        (None, "None:None", 3, 1)
    assert worker.rss_bytes is None and worker.uptime_secs is None and worker.peers == {}
    json.dumps(summary.to_dict(), allow_nan=False)


@pytest.mark.parametrize("garbage", [None, "12", True, float("nan"), float("inf"), [1], {}])
def test_garbage_values_count_as_zero_or_unknown(garbage: Any) -> None:
    bad = report(0, 6700, {"split": {"emitted": garbage, "capacity": garbage,
                                     "execute_ms_total": garbage, "execute_samples": garbage,
                                     "tasks": garbage, "kind": garbage}},
                 rss_bytes=garbage, transfer_queued=garbage, peers=garbage, transport=garbage,
                 refused=garbage, backpressure=garbage, errors=garbage, time=garbage)
    summary = summarize(LAYOUT, [bad, "not a report"], name="wc")  # type: ignore[list-item]
    split = summary.component("split")
    assert (split.emitted, split.capacity, split.execute_latency_ms, split.kind) == \
        (0, None, None, "bolt")
    assert summary.workers[0].rss_bytes is None and summary.workers[0].transfer_queued == 0
    json.dumps(summary.to_dict(), allow_nan=False)


def test_kind_comes_from_the_layout_then_the_reports_then_the_name() -> None:
    layout = TopologyLayout((ComponentLayout("a", "spout"), ComponentLayout("b")))
    reports = [report(0, 6700, {"a": {"kind": "bolt"}, "b": {"kind": "bolt"}, "c": {},
                                ACKER: {}, "d": {"kind": "spout"}})]
    summary = summarize(layout, reports, name="t")
    kinds = {c.name: c.kind for c in summary.components}
    assert kinds == {"a": "spout", "b": "bolt", "c": "unknown", "d": "spout", ACKER: "acker"}
    # declared order first, then only-reported ones sorted, the acker last
    assert [c.name for c in summary.components] == ["a", "b", "c", "d", ACKER]


def test_the_newest_report_of_each_worker_index_is_kept() -> None:
    old = report(0, 6700, {"words": {"emitted": 100}}, time=10.0)
    moved = report(0, 6702, {"words": {"emitted": 3}}, time=20.0)
    other = report(1, 6701, {"words": {"emitted": 5}}, time=5.0)
    summary = summarize(LAYOUT, [moved, old, other], name="wc")
    assert summary.component("words").emitted == 8
    assert [(w.worker, w.port) for w in summary.workers] == [(0, 6702), (1, 6701)]
    # without an index, reports are told apart by address
    a = {"host": "h", "port": 1, "time": 1.0, "components": {"words": {"emitted": 1}}}
    b = {"host": "h", "port": 2, "time": 1.0, "components": {"words": {"emitted": 2}}}
    newer_a = {**a, "time": 2.0, "components": {"words": {"emitted": 10}}}
    assert summarize(LAYOUT, [a, b, newer_a], name="wc").component("words").emitted == 12


def test_stale_workers_are_listed_but_not_counted() -> None:
    fresh = report(0, 6700, {"words": {"emitted": 5, "capacity": 0.1}}, time=100.0)
    stale = report(1, 6701, {"words": {"emitted": 50, "capacity": 0.9}}, time=60.0)
    summary = summarize(LAYOUT, [fresh, stale], name="wc", now=101.0, stale_after=30)
    assert summary.component("words").emitted == 5
    assert summary.component("words").capacity == 0.1
    assert [(w.stale, w.age_secs) for w in summary.workers] == [(False, 1.0), (True, 41.0)]
    assert summary.totals()["workers_reporting"] == 1
    # without a threshold everything counts
    assert summarize(LAYOUT, [fresh, stale], name="wc", now=101.0).component("words").emitted == 55


def test_worker_rows_sum_peers_and_read_the_transport() -> None:
    r = report(
        2, 6702,
        {"split": {"queued": 3, "queue_capacity": 10}, "count": {"queued": 4, "queue_capacity": 20}},
        pid=42, uptime_secs=12.5, rss_bytes=1 << 20, open_fds=17, transfer_queued=2,
        transfer_capacity=1000, refused={"unknown_task": 2, "tuple": 1},
        transport={"frames_received": 7, "messages_received": 70, "bytes_received": 700,
                   "refused_truncated": 1, "name": "zmq"},
        peers={"0": {"frames_sent": 1, "messages_sent": 10, "bytes_sent": 100, "reconnects": 2,
                     "send_timeouts": 1},
               "1": {"frames_sent": 2, "messages_sent": 20, "bytes_sent": 200, "reconnects": 1}},
        backpressure={"events": 4, "throttled_tasks": [7, "x", 9]},
    )
    (w,) = summarize(LAYOUT, [r], name="wc", now=1001.0).workers
    assert (w.worker, w.host, w.port, w.pid, w.uptime_secs, w.rss_bytes, w.open_fds) == \
        (2, "127.0.0.1", 6702, 42, 12.5, 1 << 20, 17)
    assert (w.queued, w.queue_capacity, w.transfer_queued, w.transfer_capacity) == (7, 30, 2, 1000)
    assert (w.frames_received, w.messages_received, w.bytes_received) == (7, 70, 700)
    assert (w.frames_sent, w.messages_sent, w.bytes_sent, w.reconnects, w.send_timeouts) == \
        (3, 30, 300, 3, 1)
    assert w.refused_total == 3 and "name" not in w.transport
    assert (w.backpressure_events, w.throttled_tasks, w.age_secs) == (4, (7, 9), 1.0)
    assert set(w.components) == {"split", "count"}
    assert (w.cpu_figure, w.shuffle_weight) == (None, None), "one worker: no weights"
    r["balance"] = {"figure": 0.9, "weight": "x"}
    (w,) = summarize(LAYOUT, [r], name="wc", now=1001.0).workers
    assert (w.cpu_figure, w.shuffle_weight) == (0.9, None)
    assert (w.restarts, w.transport_class, w.transport_name) == (None, None, None), "local mode"


def test_a_worker_row_names_its_transport_and_its_restarts() -> None:
    """A cluster worker's report carries its supervisor's restart count; every
    report names the transport class (short name where it has one)."""
    r = report(0, 6700, {}, restarts=3, transport_class="storm_zmq.messaging.tcp.Context")
    (w,) = summarize(LAYOUT, [r], name="wc", now=1001.0).workers
    assert (w.restarts, w.transport_name) == (3, "tcp")
    assert (w.to_dict()["restarts"], w.to_dict()["transport_name"]) == (3, "tcp")
    r.update(restarts="x", transport_class="my.transport.Context")
    (w,) = summarize(LAYOUT, [r], name="wc", now=1001.0).workers
    assert (w.restarts, w.transport_name) == (None, "my.transport.Context")


def test_errors_merge_zookeeper_and_reports_newest_first_bounded() -> None:
    stored = {"split": [{"time": 5.0, "host": "h", "port": 1, "task": 3, "text": "B"},
                        {"time": 1.0, "host": "h", "port": 1, "task": 3, "text": "A"}],
              "worker": [{"time": 2.0, "host": "h", "port": 1, "task": None, "text": "died"}]}
    reports = [report(0, 6700, {}, errors=[
        {"component": "split", "task": 3, "time": 5.0, "text": "B"},  # the same one again
        {"component": "split", "task": 4, "time": 3.0, "text": "C"},
        {"component": "count", "task": 6, "time": None, "text": "no time"},
    ])]
    summary = summarize(LAYOUT, reports, name="wc", errors=stored)
    split = summary.component("split")
    assert [e.text for e in split.errors] == ["B", "C", "A"]
    assert split.errors[1].host == "127.0.0.1" and split.errors[1].port == 6700
    assert [e.text for e in summary.component("count").errors] == ["no time"]
    assert [e.text for e in summary.errors["worker"]] == ["died"]
    many = {"split": [{"time": float(t), "text": str(t)} for t in range(25)]}
    kept = summarize(LAYOUT, [], name="wc", errors=many).component("split").errors
    assert [e.text for e in kept] == [str(t) for t in range(24, 24 - MAX_ERRORS, -1)]


def test_reports_from_beats_fill_host_port_and_time_from_the_node() -> None:
    beats = {
        "my-host-6701": {"time": 50.0, "stats": {"components": {}}},
        "10.0.0.1-6700": {"time": 40.0, "stats": {"host": "given", "port": 1, "time": 41.0,
                                                  "components": {}}},
        "127.0.0.1-6702": {"time": 30.0},  # still starting: no stats yet
        "bad": "not a beat",
    }
    reports = reports_from_beats(beats)  # type: ignore[arg-type]
    assert [(r["host"], r["port"], r["time"]) for r in reports] == \
        [("given", 1, 41.0), ("my-host", 6701, 50.0)]


def test_totals_are_storms_topology_stats() -> None:
    reports = [report(0, 6700, {
        "words": {"emitted": 10, "transferred": 10, "acked": 8, "failed": 1, "pending": 1,
                  "complete_ms_total": 16.0, "complete_samples": 8},
        "split": {"emitted": 50, "transferred": 50, "acked": 10},
        ACKER: {"emitted": 99, "transferred": 99, "acked": 0},
    })]
    totals = summarize(LAYOUT, reports, name="wc").totals()
    assert (totals["emitted"], totals["transferred"]) == (60, 60)  # the acker is not counted
    assert (totals["acked"], totals["failed"], totals["pending"]) == (8, 1, 1)  # spouts only
    assert totals["complete_latency_ms"] == 2.0


def test_to_dict_is_json_with_the_graph_without_the_acker() -> None:
    reports = [report(0, 6700, {"words": {"emitted": 3}, ACKER: {"executed": 3}})]
    summary = summarize(LAYOUT, reports, name="wc", topology_id="wc-1", status="active",
                        launch_time=100.0, now=160.0, num_workers=2)
    data = json.loads(json.dumps(summary.to_dict(), allow_nan=False))
    assert (data["name"], data["id"], data["status"], data["uptime_secs"], data["num_workers"]) \
        == ("wc", "wc-1", "active", 60.0, 2)
    assert [c["name"] for c in data["components"]] == ["words", "split", "count", ACKER]
    assert data["components"][0]["emitted"] == 3
    assert data["components"][0]["complete_latency_ms"] is None
    assert [n["name"] for n in data["graph"]["nodes"]] == ["words", "split", "count"]
    assert data["edges"][1] == {"source": "split", "target": "count", "stream": "default",
                                "grouping": "fields(word)"}
    assert data["workers"][0]["key"] == "127.0.0.1:6700"


def test_an_unknown_component_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"no component 'nope' \(it has words, split, count\)"):
        summarize(LAYOUT, [], name="wc").component("nope")


def test_layout_from_a_real_definition_round_trips_through_a_dict() -> None:
    definition = load_topology(PROJECT / "topologies" / "wordcount.py").definition()
    layout = TopologyLayout.from_definition(definition)
    assert [(c.name, c.kind, c.par) for c in layout.components] == \
        [("sentences", "spout", 1), ("split", "bolt", 2), ("count", "bolt", 3)]
    assert [(e.source, e.target, e.grouping) for e in layout.edges] == \
        [("sentences", "split", "shuffle"), ("split", "count", "fields(word)")]
    assert TopologyLayout.from_dict(json.loads(json.dumps(layout.to_dict()))) == layout


def test_layout_from_a_record_prefers_its_stored_layout() -> None:
    assert TopologyLayout.from_record({"layout": LAYOUT.to_dict(), "components": {}}) == LAYOUT
    # the executors are the record's components' (a rebalance -e changes them there)
    rebalanced = TopologyLayout.from_record({"layout": LAYOUT.to_dict(),
                                             "components": {"split": [4, 4]}})
    assert [c.par for c in rebalanced.components] == [1, 4, 3]
    assert rebalanced.edges == LAYOUT.edges
    bare = TopologyLayout.from_record({"components": {"words": [1, 2], "odd": "x"}})
    assert bare.components == (ComponentLayout("words", None, 1, 2),
                               ComponentLayout("odd", None, None, None))
    assert bare.edges == ()
    junk = TopologyLayout.from_dict({"components": [{"name": 3}, "x", {"name": "ok",
                                                                       "kind": "weird"}],
                                     "edges": [{"source": "a"}, {"source": "a", "target": "b"}]})
    assert junk == TopologyLayout((ComponentLayout("ok"),), (Edge("a", "b"),))


def test_the_local_runners_totals_are_what_summarize_gives() -> None:
    """How RunStats.totals() can become a view of summarize()."""
    definition = load_topology(PROJECT / "topologies" / "wordcount.py").definition()
    stats = RunStats(definition)
    stats.update(0, report(0, 6700, {"sentences": {"emitted": 7, "acked": 6, "pending": 1,
                                                   "latencies_ms": [1.0]},
                                     "split": {"executed": 6, "emitted": 30, "queued": 2}}))
    stats.update(1, report(1, 6701, {"split": {"executed": 1, "emitted": 5},
                                     "count": {"executed": 35, "malformed": 1}}))
    summary = summarize(TopologyLayout.from_definition(definition), list(stats.latest.values()),
                        name=definition.name)
    for name, totals in stats.totals().items():
        counters = summary.component(name).counters()
        assert {key: counters[key] for key in totals} == totals


def test_latency_means_are_exact_for_many_workers() -> None:
    reports = [report(i, 6700 + i, {"count": {"execute_ms_total": 0.1 * i * i,
                                              "execute_samples": i}}) for i in range(1, 50)]
    mean = summarize(LAYOUT, reports, name="wc").component("count").execute_latency_ms
    assert mean is not None and math.isclose(mean, 0.1 * sum(i * i for i in range(1, 50))
                                              / sum(range(1, 50)))
