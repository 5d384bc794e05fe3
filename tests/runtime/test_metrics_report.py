"""The metrics in worker reports (docs/observability.md) hold what they claim, on a
real two-worker run of a bounded word count: every number is checked against what
the topology must have done."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.local import RunOptions, run_local
from storm_zmq.runtime.tuning import receive_buffer_size
from tests.messaging.conftest import free_port
from tests.runtime.test_local_mode import sentences

PROJECT = Path(__file__).parent / "project"
pytestmark = pytest.mark.slow


def test_reports_count_what_the_topology_did(tmp_path: Path) -> None:
    count = 2000
    latest: dict[int, dict[str, Any]] = {}
    options = RunOptions(
        topology_file=str(PROJECT / "topologies" / "wordcount.py"), conf=dict(DEFAULTS),
        workers=2, progress=False,
        overrides={"supervisor.slots.ports": [free_port(), free_port()],
                   "test.output_dir": str(tmp_path), "test.count": count},
        on_report=lambda worker, report: latest.__setitem__(worker, report),
    )
    result = run_local(options, io.StringIO())
    assert result.exit_code == 0 and result.reason == "every spout is exhausted"
    texts = sentences()
    words = sum(len(texts[i % len(texts)].split()) for i in range(count))

    def total(component: str, key: str) -> float:
        return sum(r["components"][component][key] for r in latest.values()
                   if component in r["components"])

    assert total("sentences", "emitted") == count
    assert total("sentences", "transferred") == count  # one split task per sentence
    assert total("sentences", "acked") == count
    assert total("sentences", "complete_samples") == count
    assert total("sentences", "complete_ms_total") > 0
    assert total("split", "executed") == count
    assert total("split", "emitted") == words
    assert total("split", "transferred") == words  # fields grouping: one target each
    assert total("count", "executed") == words
    assert total("count", "acked") == words
    # execute latency: every executed tuple is in the mean; process latency too for a
    # bolt acked as process() returns (pystorm's defaults: timed per batch, remote
    # tuples too); a bolt that acks itself is sampled (tests/runtime/test_executor.py)
    assert total("count", "execute_samples") == words
    assert total("count", "execute_ms_total") > 0
    assert total("count", "process_samples") == words
    assert total("count", "process_ms_total") > 0
    for report in latest.values():
        assert report["rss_bytes"] > 10 * 2**20 and report["open_fds"] > 3
        # the process's CPU time, every thread's: at least the interpreter's start-up
        assert 0.05 < report["cpu_secs"] < 60
        assert report["transport_class"] == DEFAULTS["storm.messaging.transport"]
        assert report["uptime_secs"] > 0 and report["transfer_capacity"] > 0
        for name, entry in report["components"].items():
            if name == "sentences":  # a spout: Storm has no capacity for one, nor does this
                assert entry["capacity"] is None
            else:
                assert 0.0 <= entry["capacity"] <= 1.0, name
            assert entry["queue_capacity"] == entry["executors"] * receive_buffer_size(DEFAULTS)
            by_executor = entry["by_executor"]
            assert len(by_executor) == entry["executors"]
            assert sorted(t for e in by_executor for t in e["tasks"]) == sorted(entry["tasks"])
            for key in ("emitted", "transferred", "executed", "acked", "failed"):
                assert sum(e[key] for e in by_executor) == entry[key], (name, key)
        # the other worker is a peer that was sent frames, and nothing was refused
        (peer,) = report["peers"].values()
        assert peer["frames_sent"] > 0 and peer["bytes_sent"] > 0
        assert report["transport"]["frames_received"] > 0
        assert report["refused"] == {}
        assert report["backpressure"]["throttled_tasks"] == []
