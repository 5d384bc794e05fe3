"""Daemons whose ZooKeeper session expires (ZooKeeper deletes their ephemeral nodes)
come back on a new session: a nimbus and a supervisor in this process, a real
ZooKeeper and a real worker process. The supervisor's registration and nimbus's
registration and election node are re-created, nimbus leads again and still counts
the supervisor, and the running worker is neither moved nor restarted."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from storm_zmq.cli.main import main
from storm_zmq.cluster.nimbus import Nimbus
from storm_zmq.cluster.state import ClusterState
from storm_zmq.cluster.supervisor import Supervisor, kill_workers
from storm_zmq.config import DEFAULTS
from tests.zk_fixtures import (
    ZooKeeperServer,
    cli_overrides,
    expire_session,
    free_port,
    wait_for,
)

pytestmark = pytest.mark.slow

TOPOLOGY = Path(__file__).parents[1] / "runtime" / "project" / "topologies" / "cluster_ids.py"


class Daemons:
    """A nimbus and a supervisor (two slots), each running in a thread."""

    def __init__(self, tmp: Path, zk_conf: dict[str, Any]) -> None:
        conf = {**DEFAULTS, **zk_conf, "storm.local.hostname": "127.0.0.1",
                "nimbus.monitor.freq.secs": 1, "supervisor.monitor.frequency.secs": 1,
                "worker.heartbeat.frequency.secs": 1, "supervisor.worker.shutdown.sleep.secs": 2,
                "logviewer.port": 0}
        self.nimbus = Nimbus(conf)
        self.supervisor = Supervisor({**conf, "storm.local.dir": str(tmp / "s1"),
                                      "supervisor.slots.ports": [free_port(), free_port()]})
        #: (when it started, whether the supervisor was among those it saw) per round
        self.rounds: list[tuple[float, bool]] = []
        monitor = self.nimbus.monitor

        def counted(now: float | None = None) -> None:
            started = time.monotonic()
            monitor(now)
            self.rounds.append((started, self.supervisor.id in self.nimbus._supervisors))

        self.nimbus.monitor = counted  # type: ignore[method-assign]
        self.threads = [threading.Thread(target=daemon.run, name=name, daemon=True)
                        for name, daemon in (("nimbus", self.nimbus),
                                             ("supervisor", self.supervisor))]
        for thread in self.threads:
            thread.start()

    def round_since(self, since: float) -> tuple[float, bool] | None:
        """A nimbus round that started after `since`, if any ran yet."""
        return next((r for r in reversed(self.rounds) if r[0] > since), None)

    def stop(self) -> None:
        self.supervisor.stopping.set()  # it leaves ZooKeeper; its workers outlive it
        self.nimbus.stopping.set()
        self.nimbus.state.stop()  # as `storm-zmq nimbus` does on SIGTERM
        for thread in self.threads:
            thread.join(15)
        kill_workers(self.supervisor.conf, warn=print)


@pytest.fixture
def daemons(tmp_path: Path, zk_conf: dict[str, Any]) -> Iterator[Daemons]:
    daemons = Daemons(tmp_path, zk_conf)
    yield daemons
    daemons.stop()


def test_daemons_whose_sessions_expire_register_again_and_keep_the_worker(
        daemons: Daemons, zk_conf: dict[str, Any], zookeeper: ZooKeeperServer,
        raw_client: KazooClient, make_state: Callable[..., ClusterState], tmp_path: Path) -> None:
    observer = make_state()
    root, nimbus, supervisor = zk_conf["storm.zookeeper.root"], daemons.nimbus, daemons.supervisor
    registration = f"{root}/supervisors/{supervisor.id}"
    wait_for(lambda: supervisor.id in observer.supervisors(), what="the supervisor's registration")
    wait_for(lambda: observer.leader() == nimbus.id, what="nimbus leading")
    output = tmp_path / "output"
    output.mkdir()
    assert main(["submit", str(TOPOLOGY), "-w", "1", *cli_overrides(zk_conf),
                 "-o", "test.count=1000000", "-o", "test.rate=5",
                 "-o", f"test.output_dir={output}"]) == 0
    (topology_id,) = observer.topologies()

    def beat() -> Any:
        return next(iter(observer.worker_beats(topology_id).values()), {}).get("time")

    first = wait_for(beat, what="the worker's first heartbeat")
    wait_for(lambda: beat() != first, what="the worker's heartbeats")
    slots = observer.get_assignment(topology_id)["slots"]
    (worker,) = supervisor.workers.values()
    pid = worker.process.pid

    # The supervisor's session expires: its registration is back, on its new session.
    old = raw_client.exists(registration).ephemeralOwner
    session = expire_session(supervisor.state, zookeeper.hosts)
    assert session != old
    wait_for(lambda: (stat := raw_client.exists(registration)) and stat.ephemeralOwner == session,
             what="the supervisor registered again on its new session", timeout=5)
    back = time.monotonic()
    seen = wait_for(lambda: daemons.round_since(back), what="a nimbus round after it came back")
    assert seen[1], "nimbus counts the supervisor again"

    # Nimbus's session expires: its registration and election node come back and it
    # leads again.
    nimbus_node = f"{root}/nimbuses/{nimbus.id}"
    session = expire_session(nimbus.state, zookeeper.hosts)
    wait_for(lambda: (stat := raw_client.exists(nimbus_node)) and stat.ephemeralOwner == session,
             what="nimbus registered again on its new session", timeout=5)

    def leads_on_new_session() -> bool:
        contenders = raw_client.get_children(f"{root}/leader")
        owners = {raw_client.exists(f"{root}/leader/{c}").ephemeralOwner for c in contenders}
        return observer.leader() == nimbus.id and owners == {session}

    wait_for(leads_on_new_session, what="nimbus leading again on its new session", timeout=5)
    back = time.monotonic()
    wait_for(lambda: daemons.round_since(back), what="a round of the re-elected nimbus")

    # The worker was neither moved nor restarted, and its heartbeats go on.
    assert observer.get_assignment(topology_id)["slots"] == slots
    assert [w.process.pid for w in supervisor.workers.values()] == [pid]
    assert worker.process.poll() is None
    last = beat()
    wait_for(lambda: beat() != last, what="the worker's heartbeats after both expiries")
