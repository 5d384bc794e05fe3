"""A real ZooKeeper for the cluster tests: one server per test process (Debian's
package via scripts/zookeeper.sh; pytest-xdist's processes each have their own), and a fresh `storm.zookeeper.root` per test so
tests never see each other's nodes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from storm_zmq.cluster import ClusterState
from tests.machine import missing
from tests.messaging.conftest import free_port  # one source of ports: never one twice

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "zookeeper.sh"
JAR = Path("/usr/share/java/zookeeper.jar")


class ZooKeeperServer:
    """A standalone ZooKeeper on loopback; `stop()` and `start()` again keep the data
    directory and port, as a restarted production server would."""

    def __init__(self, port: int, directory: Path) -> None:
        self.port = port
        self.directory = directory

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _run(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(SCRIPT), command, "--port", str(self.port), "--dir",
             str(self.directory)],
            capture_output=True, text=True, timeout=120)

    def start(self) -> None:
        result = self._run("start")
        if result.returncode != 0:
            raise RuntimeError(f"zookeeper.sh start failed:\n{result.stdout}{result.stderr}")

    def stop(self) -> None:
        self._run("stop")


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    installed = JAR.exists() and shutil.which("java") is not None
    if not installed and os.geteuid() != 0:
        missing("ZooKeeper tests need Java and Debian's zookeeper package "
                "(apt-get install zookeeper)")
    server = ZooKeeperServer(free_port(), tmp_path_factory.mktemp("zookeeper"))
    server.start()  # as root, scripts/zookeeper.sh installs the package if need be
    yield server
    server.stop()


@pytest.fixture
def zk_conf(zookeeper: ZooKeeperServer) -> Iterator[dict[str, Any]]:
    """Config for one test: its own root, short timeouts and quick retries."""
    root = f"/storm-test-{uuid.uuid4().hex[:12]}"
    yield {
        "storm.zookeeper.servers": ["127.0.0.1"],
        "storm.zookeeper.port": zookeeper.port,
        "storm.zookeeper.root": root,
        "storm.zookeeper.session.timeout": 4000,
        "storm.zookeeper.connection.timeout": 10000,
        "storm.zookeeper.retry.times": 5,
        "storm.zookeeper.retry.interval": 100,
        "storm.zookeeper.retry.intervalceiling.millis": 1000,
    }
    client = KazooClient(hosts=zookeeper.hosts)
    try:
        client.start(timeout=10)
        client.delete(root, recursive=True)
    except Exception:  # the test may have left the server down; nothing to clean
        pass
    finally:
        client.stop()
        client.close()


@pytest.fixture
def make_state(zk_conf: dict[str, Any]) -> Iterator[Callable[..., ClusterState]]:
    """Factory of started `ClusterState`s on the test's root, all stopped at the end."""
    states: list[ClusterState] = []

    def make(**overrides: Any) -> ClusterState:
        state = ClusterState({**zk_conf, **overrides})
        states.append(state)
        return state.start()

    yield make
    for state in states:
        state.stop()


@pytest.fixture
def raw_client(zookeeper: ZooKeeperServer) -> Iterator[KazooClient]:
    """A plain kazoo client, for tampering with nodes behind ClusterState's back."""
    client = KazooClient(hosts=zookeeper.hosts)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def cli_overrides(conf: dict[str, Any]) -> list[str]:
    """`-o key=value` arguments giving a `storm-zmq` command `conf` (values as JSON)."""
    return [arg for key, value in conf.items() for arg in ("-o", f"{key}={json.dumps(value)}")]


def expire_session(state: ClusterState, hosts: str, timeout: float = 10.0) -> int:
    """Have ZooKeeper expire `state`'s session for real, as ZooKeeper's own tests do:
    a second client takes the session over (same id and password) and closes it, so
    the server deletes its ephemeral nodes and the owner is told it expired. Returns
    the session id `state` has once it is connected again (a new one). Repeated in the
    rare case the owner wins its session back before the second client closes it."""
    old = state.session_id
    deadline = time.monotonic() + timeout
    while True:
        client_id = state._client.client_id
        if client_id is not None and client_id[0] == old:
            hijacker = KazooClient(hosts=hosts, client_id=client_id)
            hijacker.start(timeout=10)
            hijacker.stop()
            hijacker.close()
        until = min(time.monotonic() + 3, deadline)
        while time.monotonic() < until:
            new = state.session_id
            if new not in (None, old) and state.connected.is_set():
                return new
            time.sleep(0.02)
        if time.monotonic() >= deadline:
            raise AssertionError(f"session {old:#x} never expired")


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    """Poll `predicate` until it returns something truthy; fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what or predicate}")
        time.sleep(0.02)
