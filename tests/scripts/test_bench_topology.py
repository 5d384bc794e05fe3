"""Smoke test of scripts/bench_topology.py: a tiny run (one transport, one worker,
2 s runs, a small Bytewax baseline) must finish and write a complete JSON report,
and the pure parts (windowed rates, percentiles, the targets) must compute the
right numbers. No performance assertions: the numbers depend on the machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from storm_zmq.runtime.launch import LOCAL_WORKER_MODULE
from tests.procs import Proc, processes
from tests.scripts.scripts import import_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench_topology.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return import_script("bench_topology")


def _stats(snapshots: list, latency_batches: list | None = None) -> SimpleNamespace:
    return SimpleNamespace(snapshots=snapshots, latency_batches=latency_batches or [])


def test_the_report_names_the_interpreter_the_workers_run_under(
    bench: ModuleType, pypy: str,
) -> None:
    ours = bench.worker_interpreter({})
    assert ours["implementation"] == "CPython" and ours["executable"] == sys.executable
    theirs = bench.worker_interpreter({"worker.python": pypy})
    assert theirs["implementation"] == "PyPy" and theirs["PYPY_GC_NURSERY"]
    with pytest.raises(bench.BenchError, match="'no-such-python' is not an executable"):
        bench.worker_interpreter({"worker.python": "no-such-python"})


def test_a_short_pypy_run_is_told_it_measures_the_jits_warm_up(bench: ModuleType) -> None:
    pypy, cpython = {"implementation": "PyPy"}, {"implementation": "CPython"}
    note = bench.warm_up_note(pypy, 10.0)
    assert note is not None and "starts 2.5 s in" in note and "--seconds 60" in note
    assert bench.warm_up_note(pypy, 40.0) is not None  # the first 10 s left out: not enough
    assert bench.warm_up_note(pypy, 60.0) is None  # the first 15
    assert bench.warm_up_note(cpython, 10.0) is None


def test_window_rate_sums_per_worker_rates_inside_the_window(bench: ModuleType) -> None:
    def snap(t: float, worker: int, executed: int) -> tuple:
        return (t, worker, {"count_bolt": {"executed": executed}}, 0)

    stats = _stats([
        snap(0.5, 0, 100), snap(1.0, 0, 1_000), snap(3.0, 0, 3_000), snap(9.0, 0, 99_999),
        snap(1.2, 1, 0), snap(2.2, 1, 500),
    ])
    # worker 0: (3000 - 1000) / 2 s; worker 1: 500 / 1 s; reports outside [1, 3] ignored
    assert bench.window_rate(stats, "count_bolt", "executed", 1.0, 3.0) == pytest.approx(1_500)
    assert bench.window_rate(stats, "split_bolt", "executed", 1.0, 3.0) == 0
    # a worker that runs the component but reported once in the window has no rate:
    # not a silent 0 in the sum
    with pytest.raises(bench.BenchError, match="worker 0 sent 1 report"):
        bench.window_rate(stats, "count_bolt", "executed", 1.0, 2.0)


def test_latencies_and_percentiles_come_from_the_window(bench: ModuleType) -> None:
    # a report carries the half second before it: the one at 1.2 s may hold acks
    # from before the window's start at 1 s
    stats = _stats([], [(0.5, [1000.0]), (1.2, [700.0]), (1.5, [3.0, 1.0, 2.0]), (2.5, [4.0]),
                        (9.0, [500.0])])
    ordered = bench.window_latencies(stats, 1.0, 3.0)
    assert ordered == [1.0, 2.0, 3.0, 4.0]
    assert bench.percentile(ordered, 0.5) == 3.0
    assert bench.percentile(ordered, 0.999) == 4.0
    assert bench.percentile([], 0.5) is None


def test_the_loadgens_latencies_count_from_when_each_sentence_was_due(
    bench: ModuleType, tmp_path: Path,
) -> None:
    # what spouts.loadgen writes: per ack, its time, ms since due, ms the emit was late
    from array import array

    (tmp_path / "latency-3.bin").write_bytes(
        array("d", [0.9, 50.0, 40.0, 1.1, 7.0, 5.0]).tobytes() + array("d", [2.0, 2.0, 0.5]).tobytes())
    (tmp_path / "latency-4.bin").write_bytes(array("d", [1.5, 3.0, 1.0, 3.1, 9.0, 0.0]).tobytes())
    from_due, late = bench.loadgen_latencies(tmp_path, 1.0, 3.0)
    assert from_due == [2.0, 3.0, 7.0] and late == [0.5, 1.0, 5.0]


def test_targets(bench: ModuleType) -> None:
    def row(transport: str, workers: int, acking: bool, words: float, p99: float | None = None) -> dict:
        result = {"transport": transport, "workers": workers, "acking": acking,
                  "throughput": {"words_per_s": words}}
        if p99 is not None:
            result["latency"] = {"p99_ms": p99, "offered_words_per_s": words / 2}
        return result

    rows = [row("zmq", 1, False, 100), row("zmq", 1, True, 60, p99=4.0),
            row("zmq", 2, False, 140), row("zmq", 2, True, 60, p99=11.0)]
    verdicts = {(t["target"], t["config"]): (round(t["value"], 2), t["met"])
                for t in bench.judge(rows, {"words_per_s": 200})}
    assert verdicts == {
        (bench.TARGET_BYTEWAX, "zmq 1w acking off"): (0.5, False),
        (bench.TARGET_ACKING, "zmq 1w"): (0.6, True),
        (bench.TARGET_LATENCY, "zmq 1w acking on"): (4.0, True),
        (bench.TARGET_SCALING, "zmq acking off"): (1.4, False),
        (bench.TARGET_SCALING, "zmq acking on"): (1.0, False),
        (bench.TARGET_ACKING, "zmq 2w"): (0.43, False),
        (bench.TARGET_LATENCY, "zmq 2w acking on"): (11.0, False),
    }


def _verdict(target: str, config: str, value: float, higher_is_better: bool = True) -> dict:
    threshold = 0.5 if higher_is_better else 10.0
    met = value >= threshold if higher_is_better else value <= threshold
    return {"target": target, "config": config, "value": value, "threshold": threshold,
            "higher_is_better": higher_is_better, "met": met, "detail": f"{value}"}


def test_rounds_are_judged_by_their_median_and_a_tie_by_its_worse_side(bench: ModuleType) -> None:
    assert bench.middle([0.4, 0.6, 0.5]) == 0.5
    assert bench.middle([0.4, 0.6]) == 0.4  # of an even count, the worse middle value
    assert bench.middle([4.0, 12.0], higher_is_better=False) == 12.0

    acking, latency = bench.TARGET_ACKING, bench.TARGET_LATENCY
    per_round = [
        [_verdict(acking, "zmq 1w", 0.45), _verdict(latency, "zmq 2w acking on", 9.0, False)],
        [_verdict(acking, "zmq 1w", 0.55), _verdict(latency, "zmq 2w acking on", 12.0, False)],
        [_verdict(acking, "zmq 1w", 0.52), _verdict(latency, "zmq 2w acking on", 8.0, False)],
    ]
    combined = {t["target"]: t for t in bench.combine_rounds(per_round)}
    assert combined[acking]["value"] == 0.52 and combined[acking]["met"] is True
    assert combined[acking]["values"] == [0.45, 0.55, 0.52]
    assert (combined[acking]["rounds_met"], combined[acking]["rounds"]) == (2, 3)
    assert combined[latency]["value"] == 9.0 and combined[latency]["met"] is True
    assert combined[latency]["rounds_met"] == 2
    # two rounds that disagree: the verdict takes the worse one
    (tie,) = bench.combine_rounds([[_verdict(latency, "c", 9.0, False)], [_verdict(latency, "c", 11.0, False)]])
    assert (tie["value"], tie["met"], tie["rounds_met"]) == (11.0, False, 1)


def test_the_table_shows_the_median_round_of_each_configuration(bench: ModuleType) -> None:
    def row(words: float, p99: float, cpu: float) -> dict:
        return {"transport": "tcp", "workers": 1, "acking": True,
                "throughput": {"words_per_s": words, "processes": [{"cpu_percent": cpu}]},
                "latency": {"p99_ms": p99}}

    (summary,) = bench.median_rows([[row(300, 2.0, 90)], [row(100, 5.0, 80)], [row(200, 3.0, 70)]])
    # words/s and CPU from the same run (the median words/s), p99 from the median p99's run
    assert summary["throughput"] == {"words_per_s": 200, "processes": [{"cpu_percent": 70}]}
    assert summary["latency"] == {"p99_ms": 3.0}
    assert summary["words_per_s_rounds"] == [300, 100, 200]
    assert summary["p99_ms_rounds"] == [2.0, 5.0, 3.0]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_tiny_run_writes_a_complete_report(tmp_path: Path) -> None:
    report_file = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--transports", "zmq", "--workers", "1",
         "--seconds", "2", "--bytewax-sentences", "20000", "--json", str(report_file),
         "-o", "topology.executor.receive.buffer.size=512"],
        cwd=REPO, capture_output=True, text=True, timeout=55,
    )
    assert result.returncode == 0, result.stderr

    report = json.loads(report_file.read_text())
    assert report["machine"]["nproc"] >= 1
    assert report["settings"]["transports"] == ["zmq"]
    assert report["settings"]["rounds"] == 1 and len(report["rounds"]) == 1  # --quick: one round
    assert report["bytewax"]["words"] == 20000 * 17 and report["bytewax"]["words_per_s"] > 0
    rows = {(r["transport"], r["workers"], r["acking"]): r for r in report["rows"]}
    assert set(rows) == {("zmq", 1, False), ("zmq", 1, True)}
    for row in rows.values():
        throughput = row["throughput"]
        assert throughput["words_per_s"] > 0
        (process,) = throughput["processes"]  # one worker
        assert process["peak_rss_mb"] > 0 and process["cpu_percent"] is not None
        assert throughput["overrides"]["topology.executor.receive.buffer.size"] == 512  # -o
    assert "latency" not in rows[("zmq", 1, False)]
    latency = rows[("zmq", 1, True)]["latency"]
    assert latency["samples"] > 0
    assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["p999_ms"]
    # from when each sentence was due (the loadgen's files), with Storm's emit-to-ack beside it
    assert latency["emit_late_p99_ms"] is not None and latency["achieved_fraction"] > 0
    assert set(latency["emit_to_ack"]) == {"p50_ms", "p99_ms", "p999_ms", "samples"}
    assert "loadgen.latency.dir" not in latency["overrides"]
    assert latency["offered_words_per_s"] == pytest.approx(
        0.5 * rows[("zmq", 1, True)]["throughput"]["words_per_s"])
    assert {t["target"] for t in report["targets"]} >= {
        "1 worker, acking off: words/s >= Bytewax", "acking on: words/s >= 0.5 x acking off",
        "p99 complete latency <= 10 ms at 50% load"}
    assert all(isinstance(t["met"], bool) for t in report["targets"])
    # The table is printed whatever the targets say.
    assert "words/s" in result.stdout and "Bytewax" in result.stdout


USER_TOPOLOGY = REPO / "tests" / "runtime" / "project" / "topologies" / "wordcount.py"


def test_a_users_topology_is_benchmarked(tmp_path: Path) -> None:
    """--topology: any topology, by the component asked for; no Bytewax, no
    word-count targets. Two workers, so that tuples cross the transport; one
    transport to keep the suite short (zmq/tcp pairing: the test above)."""
    report_file = tmp_path / "user.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--topology", str(USER_TOPOLOGY), "--measure", "count",
         # 3 s: latencies count from half a second into the 1 s warm-up's end
         "--transports", "tcp", "--workers", "2", "--acking", "on", "--rounds", "1",
         "--seconds", "3", "--json", str(report_file),
         "-o", "test.count=1000000000", "-o", f"test.output_dir={tmp_path}"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(report_file.read_text())
    assert report["topology"]["measure"] == "tuples executed by count"
    assert report["bytewax"] is None and report["targets"] == []
    ((key, row),) = [((r["transport"], r["workers"], r["acking"]), r["throughput"])
                     for r in report["rows"]]
    assert key == ("tcp", 2, True)
    assert row["tuples_per_s"] > 0 and len(row["processes"]) == 2
    assert row["samples"] > 0 and 0 < row["p50_ms"] <= row["p99_ms"]
    assert "tuples executed by count" in result.stdout and "Bytewax" not in result.stdout


def test_a_users_topology_that_runs_dry_or_lacks_the_component_is_refused(tmp_path: Path) -> None:
    """Spouts exhausted before --seconds: the window would have measured the drain."""
    command = [sys.executable, str(SCRIPT), "--topology", str(USER_TOPOLOGY),
               "--transports", "tcp", "--workers", "1", "--acking", "off", "--rounds", "1",
               "--seconds", "2", "-o", f"test.output_dir={tmp_path}"]
    result = subprocess.run([*command, "--measure", "counter"], cwd=REPO, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(
        "--measure 'counter': FiniteWordCount has no such component; it has sentences, split, count")
    result = subprocess.run([*command, "-o", "test.count=100"], cwd=REPO, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1
    assert "every spout was exhausted before the run's 2 s" in result.stderr


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_tiny_slow_bolt_run_reports_rss_over_time(tmp_path: Path) -> None:
    report_file = tmp_path / "slow.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--slow-bolt", "--transports", "tcp", "--workers", "1",
         "--slow-seconds", "3", "--json", str(report_file)],
        cwd=REPO, capture_output=True, text=True, timeout=55,
    )
    assert result.returncode == 0, result.stderr

    report = json.loads(report_file.read_text())
    (run,) = report["slow_bolt"]
    assert (run["transport"], run["workers"], run["acking"]) == ("tcp", 1, False)
    assert run["bolt_executed"] > 0 and run["spout_emitted"] >= run["bolt_executed"]
    (series,) = run["rss_mb_every_second"]
    assert len(series) >= 3 and all(mb > 0 for mb in series)
    (worker,) = run["workers_rss"]
    assert isinstance(worker["levels_off"], bool) and worker["peak_rss_mb"] > 0
    (target,) = report["targets"]
    assert target["config"] == "tcp 1w" and isinstance(target["met"], bool)


@pytest.mark.parametrize(("args", "named"), [
    (["--transports", "zmq,carrier-pigeon"], "carrier-pigeon"),  # an unknown transport
    (["-o", "topology.executor.receive.buffer.size"], "expected key=value"),  # a bad override
    (["--rounds", "0"], "--rounds must be at least 1"),
    (["-o", "storm.messaging.transport=tcp"], "choose them with --transports"),  # would win over each run's
])
def test_a_bad_argument_is_a_usage_error_that_names_it(args: list[str], named: str) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert named in result.stderr


def test_ctrl_c_stops_the_benchmark_and_reports_nothing(tmp_path: Path) -> None:
    """Bug: Ctrl-C stopped only the run under way, which was recorded as a result (a
    cut-short window); the other runs went on and the script exited 0."""
    report_file = tmp_path / "bench.json"
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--quick", "--no-bytewax", "--workers", "1",
         "--acking", "off,on", "--seconds", "20", "--json", str(report_file)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)  # its own process group, as a terminal's job
    try:
        deadline = time.monotonic() + 40
        # the run is under way once its worker has used a second of CPU (its start-up
        # takes a fraction of that); then a terminal's Ctrl-C
        while sum(p.cpu_secs for p in _workers_in_session(process.pid)) < 1.0:
            assert time.monotonic() < deadline and process.poll() is None, "no worker ran"
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=40)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert "benchmark interrupted: no results printed or written" in err
    assert "words/s" not in out and not report_file.exists()


def _workers_in_session(session: int) -> list[Proc]:
    """Local-mode worker processes (runtime/launch.py) of the session `session`."""
    return [p for p in processes()
            if LOCAL_WORKER_MODULE.encode() in p.command and p.session == session]


def test_zmq_over_tcp_is_paired_within_each_round(bench: ModuleType) -> None:
    def row(transport: str, workers: int, acking: bool, words: float) -> dict:
        return {"transport": transport, "workers": workers, "acking": acking,
                "throughput": {"words_per_s": words}}

    rounds = [[row("zmq", 2, False, 90), row("tcp", 2, False, 100), row("zmq", 1, False, 50),
               row("tcp", 1, False, 50), row("zmq", 2, True, 10)],  # no tcp: no ratio
              [row("tcp", 2, False, 200), row("zmq", 2, False, 220), row("zmq", 1, False, 40),
               row("tcp", 1, False, 50)]]
    ratios = bench.transport_ratios(rounds)
    assert [(r["workers"], r["acking"], r["rounds"]) for r in ratios] == [
        (1, False, [1.0, 0.8]), (2, False, [0.9, 1.1])]
    assert ratios[1]["zmq_over_tcp"] == pytest.approx(1.0)
    lines = bench.transport_lines(ratios)
    assert lines[0].startswith("zmq/tcp words/s, acking off, 1 worker: no tuple crosses a transport")
    assert lines[1] == "zmq/tcp words/s, acking off, 2 workers: 1.00 (rounds 0.90, 1.10)"
    assert bench.transport_lines(bench.transport_ratios(rounds[:1]))[1].endswith(
        "0.90 (one round: no spread measured)")
