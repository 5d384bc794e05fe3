"""The worker config a supervisor writes (pure: `worker_conf`). Supervisors as real
processes are in tests/cluster/test_cluster.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from storm_zmq.cluster.supervisor import (
    EXIT_REPORT_EVERY,
    _worth_saying,
    check_resolves,
    settings_the_hosts_decide,
    worker_conf,
)
from storm_zmq.config import DEFAULTS

TCP = "storm_zmq.messaging.tcp.Context"


def record(conf: dict[str, object], chosen: list[str] | None) -> dict[str, object]:
    topology = {"conf": {**DEFAULTS, **conf}}
    if chosen is not None:
        topology["conf_set"] = chosen
    return topology


def test_topology_workers_is_the_topologys_number_of_workers_now() -> None:
    # Bug (a semantics audit): components read the storm.yaml's topology.workers, not
    # submit's -w or a rebalance's -n
    topology = {**record({"topology.workers": 1}, None), "num_workers": 3}
    assert worker_conf(topology, dict(DEFAULTS))["topology.workers"] == 3
    assert worker_conf(record({"topology.workers": 2}, None), dict(DEFAULTS))["topology.workers"] == 2


def test_the_transport_a_topology_chose_wins_over_the_hosts_default() -> None:
    # submit -o storm.messaging.transport=tcp ran on zmq: the host's defaults won
    host = {**DEFAULTS, "storm.local.dir": "/var/storm"}
    conf = worker_conf(record({"storm.messaging.transport": TCP}, ["storm.messaging.transport"]),
                       host)
    assert conf["storm.messaging.transport"] == TCP
    assert conf["storm.local.dir"] == "/var/storm"


def test_the_hosts_settings_win_where_the_topology_chose_nothing() -> None:
    host = {**DEFAULTS, "storm.messaging.transport": TCP, "storm.messaging.zmq.hwm": 64,
            "worker.cpu.pinning": False}
    chosen = ["storm.messaging.zmq.hwm", "worker.cpu.pinning", "topology.workers"]
    conf = worker_conf(record({"storm.messaging.zmq.hwm": 8, "worker.cpu.pinning": True,
                               "topology.workers": 3}, chosen), host)
    assert conf["storm.messaging.transport"] == TCP  # the topology took the default
    assert conf["storm.messaging.zmq.hwm"] == 8  # a messaging setting it chose
    assert conf["worker.cpu.pinning"] is False  # how this host runs its workers
    assert conf["topology.workers"] == 3


def test_the_workers_interpreter_is_the_topologys_if_it_chose_one_else_the_hosts() -> None:
    host = {**DEFAULTS, "worker.python": "/opt/pypy/bin/python"}
    chose = worker_conf(record({"worker.python": "/usr/bin/python3"}, ["worker.python"]), host)
    assert chose["worker.python"] == "/usr/bin/python3"
    assert worker_conf(record({}, []), host)["worker.python"] == "/opt/pypy/bin/python"
    assert settings_the_hosts_decide(["worker.python", "worker.cpu.pinning"]) == [
        "worker.cpu.pinning"]  # submit does not warn that the hosts decide it


def test_a_record_from_before_conf_set_keeps_the_hosts_messaging_settings() -> None:
    host = {**DEFAULTS, "storm.messaging.transport": TCP}
    conf = worker_conf(record({"storm.messaging.transport": "zmq"}, None), host)
    assert conf["storm.messaging.transport"] == TCP


def test_the_settings_the_hosts_decide_are_worker_and_slot_settings() -> None:
    chosen = ["worker.cpu.pinning", "topology.workers", "storm.messaging.zmq.hwm",
              "storm.zookeeper.port", "storm.local.dir", "supervisor.slots.ports",
              "worker.log.backups", "supervisor.worker.start.timeout.secs"]
    assert settings_the_hosts_decide(chosen) == [
        "supervisor.slots.ports", "supervisor.worker.start.timeout.secs", "worker.cpu.pinning",
        "worker.log.backups"]
    # and the workers indeed get the host's value of each (the start grace: a worker
    # times its "still waiting for initialize()" notices by the supervisor's)
    host = {**DEFAULTS, "worker.cpu.pinning": False, "worker.log.backups": 2,
            "supervisor.slots.ports": [6800], "supervisor.worker.start.timeout.secs": 20}
    conf = worker_conf(record({"worker.cpu.pinning": True, "worker.log.backups": 9,
                               "supervisor.slots.ports": [1],
                               "supervisor.worker.start.timeout.secs": 300}, chosen), host)
    assert [conf[key] for key in settings_the_hosts_decide(chosen)] == [[6800], 20, False, 2]


def test_the_last_exception_of_a_workers_logs_is_found_under_any_prefix(tmp_path) -> None:
    import os

    from storm_zmq.cluster.supervisor import last_exception_line

    log = tmp_path / "w.log"
    log.write_text("2026-11-27 04:50:00,000 worker-0 INFO started\n"
                   "2026-11-27 04:50:01,000 worker-0 WARNING STDERR: Traceback (most recent call last):\n"
                   "2026-11-27 04:50:01,000 worker-0 WARNING STDERR:   File \"x.py\", line 1\n"
                   "2026-11-27 04:50:01,000 worker-0 WARNING STDERR: storm_zmq.messaging.base."
                   "TransportError: cannot bind port 6801: Address already in use\n"
                   "2026-11-27 04:50:01,001 worker-0 INFO stopping\n")
    out = tmp_path / "w.out"
    out.write_text("ValueError: an older one\n")
    os.utime(out, (1, 1))  # written before the log
    assert last_exception_line([out, log]) == (
        "storm_zmq.messaging.base.TransportError: cannot bind port 6801: Address already in use")
    assert last_exception_line([tmp_path / "missing.log"]) is None
    log.write_text("nothing went wrong\n")
    assert last_exception_line([out, log]) == "ValueError: an older one"  # the other file's
    # a traceback logged as one record: its later lines have no prefix
    log.write_text("2026-11-27 04:50:01,000 worker-0 WARNING STDERR: worker 0 failed:\n"
                   "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                   "OSError: [Errno 98] Address already in use\n")
    assert last_exception_line([out, log]) == "OSError: [Errno 98] Address already in use"


def test_without_zookeeper_a_worker_that_stopped_itself_is_not_relaunched(tmp_path) -> None:
    """A cluster audit: a supervisor cut off from ZooKeeper relaunched, from its launch
    file, a worker that had stopped because its slot was given to another: a
    duplicate, spouts active. Exit 0 waits for ZooKeeper; a crash is relaunched."""
    import json
    from types import SimpleNamespace

    from storm_zmq.cluster.supervisor import Supervisor

    spawned: list[int] = []
    workers = {}
    for port, code in ((6700, 0), (6701, 1)):
        directory = tmp_path / str(port)
        directory.mkdir()
        (directory / "launch.json").write_text(json.dumps({"port": port}))
        workers[port] = SimpleNamespace(process=SimpleNamespace(poll=lambda code=code: code),
                                        directory=directory, topology_id="t-1", index=port - 6700)
    supervisor = SimpleNamespace(
        workers=workers, _needs_restart=lambda worker: f"exited with code {worker.process.poll()}",
        _note_exit=lambda worker: None, _count_restart=lambda worker: None,
        _stop_worker=lambda port, reason, force: None,
        _spawn=lambda port, *rest: spawned.append(port))
    Supervisor._restart_dead_workers(supervisor)  # type: ignore[arg-type]
    assert spawned == [6701]


def test_a_port_another_supervisor_of_the_same_address_has_is_said_once(caplog) -> None:
    """A cluster audit: a second supervisor given a port of the first's: the workers
    placed there died binding, relaunched for ever, with no word of why."""
    import logging
    from types import SimpleNamespace

    from storm_zmq.cluster.supervisor import Supervisor

    registered = {
        "s1": {"host": "vm", "ports": [7861, 7862]},
        "s3": {"host": "vm", "ports": [7862]},
        "ns": {"host": "10.0.0.2", "ports": [7862]},  # a network namespace of the machine
    }
    supervisor = SimpleNamespace(id="s3", host="vm", ports=[7862], _said_shared_ports=set(),
                                 state=SimpleNamespace(supervisors=lambda: registered))
    with caplog.at_level(logging.WARNING, logger="storm_zmq.cluster.supervisor"):
        for _ in range(2):
            Supervisor._say_shared_ports(supervisor)  # type: ignore[arg-type]
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith("port 7862 of supervisor.slots.ports is also supervisor s1's, on the "
                           "same address vm")


def test_a_supervisor_whose_hostname_does_not_resolve_refuses_to_start(tmp_path: Path) -> None:
    # Bug (a cluster audit): it registered the name, nimbus placed workers there, and
    # the topology stalled with no error anywhere (".invalid" never resolves: RFC 2606)
    result = subprocess.run(
        [sys.executable, "-m", "storm_zmq.cli.main", "supervisor",
         "-o", "storm.local.hostname=nosuchhost.invalid", "-o", f"storm.local.dir={tmp_path}",
         "-o", "storm.zookeeper.port=1"],  # it must stop before it tries ZooKeeper
        capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "storm.local.hostname 'nosuchhost.invalid' does not resolve on this host" in result.stderr
    assert "Traceback" not in result.stderr
    check_resolves("localhost")  # and a name that does resolve passes


def test_trouble_in_a_row_is_said_the_first_time_and_every_nth_after() -> None:
    said = [streak for streak in range(1, 3 * EXIT_REPORT_EVERY + 1) if _worth_saying(streak)]
    assert said == [1, EXIT_REPORT_EVERY, 2 * EXIT_REPORT_EVERY, 3 * EXIT_REPORT_EVERY]
