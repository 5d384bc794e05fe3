"""The tables `storm-zmq stats` prints."""

from __future__ import annotations

import re

from storm_zmq.cluster.overview import cluster_overview
from storm_zmq.metrics.summary import ComponentLayout, TopologyLayout, summarize
from storm_zmq.metrics.text import (
    format_component,
    format_duration,
    format_overview,
    format_summary,
)

LAYOUT = TopologyLayout((ComponentLayout("words", "spout", 1, 1),
                         ComponentLayout("count", "bolt", 2, 2)))
REPORT = {
    "worker": 0, "host": "127.0.0.1", "port": 6700, "time": 100.0, "pid": 7,
    "uptime_secs": 65, "rss_bytes": 3 << 20, "open_fds": 9,
    "components": {"words": {"emitted": 1234567, "acked": 1234000, "pending": 567,
                             "complete_ms_total": 10.0, "complete_samples": 4},
                   "count": {"executed": 42, "capacity": 0.5, "execute_ms_total": 1.0,
                             "execute_samples": 4, "errors_reported": 100}},
    "errors": [{"component": "count", "task": 2, "time": 99.0,
                "text": "Traceback...\nValueError: bad word"}],
    "balance": {"figure": 0.9125, "weight": 0.25},
    "restarts": 4, "transport_class": "storm_zmq.messaging.zmq.Context",
}


def test_durations() -> None:
    assert [format_duration(s) for s in (None, 0, 59.9, 61, 3700, 90000)] == \
        ["-", "0s", "59s", "1m 1s", "1h 1m", "1d 1h"]


def test_the_summary_table_shows_every_component_and_worker() -> None:
    summary = summarize(LAYOUT, [REPORT], name="wc", topology_id="wc-1", status="active",
                        num_workers=2, launch_time=40.0, now=100.5)
    text = format_summary(summary)
    lines = text.splitlines()
    assert lines[0] == "topology wc (wc-1), active, 1/2 workers reporting, up 1m 0s"
    assert "complete latency 2.500 ms" in lines[1]
    words = next(line for line in lines if line.strip().startswith("words"))
    assert "1,234,567" in words and "1,234,000" in words and "567" in words
    count = next(line for line in lines if line.strip().startswith("count"))
    assert "0.250" in count and "0.500" in count
    # errors: how many were reported, not how many of them are kept (at most 10)
    assert count.rstrip().endswith(" 100"), count
    worker = next(line for line in lines if "127.0.0.1:6700" in line)
    assert "3.0 MiB" in worker and "1m 5s" in worker and "0.5s" in worker
    assert "0.912" in worker and "0.250" in worker  # its CPU figure and shuffle weight
    header = lines[lines.index("workers") + 1]
    assert header.index("uptime") < header.index("restarts") < header.index("transport")
    assert re.search(r"1m 5s +4 +zmq ", worker), worker  # uptime, restarts, transport
    assert "recent errors" in text and "ValueError: bad word" in text
    # columns line up: every row of the component table has the same width
    table = lines[lines.index("components") + 1:lines.index("components") + 4]
    assert len({len(line) for line in table}) == 1


def test_an_empty_summary_says_nothing_reported() -> None:
    text = format_summary(summarize(TopologyLayout(), [], name="x"))
    assert "(no component has reported yet)" in text and "(no worker has reported yet)" in text


def test_one_component_in_detail() -> None:
    summary = summarize(LAYOUT, [REPORT], name="wc")
    text = format_component(summary, summary.component("count"))
    assert text.splitlines()[0] == "component count of topology wc"
    assert "execute latency ms   0.250" in text
    assert "workers              127.0.0.1:6700" in text
    assert "task 2, 127.0.0.1:6700" in text and "ValueError: bad word" in text


def test_the_cluster_overview_shows_totals_nimbuses_and_each_supervisors_slots() -> None:
    overview = cluster_overview(
        {"s1": {"host": "10.0.0.1", "hostname": "alpha", "ports": [6700, 6701, 6702],
                "time": 997.0, "started": 700.0},
         "s2": {"host": "10.0.0.2", "ports": [6700], "time": 999.0, "started": 990.0}},
        {"n1": {"host": "alpha", "time": 0.0}, "n2": {"host": "beta", "time": 100.0}}, "n1",
        {"wc-1": {"slots": [["s1", "10.0.0.1", 6700], ["s1", "10.0.0.1", 6702],
                            ["s2", "10.0.0.2", 6700]]}},
        {"wc-1": "wordcount"}, now=1000.0)
    text = format_overview(overview)
    lines = text.splitlines()
    assert lines[0] == ("2 supervisors, 4 worker slots: 3 used, 1 free; 1 topology; "
                        "nimbus n1 leads")
    assert re.search(r"^\s+n1\s+alpha\s+yes\s+16m 40s$", text, re.M), text
    assert re.search(r"^\s+n2\s+beta\s+no\s+15m 0s$", text, re.M), text
    assert re.search(r"^\s+s1\s+10\.0\.0\.1 \(alpha\)\s+3\s+2\s+1\s+5m 0s\s+3s\s+"
                     r"wordcount: 6700,6702$", text, re.M), text
    assert re.search(r"^\s+s2\s+10\.0\.0\.2\s+1\s+1\s+0\s+10s\s+1s\s+wordcount: 6700$",
                     text, re.M), text


def test_an_empty_cluster_says_what_to_start() -> None:
    text = format_overview(cluster_overview({}, {}, None, {}, {}, now=0.0))
    assert text.splitlines()[0] == ("0 supervisors, 0 worker slots: 0 used, 0 free; "
                                    "0 topologies; no nimbus leads: nothing is assigned "
                                    "until one does")
    assert "no supervisor is registered: start one with storm-zmq supervisor" in text
    assert "workers on no registered supervisor" not in text


def test_workers_on_a_supervisor_that_is_gone_are_listed() -> None:
    overview = cluster_overview(
        {"s1": {"host": "h1", "ports": [6700]}}, {}, "n1",
        {"wc-1": {"slots": [["s1", "h1", 6700], ["s2", "h2", 6701]]}}, {"wc-1": "wordcount"},
        now=0.0)
    text = format_overview(overview)
    assert ("workers on no registered supervisor slot: they run on while "
            "they heartbeat (their supervisor stopped or restarts); nimbus moves them to free slots, if any, once they stop, or at once when their supervisor no longer has the port") in text
    assert re.search(r"^\s+wordcount\s+s2\s+h2:6701$", text, re.M), text
