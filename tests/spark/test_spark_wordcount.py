"""topologies/spark_wordcount.py end to end through `storm-zmq run`: a real local
SparkSession in each worker running the spout, two workers, acking on, a splitter
that fails some lines once; the counts must equal Spark's own groupBy().count()."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.messaging.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = ROOT / "topologies" / "spark_wordcount.py"
pytestmark = pytest.mark.slow


def run(tmp_path: Path, *options: str, workers: int = 2, env: dict[str, str] | None = None,
        timeout: float = 240, topology: Path = TOPOLOGY) -> subprocess.CompletedProcess[str]:
    ports = [free_port() for _ in range(workers)]
    command = [
        sys.executable, "-m", "storm_zmq.cli.main", "run", str(topology), "-w", str(workers),
        "-o", f"supervisor.slots.ports={ports}", *options,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
                          env=env)


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
    result = run(
        tmp_path,
        "-o", f"spark_wordcount.lines={lines}", "-o", f"spark_wordcount.partitions={partitions}",
        "-o", f"spark_wordcount.fail_every={fail_every}", "-o", f"spark_wordcount.output={output}",
        "-o", "spark_wordcount.progress_secs=0.2",  # a progress line however fast the run
    )
    assert result.returncode == 0, result.stderr[-5000:]
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
