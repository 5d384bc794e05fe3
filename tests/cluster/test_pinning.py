"""CPU pinning under supervisors (worker.cpu.pinning): two supervisors on one host
place their workers by the host's worker ports, all supervisors' together, so they
neither pin two workers to the same CPU nor pin any on a host with more worker
ports than CPUs. Real ZooKeeper, daemons and workers (tests/cluster/test_cluster.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import stand_in
from tests.cluster.test_cluster import Cluster, wait_for

ALLOWED = sorted(os.sched_getaffinity(0))


@pytest.fixture
def cluster(tmp_path: Path, zk_conf: dict[str, Any]) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path, zk_conf)
    yield cluster
    cluster.stop_all()


def _worker_logs(cluster: Cluster) -> dict[str, str]:
    """Supervisor name -> the text of its workers' logs."""
    return {name: "".join(path.read_text(errors="replace")
                          for path in (cluster.tmp / name / "logs").glob("ClusterIds-*.log"))
            for name in ("s1", "s2")}


def _chosen(cluster: Cluster) -> dict[str, str] | None:
    """The workers' logs once each supervisor's worker logged its CPU, else None."""
    logs = _worker_logs(cluster)
    return logs if all(re.search(r"pinned to CPU|not pinned", text) for text in logs.values()) else None


def _process_cpus(pid: int) -> str:
    status = Path(f"/proc/{pid}/status").read_text()
    return re.search(r"Cpus_allowed_list:\s*(\S+)", status).group(1)  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.skipif(len(ALLOWED) < 2, reason="one CPU: nothing to spread over")
# serial: a supervisor counts every supervisor running on its machine (the process
# table), so another test's supervisors (tests/cluster/test_cross_host.py's, in their
# namespaces) change the CPUs these choose
@pytest.mark.serial
@pytest.mark.parametrize("slots", [1, len(ALLOWED)])
def test_two_supervisors_on_one_host_do_not_pin_two_workers_to_one_cpu(
        cluster: Cluster, slots: int) -> None:
    # slots 1: 2 worker ports on the host, both workers pinned, to CPUs of their own;
    # slots = CPUs: twice as many ports as CPUs on the host, so none pinned (each
    # supervisor alone has no more ports than CPUs, and pinned both to the first)
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1", slots=slots)
    cluster.supervisor("s2", slots=slots)
    cluster.submit(count=100, rate=100)
    logs = wait_for(lambda: _chosen(cluster), "a worker on each supervisor chose its CPU")
    if slots == 1:
        cpus = [int(re.search(r"pinned to CPU (\d+)", text).group(1))  # type: ignore[union-attr]
                for text in logs.values()]
        assert sorted(cpus) == ALLOWED[:2], logs
        affinities = sorted(_process_cpus(wait_for(lambda s=name: cluster.worker_pids(s),
                                                   f"a worker on {name}")[0])
                            for name in ("s1", "s2"))
        assert affinities == [str(cpu) for cpu in ALLOWED[:2]]
    else:
        for text in logs.values():
            assert f"not pinned: {2 * slots} worker ports on this host" in text, text
        for name in ("s1", "s2"):
            pid = wait_for(lambda s=name: cluster.worker_pids(s), f"a worker on {name}")[0]
            assert _process_cpus(pid) == _process_cpus(os.getpid())


def _only_workers_under(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The supervisor counts the workers running on the machine (their launch files):
    here only those the test started, not another test's running beside it."""
    from storm_zmq.cluster import processes

    everywhere = processes.worker_processes
    monkeypatch.setattr(processes, "worker_processes", lambda: [
        worker for worker in everywhere() if worker[3].is_relative_to(tmp_path)])


class _Registrations:
    """Stands in for ClusterState: the supervisors' registrations only."""

    def __init__(self, supervisors: dict[str, dict[str, Any]]) -> None:
        self.registered = supervisors

    def supervisors(self) -> dict[str, dict[str, Any]]:
        return self.registered


def test_a_worker_pinned_before_its_hosts_other_supervisor_started_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # s2 launched its worker (port 6710) alone on the host: slot 1 of 1, the first
    # CPU. Then s1 (6700) registers and would take that CPU: s2 says so, once.
    from storm_zmq.cluster import supervisor as module
    from storm_zmq.config import DEFAULTS

    monkeypatch.setattr(module.os, "sched_getaffinity", lambda _pid: {0, 1})
    _only_workers_under(tmp_path, monkeypatch)
    conf = {**DEFAULTS, "storm.local.dir": str(tmp_path), "supervisor.slots.ports": [6710]}
    s2 = module.Supervisor(conf)
    here = {s2.id: {"hostname": s2.machine, "ports": [6710]}}
    s2.state = _Registrations(here)  # type: ignore[assignment]
    process = type("Process", (), {"pid": 4242})()
    s2.workers[6710] = module.RunningWorker("T-1", 0, 6710, process, 0.0, tmp_path,  # type: ignore[arg-type]
                                            slot=[0, 1])
    s2._check_pinning()
    assert not [r for r in caplog.records if r.levelname == "WARNING"]  # still its CPU

    here["s1"] = {"hostname": s2.machine, "ports": [6700]}
    here["elsewhere"] = {"hostname": "another-machine", "ports": [6600]}
    for _ in range(2):  # due again each time; warned once
        s2._next_pinning_check = 0.0
        s2._check_pinning()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert "port 6710 (pid 4242) was given CPU 0 as slot 1 of 1" in warnings[0]
    assert "now have 2 (6700, 6710), which would give it CPU 1" in warnings[0]


def test_a_stopped_supervisors_running_workers_keep_their_slots_in_the_count(
        tmp_path: Path, started: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch) -> None:
    # s1 stopped (not registered) and left its worker running, pinned to the first
    # CPU as slot 1 of 2. s2 now launches a worker: counting only the registered
    # supervisors, it was slot 1 of 1, on that same CPU, while the other sat idle
    # (an operator's audit). Its running worker's launch file says s1's ports.
    from storm_zmq.cluster import supervisor as module
    from storm_zmq.config import DEFAULTS

    _only_workers_under(tmp_path, monkeypatch)
    directory = tmp_path / "s1" / "workers" / "T-1-6700"
    stand_in(started, directory)
    (directory / "launch.json").write_text(json.dumps(
        {"supervisor": "s1-gone", "conf": {"supervisor.slots.ports": [6700]}}))
    conf = {**DEFAULTS, "storm.local.dir": str(tmp_path / "s2"), "supervisor.slots.ports": [6710]}
    s2 = module.Supervisor(conf)
    s2.state = _Registrations({s2.id: {"hostname": s2.machine, "ports": [6710]}})  # type: ignore[assignment]
    slots = s2._host_slots()
    assert slots == [(6700, "s1-gone"), (6710, s2.id)]
    assert module.host_slot(s2.id, 6710, slots) == [1, 2]  # the second CPU
