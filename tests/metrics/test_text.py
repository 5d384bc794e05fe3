"""The tables `storm-zmq stats` prints."""

from __future__ import annotations

import re

from storm_zmq.metrics.summary import ComponentLayout, TopologyLayout, summarize
from storm_zmq.metrics.text import format_component, format_duration, format_summary

LAYOUT = TopologyLayout((ComponentLayout("words", "spout", 1, 1),
                         ComponentLayout("count", "bolt", 2, 2)))
REPORT = {
    "worker": 0, "host": "127.0.0.1", "port": 6700, "time": 100.0, "pid": 7,
    "uptime_secs": 65, "rss_bytes": 3 << 20, "open_fds": 9,
    "components": {"words": {"emitted": 1234567, "acked": 1234000, "pending": 567,
                             "complete_ms_total": 10.0, "complete_samples": 4},
                   "count": {"executed": 42, "capacity": 0.5, "execute_ms_total": 1.0,
                             "execute_samples": 4}},
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
