"""A peer worker SIGKILLed and restarted by its supervisor on the same port, over the
tcp transport (tests/cluster/test_cluster.py does the same over zmq, the default):
the surviving worker is not restarted, its senders reconnect by themselves and
deliver, and with acking on every id arrives. Replays are counted (as duplicates at
the sink) and printed, not guessed.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.test_cluster import Cluster, all_ids_arrive, wait_for

pytestmark = pytest.mark.slow


def workers_by_port(cluster: Cluster, supervisor: str) -> dict[int, int]:
    """port -> pid of the supervisor's running workers (its workers/<id>-<port>/pid)."""
    found = {}
    for pid_file in (cluster.tmp / supervisor / "workers").glob("*/pid"):
        try:
            found[int(pid_file.parent.name.rsplit("-", 1)[1])] = int(pid_file.read_text())
        except (OSError, ValueError):
            continue
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.fixture
def tcp_cluster(tmp_path: Path, zk_conf: dict[str, Any]) -> Any:
    cluster = Cluster(tmp_path, zk_conf)
    conf = yaml.safe_load(cluster.conf_file.read_text())
    # supervisors hand their storm.messaging.* keys to the workers they launch
    conf["storm.messaging.transport"] = "tcp"
    cluster.conf_file.write_text(yaml.safe_dump(conf))
    yield cluster
    cluster.stop_all()


def test_a_sigkilled_tcp_worker_restarts_on_its_port_and_the_survivor_reconnects(
    tcp_cluster: Cluster,
) -> None:
    cluster = tcp_cluster
    count = 1500
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1")
    cluster.supervisor("s2")
    cluster.submit(count=count, rate=150)
    wait_for(lambda: len(cluster.seen()) > 100, "tuples flowing")
    survivor = wait_for(lambda: workers_by_port(cluster, "s1"), "a worker on s1")
    victim = wait_for(lambda: workers_by_port(cluster, "s2"), "a worker on s2")
    (port, pid), = victim.items()
    before = len(cluster.seen())

    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: "worker exited with code -9" in cluster.log("s2"), "the supervisor noticed")
    restarted = wait_for(lambda: (w := workers_by_port(cluster, "s2")) and w.get(port, pid) != pid
                         and w, "the worker restarted")
    assert list(restarted) == [port], "restarted on the same port"
    seen = all_ids_arrive(cluster.output, count)
    assert sum(seen.values()) > before

    # the survivor was not restarted: its tcp clients reconnected to the new process
    assert workers_by_port(cluster, "s1") == survivor
    assert all(alive(p) for p in survivor.values())
    replays = sum(n - 1 for n in seen.values())
    print(f"tcp: worker on port {port} SIGKILLed and restarted; {count} ids delivered, "
          f"{replays} replayed (duplicates at the sink)")
