"""Smoke test of scripts/bench_values.py: every carried type round-trips and is
reported. No performance assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench_values.py"


def test_a_run_reports_every_type_against_the_str_baseline(tmp_path: Path) -> None:
    report_file = tmp_path / "values.json"
    result = subprocess.run([sys.executable, str(SCRIPT), "--repeats", "1", "--json", str(report_file)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr  # exits 1 if a value came back changed
    report = json.loads(report_file.read_text())
    assert report["ratio_to_str"]["str (baseline)"] == 1.0
    assert {"datetime, ZoneInfo", "Decimal", "UUID", "dataclass (registered)"} <= set(report["ns_per_tuple"])
    assert all(ns > 0 for ns in report["ns_per_tuple"].values())
    assert "| Enum (registered) |" in result.stdout


def test_bad_arguments_are_usage_errors() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--repeats", "0"],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--repeats must be at least 1" in result.stderr
