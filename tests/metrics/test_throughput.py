"""Throughput between summaries (storm-zmq monitor): per worker, by its report times."""

from __future__ import annotations

from typing import Any

import pytest

from storm_zmq.metrics.summary import ACKER, ComponentLayout, TopologyLayout, summarize
from storm_zmq.metrics.throughput import Throughput

LAYOUT = TopologyLayout((ComponentLayout("words", "spout", 1, 1),
                         ComponentLayout("count", "bolt", 2, 4)))


def summary(now: float, *workers: tuple[int, float, int, int], pid: int = 42) -> Any:
    """Workers as (index, report time, words emitted, count executed), of process `pid`."""
    reports = [{"worker": index, "host": "h", "port": 6700 + index, "time": at, "pid": pid,
                "components": {"words": {"kind": "spout", "emitted": emitted},
                               "count": {"executed": executed},
                               ACKER: {"executed": executed}}}
               for index, at, emitted, executed in workers]
    return summarize(LAYOUT, reports, name="wc", now=now, stale_after=30)


def rows(throughput: Throughput, s: Any) -> dict[str, tuple[Any, Any]]:
    return {r.component: (r.grown, r.rate) for r in throughput.update(s)}


def test_rates_are_taken_per_worker_by_its_own_report_times() -> None:
    throughput = Throughput("emitted")
    assert rows(throughput, summary(100, (0, 99.0, 1000, 0), (1, 99.5, 0, 0))) == {
        "words": (None, None), "count": (None, None)}  # the acker is left out
    # worker 0 reported 4 s later with 4,000 more; worker 1 2 s later with 1,000
    assert rows(throughput, summary(104, (0, 103.0, 5000, 0), (1, 101.5, 1000, 0))) == {
        "words": (5000, 1000.0 + 500.0), "count": (0, 0.0)}


def test_a_worker_without_a_newer_report_keeps_its_rate() -> None:
    throughput = Throughput("emitted")
    rows(throughput, summary(100, (0, 100.0, 0, 0)))
    assert rows(throughput, summary(101, (0, 101.0, 300, 0)))["words"] == (300, 300.0)
    assert rows(throughput, summary(101.5, (0, 101.0, 300, 0)))["words"] == (0, 300.0)
    assert rows(throughput, summary(102, (0, 102.0, 500, 0)))["words"] == (200, 200.0)


def test_a_worker_without_a_report_for_two_reads_is_not_counting() -> None:
    # a frozen worker (SIGSTOP) showed its last rate for 30 s, until its report went stale
    throughput = Throughput("emitted")
    rows(throughput, summary(100, (0, 100.0, 0, 0)))
    assert rows(throughput, summary(101, (0, 101.0, 300, 0)))["words"] == (300, 300.0)
    assert rows(throughput, summary(102, (0, 101.0, 300, 0)))["words"] == (0, 300.0)  # once
    assert rows(throughput, summary(103, (0, 101.0, 300, 0)))["words"] == (0, 0.0)
    assert rows(throughput, summary(104, (0, 101.0, 300, 0)))["words"] == (0, 0.0)
    assert rows(throughput, summary(105, (0, 105.0, 700, 0)))["words"] == (400, 100.0)


def test_a_restarted_worker_counts_from_zero() -> None:
    throughput = Throughput("executed")
    rows(throughput, summary(100, (0, 100.0, 0, 9000)))
    assert rows(throughput, summary(102, (0, 102.0, 0, 400)))["count"] == (400, 200.0)
    # (a metrics audit: a new process already past the old one's count was read as
    # growth from that count: 9,100 here, not 9,500)
    assert rows(throughput, summary(104, (0, 104.0, 0, 9500), pid=43))["count"] == (9500, 4750.0)


def test_a_worker_that_goes_away_counts_no_more_and_components_can_be_chosen() -> None:
    throughput = Throughput("executed", components=("count", ACKER))
    rows(throughput, summary(100, (0, 100.0, 0, 0), (1, 100.0, 0, 0)))
    assert rows(throughput, summary(101, (0, 101.0, 0, 10), (1, 101.0, 0, 20))) == {
        "count": (30, 30.0), ACKER: (30, 30.0)}
    assert rows(throughput, summary(102, (0, 102.0, 0, 20))) == {
        "count": (10, 10.0), ACKER: (10, 10.0)}


def test_an_unknown_counter_is_refused() -> None:
    with pytest.raises(ValueError, match="no counter 'speed'"):
        Throughput("speed")
