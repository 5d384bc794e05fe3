#!/usr/bin/env python
"""Cluster benchmark: zmq against tcp between the hosts of a running cluster.

`scripts/bench_transport.py` and `scripts/bench_topology.py` measure on one machine,
over loopback. This one measures where a user's topology will run: it submits a
topology (the word count by default) to the cluster the configuration points at
(ZooKeeper from ``-c storm.yaml`` / ``-o key=value``, as every storm-zmq command),
once per transport, acking setting and round, one run at a time. Within a round
the transports take turns, and their order alternates from round to round, so
that tcp, measured in the same minutes, is the baseline zmq is compared with.

One run:

1. ``storm-zmq submit TOPOLOGY -n bench-<transport>-<acking>-<round> -w WORKERS
   -o storm.messaging.transport=<transport>`` (acking off: also
   ``topology.acker.executors=0`` and ``topology.max.spout.pending=null``, as
   bench_topology.py does; acking on: the topology's own settings);
2. start-up: until every worker's heartbeat in ZooKeeper carries stats
   (``--start-timeout``);
3. ``--warmup`` seconds, then a window of ``--seconds``. What is measured comes
   from the heartbeats alone (cumulative counters written every
   ``worker.heartbeat.frequency.secs`` by each worker): throughput is the executed
   tuples per second of the measured components (``--measure``; by default the
   bolts nothing subscribes to: the word count's ``count_bolt``), each worker's
   between its own first and last heartbeat of the window, by its own clock, and
   summed; a worker's CPU is its process's CPU seconds over the same span (100 =
   one core); spout acks per second, and the mean complete latency (acking on);
4. ``storm-zmq kill NAME -w 0``, and a wait until nimbus has removed it, so that
   the next run finds the slots free.

A run fails, and the benchmark stops with exit 1 after killing it, when the submit
is refused, the workers do not all report in time, a worker restarts, a
component reports an error, or a tuple tree fails (the counts would not be
comparable). Ctrl-C kills the running topology too. Nothing is left running.

Prints a table (median words/s per transport and acking, the rounds' range, CPU
per worker, where the workers ran, zmq/tcp per round and its median), notes
(workers that shared a host compared the transports partly over loopback), and
with ``--json FILE`` every number.

    python scripts/bench_cluster.py -c conf/storm.yaml
    python scripts/bench_cluster.py --acking off --rounds 5 --seconds 20 -w 4
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_topology as bench  # noqa: E402  (middle, number formats, code version)

from storm_zmq.cli import add_config_arguments, load_config_from_args  # noqa: E402
from storm_zmq.config import ConfigError, parse_override  # noqa: E402
from storm_zmq.messaging import TRANSPORT_ALIASES  # noqa: E402
from storm_zmq.metrics.summary import TopologyLayout, reports_from_beats  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TRANSPORTS = ("zmq", "tcp")
#: The transport the others are compared with, measured in the same round.
BASELINE = "tcp"
ACKING = ("off", "on")
DEFAULT_WORKERS = 2
DEFAULT_ROUNDS = 3
DEFAULT_WARMUP = 5.0
DEFAULT_SECONDS = 10.0
DEFAULT_START_TIMEOUT = 120.0
#: How long nimbus may take to remove a killed topology (its round is
#: nimbus.monitor.freq.secs).
REMOVE_TIMEOUT = 120.0
#: While workers have not all reported, say so this often.
WAITING_NOTICE_SECS = 5.0
#: Seconds between two reads of the heartbeats.
POLL_SECS = 0.25
#: What acking off means, as in bench_topology.py.
ACKING_OFF = ("topology.acker.executors=0", "topology.max.spout.pending=null")


class BenchError(Exception):
    """A run failed: the benchmark stops, exit 1."""


# --- the heartbeats of one run (pure) -------------------------------------------------------


@dataclass(frozen=True)
class Beat:
    """One heartbeat report of one worker, as the benchmark read it."""

    seen: float  # the benchmark's monotonic clock when it read the heartbeat
    time: float  # the worker's own clock when it wrote the report
    pid: int | None
    host: str
    port: int | None
    cpu_secs: float | None
    rss_bytes: int | None
    transport: str | None  # the class the worker's transport is (transport_class)
    counters: Mapping[str, Mapping[str, float]]  # component -> counter -> value


def _number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class RunRecord:
    """Every distinct heartbeat of a run's workers (worker index -> beats in the
    order read). A heartbeat read twice is kept once; a worker whose pid changes
    between two of its heartbeats has restarted, which `restarts` names (its
    counters started again from 0, so no rate across it means anything)."""

    beats: dict[int, list[Beat]] = field(default_factory=dict)
    restarts: list[str] = field(default_factory=list)

    def observe(self, seen: float, reports: Iterable[Mapping[str, Any]]) -> None:
        for report in reports:
            worker, at = report.get("worker"), _number(report.get("time"))
            if not isinstance(worker, int) or at is None:
                continue
            components = report.get("components")
            beat = Beat(
                seen=seen, time=at, pid=report.get("pid"), host=str(report.get("host")),
                port=report.get("port"), cpu_secs=_number(report.get("cpu_secs")),
                rss_bytes=_number(report.get("rss_bytes")),
                transport=report.get("transport_class"),
                counters={name: {key: value for key, value in entry.items()
                                 if _number(value) is not None}
                          for name, entry in (components or {}).items()
                          if isinstance(entry, Mapping)},
            )
            series = self.beats.setdefault(worker, [])
            if series and series[-1].time == beat.time and series[-1].pid == beat.pid:
                continue
            if series and beat.pid != series[-1].pid:
                self.restarts.append(
                    f"worker {worker} restarted (pid {series[-1].pid} on {series[-1].host}:"
                    f"{series[-1].port}, then pid {beat.pid} on {beat.host}:{beat.port})")
            series.append(beat)

    def reporting(self) -> set[int]:
        return set(self.beats)

    def _span(self, worker: int, start: float, end: float) -> tuple[Beat, Beat] | None:
        """The worker's first and last heartbeat read within [start, end], if two
        heartbeats written at different times are."""
        inside = [b for b in self.beats.get(worker, ()) if start <= b.seen <= end]
        if len(inside) < 2 or inside[-1].time <= inside[0].time:
            return None
        return inside[0], inside[-1]

    def rate(self, components: Sequence[str], counter: str, start: float, end: float) -> float:
        """Per second of `counter`, summed over `components` and workers; each
        worker's rate is taken by its own clock between its first and last
        heartbeat of the window (so a skewed clock on another host does not
        matter, and the polling's delay cancels out)."""
        total = 0.0
        for worker in sorted(self.beats):
            span = self._span(worker, start, end)
            if span is None:
                continue
            first, last = span
            done = sum(last.counters.get(c, {}).get(counter, 0) - first.counters.get(c, {}).get(counter, 0)
                       for c in components)
            total += done / (last.time - first.time)
        return total

    def total(self, components: Sequence[str], counter: str) -> float:
        """The newest value of `counter`, summed over `components` and workers."""
        return sum(series[-1].counters.get(c, {}).get(counter, 0)
                   for series in self.beats.values() for c in components)

    def mean_latency_ms(self, components: Sequence[str], which: str,
                        start: float, end: float) -> float | None:
        """Mean `which` latency (complete, execute, process) of what the window's
        heartbeats added: total milliseconds over samples, over every worker."""
        ms = samples = 0.0
        for worker in self.beats:
            span = self._span(worker, start, end)
            if span is None:
                continue
            first, last = span
            for c in components:
                ms += (last.counters.get(c, {}).get(f"{which}_ms_total", 0)
                       - first.counters.get(c, {}).get(f"{which}_ms_total", 0))
                samples += (last.counters.get(c, {}).get(f"{which}_samples", 0)
                            - first.counters.get(c, {}).get(f"{which}_samples", 0))
        return ms / samples if samples > 0 else None

    def workers(self, start: float, end: float) -> list[dict[str, Any]]:
        """Per worker: where it ran, its CPU (100 = one core) over the window, its
        largest RSS in the window."""
        rows = []
        for worker in sorted(self.beats):
            newest = self.beats[worker][-1]
            span = self._span(worker, start, end)
            cpu = None
            if span is not None and span[0].cpu_secs is not None and span[1].cpu_secs is not None:
                cpu = 100 * (span[1].cpu_secs - span[0].cpu_secs) / (span[1].time - span[0].time)
            rss = [b.rss_bytes for b in self.beats[worker] if start <= b.seen <= end and b.rss_bytes]
            rows.append({"worker": worker, "host": newest.host, "port": newest.port, "pid": newest.pid,
                         "transport": newest.transport, "cpu_percent": cpu,
                         "peak_rss_mb": max(rss) / 2**20 if rss else None})
        return rows


def sink_components(layout: TopologyLayout) -> list[str]:
    """The bolts no component subscribes to: what a topology's throughput is
    counted at (the word count's count_bolt)."""
    sources = {edge.source for edge in layout.edges}
    return [c.name for c in layout.components if c.kind == "bolt" and c.name not in sources]


# --- summary (pure) ---------------------------------------------------------------------


def summarize_runs(runs: Sequence[Mapping[str, Any]], baseline: str = BASELINE) -> list[dict[str, Any]]:
    """Per (acking, transport): the median tuples/s over the rounds (of an even
    number, the lower middle: `bench_topology.middle`), every round's value, and
    against `baseline` the ratio of the two measured in the same round, per round
    and its median."""
    by_config: dict[tuple[str, str], dict[int, Mapping[str, Any]]] = {}
    for run in runs:
        by_config.setdefault((run["acking"], run["transport"]), {})[run["round"]] = run
    rows = []
    for (acking, transport), rounds in by_config.items():
        ordered = [rounds[r] for r in sorted(rounds)]
        rates = [run["tuples_per_s"] for run in ordered]
        median = bench.middle(rates)
        row: dict[str, Any] = {"acking": acking, "transport": transport, "tuples_per_s": median,
                               "tuples_per_s_rounds": rates,
                               "median_run": ordered[rates.index(median)]}
        base = by_config.get((acking, baseline), {})
        if transport != baseline and base:
            ratios = [rounds[r]["tuples_per_s"] / base[r]["tuples_per_s"]
                      for r in sorted(rounds) if r in base and base[r]["tuples_per_s"] > 0]
            if ratios:
                row["ratio_to_baseline"] = bench.middle(ratios)
                row["ratio_to_baseline_rounds"] = ratios
        rows.append(row)
    return rows


def notes_on(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """What a reader must know to read the table: runs whose workers shared a
    host compared the transports partly or wholly over loopback."""
    shared, partly = [], []
    for run in runs:
        hosts = [w["host"] for w in run["workers"]]
        if len(hosts) > 1 and len(set(hosts)) == 1:
            shared.append(run)
        elif len(set(hosts)) < len(hosts):
            partly.append(run)
    notes = []
    if shared:
        which = "every run" if len(shared) == len(runs) else f"{len(shared)} of {len(runs)} runs"
        hosts = sorted({run["workers"][0]["host"] for run in shared})
        notes.append(f"{which}: all workers on one host ({', '.join(hosts)}): the transports were "
                     "compared over loopback, not a network (more supervisor hosts, or -w)")
    if partly:
        which = "every run" if len(partly) == len(runs) else f"{len(partly)} of {len(runs)} runs"
        notes.append(f"{which}: some workers shared a host, so part of the traffic stayed on "
                     "loopback")
    return notes


def results_table(rows: Sequence[Mapping[str, Any]], measured: str) -> str:
    header = ["acking", "transport", f"{measured}/s", "rounds", "CPU % per worker",
              "complete ms", "hosts", f"vs {BASELINE}"]
    lines = [header, ["---"] * len(header)]
    for row in sorted(rows, key=lambda r: (r["acking"], r["transport"] == BASELINE, r["transport"])):
        run = row["median_run"]
        cpu = " / ".join("-" if w["cpu_percent"] is None else f"{w['cpu_percent']:.0f}"
                         for w in run["workers"])
        rounds = ", ".join(bench._count(v) for v in row["tuples_per_s_rounds"])
        ratio = "-"
        if "ratio_to_baseline" in row:
            each = ", ".join(f"{v:.2f}" for v in row["ratio_to_baseline_rounds"])
            ratio = (f"{row['ratio_to_baseline']:.2f}"
                     + (f" ({each})" if len(row["ratio_to_baseline_rounds"]) > 1 else ""))
        lines.append([row["acking"], row["transport"], bench._count(row["tuples_per_s"]), rounds, cpu,
                      bench._ms(run.get("complete_latency_ms")),
                      ", ".join(sorted({w["host"] for w in run["workers"]})), ratio])
    return bench._markdown(lines)


# --- the cluster (I/O) ------------------------------------------------------------------


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Cluster:
    """The running cluster, through ZooKeeper (reads) and the storm-zmq command
    (submit and kill, as a user would)."""

    def __init__(self, conf: dict[str, Any], config_args: list[str]) -> None:
        from storm_zmq.cli.cluster_cmd import quiet_kazoo
        from storm_zmq.cluster.state import ClusterState

        quiet_kazoo()
        self.conf = conf
        self.config_args = config_args  # -c FILE and -o KEY=VALUE, for every command
        self.state = ClusterState(conf).start(timeout=conf["storm.zookeeper.connection.timeout"] / 1000)

    def close(self) -> None:
        self.state.stop()

    def command(self, subcommand: str, *args: str) -> subprocess.CompletedProcess[str]:
        """``storm-zmq SUBCOMMAND`` with this benchmark's -c/-o first, so that the
        benchmark's own -o settings after them win."""
        return subprocess.run([sys.executable, "-m", "storm_zmq.cli.main", subcommand,
                               *self.config_args, *args],
                              capture_output=True, text=True, timeout=300)

    def find(self, name: str) -> tuple[str, dict[str, Any]] | None:
        for topology_id in self.state.topologies():
            record = self.state.get_topology(topology_id)
            if record and record.get("name") == name:
                return topology_id, record
        return None

    def supervisors(self) -> list[dict[str, Any]]:
        return [{"id": key, "host": info.get("host"), "ports": info.get("ports")}
                for key, info in sorted(self.state.supervisors().items())]

    def kill(self, name: str) -> None:
        """Kill `name` at once and wait until nimbus has removed it (its slots are
        free again)."""
        done = self.command("kill", name, "-w", "0")
        if done.returncode != 0 and self.find(name) is not None:
            raise BenchError(f"storm-zmq kill {name} failed: {last_line(done.stderr)}")
        deadline = time.monotonic() + REMOVE_TIMEOUT
        while self.find(name) is not None:
            if time.monotonic() > deadline:
                raise BenchError(f"nimbus did not remove {name} within {REMOVE_TIMEOUT:.0f} s "
                                 "of its kill (is a nimbus running?)")
            time.sleep(POLL_SECS)


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


@dataclass(frozen=True)
class Plan:
    topology: Path
    workers: int
    warmup: float
    seconds: float
    start_timeout: float
    measure: tuple[str, ...]  # empty: the topology's sinks
    topology_class: str | None = None  # submit's --class, for a file with several


def run_name(transport: str, acking: str, round_index: int) -> str:
    return f"bench-{transport}-acking-{acking}-{round_index}"


def measure_run(cluster: Cluster, plan: Plan, transport: str, acking: str, round_index: int,
                label: str) -> dict[str, Any]:
    """Submit, measure and kill one run (see the module docstring)."""
    name = run_name(transport, acking, round_index)
    if cluster.find(name) is not None:
        raise BenchError(f"a topology named {name} is already on the cluster (left by an "
                         f"interrupted benchmark?): storm-zmq kill {name} -w 0")
    options = ["-o", f"storm.messaging.transport={transport}"]
    if acking == "off":
        for setting in ACKING_OFF:
            options += ["-o", setting]
    submitted = time.monotonic()
    try:
        chosen = ["--class", plan.topology_class] if plan.topology_class else []
        done = cluster.command("submit", str(plan.topology), *chosen, "-n", name, "-w",
                               str(plan.workers), *options)
        if done.returncode != 0:
            raise BenchError(f"storm-zmq submit of {name} failed: {last_line(done.stderr)}")
        for line in done.stderr.splitlines():  # e.g. too few free slots: say it now
            if line.startswith("warning:"):
                progress(f"{label}{name}: submit said: {line}")
        result = _measure_submitted(cluster, plan, name, transport, acking, round_index, submitted, label)
    except BaseException:
        try:  # nothing is left running (a Ctrl-C may come mid-submit), and the first
            # failure is the one reported
            if cluster.find(name) is not None:
                cluster.kill(name)
        except Exception as exc:
            progress(f"also: {exc}")
        raise
    cluster.kill(name)
    return result


def _measure_submitted(cluster: Cluster, plan: Plan, name: str, transport: str, acking: str,
                       round_index: int, submitted: float, label: str) -> dict[str, Any]:
    found = cluster.find(name)
    if found is None:
        raise BenchError(f"{name} was submitted but is not on the cluster")
    topology_id, record = found
    layout = TopologyLayout.from_record(record)
    measure = list(plan.measure) or sink_components(layout)
    unknown = [c for c in measure if layout.get(c) is None]
    if not measure or unknown:
        known = ", ".join(c.name for c in layout.components)
        raise BenchError(f"nothing to measure in {plan.topology}: "
                         + (f"no component named {', '.join(unknown)}" if unknown else "no bolt is a sink")
                         + f" (components: {known}; choose with --measure)")
    spouts = [c.name for c in layout.components if c.kind == "spout"]
    workers = int(record.get("num_workers", plan.workers))
    run = RunRecord()

    def poll() -> None:
        run.observe(time.monotonic(), reports_from_beats(cluster.state.worker_beats(topology_id)))
        if run.restarts:
            raise BenchError(f"{name}: {run.restarts[0]}")
        errors = cluster.state.errors(topology_id)
        for component, entries in sorted(errors.items()):
            if entries:
                raise BenchError(f"{name}: component {component} reported an error: "
                                 f"{last_line(str(entries[0].get('text', '')))}")
        if run.total(spouts, "failed"):
            raise BenchError(f"{name}: {run.total(spouts, 'failed'):.0f} tuple tree(s) failed "
                             "(timed out or failed by a bolt): the run is not comparable")

    deadline = submitted + plan.start_timeout
    next_word = submitted + WAITING_NOTICE_SECS
    while len(run.reporting()) < workers:
        if time.monotonic() > next_word:
            next_word += WAITING_NOTICE_SECS
            progress(f"{label}{name}: {len(run.reporting())} of {workers} worker(s) reported after "
                     f"{time.monotonic() - submitted:.0f} s (waiting up to --start-timeout "
                     f"{plan.start_timeout:g} s)")
        if time.monotonic() > deadline:
            raise BenchError(f"{name}: {len(run.reporting())} of {workers} worker(s) reported within "
                             f"--start-timeout {plan.start_timeout:g} s (free slots? see storm-zmq "
                             f"list and the supervisors' logs)")
        poll()
        time.sleep(POLL_SECS)
    started = time.monotonic()
    start, end = started + plan.warmup, started + plan.warmup + plan.seconds
    while time.monotonic() < end + POLL_SECS:
        poll()
        time.sleep(POLL_SECS)
    result = {
        "transport": transport, "acking": acking, "round": round_index, "name": name,
        "topology_id": topology_id, "measured": measure,
        "startup_secs": started - submitted,
        "tuples_per_s": run.rate(measure, "executed", start, end),
        "spout_acked_per_s": run.rate(spouts, "acked", start, end) if acking == "on" else None,
        "complete_latency_ms": (run.mean_latency_ms(spouts, "complete", start, end)
                                if acking == "on" else None),
        "workers": run.workers(start, end),
    }
    if result["tuples_per_s"] <= 0:
        raise BenchError(f"{name}: {', '.join(measure)} executed nothing in the window")
    wrong = [w for w in result["workers"] if w["transport"] != TRANSPORT_ALIASES[transport]]
    if wrong:  # what this benchmark compares must be what ran
        raise BenchError(f"{name}: worker {wrong[0]['worker']} on {wrong[0]['host']} ran "
                         f"{wrong[0]['transport']}, not the {transport} transport it was "
                         "submitted with")
    cpu = " / ".join("-" if w["cpu_percent"] is None else f"{w['cpu_percent']:.0f}" for w in result["workers"])
    progress(f"{label}{transport} acking {acking}: {result['tuples_per_s']:,.0f} tuples/s into "
             f"{', '.join(measure)}, CPU {cpu} % on {', '.join(w['host'] for w in result['workers'])} "
             f"(up after {result['startup_secs']:.1f} s)")
    return result


# --- main -------------------------------------------------------------------------------


def _subset(text: str | None, allowed: Sequence[str], what: str) -> list[str]:
    if text is None:
        return list(allowed)
    chosen = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    wrong = [part for part in chosen if part not in allowed]
    if wrong or not chosen:
        raise SystemExit(f"bench_cluster.py: error: {what} must be a comma-separated subset of "
                         f"{','.join(allowed)}, got {text!r}")
    return chosen


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topology", type=Path, default=REPO / "topologies" / "wordcount.py",
                        help="topology file to submit (default topologies/wordcount.py)")
    parser.add_argument("--class", dest="topology_class", metavar="NAME",
                        help="which topology of a file that defines several (as submit's --class)")
    parser.add_argument("-w", "--workers", type=int, default=DEFAULT_WORKERS,
                        help=f"worker processes per run (default {DEFAULT_WORKERS}; nimbus spreads "
                             "them over the supervisors)")
    parser.add_argument("--transports", help=f"comma-separated subset of {','.join(TRANSPORTS)}")
    parser.add_argument("--acking", help="comma-separated subset of off,on (default both)")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help=f"times every configuration runs, transports alternating (default {DEFAULT_ROUNDS})")
    parser.add_argument("--warmup", type=float, default=DEFAULT_WARMUP,
                        help=f"seconds after every worker reports before the window (default {DEFAULT_WARMUP:g})")
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                        help=f"length of the measured window (default {DEFAULT_SECONDS:g})")
    parser.add_argument("--start-timeout", type=float, default=DEFAULT_START_TIMEOUT,
                        help=f"seconds every worker has to report after the submit (default "
                             f"{DEFAULT_START_TIMEOUT:g})")
    parser.add_argument("--measure", action="append", default=[], metavar="COMPONENT",
                        help="component whose executed tuples are the throughput (repeatable; "
                             "default: the bolts nothing subscribes to)")
    parser.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    add_config_arguments(parser)
    args = parser.parse_args(argv)
    args.transports = _subset(args.transports, TRANSPORTS, "--transports")
    args.acking = _subset(args.acking, ACKING, "--acking")
    if args.workers < 1 or args.rounds < 1 or args.seconds < 2 or args.warmup < 0 \
            or args.start_timeout <= 0:
        parser.error("-w and --rounds must be at least 1, --seconds at least 2 (two heartbeats), "
                     "--warmup at least 0, --start-timeout positive")
    if not args.topology.is_file():
        parser.error(f"--topology: no file {args.topology}")
    return args


