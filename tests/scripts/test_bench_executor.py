"""Smoke test of scripts/bench_executor.py: a tiny run must count every word through
the real executors and write its report. No performance assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
