#!/usr/bin/env python
"""Topology benchmark: the word count on real worker processes, against Bytewax.

For each transport (``zmq``, ``tcp``), each number of workers (1, 2) and acking on
and off, in this order, one configuration at a time, and all of that ``--rounds``
times over (default 3):

* maximum sustained throughput: ``topologies/wordcount.py`` runs in local mode
  (`storm_zmq.runtime.local.run_local`, real worker processes, as ``storm-zmq run``
  does) for ``--seconds``; words/s is the count bolt's executed tuples per second
  over the steady-state window (the first quarter of the run, at least 1 s, is
  start-up and left out; the drain after the run is never counted). Acking on is
  the default ``topology.acker.executors`` (one acker per worker) with the word
  count's ``topology.max.spout.pending`` of 1000; acking off is
  ``topology.acker.executors=0`` and ``topology.max.spout.pending=null``, where the
  spout is held back only by the bounded queues;
* complete latency (acking on): ``topologies/throughput_vs_latency.py``, the same
  word count fed at a fixed offered rate, runs at half of the maximum measured for
  its configuration; p50/p99/p99.9 of the spout's complete latencies (to the ack
  of the whole tuple tree) acked in the steady-state window, counted from when
  each sentence was due, as Storm's loadgen counts them: a spout called late
  adds its lag (`spouts.loadgen`). Storm's own latency from the emit is kept in
  the JSON (``emit_to_ack``);
* CPU and peak RSS of every worker process, read from /proc (utime + stime over the
  steady-state window; VmHWM at the end of the run).

In the same run, ``scripts/bytewax_wordcount.py`` counts the same sentences with
the same per-word work on Bytewax in one process (one Bytewax worker), also
measured in steady state, once per round; see that script.

Why rounds: on a shared or virtual machine the same configuration can differ by
20 % between runs minutes apart, and a target's ratio taken from two single runs
inherits both errors. Each round measures every configuration once, so each ratio
is computed within a round (both sides measured minutes apart, never a round
apart), and a target's verdict is the median of its per-round values, with the
number of rounds in which it held. The table shows, per configuration, the round
whose words/s is the median, and the range over the rounds.

``--slow-bolt`` is a separate mode: ``topologies/slow_consumer.py``, a spout
offering 100 x what two slow bolts take (2 ms per tuple each, shuffled over the
workers), acking off, for ``--slow-seconds``; every worker's RSS is sampled and
must level off (no unbounded queue anywhere). The executor queues are made small
(``--slow-queue``) so that tuples keep flowing through every queue and the
transport for the whole run instead of filling the queues once and stopping.

``--topology FILE`` benchmarks a topology of your own instead of the word count (a
streamparse-style ``topologies/<name>.py``; ``--class NAME`` picks one of several):
for each transport, worker count and acking value, its maximum sustained tuples/s,
read from ``--measure COMPONENT`` (a bolt's executed tuples, a spout's emitted ones;
by default the sum of every spout's emitted tuples), with the complete latency at
that full load when acking is on (a topology of yours has no offered rate to halve),
CPU and peak RSS per worker, and zmq over tcp. Bytewax and the word count's targets
do not apply. Its spouts must not run dry before ``--seconds``; ``-o`` sets its
config, as for ``storm-zmq run``.

During each measurement window the script also reads how much CPU the machine
spent outside the workers and itself, and flags runs that other processes
disturbed; the JSON records the commit measured.

Run from the repository root: ``python scripts/bench_topology.py [--quick]
[--json FILE]``. Exits 1 only when a run fails (a worker dies, a component
raises, a tuple fails); a missed target is reported, not a failure.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import zmq

from storm_zmq.config import DEFAULTS, ConfigError, parse_override
from storm_zmq.portable import get_affinity
from storm_zmq.runtime.launch import (
    LOCAL_WORKER_MODULE,
    LaunchError,
    interpreter_facts,
    worker_environment,
    worker_python,
)
from storm_zmq.runtime.local import RunOptions, free_ports, run_local
from storm_zmq.runtime.tuning import CPYTHON_RECEIVE_BUFFER, PYPY_RECEIVE_BUFFER
from storm_zmq.runtime.worker import STATS_INTERVAL
from storm_zmq.topology.errors import TopologyError

REPO = Path(__file__).resolve().parents[1]
WORDCOUNT = REPO / "topologies" / "wordcount.py"
LOADGEN = REPO / "topologies" / "throughput_vs_latency.py"
SLOW_CONSUMER = REPO / "topologies" / "slow_consumer.py"
BYTEWAX_SCRIPT = REPO / "scripts" / "bytewax_wordcount.py"

TRANSPORTS = ("zmq", "tcp")
DEFAULT_WORKERS = (1, 2)
ACKING = ("off", "on")

DEFAULT_SECONDS = 10.0
QUICK_SECONDS = 3.0
DEFAULT_ROUNDS = 3
QUICK_ROUNDS = 1
#: Fraction of a run (at least MIN_WARMUP seconds) left out as start-up.
WARMUP_FRACTION = 0.25
MIN_WARMUP = 1.0
#: The worker reports its counters about every 0.5 s (0.51-0.54 measured): a window
#: needs two of each worker's, however their reports fall against its start.
MIN_WINDOW = 1.5
#: The shortest run: its window (the last MIN_WINDOW of it) starts half a second in.
MIN_SECONDS = 2.0
#: Latency runs offer this fraction of the configuration's maximum.
LATENCY_LOAD = 0.5
#: /proc sampling period of the worker processes.
SAMPLE_INTERVAL = 0.25

#: Bytewax baseline: sentences counted (17 words each), sentences per input batch.
BYTEWAX_SENTENCES = 300_000
QUICK_BYTEWAX_SENTENCES = 60_000
BYTEWAX_BATCH = 100

#: --slow-bolt: seconds per tuple of the slow bolt, its parallelism (from
#: topologies/slow_consumer.py), and how much faster the spout offers tuples.
SLOW_DELAY = 0.002
SLOW_PAR = 2
SLOW_FACTOR = 100
SLOW_SECONDS = 25.0
#: --slow-bolt: executor receive queue capacity, set explicitly so that the check
#: does not move with the runtime's default. Storm's 32768 would hold 30 s
#: of the slow bolts' work: the spout would fill every queue in the first second and
#: then wait for the rest of the run; a small queue keeps tuples flowing from the
#: spout through the transport to the bolts for the whole run.
SLOW_QUEUE = 1000
#: RSS "levels off" when its peak over the second half of the run exceeds its peak
#: over the first half by at most this much (MB), or this fraction.
PLATEAU_MB = 10.0
PLATEAU_FRACTION = 0.05

#: The targets from the issue.
TARGET_BYTEWAX = "1 worker, acking off: words/s >= Bytewax"
TARGET_SCALING = "2 workers: words/s >= 1.5 x 1 worker"
TARGET_ACKING = "acking on: words/s >= 0.5 x acking off"
TARGET_LATENCY = "p99 complete latency <= 10 ms at 50% load"
TARGET_BOUNDED = "slow bolt, acking off: every worker's RSS levels off"

#: spouts.loadgen's config key: the directory its tasks write their latencies to.
LATENCY_DIR_KEY = "loadgen.latency.dir"
#: A latency run whose count bolt did less than this fraction of the offered words/s
#: fell behind its schedule; the table says so beside its latencies.
ACHIEVED_FRACTION = 0.98

#: Words per sentence of the word count's text on average (85 words in the 5 lines of
#: src/spouts/sentences.py).
WORDS_PER_SENTENCE = 17.0


class BenchError(Exception):
    """A run failed (worker died, component raised, tuples failed): exit 1."""


# --- what a run reports: every worker report, recorded with timestamps -------------------


class ReportRecorder:
    """Keeps every worker report with the time it arrived (`RunOptions.on_report`),
    so that rates and latencies can be taken over a window instead of the whole run."""

    def __init__(self) -> None:
        # (arrival time, worker, {component: counters}, transfer_queued)
        self.snapshots: list[tuple[float, int, dict[str, dict[str, int]], int]] = []
        # (arrival time, complete latencies in ms)
        self.latency_batches: list[tuple[float, list[float]]] = []

    def on_report(self, worker: int, report: dict[str, Any]) -> None:
        now = time.monotonic()
        counters = {
            name: {key: int(entry.get(key, 0)) for key in
                   ("emitted", "executed", "acked", "failed", "queued", "pending")}
            for name, entry in report["components"].items()
        }
        samples = [v for entry in report["components"].values() for v in entry.get("latencies_ms", ())]
        if samples:
            self.latency_batches.append((now, samples))
        self.snapshots.append((now, worker, counters, int(report.get("transfer_queued", 0))))


def window_rate(stats: ReportRecorder, component: str, key: str, start: float, end: float,
                strict: bool = True) -> float:
    """Per second of `component`'s `key` counter over [start, end], summed over
    workers; each worker's rate is taken between its own first and last report in
    the window (reports carry cumulative counters). A worker that runs `component`
    but sent fewer than two reports in the window has no rate there: a BenchError,
    not a zero in the sum, unless not `strict` (scripts/soak.py's rows of a second,
    where one report in a row happens)."""
    total = 0.0
    for worker in sorted({w for _, w, _, _ in stats.snapshots}):
        reports = [(t, c[component][key]) for t, w, c, _ in stats.snapshots
                   if w == worker and component in c]
        if not reports:  # the component has no task in this worker
            continue
        points = [(t, n) for t, n in reports if start <= t <= end]
        if not strict and (len(points) < 2 or points[-1][0] <= points[0][0]):
            continue
        if len(points) < 2 or points[-1][0] <= points[0][0]:
            raise BenchError(f"worker {worker} sent {len(points)} report(s) of {component} "
                             f"in the {end - start:.1f} s window: no rate to measure")
        total += (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])
    return total


def window_latencies(stats: ReportRecorder, start: float, end: float,
                     settle: float = STATS_INTERVAL) -> list[float]:
    """Complete latencies of the trees acked within [start, end], ascending. A report
    carries the acks of the `STATS_INTERVAL` before it, so one that arrives less than
    `settle` after `start` is left out: its acks may come from before the window
    (from start-up, whose latencies are the run's worst). Windows that follow one
    another (scripts/soak.py's rows) pass 0: each report counts in the row it
    arrived in."""
    return sorted(v for t, batch in stats.latency_batches
                  if start + settle <= t <= end for v in batch)


def loadgen_latencies(directory: Path, start: float, end: float) -> tuple[list[float], list[float]]:
    """What `spouts.loadgen` measured with ``loadgen.latency.dir`` set (per ack three
    doubles: its time, ms since due, ms the emit was late), for the acks within
    [start, end] (its clock is this process's: CLOCK_MONOTONIC is the machine's):
    the latencies from when each sentence was due, and how late each was emitted,
    both ascending."""
    from_due, late = [], []
    record = 3 * array("d").itemsize
    for path in sorted(directory.glob("latency-*.bin")):
        data = path.read_bytes()
        values = array("d", data[:len(data) - len(data) % record])  # a write cut by a kill
        for t, since_due, emitted_late in zip(values[0::3], values[1::3], values[2::3], strict=True):
            if start <= t <= end:
                from_due.append(since_due)
                late.append(emitted_late)
    return sorted(from_due), sorted(late)


def percentile(ordered: Sequence[float], fraction: float) -> float | None:
    """Nearest rank, the definition of `RunStats.percentile`."""
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# --- the worker processes, read from /proc ---------------------------------------------------


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int | str) -> list[str]:
    """/proc/<pid>/stat after the command name (fields 3...), or [] if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return []
    return data[data.rindex(b")") + 2:].decode().split()


def _status_kb(pid: int, keys: tuple[str, ...]) -> dict[str, int]:
    found: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name in keys:
                    found[name] = int(value.split()[0])
    except (OSError, ValueError):
        return {}
    return found


def worker_pids() -> list[int]:
    """The worker processes of the running topology: this process's children that
    run a local-mode worker (runtime/launch.py), in start order (worker 0 first)."""
    me = os.getpid()
    found: list[tuple[int, int]] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        if len(fields) < 20 or int(fields[1]) != me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if LOCAL_WORKER_MODULE.encode() not in cmdline.read():
                    continue
        except OSError:
            continue
        found.append((int(fields[19]), int(entry)))  # (start time, pid)
    return [pid for _, pid in sorted(found)]


@dataclass
class ProcSample:
    t: float
    cpu_s: float
    rss_kb: int
    hwm_kb: int


def machine_busy_seconds() -> float:
    """CPU seconds all cores have been busy since boot (/proc/stat)."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def own_cpu_seconds() -> float:
    fields = _stat_fields("self")
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class ProcSampler(threading.Thread):
    """Samples CPU time, RSS and VmHWM of the worker processes every `interval`."""

    def __init__(self, interval: float = SAMPLE_INTERVAL) -> None:
        super().__init__(name="proc-sampler", daemon=True)
        self.interval = interval
        self.samples: dict[int, list[ProcSample]] = {}
        self.order: list[int] = []
        # (time, CPU seconds of the whole machine, of this process)
        self.machine: list[tuple[float, float, float]] = []
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        now = time.monotonic()
        self.machine.append((now, machine_busy_seconds(), own_cpu_seconds()))
        for pid in worker_pids():
            fields = _stat_fields(pid)
            status = _status_kb(pid, ("VmRSS", "VmHWM"))
            if len(fields) < 20 or "VmRSS" not in status:
                continue
            if pid not in self.samples:
                self.samples[pid] = []
                self.order.append(pid)
            cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            self.samples[pid].append(ProcSample(now, cpu, status["VmRSS"], status.get("VmHWM", 0)))

    def stop(self) -> None:
        self._done.set()
        self.join(5)

    def per_worker(self, start: float, end: float) -> list[dict[str, Any]]:
        """Per worker: CPU % over [start, end] (100 = one core), peak RSS."""
        result = []
        for index, pid in enumerate(self.order):
            samples = self.samples[pid]
            inside = [s for s in samples if start <= s.t <= end]
            cpu = None
            if len(inside) >= 2 and inside[-1].t > inside[0].t:
                cpu = 100 * (inside[-1].cpu_s - inside[0].cpu_s) / (inside[-1].t - inside[0].t)
            result.append({
                "worker": index,
                "pid": pid,
                "cpu_percent": cpu,
                "peak_rss_mb": max(s.hwm_kb for s in samples) / 1024,
                "rss_mb_at_window_end": inside[-1].rss_kb / 1024 if inside else None,
            })
        return result

    def others(self, start: float, end: float) -> dict[str, float | None]:
        """CPU % over [start, end] of this (the bench) process, and of everything
        else on the machine that is neither a worker nor this process: a run with
        much of the latter was disturbed."""
        inside = [m for m in self.machine if start <= m[0] <= end]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
            return {"bench_cpu_percent": None, "other_cpu_percent": None}
        span = inside[-1][0] - inside[0][0]
        workers = 0.0
        for samples in self.samples.values():
            # the worker samples nearest the machine samples' ends
            first = min(samples, key=lambda s: abs(s.t - inside[0][0]))
            last = min(samples, key=lambda s: abs(s.t - inside[-1][0]))
            workers += last.cpu_s - first.cpu_s
        bench = inside[-1][2] - inside[0][2]
        machine = inside[-1][1] - inside[0][1]
        return {"bench_cpu_percent": 100 * bench / span,
                "other_cpu_percent": max(0.0, 100 * (machine - bench - workers) / span)}

    def rss_series(self, origin: float, step: float = 1.0) -> list[list[float]]:
        """Per worker: RSS (MB) every `step` seconds from `origin` (the last sample
        before each point)."""
        series = []
        for pid in self.order:
            samples = self.samples[pid]
            points, t = [], origin
            while t <= samples[-1].t:
                before = [s for s in samples if s.t <= t]
                if before:
                    points.append(round(before[-1].rss_kb / 1024, 1))
                t += step
            series.append(points)
        return series


# --- one run of a topology ---------------------------------------------------------------------


def warmup_seconds(seconds: float) -> float:
    warmup = max(MIN_WARMUP, WARMUP_FRACTION * seconds)
    return warmup if seconds - warmup >= MIN_WINDOW else max(0.0, seconds - MIN_WINDOW)


@dataclass
class Config:
    transport: str
    workers: int
    acking: bool
    #: -o KEY=VALUE of the command line, on top of what the configuration sets
    user_overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.transport} {self.workers}w acking {'on' if self.acking else 'off'}"

    def overrides(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"supervisor.slots.ports": free_ports(self.workers)}
        if not self.acking:
            conf["topology.acker.executors"] = 0
            conf["topology.max.spout.pending"] = None
            # Nothing times out without ackers: this only bounds how long the
            # end-of-run drain of the (full) queues may take, which is never measured.
            conf["topology.message.timeout.secs"] = 1
        conf.update(self.user_overrides)
        return conf


def run_topology(topology: Path, config: Config, seconds: float, extra: dict[str, Any] | None = None,
                 what: str = "", topology_name: str | None = None,
                 ) -> tuple[dict[str, Any], ReportRecorder, ProcSampler, float]:
    """Run `topology` (its class `topology_name`, if the file has several) in local
    mode; returns (common result fields, the recorded reports, the /proc sampler,
    the time the spouts were activated)."""
    overrides = config.overrides()
    overrides.update(extra or {})
    recorder = ReportRecorder()
    options = RunOptions(
        topology_file=str(topology), conf=dict(DEFAULTS), seconds=seconds,
        workers=config.workers, transport=config.transport, overrides=overrides, progress=False,
        on_report=recorder.on_report, topology_name=topology_name,
    )
    out = io.StringIO()
    sampler = ProcSampler()
    began = time.monotonic()
    sampler.start()
    try:
        result = run_local(options, out)
    finally:
        sampler.stop()
    stats = result.stats
    wall = time.monotonic() - began
    if result.interrupted:  # Ctrl-C took part in the stop: stop the benchmark
        raise KeyboardInterrupt
    if result.exit_code != 0:
        raise BenchError(f"{what or topology.name} ({config.label}) failed: {result.reason}\n{out.getvalue()}")
    if result.reason == "every spout is exhausted":  # the window would measure the drain
        raise BenchError(f"{what or topology.name} ({config.label}): every spout was exhausted "
                         f"before the run's {seconds:g} s; a measurement needs input for the whole "
                         "run (more input, or fewer --seconds)")
    totals = stats.totals()
    failed = sum(t["failed"] for name, t in totals.items() if name in stats.spouts)
    if failed:
        raise BenchError(f"{what or topology.name} ({config.label}): {failed} tuple trees failed\n{out.getvalue()}")
    assert stats.started_at is not None
    common = {
        "topology": topology.stem,
        "transport": config.transport,
        "workers": config.workers,
        "acking": config.acking,
        "seconds": seconds,
        "wall_seconds": wall,
        "overrides": {k: v for k, v in overrides.items() if k != "supervisor.slots.ports"},
        "summary": out.getvalue().strip(),
    }
    return common, recorder, sampler, stats.started_at


def measure_throughput(config: Config, seconds: float) -> dict[str, Any]:
    common, stats, sampler, started = run_topology(WORDCOUNT, config, seconds, what="word count")
    warmup = warmup_seconds(seconds)
    start, end = started + warmup, started + seconds
    words = window_rate(stats, "count_bolt", "executed", start, end)
    return {
        **common,
        "window_seconds": [warmup, seconds],
        "words_per_s": words,
        "sentences_per_s": window_rate(stats, "split_bolt", "executed", start, end),
        "spout_acked_per_s": window_rate(stats, "sentence_spout", "acked", start, end),
        "processes": sampler.per_worker(start, end),
        **sampler.others(start, end),
    }


def measure_user_topology(args: argparse.Namespace, config: Config) -> dict[str, Any]:
    """--topology: the measured component's tuples/s over the steady-state window
    and, acking on, the complete latencies of that window (at full load)."""
    topology = Path(args.topology)
    common, stats, sampler, started = run_topology(
        topology, config, args.seconds, topology_name=args.topology_class)
    warmup = warmup_seconds(args.seconds)
    start, end = started + warmup, started + args.seconds
    rate = sum(window_rate(stats, name, key, start, end) for name, key in args.measured)
    ordered = window_latencies(stats, start, end) if config.acking else []
    return {
        **common,
        "window_seconds": [warmup, args.seconds],
        "measure": args.measure_label,
        "tuples_per_s": rate,
        "p50_ms": percentile(ordered, 0.50),
        "p99_ms": percentile(ordered, 0.99),
        "p999_ms": percentile(ordered, 0.999),
        "samples": len(ordered),
        "processes": sampler.per_worker(start, end),
        **sampler.others(start, end),
    }


def measured_counters(topology: str, topology_class: str | None,
                      measure: str | None) -> tuple[list[tuple[str, str]], str]:
    """--measure: the (component, counter) pairs whose rates are summed, and how the
    table names them. A bolt counts what it executed, a spout what it emitted."""
    from storm_zmq.topology import load_topology

    definition = load_topology(topology, topology_class).definition()
    components = {name: c for name, c in definition.components.items() if not name.startswith("__")}
    if measure is None:
        spouts = [name for name, c in components.items() if c.is_spout]
        return [(name, "emitted") for name in spouts], "tuples emitted by " + ", ".join(spouts)
    if measure not in components:
        raise ValueError(f"--measure {measure!r}: {definition.name} has no such component; "
                         f"it has {', '.join(components)}")
    if components[measure].is_spout:
        return [(measure, "emitted")], f"tuples emitted by {measure}"
    return [(measure, "executed")], f"tuples executed by {measure}"


def measure_latency(config: Config, rate: float, seconds: float) -> dict[str, Any]:
    """Complete latency at an offered rate. The target is judged on the latency from
    when each sentence was due (`loadgen_latencies`), which counts the spout's own
    lag, as Storm's loadgen does; Storm's emit-to-ack latency, what `storm-zmq run`
    shows, is kept beside it (`emit_to_ack`)."""
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as directory:
        common, stats, sampler, started = run_topology(
            LOADGEN, config, seconds, {"loadgen.rate": rate, LATENCY_DIR_KEY: directory},
            what="throughput_vs_latency")
        warmup = warmup_seconds(seconds)
        start, end = started + warmup, started + seconds
        ordered, late = loadgen_latencies(Path(directory), start, end)
    common["overrides"].pop(LATENCY_DIR_KEY, None)
    from_emit = window_latencies(stats, start, end)
    words = window_rate(stats, "count_bolt", "executed", start, end)
    return {
        **common,
        "window_seconds": [warmup, seconds],
        "offered_words_per_s": rate,
        "words_per_s": words,
        # below ACHIEVED_FRACTION the spout fell behind its schedule: the table says so
        "achieved_fraction": words / rate if rate else None,
        "p50_ms": percentile(ordered, 0.50),
        "p99_ms": percentile(ordered, 0.99),
        "p999_ms": percentile(ordered, 0.999),
        "max_ms": ordered[-1] if ordered else None,
        "samples": len(ordered),
        "emit_late_p99_ms": percentile(late, 0.99),
        "emit_to_ack": {"p50_ms": percentile(from_emit, 0.50), "p99_ms": percentile(from_emit, 0.99),
                        "p999_ms": percentile(from_emit, 0.999), "samples": len(from_emit)},
        "processes": sampler.per_worker(start, end),
        **sampler.others(start, end),
    }


def measure_slow_bolt(transport: str, workers: int, seconds: float, queue: int = SLOW_QUEUE,
                      overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """A spout offering SLOW_FACTOR x what the slow bolts take, acking off: the
    workers' RSS must level off. `overrides` (-o) apply except to the keys this
    check sets itself (the rate, the delay, the queue size, the timeout)."""
    capacity = SLOW_PAR / SLOW_DELAY  # sentences/s all slow bolt tasks take together
    rate = SLOW_FACTOR * capacity * WORDS_PER_SENTENCE  # loadgen.rate is in words/s
    config = Config(transport, workers, acking=False, user_overrides=dict(overrides or {}))
    extra = {"loadgen.rate": rate, "slow.bolt.delay.secs": SLOW_DELAY,
             "topology.executor.receive.buffer.size": queue,
             "topology.message.timeout.secs": 1}
    common, stats, sampler, started = run_topology(SLOW_CONSUMER, config, seconds, extra, what="slow consumer")
    half = started + seconds / 2
    workers_out = []
    for index, pid in enumerate(sampler.order):
        samples = [s for s in sampler.samples[pid] if started <= s.t <= started + seconds]
        first = max((s.rss_kb for s in samples if s.t <= half), default=0) / 1024
        second = max((s.rss_kb for s in samples if s.t > half), default=0) / 1024
        growth = second - first
        workers_out.append({
            "worker": index, "pid": pid,
            "peak_rss_mb_first_half": first, "peak_rss_mb_second_half": second,
            "growth_mb": growth,
            "levels_off": growth <= max(PLATEAU_MB, PLATEAU_FRACTION * first),
            "peak_rss_mb": max(s.hwm_kb for s in sampler.samples[pid]) / 1024,
        })
    window = (half, started + seconds)  # the rates once the queues are full
    last = {}
    for t, worker, counters, transfer in stats.snapshots:
        if t <= started + seconds:
            last[worker] = (counters, transfer)
    spout_points = [(t, c["sentence_spout"]["emitted"]) for t, _, c, _ in stats.snapshots
                    if "sentence_spout" in c and t <= started + seconds]
    peak = max(((n2 - n1) / (t2 - t1) for (t1, n1), (t2, n2) in zip(spout_points, spout_points[1:], strict=False)
                if t2 > t1), default=0.0)
    emitted = sum(c.get("sentence_spout", {}).get("emitted", 0) for c, _ in last.values())
    executed = sum(c.get("slow_bolt", {}).get("executed", 0) for c, _ in last.values())
    return {
        **common,
        "bolt_capacity_sentences_per_s": capacity,
        "offered_sentences_per_s": rate / WORDS_PER_SENTENCE,
        "receive_buffer_size": queue,
        "spout_peak_per_s": peak,
        "spout_emitted": emitted,
        "bolt_executed": executed,
        "in_flight_at_end": emitted - executed,
        "spout_emitted_per_s": window_rate(stats, "sentence_spout", "emitted", *window),
        "bolt_executed_per_s": window_rate(stats, "slow_bolt", "executed", *window),
        "queued_at_end": {
            f"worker {w}": {**{name: c["queued"] for name, c in counters.items()}, "transfer": transfer}
            for w, (counters, transfer) in sorted(last.items())
        },
        "rss_mb_every_second": sampler.rss_series(started),
        "workers_rss": workers_out,
        "levels_off": all(w["levels_off"] for w in workers_out),
        **sampler.others(started, started + seconds),
    }


# --- Bytewax -----------------------------------------------------------------------------------


def run_bytewax(sentences: int) -> dict[str, Any]:
    """scripts/bytewax_wordcount.py in a subprocess; its JSON line."""
    done = subprocess.run(
        [sys.executable, str(BYTEWAX_SCRIPT), "--sentences", str(sentences),
         "--batch-size", str(BYTEWAX_BATCH)],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )
    if done.returncode != 0:
        raise BenchError(f"bytewax word count failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- targets ----------------------------------------------------------------------------------


def judge(rows: list[dict[str, Any]], bytewax: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every target that the measured configurations allow to judge."""
    by_key = {(r["transport"], r["workers"], r["acking"]): r for r in rows}
    targets: list[dict[str, Any]] = []

    def add(target: str, config: str, value: float, threshold: float, met: bool,
            detail: str) -> None:
        targets.append({"target": target, "config": config, "value": value,
                        "threshold": threshold, "higher_is_better": target != TARGET_LATENCY,
                        "met": met, "detail": detail})

    for (transport, workers, acking), row in by_key.items():
        tp = row["throughput"]["words_per_s"]
        if workers == 1 and not acking and bytewax is not None:
            ratio = tp / bytewax["words_per_s"]
            add(TARGET_BYTEWAX, f"{transport} 1w acking off", ratio, 1.0, ratio >= 1.0,
                f"{tp:,.0f} vs Bytewax {bytewax['words_per_s']:,.0f} words/s")
        one = by_key.get((transport, 1, acking))
        if workers == 2 and one is not None:
            ratio = tp / one["throughput"]["words_per_s"]
            add(TARGET_SCALING, f"{transport} acking {'on' if acking else 'off'}", ratio, 1.5,
                ratio >= 1.5, f"{tp:,.0f} vs {one['throughput']['words_per_s']:,.0f} words/s")
        off = by_key.get((transport, workers, False))
        if acking and off is not None:
            ratio = tp / off["throughput"]["words_per_s"]
            add(TARGET_ACKING, f"{transport} {workers}w", ratio, 0.5, ratio >= 0.5,
                f"{tp:,.0f} vs {off['throughput']['words_per_s']:,.0f} words/s")
        latency = row.get("latency")
        if latency is not None and latency["p99_ms"] is not None:
            add(TARGET_LATENCY, f"{transport} {workers}w acking on", latency["p99_ms"], 10.0,
                latency["p99_ms"] <= 10.0,
                f"p99 {latency['p99_ms']:.2f} ms at {latency['offered_words_per_s']:,.0f} words/s")
    return targets


def middle(values: Sequence[float], higher_is_better: bool = True) -> float:
    """The median of the rounds; of an even number, the worse of the two middle
    values: a verdict then rests on a value some round measured, and never on the
    favourable side of a tie."""
    return statistics.median_low(values) if higher_is_better else statistics.median_high(values)


def combine_rounds(per_round: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One verdict per (target, configuration) from the `judge` lists of every
    round: the `middle` of the per-round values against the threshold, with the
    values and the number of rounds in which the target held."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for targets in per_round:
        for target in targets:
            grouped.setdefault((target["target"], target["config"]), []).append(target)
    combined = []
    for (name, config), verdicts in grouped.items():
        values = [v["value"] for v in verdicts]
        first = verdicts[0]
        threshold, higher = first["threshold"], first["higher_is_better"]
        value = middle(values, higher)
        met = value >= threshold if higher else value <= threshold
        held = sum(v["met"] for v in verdicts)
        detail = (first["detail"] if len(verdicts) == 1 else
                  f"median {value:.2f} of {', '.join(f'{v:.2f}' for v in values)}, "
                  f"held in {held} of {len(verdicts)} rounds")
        combined.append({"target": name, "config": config, "value": value, "values": values,
                         "threshold": threshold, "higher_is_better": higher, "met": met,
                         "rounds_met": held, "rounds": len(verdicts), "detail": detail})
    return combined


def transport_ratios(per_round: list[list[dict[str, Any]]],
                     key: str = "words_per_s") -> list[dict[str, Any]]:
    """zmq's rate (`key`: words/s, or a user topology's tuples/s) over tcp's, per
    (workers, acking), round by round (the two ran
    minutes apart) and their median: which transport won, by how much, and how much
    the rounds disagree. One worker crosses no transport (local delivery): its
    ratio's spread is the noise of the machine."""
    ratios: dict[tuple[int, bool], list[float]] = {}
    for rows in per_round:
        rates = {(r["transport"], r["workers"], r["acking"]): r["throughput"][key]
                 for r in rows}
        for (transport, workers, acking), rate in rates.items():
            tcp = rates.get(("tcp", workers, acking))
            if transport == "zmq" and tcp:
                ratios.setdefault((workers, acking), []).append(rate / tcp)
    return [{"workers": workers, "acking": acking, "zmq_over_tcp": statistics.median(values),
             "rounds": values}
            for (workers, acking), values in sorted(ratios.items())]


def transport_lines(ratios: list[dict[str, Any]], unit: str = "words/s") -> list[str]:
    lines = []
    for r in ratios:
        spread = f" (rounds {', '.join(f'{v:.2f}' for v in r['rounds'])})" if len(r["rounds"]) > 1 \
            else " (one round: no spread measured)"
        what = ("1 worker: no tuple crosses a transport, so this shows the noise"
                if r["workers"] == 1 else f"{r['workers']} workers")
        lines.append(f"zmq/tcp {unit}, acking {'on' if r['acking'] else 'off'}, {what}: "
                     f"{r['zmq_over_tcp']:.2f}{spread}")
    return lines


def median_rows(per_round: list[list[dict[str, Any]]],
                key: str = "words_per_s") -> list[dict[str, Any]]:
    """Per configuration, the throughput run of the round whose rate (`key`: words/s,
    or a user topology's tuples/s) is the `middle` and the latency run of the round
    whose p99 is, so that the numbers of each run shown were measured together; plus
    every round's rate and p99 to show the spread."""
    grouped: dict[tuple[str, int, bool], list[dict[str, Any]]] = {}
    for rows in per_round:
        for row in rows:
            grouped.setdefault((row["transport"], row["workers"], row["acking"]), []).append(row)
    summary = []
    for rows in grouped.values():
        rates = [r["throughput"][key] for r in rows]
        row = {**rows[rates.index(middle(rates))], f"{key}_rounds": rates}
        latencies = [r["latency"] for r in rows if r.get("latency") is not None]
        measured = [lat for lat in latencies if lat["p99_ms"] is not None]
        if measured:
            p99s = [lat["p99_ms"] for lat in measured]
            row["latency"] = measured[p99s.index(middle(p99s, higher_is_better=False))]
            row["p99_ms_rounds"] = [lat["p99_ms"] for lat in latencies]
        summary.append(row)
    return summary


# --- output ------------------------------------------------------------------------------------


def code_version() -> dict[str, Any]:
    """The commit measured, and whether storm_zmq/ differs from it (other work in
    progress in the same tree)."""
    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    changed = git("status", "--porcelain", "--", "storm_zmq")
    return {"commit": git("rev-parse", "HEAD") or None,
            "storm_zmq_changes": changed.splitlines() if changed else []}


def machine_info() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")), "")
    except OSError:
        pass
    try:
        from importlib.metadata import version

        bytewax_version = version("bytewax")
    except Exception:
        bytewax_version = None
    return {
        "nproc": len(get_affinity()),
        "cpu": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pyzmq": zmq.pyzmq_version(),
        "libzmq": zmq.zmq_version(),
        "msgpack": ".".join(map(str, msgpack.version)),
        "bytewax": bytewax_version,
    }


def worker_interpreter(overrides: dict[str, Any]) -> dict[str, Any]:
    """What the workers run under (-o worker.python; docs/pypy.md), as they report it:
    the machine's "python" is this script's, which runs no tuple."""
    try:
        described = interpreter_facts(worker_python(overrides))
    except LaunchError as exc:
        raise BenchError(str(exc)) from None
    if described["implementation"] == "PyPy":
        described["PYPY_GC_NURSERY"] = worker_environment()["PYPY_GC_NURSERY"]
    return described


#: How long PyPy's JIT goes on compiling a worker's paths (docs/pypy.md, "Warm-up"):
#: a window that starts earlier measures part of its warm-up.
PYPY_WARM_AFTER = 15.0


def warm_up_note(workers: dict[str, Any], seconds: float) -> str | None:
    """What to tell a user whose PyPy runs are too short to leave the JIT's warm-up
    out of their window; None when they are long enough, or the workers are CPython's."""
    starts = warmup_seconds(seconds)
    if workers.get("implementation") != "PyPy" or starts >= PYPY_WARM_AFTER:
        return None
    return (f"note: the window of a {seconds:g} s run starts {starts:g} s in, "
            f"while PyPy's JIT still compiles (about {PYPY_WARM_AFTER:g} s): "
            f"--seconds {PYPY_WARM_AFTER / WARMUP_FRACTION:g} measures PyPy warm (docs/pypy.md)")


def _count(rate: float | None) -> str:
    if rate is None:
        return "-"
    if rate >= 1e6:
        return f"{rate / 1e6:.2f}M"
    if rate >= 1e3:
        return f"{rate / 1e3:.0f}k"
    return f"{rate:.0f}"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _per_worker(processes: list[dict[str, Any]], key: str, fmt: str) -> str:
    values = [p[key] for p in processes]
    return " / ".join("-" if v is None else format(v, fmt) for v in values) or "-"


def _ratio(targets: list[dict[str, Any]], target: str, config: str) -> str:
    for t in targets:
        if t["target"] == target and t["config"] == config:
            held = f", {t['rounds_met']}/{t['rounds']}" if t.get("rounds", 1) > 1 else ""
            return f"{t['value']:.2f} ({'met' if t['met'] else 'MISSED'} ≥{t['threshold']:g}{held})"
    return "-"


def _spread(values: Sequence[float | None], fmt: Any) -> str:
    """' (low–high)' over the rounds, or nothing for one round."""
    known = [v for v in values if v is not None]
    if len(values) < 2 or not known:
        return ""
    return f" ({fmt(min(known))}–{fmt(max(known))})"


def results_table(rows: list[dict[str, Any]], bytewax: dict[str, Any] | None,
                  targets: list[dict[str, Any]]) -> str:
    header = ["transport", "workers", "acking", "words/s (range)", "vs Bytewax", "2w/1w", "on/off",
              "latency at words/s", "p50/p99/p99.9 ms", "CPU % per worker", "peak RSS MB per worker"]
    lines = [header, ["---", "---:", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]]
    for row in rows:
        tp, lat = row["throughput"], row.get("latency")
        transport, workers, acking = row["transport"], row["workers"], row["acking"]
        on_off = "on" if acking else "off"
        latency_cells = ["-", "-"]
        if lat is not None:
            achieved = lat.get("achieved_fraction")
            behind = (f" (behind: {achieved:.2f} of it)"
                      if achieved is not None and achieved < ACHIEVED_FRACTION else "")
            latency_cells = [_count(lat["offered_words_per_s"]) + behind,
                             f"{_ms(lat['p50_ms'])} / {_ms(lat['p99_ms'])} / {_ms(lat['p999_ms'])}"
                             + _spread(row.get("p99_ms_rounds", []), _ms)]
        lines.append([
            transport, str(workers), on_off,
            _count(tp["words_per_s"]) + _spread(row.get("words_per_s_rounds", []), _count),
            _ratio(targets, TARGET_BYTEWAX, f"{transport} 1w acking off") if workers == 1 and not acking else "",
            _ratio(targets, TARGET_SCALING, f"{transport} acking {on_off}") if workers == 2 else "",
            _ratio(targets, TARGET_ACKING, f"{transport} {workers}w") if acking else "",
            *latency_cells,
            _per_worker(tp["processes"], "cpu_percent", ".0f"),
            _per_worker(tp["processes"], "peak_rss_mb", ".0f"),
        ])
    if bytewax is not None:
        lines.append([f"Bytewax {bytewax['bytewax']}", "1", "-",
                      _count(bytewax["words_per_s"]) + _spread(bytewax.get("words_per_s_rounds", []), _count),
                      "1.00",
                      "", "", "-", "-", f"{bytewax['cpu_percent']:.0f}", f"{bytewax['peak_rss_mb']:.0f}"])
    return _markdown(lines) + (
        "\nwords/s: the count bolt's executed tuples per second in steady state, the round with"
        "\nthe median and the range over the rounds; ratios: the median of the per-round ratios,"
        "\nwith their targets and the rounds in which they held; latency: complete latency (acking"
        "\non) from when each sentence was due (Storm's loadgen's measure; Storm's emit-to-ack"
        "\nlatency is in the JSON) at half the configuration's words/s in its round, the run with"
        "\nthe median p99 and the p99 range; \"behind\": the run did under"
        f"\n{ACHIEVED_FRACTION:.0%} of the offered words/s; CPU (100 = one core) and peak RSS of each worker process (worker 0"
        "\nfirst) in the median throughput run")


def user_table(rows: list[dict[str, Any]], measure: str) -> str:
    """--topology: a row per configuration, with the ratios of the medians."""
    lines = [["transport", "workers", "acking", "tuples/s (range)", "2w/1w", "on/off",
              "p50/p99/p99.9 ms at that load", "CPU % per worker", "peak RSS MB per worker"],
             ["---", "---:", "---", "---:", "---:", "---:", "---:", "---:", "---:"]]
    rates = {(r["transport"], r["workers"], r["acking"]): r["throughput"]["tuples_per_s"] for r in rows}

    def ratio(value: float, base: float | None) -> str:
        return f"{value / base:.2f}" if base else ""

    for row in rows:
        tp = row["throughput"]
        transport, workers, acking = row["transport"], row["workers"], row["acking"]
        rate = tp["tuples_per_s"]
        lines.append([
            transport, str(workers), "on" if acking else "off",
            _count(rate) + _spread(row.get("tuples_per_s_rounds", []), _count),
            ratio(rate, rates.get((transport, 1, acking))) if workers > 1 else "",
            ratio(rate, rates.get((transport, workers, False))) if acking else "",
            f"{_ms(tp['p50_ms'])} / {_ms(tp['p99_ms'])} / {_ms(tp['p999_ms'])}" if acking else "-",
            _per_worker(tp["processes"], "cpu_percent", ".0f"),
            _per_worker(tp["processes"], "peak_rss_mb", ".0f"),
        ])
    return _markdown(lines) + (
        f"\ntuples/s: {measure}, per second in steady state, the round with the median and the"
        "\nrange over the rounds; ratios: of those medians; latency: complete latency (acking on)"
        "\nat that full load, in the same run; CPU (100 = one core) and peak RSS of each worker"
        "\nprocess (worker 0 first)")


def slow_table(runs: list[dict[str, Any]]) -> str:
    lines = [["transport", "workers", "offered/s", "spout / bolt per s, 2nd half",
              "in flight", "RSS MB every 5 s, per worker", "growth 2nd half MB", "levels off"],
             ["---", "---:", "---:", "---:", "---:", "---", "---:", "---"]]
    for run in runs:
        series = " · ".join(
            "[" + " ".join(f"{v:.0f}" for v in points[::5]) + "]" for points in run["rss_mb_every_second"])
        growth = " / ".join(f"{w['growth_mb']:+.1f}" for w in run["workers_rss"])
        lines.append([run["transport"], str(run["workers"]), _count(run["offered_sentences_per_s"]),
                      f"{_count(run['spout_emitted_per_s'])} / {_count(run['bolt_executed_per_s'])}",
                      f"{run['in_flight_at_end']:,}", series, growth,
                      "yes" if run["levels_off"] else "NO"])
    return _markdown(lines) + (
        "\noffered: sentences/s the spout is asked for (100 x what the slow bolts take); in flight:"
        "\nemitted - executed at the end; RSS of each worker (worker 0 first) at 0, 5, 10, ... s")


def _markdown(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
                     for row in rows)


#: A run during which other processes used more than this much CPU (% of a core)
#: is flagged as disturbed.
DISTURBED_CPU_PERCENT = 25.0


def disturbances(report: dict[str, Any]) -> list[str]:
    """What may have skewed the numbers: other load on the machine, code changed."""
    notes = []
    rounds = report.get("rounds") or [{"rows": report.get("rows", [])}]
    measured = []
    for index, one in enumerate(rounds):
        prefix = f"round {index + 1}: " if len(rounds) > 1 else ""
        for r in one["rows"]:
            config = f"{r['transport']} {r['workers']}w acking {'on' if r['acking'] else 'off'}"
            measured += [(f"{prefix}{config} {kind}", r[kind]) for kind in ("throughput", "latency") if kind in r]
    measured += [(f"slow bolt {r['transport']} {r['workers']}w", r) for r in report.get("slow_bolt", [])]
    for label, run in measured:
        other = run.get("other_cpu_percent")
        if other is not None and other > DISTURBED_CPU_PERCENT:
            notes.append(f"{label}: other processes used {other:.0f} % CPU during the window (disturbed)")
    if report.get("code_changed_during_run"):
        notes.append("storm_zmq/ changed during the run: rows may measure different code")
    if report.get("code", {}).get("storm_zmq_changes"):
        notes.append("storm_zmq/ has uncommitted changes: " + ", ".join(report["code"]["storm_zmq_changes"]))
    return notes


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# --- main ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"zmq only, {QUICK_SECONDS:g} s runs, a smaller Bytewax run (under a minute)")
    parser.add_argument("--transports", help=f"comma-separated subset of {','.join(TRANSPORTS)}")
    parser.add_argument("--workers", help="comma-separated worker counts (default 1,2)")
    parser.add_argument("--acking", help="comma-separated subset of off,on (default both)")
    parser.add_argument("--rounds", type=int,
                        help=f"times every configuration is measured, interleaved (default "
                             f"{DEFAULT_ROUNDS}, {QUICK_ROUNDS} with --quick); verdicts are medians")
    parser.add_argument("--seconds", type=float,
                        help=f"length of each run (default {DEFAULT_SECONDS:g}, {QUICK_SECONDS:g} with --quick)")
    parser.add_argument("--bytewax-sentences", type=int,
                        help=f"sentences the Bytewax baseline counts (default {BYTEWAX_SENTENCES}, "
                             f"{QUICK_BYTEWAX_SENTENCES} with --quick)")
    parser.add_argument("--no-bytewax", action="store_true", help="skip the Bytewax baseline")
    parser.add_argument("--slow-bolt", action="store_true",
                        help="instead: the slow-bolt memory check (acking off), per transport and "
                             "worker count (default 2 workers)")
    parser.add_argument("--slow-seconds", type=float, default=SLOW_SECONDS,
                        help=f"length of each --slow-bolt run (default {SLOW_SECONDS:g})")
    parser.add_argument("--slow-queue", type=int, default=SLOW_QUEUE,
                        help=f"topology.executor.receive.buffer.size of the --slow-bolt runs "
                             f"(default {SLOW_QUEUE}; the runtime's is "
                             f"{CPYTHON_RECEIVE_BUFFER} on CPython workers, {PYPY_RECEIVE_BUFFER} on PyPy)")
    parser.add_argument("-o", "--override", metavar="KEY=VALUE", action="append", default=[],
                        help="a topology config value for every run (repeatable), e.g. "
                             "-o worker.cpu.pinning=true; --slow-bolt keeps its own rate, "
                             "delay, queue size and timeout")
    parser.add_argument("--topology", metavar="FILE",
                        help="benchmark this topology of yours instead of the word count "
                             "(no Bytewax, no targets; see the top of this script)")
    parser.add_argument("--class", dest="topology_class", metavar="NAME",
                        help="--topology's Topology class, when the file defines several")
    parser.add_argument("--measure", metavar="COMPONENT",
                        help="--topology's throughput: tuples a bolt executed or a spout "
                             "emitted (default: every spout's emitted tuples, replays "
                             "included)")
    parser.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    args = parser.parse_args(argv)
    if args.topology is None and (args.topology_class or args.measure):
        parser.error("--class and --measure go with --topology")
    if args.topology is not None:
        if args.slow_bolt:
            parser.error("--slow-bolt runs its own topology: not with --topology")
        args.no_bytewax = True
        try:
            args.measured, args.measure_label = measured_counters(
                args.topology, args.topology_class, args.measure)
        except (TopologyError, ValueError) as exc:
            parser.error(str(exc))
    try:
        args.overrides = dict(parse_override(text) for text in args.override)
    except ConfigError as exc:
        parser.error(str(exc))
    if "storm.messaging.transport" in args.overrides:
        parser.error("-o storm.messaging.transport: the benchmark sets the transport of each "
                     "run; choose them with --transports")

    def items(text: str | None, default: Sequence[str], allowed: Sequence[str], what: str) -> list[str]:
        chosen = [x.strip() for x in text.split(",") if x.strip()] if text else list(default)
        unknown = set(chosen) - set(allowed)
        if unknown or not chosen:
            parser.error(f"unknown {what} {sorted(unknown)}; choose from {', '.join(allowed)}")
        return chosen

    args.transports = items(args.transports, ("zmq",) if args.quick else TRANSPORTS, TRANSPORTS, "transports")
    args.acking = [a == "on" for a in items(args.acking, ACKING, ACKING, "acking values")]
    default_workers = "2" if args.slow_bolt else ",".join(map(str, DEFAULT_WORKERS))
    try:
        args.workers = sorted({int(w) for w in (args.workers or default_workers).split(",")})
    except ValueError:
        parser.error(f"--workers: not a list of integers: {args.workers!r}")
    if min(args.workers) < 1:
        parser.error("--workers must be at least 1")
    if args.seconds is None:
        args.seconds = QUICK_SECONDS if args.quick else DEFAULT_SECONDS
    if args.rounds is None:
        args.rounds = QUICK_ROUNDS if args.quick else DEFAULT_ROUNDS
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.seconds < MIN_SECONDS or args.slow_seconds < MIN_SECONDS:
        parser.error(f"--seconds and --slow-seconds must be at least {MIN_SECONDS:g}")
    if args.bytewax_sentences is None:
        args.bytewax_sentences = QUICK_BYTEWAX_SENTENCES if args.quick else BYTEWAX_SENTENCES
    if args.slow_queue < 1:
        parser.error("--slow-queue must be positive")
    if args.bytewax_sentences < 1:
        parser.error("--bytewax-sentences must be positive")
    return args


def run_round(args: argparse.Namespace, label: str) -> dict[str, Any]:
    """Every configuration once (and Bytewax): one round's rows and verdicts."""
    bytewax = None
    if not args.no_bytewax:
        bytewax = run_bytewax(args.bytewax_sentences)
        progress(f"{label}Bytewax {bytewax['bytewax']}: {bytewax['words_per_s']:,.0f} words/s "
                 f"({bytewax['words']:,} words, {bytewax['wall_seconds']:.1f} s)")
    rows: list[dict[str, Any]] = []
    for transport in args.transports:
        for workers in args.workers:
            for acking in args.acking:
                config = Config(transport, workers, acking, args.overrides)
                row: dict[str, Any] = {"transport": transport, "workers": workers, "acking": acking}
                if args.topology is not None:
                    row["throughput"] = tp = measure_user_topology(args, config)
                    latency = (f", p50 {_ms(tp['p50_ms'])} ms, p99 {_ms(tp['p99_ms'])} ms"
                               if acking else "")
                    progress(f"{label}{config.label:>22}: {tp['tuples_per_s']:>10,.0f} tuples/s"
                             f"{latency}, CPU {_per_worker(tp['processes'], 'cpu_percent', '.0f')} %")
                    rows.append(row)
                    continue
                row["throughput"] = tp = measure_throughput(config, args.seconds)
                cpu = _per_worker(tp["processes"], "cpu_percent", ".0f")
                progress(f"{label}{config.label:>22}: {tp['words_per_s']:>10,.0f} words/s, CPU {cpu} %")
                if acking:
                    rate = LATENCY_LOAD * tp["words_per_s"]
                    row["latency"] = lat = measure_latency(config, rate, args.seconds)
                    progress(f"{label}{config.label:>22}: latency at {rate:,.0f} words/s: "
                             f"p50 {_ms(lat['p50_ms'])} ms, p99 {_ms(lat['p99_ms'])} ms, "
                             f"p99.9 {_ms(lat['p999_ms'])} ms from when due "
                             f"(p99 {_ms(lat['emit_to_ack']['p99_ms'])} ms from the emit; "
                             f"{lat['samples']:,} samples, {lat['words_per_s']:,.0f} words/s)")
                rows.append(row)
    targets = [] if args.topology is not None else judge(rows, bytewax)
    return {"bytewax": bytewax, "rows": rows, "targets": targets}


def run_matrix(args: argparse.Namespace) -> dict[str, Any]:
    code = code_version()
    rounds = []
    for index in range(args.rounds):
        label = f"[round {index + 1}/{args.rounds}] " if args.rounds > 1 else ""
        rounds.append(run_round(args, label))
    bytewax = None
    if not args.no_bytewax:
        runs = [r["bytewax"] for r in rounds]
        rates = [run["words_per_s"] for run in runs]
        # the baseline's favourable side is its faster one (the comparison's worse)
        bytewax = {**runs[rates.index(middle(rates, higher_is_better=False))], "words_per_s_rounds": rates}
    targets = combine_rounds([r["targets"] for r in rounds])
    rate = "words_per_s" if args.topology is None else "tuples_per_s"
    return {
        "machine": machine_info(),
        "code": code,
        "code_changed_during_run": code_version() != code,
        "command": " ".join(["python", "scripts/bench_topology.py", *sys.argv[1:]]),
        "settings": {"transports": args.transports, "workers": args.workers,
                     "acking": ["on" if a else "off" for a in args.acking], "seconds": args.seconds,
                     "rounds": args.rounds,
                     "warmup_seconds": warmup_seconds(args.seconds), "latency_load": LATENCY_LOAD,
                     "bytewax_sentences": None if args.no_bytewax else args.bytewax_sentences,
                     "bytewax_batch_size": BYTEWAX_BATCH},
        "bytewax": bytewax,
        "topology": None if args.topology is None else {
            "file": args.topology, "class": args.topology_class, "measure": args.measure_label},
        "rows": median_rows([r["rows"] for r in rounds], rate),
        "transport_ratios": transport_ratios([r["rows"] for r in rounds], rate),
        "targets": targets,
        "targets_met": all(t["met"] for t in targets),
        "rounds": rounds,
    }


def run_slow(args: argparse.Namespace) -> dict[str, Any]:
    code = code_version()
    runs = []
    for transport in args.transports:
        for workers in args.workers:
            run = measure_slow_bolt(transport, workers, args.slow_seconds, args.slow_queue, args.overrides)
            growth = ", ".join(f"{w['growth_mb']:+.1f}" for w in run["workers_rss"])
            progress(f"slow bolt {transport} {workers}w: spout {run['spout_emitted_per_s']:,.0f}/s, "
                     f"bolt {run['bolt_executed_per_s']:,.0f}/s, RSS growth {growth} MB")
            runs.append(run)
    targets = [{"target": TARGET_BOUNDED, "config": f"{r['transport']} {r['workers']}w",
                "value": max(w["growth_mb"] for w in r["workers_rss"]), "threshold": PLATEAU_MB,
                "met": r["levels_off"],
                "detail": "RSS growth over the second half: "
                          + ", ".join(f"{w['growth_mb']:+.1f} MB" for w in r["workers_rss"])}
               for r in runs]
    return {
        "machine": machine_info(),
        "code": code,
        "code_changed_during_run": code_version() != code,
        "command": " ".join(["python", "scripts/bench_topology.py", *sys.argv[1:]]),
        "settings": {"transports": args.transports, "workers": args.workers,
                     "slow_seconds": args.slow_seconds, "slow_delay_secs": SLOW_DELAY,
                     "slow_par": SLOW_PAR, "factor": SLOW_FACTOR, "receive_buffer_size": args.slow_queue,
                     "plateau_mb": PLATEAU_MB, "plateau_fraction": PLATEAU_FRACTION},
        "slow_bolt": runs,
        "targets": targets,
        "targets_met": all(t["met"] for t in targets),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.monotonic()
    try:
        workers = worker_interpreter(args.overrides)
        print(f"workers: {workers['implementation']} {workers['version']} "
              f"({workers['executable']})", flush=True)
        note = None if args.slow_bolt else warm_up_note(workers, args.seconds)
        if note is not None:
            print(note, flush=True)
        report = run_slow(args) if args.slow_bolt else run_matrix(args)
        report["workers_python"] = workers
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # a cut-short run is no measurement: nothing reported
        print("benchmark interrupted: no results printed or written", file=sys.stderr)
        return 130
    report["wall_seconds"] = time.monotonic() - began
    if args.slow_bolt:
        print(slow_table(report["slow_bolt"]))
    elif report.get("topology") is not None:
        print(user_table(report["rows"], report["topology"]["measure"]))
        for line in transport_lines(report["transport_ratios"], "tuples/s"):
            print(line)
    else:
        print(results_table(report["rows"], report["bytewax"], report["targets"]))
        for line in transport_lines(report["transport_ratios"]):
            print(line)
    for target in report["targets"]:
        verdict = "met" if target["met"] else "MISSED"
        print(f"{verdict:>6}: {target['target']}: {target['config']}: {target['detail']}")
    for warning in disturbances(report):
        print(f"note: {warning}")
    print(f"wall time {report['wall_seconds']:.0f} s")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
