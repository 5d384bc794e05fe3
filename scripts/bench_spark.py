#!/usr/bin/env python
"""Spark spout benchmark: rows/s from Spark into a topology against the same spout
fed from memory, in the same run.

The topology is one `BenchSpout` (src/spark_parts/bench.py) and one bolt that only
counts tuples, run by ``storm-zmq run`` (real worker processes) until the spout
reports exhausted. The spout streams lines of the word count's data set
(src/spark_parts/data.py: ``--rows`` with acking off, ``--rows-acked`` with acking
on, in ``--partitions`` partitions) from one of three sources:

* ``spark``: as any SparkSpout does, each partition computed by Spark and fetched
  by the prefetch thread while the previous one is emitted;
* ``spark-cached`` (acking off, or with ``--cached-acked``): the same, but the
  DataFrame was computed and cached by Spark in initialize(), untimed, so what is
  timed is the spout's own path (a single-partition job reading cached blocks,
  Arrow, the socket, tuples, emission) without the cost of computing the data on
  the same two cores: what a worker's driver does when a cluster computes;
* ``memory``: every partition fetched in initialize(), before anything is timed,
  then the same spout code emits from those lists: same rows, same partitions,
  same downstream, no Spark while it runs.

rows/s is the spout's own count over its own clock, first emit to the moment the
last row was acked (acking on) or emitted (acking off); the count bolt must have
seen every row. Each case runs ``--repeats`` times, the sources taking turns, and
keeps its best run (this 2-core machine is shared; a run is sometimes slowed by
something else, never sped up). The target: spark >= 0.8 x memory.

Then, unless ``--no-fetch``, each fetch mode of `storm_zmq.spark.fetch` brings the
same DataFrame to the driver in this process, without a topology and with a warm
JVM: rows/s of fetch + conversion to tuples alone, the numbers behind the choice
of ``arrow``.

Run from the repository root: ``python scripts/bench_spark.py [--rows N]
[--rows-acked N] [--partitions P] [--repeats R] [--cached-acked] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from storm_zmq.runtime.local import free_ports

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.8
SOURCES = ("spark", "spark-cached", "memory")

TOPOLOGY = '''
from spark_parts.bench import BenchSpout, TupleCountBolt

from storm_zmq import Topology


class SparkBench(Topology):
    spout = BenchSpout.spec()
    count = TupleCountBolt.spec(inputs=[spout])
'''




def run_case(args: argparse.Namespace, topology: Path, source: str, acking: bool) -> dict[str, Any]:
    rows = args.rows_acked if acking else args.rows
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as out:
        ports = free_ports(args.workers)  # below the ephemeral range: see storm_zmq.runtime.local
        options = [
            "-o", f"supervisor.slots.ports={ports}", "-o", f"bench.output_dir={out}",
            "-o", f"bench.rows={rows}", "-o", f"bench.partitions={args.partitions}",
            "-o", f"bench.source={source}", "-o", f"bench.fetch={args.fetch}",
            "-o", f"spark.master={args.master}", "-o", "spark.ui.enabled=false",
        ]
        if acking:
            options += ["-o", f"topology.max.spout.pending={args.pending}"]
        else:
            options += ["-o", "topology.acker.executors=0", "-o", "topology.max.spout.pending=null",
                        "-o", "bench.unreliable=true"]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
        command = [sys.executable, "-m", "storm_zmq.cli.main", "run", str(topology),
                   "-w", str(args.workers), "-q", *options]
        began = time.monotonic()
        result = subprocess.run(command, capture_output=True, text=True, cwd=out, env=env,
                                timeout=args.timeout)
        wall = time.monotonic() - began
        if result.returncode != 0:
            raise SystemExit(f"{source} (acking {'on' if acking else 'off'}) failed with exit "
                             f"{result.returncode}:\n{result.stderr[-4000:]}")
        spout = json.loads(Path(out, next(p for p in os.listdir(out) if p.startswith("spout-"))).read_text())
        count = sum(json.loads(Path(out, p).read_text())["count"]
                    for p in os.listdir(out) if p.startswith("count-"))
    if spout["rows"] != rows or count < rows:
        raise SystemExit(f"{source}: the spout settled {spout['rows']} rows and the bolt counted "
                         f"{count}, expected {rows}")
    secs = spout["done_at"] - spout["first_emit_at"]
    return {
        "source": source, "acking": acking, "rows": rows, "counted": count,
        "seconds": secs, "rows_per_s": rows / secs, "wall_s": wall,
        "fetch": spout["fetch"], "replayed": spout["replayed"],
    }


def bench_topology(args: argparse.Namespace) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-spark-topology-") as project:
        topology = Path(project, "spark_bench.py")
        topology.write_text(TOPOLOGY)
        for acking in (True, False):
            sources = SOURCES if acking is False or args.cached_acked else ("spark", "memory")
            best: dict[str, dict[str, Any]] = {}
            for repeat in range(args.repeats):
                for source in sources if repeat % 2 == 0 else tuple(reversed(sources)):
                    run = run_case(args, topology, source, acking)
                    print(f"  acking {'on ' if acking else 'off'} {source:10} run {repeat + 1}: "
                          f"{run['rows_per_s']:,.0f} rows/s ({run['seconds']:.2f} s, wall "
                          f"{run['wall_s']:.1f} s)", file=sys.stderr, flush=True)
                    if source not in best or run["rows_per_s"] > best[source]["rows_per_s"]:
                        best[source] = run
            for source in sources:
                best[source]["ratio"] = best[source]["rows_per_s"] / best["memory"]["rows_per_s"]
                results.append(best[source])
    return results


def bench_fetch(args: argparse.Namespace) -> list[dict[str, Any]]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(ROOT / "src"))
    from pyspark.sql import SparkSession

    from spark_parts.data import lines
    from storm_zmq.spark.fetch import have_pyarrow, make_fetcher

    began = time.monotonic()
    spark = (SparkSession.builder.master(args.master).appName("bench_spark fetch")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    session_s = time.monotonic() - began
    df = lines(spark, args.rows, args.partitions)
    df.write.format("noop").mode("overwrite").save()  # warm the JVM up on this plan
    modes = (["arrow"] if have_pyarrow() else []) + ["rows", "filter"]
    results = []
    for mode in modes:
        best = None
        for _ in range(args.repeats):
            began = time.monotonic()
            fetcher = make_fetcher(spark, df, mode)
            rows = sum(len(fetcher.fetch(p)) for p in range(fetcher.num_partitions))
            secs = time.monotonic() - began
            assert rows == args.rows, (mode, rows)
            best = secs if best is None else min(best, secs)
        assert best is not None
        results.append({"mode": mode, "rows": args.rows, "seconds": best,
                        "rows_per_s": args.rows / best, "session_start_s": session_s})
        print(f"  fetch {mode:6}: {args.rows / best:,.0f} rows/s", file=sys.stderr, flush=True)
    spark.stop()
    return results


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows with acking off")
    parser.add_argument("--rows-acked", type=int, default=400_000, help="rows with acking on")
    parser.add_argument("--cached-acked", action="store_true",
                        help="run spark-cached with acking on too")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--pending", type=int, default=5000,
                        help="topology.max.spout.pending with acking on")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--fetch", default="auto", help="the spout's fetch mode")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--no-fetch", action="store_true", help="skip the fetch-mode comparison")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)

    print(f"topology: {args.rows:,} rows (acking off) / {args.rows_acked:,} (acking on) in "
          f"{args.partitions} partitions, {args.workers} worker(s), spark.master {args.master}",
          file=sys.stderr)
    runs = bench_topology(args)
    fetches = [] if args.no_fetch else bench_fetch(args)

    print()
    print(table(
        ["acking", "source", "fetch", "rows", "seconds", "rows/s", "spark/memory"],
        [[("on" if r["acking"] else "off"), r["source"], r["fetch"], f"{r['rows']:,}",
          f"{r['seconds']:.2f}", f"{r['rows_per_s']:,.0f}",
          (f"{r['ratio']:.3f} ({'met' if r['ratio'] >= TARGET else 'MISSED'} >= {TARGET})"
           if r["source"] != "memory" else "")]
         for r in runs],
    ))
    if fetches:
        print()
        print(table(["fetch mode", "rows", "seconds", "rows/s (fetch + to tuples, no topology)"],
                    [[f["mode"], f"{f['rows']:,}", f"{f['seconds']:.2f}", f"{f['rows_per_s']:,.0f}"]
                     for f in fetches]))
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=ROOT).stdout.strip()
        Path(args.json).write_text(json.dumps({
            "args": vars(args), "commit": commit, "python": platform.python_version(),
            "machine": platform.platform(), "cpus": os.cpu_count(), "target": TARGET,
            "topology": runs, "fetch": fetches,
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
