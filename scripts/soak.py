#!/usr/bin/env python
"""Soak test: a topology at half of its maximum rate for a long time, watched.

Runs ``topologies/throughput_vs_latency.py`` (the word count fed at a fixed offered
rate, acking on) in local mode on real worker processes for ``--minutes`` (default
10) at ``--load`` (default 0.5) of the maximum rate that ``scripts/bench_topology.py``
measures for the same transport and worker count (or at ``--rate`` words/s, which
skips the measurement). Every ``--interval`` seconds it prints one row:

* throughput: the count bolt's executed tuples per second over the interval;
* complete latency p50 / p99 of the trees acked in the interval;
* RSS (MB) and open file descriptors of every worker process (/proc).

At the end it judges growth, per worker: the peak RSS of the last third of the run
against the peak of the first third (after ``--warmup`` seconds), and the same for
open fds. Growth above ``--rss-tolerance-mb`` (or ``--rss-tolerance`` of the first
third's peak, whichever is larger) or ``--fd-tolerance`` descriptors is "growing":
exit 1. A run that fails (a worker dies, a component raises) also exits 1.

    python scripts/soak.py                        # 10 minutes, zmq, 2 workers
    python scripts/soak.py --minutes 2 --transport tcp --json soak.json

The pieces (local run with recorded reports, windowed rates and percentiles, worker
processes from /proc) are scripts/bench_topology.py's, imported.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_topology as bench  # noqa: E402

from storm_zmq.config import DEFAULTS  # noqa: E402
from storm_zmq.runtime.local import RunOptions, run_local  # noqa: E402

DEFAULT_MINUTES = 10.0
DEFAULT_INTERVAL = 10.0
DEFAULT_LOAD = 0.5
DEFAULT_WARMUP = 10.0
CALIBRATE_SECONDS = 10.0
RSS_TOLERANCE_MB = 10.0
RSS_TOLERANCE = 0.10
FD_TOLERANCE = 4


def open_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


class PrunedRecorder(bench.ReportRecorder):
    """bench_topology's recorder, forgetting what the rows already used: a soak
    must not grow its own memory with every report it ever received."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def on_report(self, worker: int, report: dict[str, Any]) -> None:
        with self._lock:
            super().on_report(worker, report)

    def prune(self, before: float) -> None:
        with self._lock:
            self.snapshots = [s for s in self.snapshots if s[0] >= before]
            self.latency_batches = [b for b in self.latency_batches if b[0] >= before]

    def window(self, start: float, end: float) -> tuple[float, float, float, list[float]]:
        """Words/s, acked/s, failed/s and sorted latencies over [start, end]."""
        with self._lock:
            return (bench.window_rate(self, "count_bolt", "executed", start, end, strict=False),
                    bench.window_rate(self, "sentence_spout", "acked", start, end, strict=False),
                    bench.window_rate(self, "sentence_spout", "failed", start, end, strict=False),
                    bench.window_latencies(self, start, end, settle=0.0))


class Watcher(threading.Thread):
    """Every `interval`: one row of throughput, latency, RSS and fds, printed."""

    def __init__(self, recorder: PrunedRecorder, interval: float, seconds: float,
                 out: Any = sys.stdout) -> None:
        super().__init__(name="soak-watcher", daemon=True)
        self.recorder = recorder
        self.interval = interval
        self.seconds = seconds
        self.out = out
        self.rows: list[dict[str, Any]] = []
        self.pids: list[int] = []
        self.started = threading.Event()
        self.started_at = 0.0
        self._done = threading.Event()

    def on_started(self, _stats: Any) -> None:
        """`RunOptions.on_started`: every worker is ready, the spouts start now."""
        self.started_at = time.monotonic()
        self.started.set()

    def run(self) -> None:
        while not self.started.wait(0.1):
            if self._done.is_set():
                return
        self.pids = bench.worker_pids()
        print(header(len(self.pids)), file=self.out, flush=True)
        previous = self.started_at
        end = self.started_at + self.seconds
        while not self._done.wait(max(0.0, min(previous + self.interval, end) - time.monotonic())):
            now = time.monotonic()
            if now - previous < self.interval / 2:  # the run's last, short interval
                return
            self.rows.append(self.sample(previous, now))
            print(format_row(self.rows[-1]), file=self.out, flush=True)
            # keep the last report before `now`: the next window's rates start there
            self.recorder.prune(now - 1.0)
            previous = now
            if now >= end - 1e-3:  # the spouts are being stopped: the drain is not measured
                return

    def sample(self, start: float, end: float) -> dict[str, Any]:
        words, acked, failed, latencies = self.recorder.window(start, end)
        workers = []
        for pid in self.pids:
            status = bench._status_kb(pid, ("VmRSS",))
            workers.append({"pid": pid, "rss_mb": status["VmRSS"] / 1024 if status else None,
                            "fds": open_fds(pid)})
        return {
            "t": round(end - self.started_at, 1),
            "words_per_s": words,
            "acked_per_s": acked,
            "failed_per_s": failed,
            "p50_ms": bench.percentile(latencies, 0.50),
            "p99_ms": bench.percentile(latencies, 0.99),
            "samples": len(latencies),
            "workers": workers,
        }

    def stop(self) -> None:
        self._done.set()
        self.join(5)


