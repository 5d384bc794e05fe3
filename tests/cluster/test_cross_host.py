"""Workers talking across hosts: two supervisors in their own network namespaces,
each with its own address on a bridge, ZooKeeper and nimbus on the bridge's host
side. Every tuple between the two workers crosses a veth pair, as between machines.

Needs root and iproute2 (CI has both); elsewhere the test is skipped saying so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.cluster.test_cluster import TOPOLOGY, all_ids_arrive, wait_for
from tests.netns import cannot_make_namespaces, fresh_subnet, run
from tests.zk_fixtures import free_port

pytestmark = pytest.mark.slow
SCRIPT = Path(__file__).parents[2] / "scripts" / "zookeeper.sh"


@pytest.fixture
def hosts() -> Iterator[dict[str, str]]:
    """Two namespaces on a bridge: name -> address, plus the bridge's own address."""
    reason = cannot_make_namespaces()
    if reason:
        pytest.skip(reason)
    tag = uuid.uuid4().hex[:5]
    subnet = fresh_subnet()
    bridge = f"szbr{tag}"
    made: list[tuple[str, ...]] = []
    try:
        run("ip", "link", "add", bridge, "type", "bridge")
        made.append(("ip", "link", "del", bridge))
        run("ip", "addr", "add", f"{subnet}.1/24", "dev", bridge)
        run("ip", "link", "set", bridge, "up")
        addresses = {}
        for number, name in ((2, "a"), (3, "b")):
            ns, outside, inside = f"sz{name}{tag}", f"sz{name}{tag}o", f"sz{name}{tag}i"
            run("ip", "netns", "add", ns)
            made.append(("ip", "netns", "del", ns))
            run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            run("ip", "link", "set", outside, "master", bridge)
            run("ip", "link", "set", outside, "up")
            run("ip", "link", "set", inside, "netns", ns)
            run("ip", "netns", "exec", ns, "ip", "addr", "add", f"{subnet}.{number}/24", "dev", inside)
            run("ip", "netns", "exec", ns, "ip", "link", "set", inside, "up")
            run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            addresses[ns] = f"{subnet}.{number}"
        addresses["bridge"] = f"{subnet}.1"
        yield addresses
    finally:
        for command in reversed(made):
            subprocess.run(command, capture_output=True, timeout=30)


def test_workers_on_two_hosts_exchange_tuples(tmp_path: Path, hosts: dict[str, str]) -> None:
    bridge = hosts.pop("bridge")
    zk_port = free_port()
    zk_dir = tmp_path / "zk"
    started = subprocess.run(["bash", str(SCRIPT), "start", "--port", str(zk_port), "--dir",
                              str(zk_dir), "--bind", bridge], capture_output=True, text=True,
                             timeout=120)
    assert started.returncode == 0, started.stderr
    processes: list[subprocess.Popen[str]] = []
    output = tmp_path / "output"
    output.mkdir()
    conf_file = tmp_path / "storm.yaml"
    conf_file.write_text(yaml.safe_dump({
        "storm.zookeeper.servers": [bridge], "storm.zookeeper.port": zk_port,
        "storm.zookeeper.session.timeout": 4000, "nimbus.monitor.freq.secs": 1,
        "supervisor.monitor.frequency.secs": 1, "topology.message.timeout.secs": 4,
    }))

    def start(name: str, *command: str) -> None:
        log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - the child owns it
        processes.append(subprocess.Popen(
            [*command, "-c", str(conf_file)], stdout=log, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, cwd=tmp_path))

    cli = [sys.executable, "-m", "storm_zmq.cli.main"]
    try:
        start("nimbus", *cli, "nimbus", "-o", f"storm.local.hostname={bridge}")
        for ns, address in hosts.items():
            start(ns, "ip", "netns", "exec", ns, *cli, "supervisor",
                  "-o", f"storm.local.hostname={address}", "-o", f"storm.local.dir={tmp_path / ns}",
                  "-o", "supervisor.slots.ports=[6700]")
        submit = subprocess.run(
            [*cli, "submit", str(TOPOLOGY), "-w", "2", "-o", "test.count=600", "-o", "test.rate=300",
             "-o", f"test.output_dir={output}", "-c", str(conf_file)],
            capture_output=True, text=True, timeout=120)
        assert submit.returncode == 0, submit.stderr

        all_ids_arrive(output, 600)
        # one worker per host, each on its own address, both heartbeating
        logs = [(tmp_path / f"{ns}.log").read_text() for ns in hosts]
        assert all("launched worker" in log for log in logs), logs
        worker_logs = [p.read_text() for ns in hosts for p in (tmp_path / ns / "logs").glob("*.log")]
        assert len(worker_logs) == 2
        wait_for(lambda: all("Traceback" not in log for log in worker_logs), "clean worker logs")
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for process in processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        for pid_file in tmp_path.glob("*/workers/*/pid"):
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        subprocess.run(["bash", str(SCRIPT), "stop", "--dir", str(zk_dir)], capture_output=True,
                       timeout=60)
