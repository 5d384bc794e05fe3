"""Cluster commands against a real ZooKeeper, without daemons: what they write."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.cli.main import main
from storm_zmq.cluster.state import ClusterState
from tests.zk_fixtures import cli_overrides, free_port

TID = "ids-1"
WORDCOUNT = Path(__file__).parents[1] / "runtime" / "project" / "topologies" / "wordcount.py"


def cli(*args: str, cwd: Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`storm-zmq ARGS` as its own process (what a user sees on stderr: kazoo's log
    lines reach it only when nothing configured logging, as in a real run)."""
    return subprocess.run([sys.executable, "-m", "storm_zmq.cli.main", *args],
                          capture_output=True, text=True, timeout=60, cwd=cwd, **kwargs)


@pytest.mark.parametrize("command", [["list"], ["kill", "ids"], ["rebalance", "ids"],
                                     ["logs", "ids"], ["submit", str(WORDCOUNT)]])
def test_an_unreachable_zookeeper_is_one_error_line(command: list[str], tmp_path: Path) -> None:
    result = cli(*command, "-o", f"storm.zookeeper.port={free_port()}",
                 "-o", "storm.zookeeper.connection.timeout=1000", cwd=tmp_path)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines()
              if not line.startswith(("packaging ", "packaged "))]  # submit's progress
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("storm-zmq: error: cannot reach ZooKeeper at ")


def test_a_kill_during_a_rebalances_wait_wins(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    state = make_state()
    state.set_topology(TID, {"name": "ids", "status": "active", "num_workers": 2,
                             "conf": {"topology.message.timeout.secs": 30}})
    overrides = cli_overrides(zk_conf)
    result: list[int] = []
    rebalance = threading.Thread(
        target=lambda: result.append(main(["rebalance", "ids", "-w", "5", "-n", "1", *overrides])))
    rebalance.start()
    deadline = time.monotonic() + 10
    while (state.get_topology(TID) or {}).get("status") != "inactive":  # it is waiting now
        assert time.monotonic() < deadline, "rebalance never deactivated the topology"
        time.sleep(0.02)
    assert main(["kill", "ids", "-w", "0", *overrides]) == 0
    rebalance.join(15)
    assert result == [2]
    assert "'ids' was killed during the rebalance's wait: not rebalanced" in capsys.readouterr().err
    record = state.get_topology(TID) or {}
    assert record["status"] == "killed" and record["num_workers"] == 2
