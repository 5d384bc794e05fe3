"""The compatibility goal: streamparse's quickstart project runs after changing only
its imports (see streamparse_quickstart/README.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.messaging.conftest import free_port

PROJECT = Path(__file__).parent / "streamparse_quickstart"


@pytest.mark.slow
def test_streamparse_quickstart_runs_unchanged_but_for_imports(tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    result = subprocess.run(
        [sys.executable, "-m", "storm_zmq.cli.main", "run",
         str(PROJECT / "topologies" / "wordcount.py"), "-t", "3", "-w", "2", "-q",
         "-o", f"supervisor.slots.ports={ports}"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    summary = {line.split()[0]: line.split() for line in result.stdout.splitlines()
               if line.startswith("  word_spout") or line.startswith("  count_bolt")}
    emitted = int(summary["word_spout"][1].replace(",", ""))
    executed = int(summary["count_bolt"][2].replace(",", ""))
    assert emitted > 1000 and executed == emitted  # every word counted, none lost
    assert "counted [" in result.stderr  # the bolt's self.logger reached the worker log
