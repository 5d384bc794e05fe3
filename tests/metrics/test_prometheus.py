"""The /metrics text: parsed back by prometheus_client's own parser, and checked line
by line against the 0.0.4 format's rules."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from storm_zmq.cluster.overview import cluster_overview
from storm_zmq.metrics.prometheus import escape_label_value, render
from storm_zmq.metrics.summary import ACKER, ComponentLayout, TopologyLayout, summarize

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? '
                    r"(-?[0-9.e+-]+|NaN|[+-]Inf)$")
NASTY = 'we"ird\\name\nx'

LAYOUT = TopologyLayout((ComponentLayout("words", "spout", 1, 1),
                         ComponentLayout("count", "bolt", 2, 2)))


def summaries() -> list:
    report = {
        "worker": 0, "host": "127.0.0.1", "port": 6700, "time": 100.0, "uptime_secs": 5.5,
        "rss_bytes": 50_000_000, "open_fds": 30, "cpu_secs": 12.5, "transfer_queued": 1,
        "transfer_capacity": 1000,
        "components": {
            "words": {"kind": "spout", "emitted": 100, "transferred": 200, "acked": 90,
                      "failed": 2, "pending": 8, "complete_ms_total": 450.0,
                      "complete_samples": 90, "capacity": 0.0, "tasks": [1]},
            "count": {"executed": 200, "acked": 200, "execute_ms_total": 20.0,
                      "execute_samples": 10, "capacity": 0.42, "queued": 3,
                      "queue_capacity": 2048, "tasks": [2, 3], "executors": 2},
            ACKER: {"executed": 290},
        },
        "refused": {"unknown_task": 4},
        "transport": {"frames_received": 11, "messages_received": 110, "bytes_received": 1100},
        "peers": {"1": {"frames_sent": 5, "messages_sent": 50, "bytes_sent": 500,
                        "reconnects": 1, "send_timeouts": 0}},
        "backpressure": {"events": 2, "throttled_tasks": [3]},
        "balance": {"figure": 0.93, "weight": 0.4},
    }
    return [
        summarize(LAYOUT, [report], name="wc", topology_id="wc-1", status="active",
                  num_workers=1, launch_time=50.0, now=101.0),
        summarize(LAYOUT, [], name=NASTY, status="inactive"),
    ]


def samples_by_name(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    result = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in result, f"duplicate series {key}"
            result[key] = sample.value
    return result


def test_the_output_parses_and_carries_the_numbers() -> None:
    text = render(summaries())
    values = samples_by_name(text)
    wc = (("component", "words"), ("kind", "spout"), ("topology", "wc"))
    count = (("component", "count"), ("kind", "bolt"), ("topology", "wc"))
    worker = (("host", "127.0.0.1"), ("port", "6700"), ("topology", "wc"), ("worker", "0"))
    wc_on_0 = tuple(sorted(wc + worker[:2] + worker[3:]))  # counters: per worker
    count_on_0 = tuple(sorted(count + worker[:2] + worker[3:]))
    assert values[("storm_zmq_component_emitted_total", wc_on_0)] == 100
    assert values[("storm_zmq_component_transferred_total", wc_on_0)] == 200
    assert values[("storm_zmq_component_acked_total", wc_on_0)] == 90
    assert values[("storm_zmq_component_failed_total", wc_on_0)] == 2
    assert values[("storm_zmq_component_pending", wc)] == 8
    assert values[("storm_zmq_component_complete_latency_seconds_sum", wc_on_0)] == 0.45
    assert values[("storm_zmq_component_complete_latency_seconds_count", wc_on_0)] == 90
    assert values[("storm_zmq_component_executed_total", count_on_0)] == 200
    assert values[("storm_zmq_component_execute_latency_seconds_sum", count_on_0)] == 0.02
    assert values[("storm_zmq_component_capacity_ratio", count)] == 0.42
    assert values[("storm_zmq_component_queued", count)] == 3
    assert values[("storm_zmq_component_tasks", count)] == 2
    assert values[("storm_zmq_worker_resident_memory_bytes", worker)] == 50_000_000
    assert values[("storm_zmq_worker_cpu_seconds_total", worker)] == 12.5
    assert values[("storm_zmq_worker_open_fds", worker)] == 30
    assert values[("storm_zmq_worker_uptime_seconds", worker)] == 5.5
    assert values[("storm_zmq_worker_report_age_seconds", worker)] == 1.0
    assert values[("storm_zmq_worker_up", worker)] == 1
    assert values[("storm_zmq_worker_received_frames_total", worker)] == 11
    assert values[("storm_zmq_worker_refused_total", tuple(sorted(worker + (("kind", "unknown_task"),))))] == 4
    assert values[("storm_zmq_worker_sent_bytes_total", tuple(sorted(worker + (("peer", "1"),))))] == 500
    assert values[("storm_zmq_worker_reconnects_total", tuple(sorted(worker + (("peer", "1"),))))] == 1
    assert values[("storm_zmq_worker_backpressure_events_total", worker)] == 2
    assert values[("storm_zmq_worker_throttled_tasks", worker)] == 1
    assert values[("storm_zmq_worker_cpu_figure", worker)] == 0.93
    assert values[("storm_zmq_worker_shuffle_weight", worker)] == 0.4
    assert values[("storm_zmq_topology_info", (("id", "wc-1"), ("status", "active"),
                                               ("topology", "wc")))] == 1
    assert values[("storm_zmq_topology_uptime_seconds", (("topology", "wc"),))] == 51.0
    # a label value with a quote, a backslash and a newline survives the round trip
    assert values[("storm_zmq_component_tasks", (("component", "words"), ("kind", "spout"),
                                                 ("topology", NASTY)))] == 1
    # no worker reports: no counter series (a 0 would be a reset)
    assert not [key for key in values if key[0] == "storm_zmq_component_emitted_total"
                and ("topology", NASTY) in key[1]]
    # unknown values are left out, not invented: no capacity for a topology without reports
    assert ("storm_zmq_component_capacity_ratio", (("component", "words"), ("kind", "spout"),
                                                   ("topology", NASTY))) not in values


def test_a_restarted_worker_resets_only_its_own_counter_series() -> None:
    # Summed over workers, a restart would make the component's counter go down and
    # Prometheus would count the other workers' whole history again.
    def report(port: int, emitted: int) -> dict:
        return {"worker": port - 6700, "host": "h", "port": port, "time": 100.0,
                "components": {"words": {"kind": "spout", "emitted": emitted}}}

    def emitted(reports: list[dict]) -> dict[str, float]:
        text = render([summarize(LAYOUT, reports, name="wc", now=100.0)])
        return {dict(labels)["port"]: value for (name, labels), value in samples_by_name(text).items()
                if name == "storm_zmq_component_emitted_total"}

    assert emitted([report(6700, 1000), report(6701, 900)]) == {"6700": 1000, "6701": 900}
    assert emitted([report(6700, 1010), report(6701, 5)]) == {"6700": 1010, "6701": 5}


OVERVIEW = cluster_overview(
    {"s1": {"host": "10.0.0.1", "ports": [6700, 6701, 6702]},
     NASTY: {"host": "10.0.0.2", "ports": [6700]}},
    {"n1": {"host": "h"}}, "n1",
    {"wc-1": {"slots": [["s1", "10.0.0.1", 6701], [NASTY, "10.0.0.2", 6700]]}},
    {"wc-1": "wordcount"}, now=0.0)


def test_the_cluster_gauges_count_supervisors_slots_and_the_leader() -> None:
    families = {f.name: f for f in text_string_to_metric_families(render([], OVERVIEW))}
    assert [s.value for s in families["storm_zmq_cluster_supervisors"].samples] == [2]
    assert [s.value for s in families["storm_zmq_cluster_leader"].samples] == [1]
    assert [s.value for s in families["storm_zmq_cluster_unsupervised_workers"].samples] == [0]
    slots = {(s.labels["supervisor"], s.labels["state"]): s.value
             for s in families["storm_zmq_supervisor_slots"].samples}
    assert slots == {("s1", "used"): 1, ("s1", "free"): 2, (NASTY, "used"): 1, (NASTY, "free"): 0}
    without_leader = cluster_overview({}, {}, None, {}, {}, now=0.0)
    families = {f.name: f for f in text_string_to_metric_families(render([], without_leader))}
    assert [s.value for s in families["storm_zmq_cluster_leader"].samples] == [0]
    assert "storm_zmq_cluster" not in render([])  # a local run: no cluster families


def test_the_text_follows_the_format_strictly() -> None:
    text = render(summaries(), OVERVIEW)
    assert text.endswith("\n") and "\r" not in text
    declared: dict[str, str] = {}
    helped: set[str] = set()
    current = None
    for line in text.rstrip("\n").split("\n"):
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert NAME.match(name) and name not in helped, line
            helped.add(name)
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name in helped and name not in declared, line
            assert kind in ("counter", "gauge", "summary"), line
            declared[name] = kind
            current = name
            assert name.startswith("storm_zmq_"), line
            if kind == "counter":
                assert name.endswith("_total"), line
            else:
                assert not name.endswith("_total"), line
        else:
            match = SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            sample = match.group(1)
            # every sample belongs to the family declared just above it
            allowed = {current} if declared[current] != "summary" else \
                {f"{current}_sum", f"{current}_count"}
            assert sample in allowed, line
    assert "storm_zmq_component_execute_latency_seconds" in declared
    assert "storm_zmq_supervisor_slots" in declared


def test_label_values_are_escaped() -> None:
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    assert escape_label_value("plain") == "plain"


def test_nothing_to_show_is_still_valid() -> None:
    text = render([])
    assert list(text_string_to_metric_families(text))  # families without samples
    assert all(line.startswith("#") for line in text.splitlines())
