"""topologies/spark_wordcount.py end to end through `storm-zmq run`: a real local
SparkSession in each worker running the spout, two workers, acking on, a splitter
that fails some lines once; the counts must equal Spark's own groupBy().count()."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.machine import missing
from tests.messaging.conftest import free_port
from tests.runtime.test_tuning import _cpu_list
from tests.spark.conftest import have_java

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = ROOT / "topologies" / "spark_wordcount.py"
pytestmark = pytest.mark.slow


def command(workers: int, topology: Path, *options: str) -> list[str]:
    ports = [free_port() for _ in range(workers)]
    return [
        sys.executable, "-m", "storm_zmq.cli.main", "run", str(topology), "-w", str(workers),
        "-o", f"supervisor.slots.ports={ports}", *options,
    ]


def run(tmp_path: Path, *options: str, workers: int = 2, env: dict[str, str] | None = None,
        timeout: float = 240, topology: Path = TOPOLOGY) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(workers, topology, *options), capture_output=True, text=True,
                          timeout=timeout, cwd=tmp_path, env=env)


def _worker_jvms(root: int) -> dict[int, tuple[int, str]]:
    """java pid -> (its worker's pid, its Cpus_allowed_list), for every JVM started by
    a worker process of the run `root` (a Python child of `root`; the run's own
    process may start a JVM too, to read the DataFrame's columns)."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        names[int(entry)] = stat[stat.index("(") + 1:stat.rindex(")")]
        parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
    found = {}
    for pid, name in names.items():
        if name != "java":
            continue
        below_root = pid  # the ancestor that is a child of `root`
        while parents.get(below_root, 0) not in (root, 0):
            below_root = parents[below_root]
        if parents.get(below_root) != root or below_root == pid:
            continue
        if not names.get(below_root, "").startswith("python"):
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found[pid] = (below_root, next(line.split(":", 1)[1].strip() for line in status.splitlines()
                                       if line.startswith("Cpus_allowed_list")))
    return found


def expected_counts(spark: Any, lines: int, partitions: int) -> dict[str, int]:
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from spark_parts.data import word_counts
    finally:
        sys.path.remove(str(ROOT / "src"))
    return word_counts(spark, lines, partitions)


def test_word_counts_equal_sparks_own_with_replays(spark: Any, tmp_path: Path) -> None:
    lines, partitions, fail_every = 8000, 6, 97
    output = tmp_path / "counts.json"
    process = subprocess.Popen(
        command(
            2, TOPOLOGY,
            "-o", f"spark_wordcount.lines={lines}", "-o", f"spark_wordcount.partitions={partitions}",
            "-o", f"spark_wordcount.fail_every={fail_every}", "-o", f"spark_wordcount.output={output}",
            "-o", "spark_wordcount.progress_secs=0.2",  # a progress line however fast the run
        ),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )
    # While it runs: each worker's local Spark JVM, whose CPUs are checked below.
    jvms: dict[int, tuple[int, str]] = {}
    deadline = time.monotonic() + 240
    while (process.poll() is None and len({w for w, _ in jvms.values()}) < 2
           and time.monotonic() < deadline):
        jvms.update(_worker_jvms(process.pid))
        time.sleep(0.2)  # polling /proc: nothing to wait on for another process's child
    stdout, stderr = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
    result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert result.returncode == 0, result.stderr[-5000:]
    # Workers are pinned by default (one CPU each, worker.cpu.pinning), but not the
    # JVMs they start: those get every CPU (tuning.unpinned).
    if len(os.sched_getaffinity(0)) >= 2:
        assert len(re.findall(r"pinned to CPU \d+", result.stderr)) == 2, result.stderr[-3000:]
    assert len({w for w, _ in jvms.values()}) == 2, f"both workers' JVMs seen while the run lasted: {jvms}"
    assert {len(_cpu_list(cpus)) for _, cpus in jvms.values()} == {len(os.sched_getaffinity(0))}, jvms
    assert "every spout is exhausted" in result.stdout
    counted = json.loads(output.read_text())
    assert counted == expected_counts(spark, lines, partitions)

    splitters = [json.loads(p.read_text()) for p in tmp_path.glob("counts.json.split-*.json")]
    assert len(splitters) == 2
    failed = sum(s["failed"] for s in splitters)
    assert failed == len(range(0, lines, fail_every)), "each such line failed exactly once"
    assert sum(s["lines"] for s in splitters) == lines

    # each spout task streamed its half of the partitions and replayed what failed
    summaries = re.findall(
        r"spark spout 'lines_spout' task \d+: all (\d+) partition\(s\) done: (\d+) rows .*?, (\d+) replayed",
        result.stderr,
    )
    assert len(summaries) == 2, result.stderr[-5000:]
    assert sorted(int(p) for p, _, _ in summaries) == [partitions // 2] * 2
    assert sum(int(r) for _, r, _ in summaries) == lines
    assert sum(int(r) for _, _, r in summaries) >= failed
    assert re.search(r"this task \(1 of 2\) streams 0, 2, 4 \(fetch: \w+, reliable\)", result.stderr)
    assert re.search(r"rows and \d/3 partitions done", result.stderr), "progress lines"


def test_missing_java_stops_the_run_with_exit_1_naming_the_spout(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)
    result = run(tmp_path, workers=1, env=env, timeout=120)
    assert result.returncode == 1
    assert "spark spout 'lines_spout' task" in result.stderr
    assert "Java not found" in result.stderr


def test_a_source_that_raises_stops_the_run_with_exit_1_and_the_cause(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-data"
    result = run(tmp_path, "-o", f"test.missing_path={missing}", workers=1, timeout=120,
                 topology=Path(__file__).parent / "project" / "topologies" / "broken_source.py")
    assert result.returncode == 1
    assert "SparkSpoutError: spark spout 'data' task" in result.stderr
    assert "source() raised AnalysisException" in result.stderr and "PATH_NOT_FOUND" in result.stderr


def test_an_unreachable_spark_master_stops_the_run_in_seconds(tmp_path: Path) -> None:
    # Spark itself gives such a master a minute; the spout's connect check, seconds.
    if not have_java():
        missing("no Java runtime: the Java check would stop the run first")
    master = f"spark://127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    result = run(tmp_path, "-o", f"spark.master={master}", workers=1, timeout=30)
    took = time.monotonic() - started
    assert result.returncode == 1, result.stderr[-3000:]
    assert ("SparkSpoutError: spark spout 'lines_spout' task" in result.stderr
            and f"cannot start a Spark session (spark.master={master}): no master accepts connections"
            in result.stderr), result.stderr[-3000:]
    assert "Connection refused" in result.stderr and "check that a Spark master runs there" in result.stderr
    assert took < 20, f"{took:.1f} s: the check did not cut Spark's minute short"
