"""Cluster commands against a real ZooKeeper, without daemons: what they write."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from storm_zmq.cli.main import main
from storm_zmq.cluster.state import ClusterState
from tests.zk_fixtures import cli_overrides

TID = "ids-1"


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
