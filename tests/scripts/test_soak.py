"""scripts/soak.py: a few seconds of a real soak must print rows and write a
complete JSON report with a growth verdict; the verdict itself is checked on
made-up rows. No performance assertions: the numbers depend on the machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.scripts.scripts import import_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "soak.py"


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    return import_script("soak")


def rows(rss: list[list[float]], fds: list[list[int]]) -> list[dict[str, Any]]:
    """Rows at t = 1, 2, ... with per-worker RSS and fds."""
    return [{"t": float(i + 1), "workers": [{"rss_mb": r[i], "fds": f[i]}
                                           for r, f in zip(rss, fds, strict=True)]}
            for i in range(len(rss[0]))]


def test_flat_workers_are_not_growing(soak: ModuleType) -> None:
    verdicts = soak.judge_growth(
        rows([[30, 31, 32, 31, 32, 33]], [[20, 21, 20, 20, 21, 21]]), 0, 10, 0.1, 4)
    assert len(verdicts) == 1 and not verdicts[0]["growing"]
    assert verdicts[0]["rss_mb_first_third"] == 31 and verdicts[0]["rss_mb_last_third"] == 33


def test_rss_or_fds_growing_beyond_tolerance_is_growing(soak: ModuleType) -> None:
    leaking_rss = rows([[30, 30, 30, 30, 30, 30], [30, 35, 40, 45, 50, 55]], [[20] * 6, [20] * 6])
    verdicts = soak.judge_growth(leaking_rss, 0, 10, 0.1, 4)
    assert [v["growing"] for v in verdicts] == [False, True]
    assert verdicts[1]["rss_growth_mb"] == 20
    leaking_fds = rows([[30] * 6], [[20, 22, 24, 26, 28, 30]])
    assert soak.judge_growth(leaking_fds, 0, 10, 0.1, 4)[0]["growing"]


def test_warmup_rows_are_left_out_and_too_few_rows_judge_nothing(soak: ModuleType) -> None:
    # a big start-up step inside the warm-up does not count as growth
    start_up = rows([[5, 5, 30, 30, 31, 30, 31, 31]], [[3, 3, 20, 20, 20, 20, 20, 20]])
    assert not soak.judge_growth(start_up, 2, 10, 0.1, 4)[0]["growing"]
    assert soak.judge_growth(rows([[1, 2]], [[1, 2]]), 0, 10, 0.1, 4) == []


@pytest.mark.slow
def test_a_short_soak_prints_rows_and_writes_a_report(tmp_path: Path) -> None:
    report_file = tmp_path / "soak.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--seconds", "5", "--interval", "1", "--rate", "5000",
         "--warmup", "1", "--json", str(report_file)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["t", "s", "words/s", "p50"]
    report = json.loads(report_file.read_text())
    assert report["exit_code"] == 0 and report["failed_trees"] == 0
    assert 4 <= len(report["rows"]) <= 5
    for row in report["rows"]:
        assert row["words_per_s"] > 0
        assert len(row["workers"]) == 2
        assert all(w["rss_mb"] > 0 and w["fds"] > 0 for w in row["workers"])
    assert [v["worker"] for v in report["growth"]] == [0, 1]
    assert report["growing"] is False
    assert "flat" in result.stdout