def header(workers: int) -> str:
    columns = [f"{'t s':>6}", f"{'words/s':>9}", f"{'p50 ms':>7}", f"{'p99 ms':>7}"]
    columns += [f"{f'w{i} RSS MB':>10} {f'w{i} fds':>7}" for i in range(workers)]
    return " ".join(columns)


def format_row(row: dict[str, Any]) -> str:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    cells = [f"{row['t']:>6.0f}", f"{row['words_per_s']:>9,.0f}", f"{ms(row['p50_ms']):>7}",
             f"{ms(row['p99_ms']):>7}"]
    for worker in row["workers"]:
        rss = "-" if worker["rss_mb"] is None else f"{worker['rss_mb']:.1f}"
        fds = "-" if worker["fds"] is None else str(worker["fds"])
        cells.append(f"{rss:>10} {fds:>7}")
    return " ".join(cells)


def judge_growth(rows: list[dict[str, Any]], warmup: float, rss_tolerance_mb: float,
                 rss_tolerance: float, fd_tolerance: int) -> list[dict[str, Any]]:
    """Per worker: peak RSS and fds of the last third of the rows after `warmup`
    against the first third. Needs at least 3 rows; fewer judge nothing."""
    rows = [r for r in rows if r["t"] > warmup]
    third = len(rows) // 3
    if third == 0:
        return []
    first, last = rows[:third], rows[-third:]
    verdicts = []
    for index in range(len(rows[0]["workers"])):
        def peak(part: list[dict[str, Any]], key: str, i: int = index) -> float:
            values = [r["workers"][i][key] for r in part if r["workers"][i][key] is not None]
            return max(values, default=0.0)

        rss_first, rss_last = peak(first, "rss_mb"), peak(last, "rss_mb")
        fds_first, fds_last = peak(first, "fds"), peak(last, "fds")
        rss_allowed = max(rss_tolerance_mb, rss_tolerance * rss_first)
        verdicts.append({
            "worker": index,
            "rss_mb_first_third": rss_first, "rss_mb_last_third": rss_last,
            "rss_growth_mb": rss_last - rss_first, "rss_allowed_mb": rss_allowed,
            "fds_first_third": fds_first, "fds_last_third": fds_last,
            "fds_growth": fds_last - fds_first, "fds_allowed": fd_tolerance,
            "growing": rss_last - rss_first > rss_allowed or fds_last - fds_first > fd_tolerance,
        })
    return verdicts