def config_arguments(args: argparse.Namespace) -> list[str]:
    """The -c/-o arguments of this command, for every storm-zmq command it runs."""
    out = ["-c", str(args.config)] if args.config else []
    for override in args.overrides:
        out += ["-o", override]
    return out


def run(args: argparse.Namespace, cluster: Cluster) -> dict[str, Any]:
    plan = Plan(args.topology, args.workers, args.warmup, args.seconds, args.start_timeout,
                tuple(args.measure), args.topology_class)
    if cluster.state.leader() is None:  # a submit would wait, then time out, kill would hang
        raise BenchError("no nimbus is running on this cluster (nobody leads): start one with "
                         "storm-zmq nimbus (docs/operations.md)")
    code = bench.code_version()
    runs = []
    for round_index in range(1, args.rounds + 1):
        label = f"[round {round_index}/{args.rounds}] "
        # the order alternates, so that neither transport always runs on a warmer cluster
        transports = args.transports if round_index % 2 else list(reversed(args.transports))
        for acking in args.acking:
            for transport in transports:
                runs.append(measure_run(cluster, plan, transport, acking, round_index, label))
    measured = ", ".join(runs[0]["measured"])
    return {
        "command": " ".join(["python", "scripts/bench_cluster.py", *sys.argv[1:]]),
        "code": code,
        "supervisors": cluster.supervisors(),
        "settings": {"topology": str(args.topology), "workers": args.workers,
                     "transports": args.transports, "acking": args.acking, "rounds": args.rounds,
                     "warmup_seconds": args.warmup, "seconds": args.seconds,
                     "overrides": list(args.overrides), "measured": measured},
        "rows": summarize_runs(runs),
        "runs": runs,
        "notes": notes_on(runs),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        conf = load_config_from_args(args)
        if any(parse_override(text)[0] == "storm.messaging.transport" for text in args.overrides):
            raise ConfigError("-o storm.messaging.transport: the benchmark sets the transport of "
                              "each run itself (choose them with --transports)")
    except ConfigError as exc:
        print(f"bench_cluster.py: error: {exc}", file=sys.stderr)
        return 2
    from storm_zmq.cluster.state import ClusterUnavailable

    try:
        cluster = Cluster(conf, config_arguments(args))
    except ClusterUnavailable as exc:
        print(f"bench_cluster.py: error: {exc}", file=sys.stderr)
        return 2
    began = time.monotonic()
    # a terminal closed or a CI timeout (TERM, HUP) stops as Ctrl-C does: the running
    # topology is killed, not left to block the next run
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _interrupt)
    try:
        report = run(args, cluster)
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; the running topology was killed", file=sys.stderr)
        return 130
    finally:
        cluster.close()
    report["wall_seconds"] = time.monotonic() - began
    print(results_table(report["rows"], report["settings"]["measured"]))
    for note in report["notes"]:
        print(f"note: {note}")
    print(f"wall time {report['wall_seconds']:.0f} s")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
    return 0


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
