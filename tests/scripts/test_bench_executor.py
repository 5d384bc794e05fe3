"""Smoke test of scripts/bench_executor.py: a tiny run must count every word through
the real executors and write its report. No performance assertions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.scripts.scripts import import_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench_executor.py"


def test_tiny_run_writes_a_report(tmp_path: Path) -> None:
    report_file = tmp_path / "executor.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--words", "5000", "--repeats", "1", "--json", str(report_file)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr  # it exits non-zero if a word is missing
    report = json.loads(report_file.read_text())
    assert [row["acking"] for row in report["rows"]] == [False, True]
    for row in report["rows"]:
        assert row["runtime_words_per_s"] > 0 and row["baseline_words_per_s"] > 0
        assert row["ratio"] == row["runtime_words_per_s"] / row["baseline_words_per_s"]
    assert "| off |" in result.stdout and "| on |" in result.stdout


def test_bad_arguments_are_usage_errors() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--acking", "sometimes"],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "sometimes" in result.stderr


def load_script() -> Any:
    return import_script("bench_executor")


def test_cachegrind_summary_is_parsed() -> None:
    bench = load_script()
    stderr = "==7483== \n==7483== I   refs:      776,390,789\n==7483== \n"
    assert bench.parse_instructions(stderr) == 776_390_789
    with pytest.raises(ValueError, match="I refs"):
        bench.parse_instructions("==1== Memcheck, a memory error detector\n")


def test_instructions_without_valgrind_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--instructions"], cwd=REPO,
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PATH": str(tmp_path)})
    assert result.returncode == 2 and "needs valgrind" in result.stderr


def test_one_run_is_counted_under_cachegrind() -> None:
    # the smallest real count (one valgrind run of the acking path, about 5 s); the
    # child exits non-zero, and this raises, if the runtime loses a word
    bench = load_script()
    small = bench.count_instructions("runtime", True, 1000)
    assert small > 10_000 * bench.words_in("runtime", 1000)  # start-up alone is millions