def soak(args: argparse.Namespace) -> dict[str, Any]:
    config = bench.Config(args.transport, args.workers, acking=True)
    max_rate = None
    rate = args.rate
    if rate is None:
        bench.progress(f"measuring the maximum rate of {config.label} ({args.calibrate:g} s) ...")
        max_rate = bench.measure_throughput(config, args.calibrate)["words_per_s"]
        rate = args.load * max_rate
        bench.progress(f"maximum {max_rate:,.0f} words/s; soaking at {rate:,.0f} words/s")
    overrides = config.overrides()
    overrides["loadgen.rate"] = rate
    recorder = PrunedRecorder()
    watcher = Watcher(recorder, args.interval, args.seconds)
    options = RunOptions(
        topology_file=str(bench.LOADGEN), conf=dict(DEFAULTS), seconds=args.seconds,
        workers=args.workers, transport=args.transport, overrides=overrides, progress=False,
        on_started=watcher.on_started, on_report=recorder.on_report,
    )
    summary = io.StringIO()
    began = time.monotonic()
    watcher.start()
    try:
        result = run_local(options, summary)
    finally:
        watcher.stop()
    verdicts = judge_growth(watcher.rows, args.warmup, args.rss_tolerance_mb,
                            args.rss_tolerance, args.fd_tolerance)
    totals = result.stats.totals()
    return {
        "machine": bench.machine_info(),
        "code": bench.code_version(),
        "command": " ".join(["python", "scripts/soak.py", *sys.argv[1:]]),
        "settings": {"transport": args.transport, "workers": args.workers,
                     "seconds": args.seconds, "interval": args.interval, "load": args.load,
                     "max_words_per_s": max_rate, "offered_words_per_s": rate,
                     "warmup": args.warmup, "rss_tolerance_mb": args.rss_tolerance_mb,
                     "rss_tolerance": args.rss_tolerance, "fd_tolerance": args.fd_tolerance},
        "exit_code": result.exit_code,
        "reason": result.reason,
        "failed_trees": totals.get("sentence_spout", {}).get("failed", 0),
        "summary": summary.getvalue().strip(),
        "rows": watcher.rows,
        "growth": verdicts,
        "growing": any(v["growing"] for v in verdicts),
        "wall_seconds": time.monotonic() - began,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                        help=f"length of the soak (default {DEFAULT_MINUTES:g})")
    parser.add_argument("--seconds", type=float, help="length in seconds (wins over --minutes)")
    parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL,
                        help=f"seconds between rows (default {DEFAULT_INTERVAL:g})")
    parser.add_argument("--transport", choices=bench.TRANSPORTS, default="zmq")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--load", type=float, default=DEFAULT_LOAD,
                        help=f"fraction of the measured maximum rate (default {DEFAULT_LOAD:g})")
    parser.add_argument("--rate", type=float,
                        help="offered words/s; skips measuring the maximum")
    parser.add_argument("--calibrate", type=float, default=CALIBRATE_SECONDS,
                        help=f"seconds of the maximum-rate run (default {CALIBRATE_SECONDS:g})")
    parser.add_argument("--warmup", type=float, default=DEFAULT_WARMUP,
                        help=f"seconds left out of the growth verdict (default {DEFAULT_WARMUP:g})")
    parser.add_argument("--rss-tolerance-mb", type=float, default=RSS_TOLERANCE_MB)
    parser.add_argument("--rss-tolerance", type=float, default=RSS_TOLERANCE,
                        help="allowed RSS growth as a fraction of the first third's peak")
    parser.add_argument("--fd-tolerance", type=int, default=FD_TOLERANCE)
    parser.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    args = parser.parse_args(argv)
    if args.seconds is None:
        args.seconds = args.minutes * 60
    if args.seconds <= 0 or args.interval <= 0:
        parser.error("--minutes/--seconds and --interval must be positive")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if not 0 < args.load <= 1:
        parser.error("--load must be in (0, 1]")
    if args.rate is not None and args.rate <= 0:
        parser.error("--rate must be positive")
    if args.calibrate < bench.MIN_SECONDS:
        parser.error(f"--calibrate must be at least {bench.MIN_SECONDS:g}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report = soak(args)
    except bench.BenchError as exc:
        print(f"soak failed: {exc}", file=sys.stderr)
        return 1
    print(report["summary"])
    for verdict in report["growth"]:
        print(f"worker {verdict['worker']}: RSS {verdict['rss_mb_first_third']:.1f} -> "
              f"{verdict['rss_mb_last_third']:.1f} MB ({verdict['rss_growth_mb']:+.1f}, allowed "
              f"{verdict['rss_allowed_mb']:.1f}), fds {verdict['fds_first_third']:.0f} -> "
              f"{verdict['fds_last_third']:.0f} ({verdict['fds_growth']:+.0f}, allowed "
              f"{verdict['fds_allowed']}): {'GROWING' if verdict['growing'] else 'flat'}")
    if not report["growth"]:
        print("too few rows after the warm-up to judge growth")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
    if report["exit_code"] != 0:
        print(f"soak failed: {report['reason']}", file=sys.stderr)
        return 1
    if report["failed_trees"]:
        print(f"soak failed: {report['failed_trees']} tuple trees failed", file=sys.stderr)
        return 1
    return 1 if report["growing"] else 0


if __name__ == "__main__":
    sys.exit(main())
