"""scripts/zookeeper.sh against a port that is not free (real ZooKeeper, real sockets)."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from tests.zk_fixtures import SCRIPT, ZooKeeperServer, free_port


def zookeeper_sh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_start_refuses_a_port_another_zookeeper_serves(
    zookeeper: ZooKeeperServer, tmp_path: Path,
) -> None:
    """Bug: it said "zookeeper running" with the pid of a ZooKeeper that had just died
    of the taken port, pointing the user at the other one's data."""
    done = zookeeper_sh("start", "--port", str(zookeeper.port), "--dir", str(tmp_path / "zk"))
    assert done.returncode == 1
    assert f"port {zookeeper.port} on 127.0.0.1 is taken by a ZooKeeper this script did not " \
           "start here" in done.stderr
    assert "zookeeper running" not in done.stdout


def test_start_refuses_a_port_in_use_and_a_failed_start_has_its_cause_logged(
    zookeeper: ZooKeeperServer, tmp_path: Path,
) -> None:
    """The zookeeper fixture makes sure the package is installed. Also: ZooKeeper's own
    log used to be empty (no logging backend on the class path)."""
    port = free_port()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        done = zookeeper_sh("start", "--port", str(port), "--dir", str(tmp_path / "zk"))
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use by another process; choose --port" in done.stderr
    # the running server's log has ZooKeeper's own lines (it was empty)
    log = (zookeeper.directory / "zookeeper.log").read_text()
    assert f"INFO org.apache.zookeeper.server.quorum.QuorumPeerConfig - clientPortAddress is " \
           f"127.0.0.1:{zookeeper.port}" in log, log[-2000:]
