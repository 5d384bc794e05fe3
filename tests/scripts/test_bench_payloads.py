"""Smoke test of scripts/bench_payloads.py: both paths write the same bytes and
read them back for every shape, and each is reported. No performance assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench_payloads.py"


def test_a_run_reports_every_shape_on_both_paths(tmp_path: Path) -> None:
    report_file = tmp_path / "payloads.json"
    result = subprocess.run([sys.executable, str(SCRIPT), "--tuples", "8", "--repeats", "1",
                             "--json", str(report_file)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr  # exits 1 if the paths disagree
    report = json.loads(report_file.read_text())
    assert report["tuples"] == 8
    assert {"word", "word, acking", "mixed scalars"} <= set(report["ns_per_tuple"])
    for row in report["ns_per_tuple"].values():
        assert row["msgpack_encode_ns"] > 0 and row["flat_decode_ns"] > 0 and row["ratio"] > 0
    assert "| word, acking |" in result.stdout


def test_bad_arguments_are_usage_errors() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--tuples", "0"],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--tuples must be at least 1" in result.stderr
