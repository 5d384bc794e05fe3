"""Tests for RunStats (storm_zmq.runtime.stats): aggregation of worker reports."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_zmq.component import Bolt, Spout
from storm_zmq.runtime.assignment import ACKER
from storm_zmq.runtime.stats import RunStats
from storm_zmq.topology import Topology


class WordSpout(Spout):
    outputs = ["word"]


class LineSpout(Spout):
    outputs = ["line"]


class CountBolt(Bolt):
    outputs = ["word", "count"]


class StatsTopology(Topology):
    words = WordSpout.spec(par=2)
    counter = CountBolt.spec(inputs=[words], par=2)


def entry(**counters: Any) -> dict[str, Any]:
    base = {"emitted": 0, "executed": 0, "acked": 0, "failed": 0, "malformed": 0,
            "queued": 0, "pending": 0, "spout_tasks": 0, "exhausted_tasks": 0,
            "latencies_ms": []}
    base.update(counters)
    return base


def report(transfer_queued: int = 0, refused: dict[str, int] | None = None,
           remote_sent: int = 0, remote_received: int = 0, sending: int = 0,
           **components: dict[str, Any]) -> dict[str, Any]:
    return {"components": dict(components), "transfer_queued": transfer_queued,
            "refused": refused or {}, "transport": {}, "sending": sending,
            "remote_sent": remote_sent, "remote_received": remote_received}


def stand_in(**kinds: str | tuple[str, int]) -> Any:
    """A definition-like object: each component is a kind, or (kind, num_tasks);
    num_tasks defaults to 1."""
    components = {}
    for name, spec in kinds.items():
        kind, num_tasks = (spec, 1) if isinstance(spec, str) else spec
        components[name] = SimpleNamespace(kind=kind, par=1, num_tasks=num_tasks, inputs=())
    return SimpleNamespace(name="StandIn", components=components)


@pytest.fixture
def stats() -> RunStats:
    return RunStats(StatsTopology.definition())


# -- construction and totals -------------------------------------------------------------


def test_spouts_and_bolts_from_the_definition(stats: RunStats) -> None:
    assert stats.topology == "StatsTopology"
    assert stats.spouts == ["words"]
    assert stats.bolts == ["counter"]
    assert stats.spout_tasks == {"words": 2}


def test_works_with_a_stand_in_definition() -> None:
    s = RunStats(stand_in(a="spout", b="bolt", c=("spout", 3)))
    assert s.spouts == ["a", "c"] and s.bolts == ["b"]
    assert s.spout_tasks == {"a": 1, "c": 3}


def test_totals_are_summed_over_workers(stats: RunStats) -> None:
    stats.update(0, report(words=entry(emitted=10, acked=7, failed=1, pending=2),
                           counter=entry(executed=9, acked=9, queued=1)))
    stats.update(1, report(words=entry(emitted=5, acked=5),
                           counter=entry(executed=4, emitted=4, malformed=2)))
    totals = stats.totals()
    assert totals["words"]["emitted"] == 15
    assert totals["words"]["acked"] == 12
    assert totals["words"]["failed"] == 1
    assert totals["words"]["pending"] == 2
    assert totals["counter"]["executed"] == 13
    assert totals["counter"]["emitted"] == 4
    assert totals["counter"]["queued"] == 1
    assert totals["counter"]["malformed"] == 2
    assert "latencies_ms" not in totals["words"]


def test_a_new_report_replaces_the_worker_previous_one(stats: RunStats) -> None:
    stats.update(0, report(words=entry(emitted=10)))
    stats.update(0, report(words=entry(emitted=25)))
    stats.update(1, report(words=entry(emitted=1)))
    assert stats.totals()["words"]["emitted"] == 26


def test_missing_counters_count_as_zero(stats: RunStats) -> None:
    stats.update(0, {"components": {"counter": {"executed": 3}}})
    assert stats.totals()["counter"] == {
        "emitted": 0, "transferred": 0, "executed": 3, "acked": 0, "failed": 0, "malformed": 0,
        "errors_reported": 0, "queued": 0, "queue_capacity": 0, "pending": 0,
        "exhausted_tasks": 0,
    }


def test_totals_empty_before_any_report(stats: RunStats) -> None:
    assert stats.totals() == {}


def test_latencies_are_collected_from_every_report(stats: RunStats) -> None:
    r0 = report(words=entry(latencies_ms=[1.0, 2.0]))
    stats.update(0, r0)
    stats.update(1, report(words=entry(latencies_ms=[3.0])))
    stats.update(0, report(words=entry(latencies_ms=[4.0])))
    assert sorted(stats.latencies_ms) == [1.0, 2.0, 3.0, 4.0]  # samples accumulate
    assert r0["components"]["words"]["latencies_ms"] == [1.0, 2.0], "the report is not changed"


def test_latency_samples_are_bounded_and_drawn_from_the_whole_run(stats: RunStats) -> None:
    # keeping the newest made a 25 s run's p99 that of its last 14 s
    stats.update(0, report(words=entry(latencies_ms=[1.0] * 150_000)))  # the first part
    stats.update(0, report(words=entry(latencies_ms=[2.0] * 150_000)))  # the second
    assert len(stats.latencies_ms) == 100_000 and stats.latency_samples_seen == 300_000
    early = stats.latencies_ms.count(1.0) / 100_000
    assert 0.45 < early < 0.55, early  # half of what was seen, as a uniform draw keeps
    stats.update(0, report(words=entry(latencies_ms=[3.0])))
    stats.start(0.0)
    stats.stop(1.0)
    assert ("(100,000 samples standing for the 300,001 tuple trees completed over the run)"
            in stats.summary("ran 1 s"))


def test_latency_samples_weigh_as_many_trees_as_they_stand_for(stats: RunStats) -> None:
    # A metrics audit: a busy spout reports a draw of its trees (5,000 a report),
    # a quiet one all of them; weighed alike, a run's p99 was its quiet phase's
    # (5.3 ms where every tree's gave 2.7)
    busy = entry(latencies_ms=[1.0] * 5_000, latency_runs=[[5_000, 95_000]])
    for _ in range(4):
        stats.update(0, report(words=busy))  # 380,000 fast trees, 20,000 samples
    stats.update(0, report(words=entry(latencies_ms=[9.0] * 20_000)))  # 20,000 slow ones, all
    assert stats.latency_samples_seen == 400_000 and stats.latencies_ms.count(9.0) == 20_000
    # 20,000 of 400,000 trees were slow, not half of them
    assert stats.percentile(0.94) == 1.0 and stats.percentile(0.96) == 9.0
    # the same once there are more samples than are kept: a draw by weight
    for _ in range(30):
        stats.update(0, report(words=busy))
    stats.update(0, report(words=entry(latencies_ms=[9.0] * 120_000)))
    assert len(stats.latencies_ms) == 100_000 and stats.latency_samples_seen == 3_370_000
    # 140,000 of 3,370,000 trees slow: 4.2 %
    assert stats.percentile(0.95) == 1.0 and stats.percentile(0.97) == 9.0


# -- exhaustion and draining ---------------------------------------------------------------


def test_all_spouts_exhausted_needs_a_report(stats: RunStats) -> None:
    assert stats.all_spouts_exhausted() is False


def test_all_spouts_exhausted_when_every_task_exhausted_and_nothing_pending(stats: RunStats) -> None:
    stats.update(0, report(words=entry(spout_tasks=1, exhausted_tasks=1)))
    stats.update(1, report(words=entry(spout_tasks=1, exhausted_tasks=0)))
    assert not stats.all_spouts_exhausted()
    stats.update(1, report(words=entry(spout_tasks=1, exhausted_tasks=1, pending=3)))
    assert not stats.all_spouts_exhausted()
    stats.update(1, report(words=entry(spout_tasks=1, exhausted_tasks=1, pending=0),
                           counter=entry(queued=5)))
    assert stats.all_spouts_exhausted()


def test_all_spouts_exhausted_needs_every_spout_component() -> None:
    s = RunStats(stand_in(a=("spout", 2), b=("spout", 1), c="bolt"))
    s.update(0, report(a=entry(spout_tasks=2, exhausted_tasks=2)))
    assert not s.all_spouts_exhausted()  # b never reported
    s.update(1, report(b=entry(spout_tasks=1, exhausted_tasks=0)))
    assert not s.all_spouts_exhausted()
    s.update(1, report(b=entry(spout_tasks=1, exhausted_tasks=1)))
    assert s.all_spouts_exhausted()


def test_a_spout_with_no_tasks_reported_is_not_exhausted(stats: RunStats) -> None:
    stats.update(0, report(words=entry(spout_tasks=0, exhausted_tasks=0)))
    assert not stats.all_spouts_exhausted()


def test_no_spouts_is_never_exhausted() -> None:
    s = RunStats(stand_in(b="bolt"))
    s.update(0, report(b=entry()))
    assert not s.all_spouts_exhausted()


def test_all_spouts_exhausted_counts_every_task_of_the_definition(stats: RunStats) -> None:
    # `words` has 2 tasks; only worker 0 (running one of them) has reported
    stats.update(0, report(words=entry(spout_tasks=1, exhausted_tasks=1)))
    assert not stats.all_spouts_exhausted()


def test_drained(stats: RunStats) -> None:
    stats.update(0, report(words=entry(pending=0), counter=entry(queued=0)))
    stats.update(1, report(words=entry(), counter=entry()))
    assert stats.drained()
    stats.update(1, report(words=entry(pending=1), counter=entry()))
    assert not stats.drained()
    stats.update(1, report(words=entry(), counter=entry(queued=2)))
    assert not stats.drained()
    stats.update(1, report(transfer_queued=4, words=entry(), counter=entry()))
    assert not stats.drained()
    stats.update(1, report(words=entry(), counter=entry()))
    assert stats.drained()


def test_messages_sent_and_not_yet_received_are_queued(stats: RunStats) -> None:
    # worker 0 sent 5 task messages to worker 1, which has taken 3 from the transport
    stats.update(0, report(remote_sent=5, remote_received=0, words=entry(), counter=entry()))
    stats.update(1, report(remote_sent=0, remote_received=3, words=entry(), counter=entry()))
    assert stats.backlog() == (0, 2) and not stats.drained()
    stats.update(1, report(remote_sent=0, remote_received=5, words=entry(), counter=entry()))
    assert stats.drained()
    stats.update(0, report(remote_sent=5, sending=3, words=entry(), counter=entry()))
    assert stats.backlog() == (0, 3), "a send thread's messages waiting for a connection"
    stats.update(0, report(remote_sent=5, words=entry(), counter=entry()))
    # more received than sent (a stranger's messages refused as unknown): not negative
    stats.update(1, report(remote_sent=0, remote_received=9, words=entry(), counter=entry()))
    assert stats.backlog() == (0, 0)


def test_reconnects_are_summed_over_every_workers_peers(stats: RunStats) -> None:
    # what a dropped connection held stays in transit for good: the drain says why
    stats.update(0, {**report(remote_sent=7, words=entry(), counter=entry()),
                     "peers": {"1": {"reconnects": 1}, "2": {"reconnects": 0}}})
    stats.update(1, {**report(remote_received=4, words=entry(), counter=entry()),
                     "peers": {"0": {"reconnects": 2}}})
    assert stats.in_transit() == 3 and stats.backlog() == (0, 3)
    assert stats.reconnects() == 3
    assert stats.undrained(5.2) == (
        "stopping with 0 tuple tree(s) pending and 3 tuple(s) queued after draining 5 s: they "
        "were neither acked nor failed (3 of the tuples were sent to another worker over a "
        "connection that dropped and was made again, 3 time(s): they never arrived, and their "
        "tuple trees, if tracked, timed out)")


def test_a_drain_that_leaves_nothing_says_nothing(stats: RunStats) -> None:
    stats.update(0, report(words=entry(), counter=entry()))
    assert stats.undrained(1.0) is None
    stats.update(0, report(transfer_queued=2, words=entry(pending=1), counter=entry()))
    assert stats.undrained(1.0) == ("stopping with 1 tuple tree(s) pending and 2 tuple(s) queued "
                                    "after draining 1 s: they were neither acked nor failed "
                                    "(trees pending at words 1; 2 tuple(s) on their way between "
                                    "workers)")


def test_a_drain_says_which_components_it_waits_for(stats: RunStats) -> None:
    stats.update(0, report(words=entry(pending=200), counter=entry(queued=134)))
    assert stats.waited_for() == "trees pending at words 200; tuples queued for counter 134"
    stats.update(0, report(words=entry(pending=200), counter=entry()))  # held by a bolt
    assert stats.waited_for() == (
        "trees pending at words 200; none queued: a bolt holds their tuples without acking them "
        "(auto_ack off, or a BatchingBolt waiting for its tick), or a tree lost a tuple, which "
        "its timeout fails")
    stats.update(0, report(words=entry(), counter=entry()))
    assert stats.waited_for() == ""


def test_reported_since(stats: RunStats) -> None:
    before = time.monotonic()
    assert not stats.reported_since(before)  # nobody reported
    stats.update(0, report(words=entry()))
    assert stats.reported_since(before)
    middle = time.monotonic()
    stats.update(1, report(words=entry()))
    assert not stats.reported_since(middle)  # worker 0 is older than `middle`
    stats.update(0, report(words=entry()))
    assert stats.reported_since(middle)
    assert not stats.reported_since(time.monotonic())


# -- percentiles -------------------------------------------------------------------------


def test_percentile_none_without_samples(stats: RunStats) -> None:
    assert stats.percentile(0.5) is None


def test_percentile_examples(stats: RunStats) -> None:
    stats.update(0, report(words=entry(latencies_ms=[float(v) for v in range(100, 0, -1)])))
    assert stats.percentile(0.0) == 1.0
    assert stats.percentile(1.0) == 100.0
    assert stats.percentile(0.5) in (50.0, 51.0)
    assert stats.percentile(0.99) in (99.0, 100.0)


@settings(max_examples=100, deadline=None)
@given(
    samples=st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=50),
    fractions=st.lists(st.floats(0, 1), min_size=2, max_size=5),
)
def test_percentile_properties(samples: list[float], fractions: list[float]) -> None:
    s = RunStats(stand_in(a="spout"))
    s.update(0, report(a=entry(latencies_ms=list(samples))))
    assert s.percentile(0.0) == min(samples)
    assert s.percentile(1.0) == max(samples)
    results = [s.percentile(f) for f in sorted(fractions)]
    assert results == sorted(results)  # monotone in the fraction
    for f, r in zip(sorted(fractions), results, strict=True):
        assert r in samples
        assert sum(1 for v in samples if v <= r) >= f * len(samples)


# -- progress line -------------------------------------------------------------------------


def test_progress_line_first_call_has_no_rates(stats: RunStats) -> None:
    stats.start(100.0)
    stats.update(0, report(words=entry(emitted=1500, acked=1400, failed=3, pending=12),
                           counter=entry(executed=300)))
    line = stats.progress_line(105.0)
    assert line == ("[    5s] words: 1.5k emitted, 1.4k acked, 3 failed, 12 pending"
                    " | counter: 300 executed")


def test_progress_line_computes_rates_between_calls(stats: RunStats) -> None:
    stats.start(100.0)
    stats.update(0, report(words=entry(emitted=1000), counter=entry(executed=200)))
    stats.progress_line(110.0)
    stats.update(0, report(words=entry(emitted=3000, acked=2000), counter=entry(executed=700)))
    line = stats.progress_line(112.0)
    assert line == ("[   12s] words: 3.0k emitted (1.0k/s), 2.0k acked, 0 failed"
                    " | counter: 700 executed (250/s)")
    # rates are relative to the previous call, not to the start
    stats.update(0, report(words=entry(emitted=3000, acked=3000), counter=entry(executed=700)))
    line = stats.progress_line(122.0)
    assert "words: 3.0k emitted (0/s)" in line
    assert "counter: 700 executed (0/s)" in line


def test_progress_line_rate_of_a_component_first_seen_later(stats: RunStats) -> None:
    stats.start(0.5)
    stats.update(0, report(words=entry(emitted=10)))
    stats.progress_line(1.0)
    stats.update(0, report(words=entry(emitted=10), counter=entry(executed=40)))
    assert "counter: 40 executed (20/s)" in stats.progress_line(3.0)


def test_progress_line_skips_components_without_reports(stats: RunStats) -> None:
    stats.start(0.5)
    stats.update(0, report(counter=entry(executed=5)))
    line = stats.progress_line(1.5)
    assert "words" not in line and "counter: 5 executed" in line


# -- summary -------------------------------------------------------------------------------


def test_summary_mentions_every_component_and_latency_percentiles(stats: RunStats) -> None:
    stats.start(10.0)
    stats.update(0, report(words=entry(emitted=2000, acked=1990, failed=10,
                                       latencies_ms=[float(v) for v in range(1, 1001)]),
                           counter=entry(executed=2000, emitted=2000, acked=2000),
                           **{ACKER: entry(executed=4000)}))
    stats.stop(20.0)
    text = stats.summary("every spout is exhausted")
    lines = text.splitlines()
    assert lines[0] == "StatsTopology stopped after 10.0 s: every spout is exhausted"
    by_name = {line.split()[0]: line.split() for line in lines[2:] if line.startswith("  ")}
    assert by_name["words"] == ["words", "2,000", "0", "1,990", "10", "200"]
    assert by_name["counter"] == ["counter", "2,000", "2,000", "2,000", "0", "200"]
    assert by_name[ACKER] == [ACKER, "0", "4,000", "0", "0", "400"]
    latency = [line for line in lines if "complete latency" in line]
    assert latency == [
        "  complete latency: p50 501.00 ms, p99 991.00 ms, p99.9 1000.00 ms (1,000 samples)"
    ]
    assert "dropped input" not in text


def test_summary_rates_are_per_active_second_not_over_the_drain(stats: RunStats) -> None:
    # (a metrics audit: "stopped after 14.4 s: ran 12 s", avg/s 787 where the spout
    # emitted 945 a second: the drain and the stop were counted)
    stats.start(0.0)
    stats.update(0, report(words=entry(emitted=12_000)))
    stats.deactivate(12.0)
    stats.deactivate(13.0)  # (the first one counts)
    stats.stop(14.4)
    lines = stats.summary("ran 12 s").splitlines()
    assert lines[0] == ("StatsTopology stopped after 14.4 s: ran 12 s (spouts active 12.0 s: "
                        "avg/s is per active second)")
    assert lines[2].split() == ["words", "12,000", "0", "0", "0", "1,000"]


def test_summary_without_latencies_or_reports(stats: RunStats) -> None:
    stats.start(1.0)
    stats.stop(3.0)
    text = stats.summary("ran 2 s")
    assert text.splitlines()[0] == "StatsTopology stopped after 2.0 s: ran 2 s"
    assert "complete latency" not in text
    assert "words" not in text and "counter" not in text


def test_summary_reports_dropped_input(stats: RunStats) -> None:
    stats.start(1.0)
    stats.update(0, report(refused={"frame": 2}, counter=entry(malformed=3)))
    stats.update(1, report(refused={"frame": 1, "tuple": 4}, counter=entry(malformed=1)))
    stats.stop(2.0)
    assert "  dropped input: {'frame': 3, 'tuple': 4}, malformed tuples: 4" in (
        stats.summary("x").splitlines()
    )
