"""Cluster mode with real processes: ZooKeeper, nimbus daemons, two supervisors with
their own `storm.local.dir` and slot ports, and a submitted topology whose spout
emits a bounded set of ids with acking on. Every scenario checks that every id
reaches the sink; what was lost is counted (as duplicates), not guessed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from storm_zmq.cluster import ClusterState
from tests.procs import processes
from tests.zk_fixtures import ZooKeeperServer, free_port

PROJECT = Path(__file__).parents[1] / "runtime" / "project"
TOPOLOGY = PROJECT / "topologies" / "cluster_ids.py"
pytestmark = pytest.mark.slow


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


class Cluster:
    """Daemons as real processes, each in its own process group."""

    def __init__(self, tmp: Path, zk_conf: dict[str, Any]) -> None:
        self.tmp = tmp
        self.output = tmp / "output"
        self.output.mkdir()
        conf = {
            **zk_conf,
            "storm.local.hostname": "127.0.0.1",
            "nimbus.monitor.freq.secs": 1,
            "nimbus.task.timeout.secs": 8,
            "nimbus.task.launch.secs": 30,
            "supervisor.monitor.frequency.secs": 1,
            "supervisor.worker.timeout.secs": 8,
            "supervisor.worker.shutdown.sleep.secs": 2,
            "topology.message.timeout.secs": 4,
            "logviewer.port": 0,  # several supervisors on one host; tests that want it set it
        }
        self.zk_conf = zk_conf
        self.conf_file = tmp / "storm.yaml"
        self.conf_file.write_text(yaml.safe_dump(conf))
        self.processes: dict[str, subprocess.Popen[str]] = {}
        self.ports: dict[str, list[int]] = {}  # supervisor name -> its slot ports

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "storm_zmq.cli.main", *args, "-c", str(self.conf_file)],
            capture_output=True, text=True, timeout=120, cwd=self.tmp)
        if check:
            assert result.returncode == 0, result.stderr
        return result

    def stats(self, topology: str) -> dict[str, Any]:
        """`storm-zmq stats TOPOLOGY --json` (in stats, -c is the component)."""
        result = subprocess.run(
            [sys.executable, "-m", "storm_zmq.cli.main", "stats", topology, "--json",
             "--config", str(self.conf_file)],
            capture_output=True, text=True, timeout=60, cwd=self.tmp)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def start(self, name: str, *args: str) -> None:
        log = open(self.tmp / f"{name}.log", "w")  # noqa: SIM115 - the child owns it
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", "storm_zmq.cli.main", *args, "-c", str(self.conf_file)],
            stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True,
            cwd=self.tmp)

    def supervisor(self, name: str, *options: str, slots: int = 2,
                   again: str | None = None) -> None:
        """Start a supervisor and wait until nimbus can see it (it is registered),
        so that what a test submits next is spread over every supervisor started.
        `again`: start supervisor `name` again, with its local dir and ports, its
        output in the log named `again`."""
        if again is None:
            self.ports[name] = [free_port() for _ in range(slots)]
        self.start(again or name, "supervisor", "-o", f"storm.local.dir={self.tmp / name}",
                   "-o", f"supervisor.slots.ports={self.ports[name]}", *options)
        id_file = self.tmp / name / "supervisor" / "id"
        with ClusterState(self.zk_conf).start(timeout=10) as state:
            wait_for(lambda: id_file.exists() and id_file.read_text().strip() in state.supervisors(),
                     f"supervisor {name} registered")

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)

    def kill_host(self, name: str) -> None:
        """Supervisor `name` and its workers die, as with their host: SIGKILL."""
        workers = self.worker_pids(name)
        self.kill(name)
        for pid in workers:
            os.kill(pid, signal.SIGKILL)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    def worker_pids(self, supervisor: str) -> list[int]:
        return [int(p.read_text()) for p in (self.tmp / supervisor / "workers").glob("*/pid")
                if p.exists()]

    def seen(self) -> Counter[int]:
        return sink_ids(self.output)

    def submit(self, count: int, rate: int, *options: str) -> None:
        self.cli("submit", str(TOPOLOGY), "-w", "2", "-o", f"test.count={count}",
                 "-o", f"test.rate={rate}", "-o", f"test.output_dir={self.output}", *options)

    def stop_all(self) -> None:
        for process in list(self.processes.values()):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        for pid_file in self.tmp.glob("*/workers/*/pid"):  # workers of killed supervisors
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass


@pytest.fixture
def cluster(tmp_path: Path, zk_conf: dict[str, Any]) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path, zk_conf)
    yield cluster
    cluster.stop_all()


def running(pid: int) -> bool:
    """Whether process `pid` runs: not gone, and not a zombie (a worker that outlived
    its supervisor is not its next run's child, so nothing here reaps it)."""
    return any(proc.pid == pid and proc.state != "Z" for proc in processes())


def sink_ids(output: Path) -> Counter[int]:
    """Every id the AppendSinkBolt tasks wrote under `output`, with multiplicity."""
    ids: Counter[int] = Counter()
    for path in output.glob("sink-*.log"):
        ids.update(int(line) for line in path.read_text().split())
    return ids


def logs_tail(root: Path, lines: int = 25) -> str:
    """The last lines of every daemon and worker log under a test cluster's directory:
    what a failed wait shows, so that a failure in CI can be understood afterwards."""
    parts = []
    for path in sorted([*root.glob("*.log"), *root.glob("*/logs/*.log"), *root.glob("*/logs/*.out")]):
        text = path.read_text(errors="replace").splitlines()[-lines:]
        parts.append(f"--- {path.relative_to(root)}\n" + "\n".join(text))
    return "\n".join(parts)


def all_ids_arrive(output: Path, count: int, timeout: float = 90) -> Counter[int]:
    try:
        wait_for(lambda: set(sink_ids(output)) >= set(range(count)),
                 f"all {count} ids at the sink", timeout)
    except AssertionError as exc:
        missing = set(range(count)) - set(sink_ids(output))
        raise AssertionError(f"{exc}; {len(missing)} missing, e.g. {sorted(missing)[:10]}\n"
                             f"{logs_tail(output.parent)}") from None
    seen = sink_ids(output)
    duplicates = sum(n - 1 for n in seen.values())
    print(f"{count} ids delivered, {duplicates} duplicates (replays)")
    return seen


def test_a_submitted_topology_delivers_every_id_and_kill_removes_it(cluster: Cluster) -> None:
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1")
    cluster.supervisor("s2")
    cluster.submit(count=500, rate=400)
    listing = cluster.cli("list").stdout
    assert "ClusterIds" in listing and "active" in listing
    again = cluster.cli("submit", str(TOPOLOGY), check=False)
    assert again.returncode == 2 and "already running" in again.stderr
    all_ids_arrive(cluster.output, 500)
    # the workers ran on both supervisors
    wait_for(lambda: cluster.worker_pids("s1") and cluster.worker_pids("s2"), "a worker per host")
    cluster.cli("kill", "ClusterIds", "-w", "1")
    wait_for(lambda: "no topologies" in cluster.cli("list").stdout, "the topology removed")
    wait_for(lambda: not cluster.worker_pids("s1") and not cluster.worker_pids("s2"),
             "workers stopped")
    # The supervisors removed its code and worker directories (launch files hold
    # the topology's secrets); the logs stay.
    wait_for(lambda: not any(list((cluster.tmp / s / d).glob("*")) for s in ("s1", "s2")
                             for d in ("stormdist", "workers")), "local files removed")
    assert list((cluster.tmp / "s1" / "logs").glob("ClusterIds-*.log"))
    unknown = cluster.cli("kill", "ClusterIds", check=False)
    assert unknown.returncode == 2 and "no running topology named 'ClusterIds'" in unknown.stderr


def test_a_topology_whose_worker_python_is_pypy_runs_its_workers_there(
    cluster: Cluster, pypy: str,
) -> None:
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1")
    cluster.submit(300, 400, "-o", f"worker.python={pypy}")
    all_ids_arrive(cluster.output, 300)
    pids = wait_for(lambda: cluster.worker_pids("s1"), "the workers' pid files")
    assert len(pids) == 2 and all("pypy" in os.readlink(f"/proc/{pid}/exe") for pid in pids)


def test_a_worker_python_a_supervisor_cannot_use_is_said_once_and_starts_nothing(
    cluster: Cluster,
) -> None:
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1")
    # the submitter, waiting for workers, sees why none comes (a round a second here)
    submit = cluster.cli("submit", str(TOPOLOGY), "-w", "2", "-o", "test.count=10",
                         "-o", "test.rate=100", "-o", f"test.output_dir={cluster.output}",
                         "-o", "worker.python=no-such-python", "--wait", "6", check=False)
    assert submit.returncode != 0
    for index in (0, 1):
        said = f"cannot launch worker {index} of ClusterIds-"
        assert said in submit.stderr, submit.stderr
        assert cluster.log("s1").count(said) == 1  # once for 6 rounds, not each round
    assert "'no-such-python' is not an executable" in submit.stderr
    assert not cluster.worker_pids("s1")


def test_a_sigkilled_worker_is_restarted_and_every_id_still_arrives(cluster: Cluster) -> None:
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1")
    cluster.supervisor("s2")
    cluster.submit(count=1500, rate=150)
    wait_for(lambda: len(cluster.seen()) > 100, "tuples flowing")
    victim = wait_for(lambda: cluster.worker_pids("s2"), "a worker on s2")[0]
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: "worker exited with code -9" in cluster.log("s2"), "the supervisor noticed")
    wait_for(lambda: cluster.worker_pids("s2") and cluster.worker_pids("s2")[0] != victim,
             "the worker restarted")
    all_ids_arrive(cluster.output, 1500)

    def worker_rows() -> list[dict[str, Any]] | None:
        """`stats --json`'s workers once the relaunched one has reported."""
        rows = cluster.stats("ClusterIds")["workers"]
        return rows if any(row["restarts"] for row in rows) else None

    rows = wait_for(worker_rows, "stats showing the restart")
    assert sorted(row["restarts"] for row in rows) == [0, 1]
    assert {row["transport_name"] for row in rows} == {"zmq"}


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "crashed"])
def test_a_supervisors_workers_outlive_it_and_its_next_run_adopts_them(
        cluster: Cluster, how: signal.Signals) -> None:
    # Storm: "no worker processes are affected by the death of Nimbus or the
    # Supervisors". A stopped or crashed supervisor's worker runs on, past nimbus's
    # timeouts, and the supervisor started again takes it on: no worker restarted,
    # no replay.
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1", slots=1)
    cluster.supervisor("s2", slots=1)
    # a replay then says a worker lost tuples, not that a busy machine held one 4 s
    cluster.submit(3000, 150, "-o", "topology.message.timeout.secs=30")
    wait_for(lambda: len(cluster.seen()) > 100, "tuples flowing")
    (worker,) = wait_for(lambda: cluster.worker_pids("s1"), "a worker on s1")
    gone = cluster.processes.pop("s1")
    gone.send_signal(how)
    gone.wait(30)
    if how == signal.SIGTERM:
        assert gone.returncode == 0
        assert f"leaving 1 worker(s) running (pids {worker})" in cluster.log("s1")
    with ClusterState(cluster.zk_conf).start(timeout=10) as state:
        wait_for(lambda: len(state.supervisors()) == 1, "its registration gone")
    gone_at = time.monotonic()
    # longer than nimbus.task.timeout.secs (8) and a round: the worker stays put
    seen = len(cluster.seen())
    wait_for(lambda: time.monotonic() - gone_at > 10 and len(cluster.seen()) > seen,
             "ids still arriving after nimbus's timeouts", timeout=30)
    assert running(worker)
    assert "moving worker" not in cluster.log("nimbus")

    cluster.supervisor("s1", again="s1-again")
    wait_for(lambda: f"(pid {worker}), left running by a previous run" in cluster.log("s1-again"),
             "the worker adopted")
    ids = all_ids_arrive(cluster.output, 3000)
    assert cluster.worker_pids("s1") == [worker]
    assert "launched worker" not in cluster.log("s1-again")
    assert sum(n - 1 for n in ids.values()) == 0  # nothing replayed

    # Storm's kill_workers: with the supervisor running, it says the workers will
    # be launched again (and they are: a way to restart them) ...
    local_dir = f"storm.local.dir={cluster.tmp / 's1'}"
    said = cluster.cli("kill_workers", "-o", local_dir)
    assert f"(pid {worker}): exited with code 0" in said.stdout, said.stdout  # gracefully
    assert "1 worker(s) stopped" in said.stdout
    assert "launches the workers of its slots again" in said.stderr
    assert not running(worker)
    (again,) = wait_for(lambda: cluster.worker_pids("s1"), "the worker launched again")
    # Up, not only launched: a SIGTERM in its first second, before Python has loaded
    # the worker's handler, kills it with no exit code to read (on a loaded CI
    # machine it did). The launch removed the old heartbeat; the new worker writes
    # its own once ready, after its handler is in place.
    wait_for(lambda: any((cluster.tmp / "s1" / "workers").glob("*/heartbeat")),
             "the worker launched again ready")
    # ... and with it stopped, it empties the host
    cluster.processes.pop("s1-again").send_signal(signal.SIGTERM)
    cluster.processes["nimbus"].send_signal(signal.SIGTERM)  # nothing moves the worker now
    said = cluster.cli("kill_workers", "-o", local_dir)
    assert f"(pid {again}): exited with code 0" in said.stdout, said.stdout
    assert said.stderr == ""
    assert not running(again) and not cluster.worker_pids("s1")


def test_a_dead_hosts_workers_are_moved_and_every_id_arrives(cluster: Cluster) -> None:
    # A host that dies takes its supervisor and its workers: their heartbeats stop,
    # and after nimbus.task.timeout.secs nimbus moves them.
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1")
    cluster.supervisor("s2")
    cluster.submit(count=1500, rate=150)
    wait_for(lambda: len(cluster.seen()) > 100, "tuples flowing")
    cluster.kill_host("s1")
    wait_for(lambda: "moving worker" in cluster.log("nimbus"), "nimbus moving the worker")
    wait_for(lambda: len(cluster.worker_pids("s2")) == 2, "both workers on s2")
    all_ids_arrive(cluster.output, 1500)


def test_the_standby_nimbus_takes_over_when_the_leader_dies(cluster: Cluster) -> None:
    cluster.start("nimbus-a", "nimbus")
    wait_for(lambda: "is the leader" in cluster.log("nimbus-a"), "a leader")
    cluster.start("nimbus-b", "nimbus")
    cluster.supervisor("s1")
    cluster.supervisor("s2")
    cluster.submit(count=1500, rate=150)
    wait_for(lambda: len(cluster.seen()) > 100, "tuples flowing")
    cluster.kill("nimbus-a")
    wait_for(lambda: "is the leader" in cluster.log("nimbus-b"), "the standby leading")
    cluster.kill_host("s1")  # only a leading nimbus repairs this
    wait_for(lambda: "moving worker" in cluster.log("nimbus-b"), "the new leader repairing")
    all_ids_arrive(cluster.output, 1500)


def test_tuples_keep_flowing_while_zookeeper_is_down(cluster: Cluster,
                                                     zookeeper: ZooKeeperServer) -> None:
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1")
    cluster.supervisor("s2")
    cluster.submit(count=3000, rate=150)
    wait_for(lambda: len(cluster.seen()) > 100, "tuples flowing")
    (victim,) = cluster.worker_pids("s1")
    zookeeper.stop()
    try:
        during = len(cluster.seen())
        deadline = time.monotonic() + 10
        # a worker that dies meanwhile is started again by its supervisor, from the
        # assignment it knows: its rounds do not wait out the outage in a ZooKeeper
        # call (one that began as ZooKeeper went away blocked for up to a minute)
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: [p for p in cluster.worker_pids("s1") if p != victim],
                 "s1 to start its worker again without ZooKeeper", timeout=8)
        while time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(cluster.seen()) > during + 500, "the data plane stalled without ZooKeeper"
    finally:
        zookeeper.start()
    assert "active" in cluster.cli("list").stdout
    all_ids_arrive(cluster.output, 3000)
    # the daemons are back in ZooKeeper: both supervisors registered again
    wait_for(lambda: "ZooKeeper is back" in cluster.log("s1") + cluster.log("s2")
             or "CONNECTED" in cluster.log("s1"), "supervisors reconnected")
    # kazoo's warning at each attempt to reconnect (every 2 s at most) is one line a
    # minute in a daemon's log (storm_zmq.cluster.kazoo_log)
    for daemon in ("nimbus", "s1", "s2"):
        dropped = [line for line in cluster.log(daemon).splitlines()
                   if "WARNING kazoo.client: Connection dropped" in line]
        assert len(dropped) <= 1, (daemon, dropped)
    # ... and how many it held back is said once ZooKeeper is back
    wait_for(lambda: "while it was away kazoo also warned: 'Connection dropped: ...' " in
             cluster.log("nimbus"), "nimbus saying what it held back")


def test_an_unreachable_zookeeper_is_a_clear_error(tmp_path: Path) -> None:
    conf = tmp_path / "storm.yaml"
    conf.write_text(yaml.safe_dump({
        "storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": free_port(),
        "storm.zookeeper.connection.timeout": 1500}))
    result = subprocess.run([sys.executable, "-m", "storm_zmq.cli.main", "list", "-c", str(conf)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "127.0.0.1" in result.stderr and "Traceback" not in result.stderr


def test_a_second_supervisor_on_a_local_dir_in_use_refuses_and_harms_nothing(
        cluster: Cluster) -> None:
    # it took the first one's id, killed its workers as "leftovers" and removed
    # their directories (a new user's forgotten -o storm.local.dir)
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1", slots=2)
    cluster.submit(count=10**6, rate=200)  # two workers
    wait_for(lambda: len(cluster.worker_pids("s1")) == 2, "the workers of s1")
    workers = sorted(cluster.worker_pids("s1"))
    second = cluster.cli("supervisor", "-o", f"storm.local.dir={cluster.tmp / 's1'}",
                         "-o", f"supervisor.slots.ports=[{free_port()}]", check=False)
    assert second.returncode == 2, second.stderr
    assert f"storm.local.dir {(cluster.tmp / 's1').resolve()} is in use by another supervisor" \
        in second.stderr and "Traceback" not in second.stderr
    for worker in workers:
        assert running(worker)
    assert sorted(cluster.worker_pids("s1")) == workers
    # once the first one has stopped, the directory is free again
    first = cluster.processes.pop("s1")
    first.send_signal(signal.SIGTERM)
    assert first.wait(30) == 0
    supervisor_id = (cluster.tmp / "s1" / "supervisor" / "id").read_text().strip()
    cluster.start("s1-again", "supervisor", "-o", f"storm.local.dir={cluster.tmp / 's1'}",
                  "-o", f"supervisor.slots.ports=[{free_port()}]")
    with ClusterState(cluster.zk_conf).start(timeout=10) as state:
        wait_for(lambda: supervisor_id in state.supervisors(), "the supervisor on s1's dir again")
    # the first one's workers outlived it; on ports this run has not, they are stopped
    assert cluster.log("s1-again").count("is not one of this supervisor's slots") == 2
    wait_for(lambda: not cluster.worker_pids("s1"), "the workers of the first run stopped")
    assert not any(running(worker) for worker in workers)


def test_a_worker_that_cannot_start_is_said_to_with_its_cause(cluster: Cluster) -> None:
    # relaunched every round with an INFO line; the cause only in its own log
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1", slots=1)
    with ClusterState(cluster.zk_conf).start(timeout=10) as state:
        (info,) = state.supervisors().values()
    (slot,) = info["ports"]
    with socket.socket() as holder:  # something else has the slot's port
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("0.0.0.0", slot))
        holder.listen()
        cluster.cli("submit", str(TOPOLOGY), "-w", "1", "-o", "test.count=10",
                    "-o", f"test.output_dir={cluster.output}")
        wait_for(lambda: "exited with code 1: " in cluster.log("s1")
                 and f"cannot bind port {slot}" in cluster.log("s1"),
                 "the supervisor saying why its worker died", timeout=60)
        # and stats and the UI (a cluster audit: a worker that failed before it was
        # ready had no ZooKeeper session, and its error showed in its log alone)
        with ClusterState(cluster.zk_conf).start(timeout=10) as state:
            (topology_id,) = state.topologies()
            wait_for(lambda: any(f"cannot bind port {slot}" in error["text"]
                                 for errors in state.errors(topology_id).values()
                                 for error in errors),
                     "the error in ZooKeeper", timeout=30)
    line = next(line for line in cluster.log("s1").splitlines() if "exited with code 1" in line)
    assert " WARNING " in line and "relaunching it" in line


def test_deactivate_activate_and_rebalance(cluster: Cluster) -> None:
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1")
    cluster.supervisor("s2")
    cluster.submit(count=100_000, rate=100)
    wait_for(lambda: len(cluster.seen()) > 50, "tuples flowing")
    # Storm's monitor: the spout's two tasks emit 100 ids a second each (a round may
    # miss one worker's newer report, which keeps its last rate: 100 at the least)
    monitor = cluster.cli("monitor", "ClusterIds", "-i", "2", "-n", "2", "-m", "numbers")
    header, *lines = monitor.stdout.splitlines()
    assert header.split() == ["time", "component", "kind", "executors", "+emitted", "per", "second"]
    assert [line.split()[1:3] for line in lines] == [["numbers", "spout"]] * 2, monitor.stdout
    rates = [float(line.split()[-1].replace(",", "")) for line in lines]
    assert all(50 <= rate <= 400 for rate in rates), monitor.stdout  # 200 a second, give or take a busy machine
    cluster.cli("deactivate", "ClusterIds")
    assert "inactive" in cluster.cli("list").stdout

    def settled() -> bool:  # nothing new at the sink for a second: the spouts stopped
        before = sum(cluster.seen().values())
        time.sleep(1.0)
        return sum(cluster.seen().values()) == before

    wait_for(settled, "the spouts to stop emitting", timeout=30)
    cluster.cli("activate", "ClusterIds")
    stopped_at = sum(cluster.seen().values())
    wait_for(lambda: sum(cluster.seen().values()) > stopped_at + 50, "the spouts emitting again")
    rebalanced = time.monotonic()
    result = cluster.cli("rebalance", "ClusterIds", "-w", "1", "-n", "1", "-e", "relay=1")
    assert "over 1 workers, relay on 1 executor(s)" in result.stdout
    wait_for(lambda: " 1 " in cluster.cli("list").stdout.splitlines()[1], "one worker listed")
    with ClusterState(cluster.zk_conf).start(timeout=10) as state:
        (topology_id,) = state.topologies()

        def relay_executors() -> list[list[int]]:  # the task range of each
            executors = state.get_assignment(topology_id)["assignment"]["executors"]
            return [tasks for _, component, tasks, _ in executors if component == "relay"]

        # Storm's -e: relay's two tasks now run in one executor
        wait_for(lambda: len(relay_executors()) == 1, "relay on one executor", timeout=30)
        ((first, last),) = relay_executors()
        assert last - first == 1
    wait_for(lambda: len(cluster.worker_pids("s1") + cluster.worker_pids("s2")) == 1,
             "the topology on one worker")
    # a worker that stopped itself for the rebalance and was launched again did not
    # die: no restart (it counted as one)
    def launched_since_the_rebalance() -> list[dict[str, Any]] | None:
        pids = cluster.worker_pids("s1") + cluster.worker_pids("s2")
        rows = [r for r in cluster.stats("ClusterIds")["workers"] if r["pid"] in pids]
        since = time.monotonic() - rebalanced
        return rows if rows and all(r["uptime_secs"] < since for r in rows) else None

    rows = wait_for(launched_since_the_rebalance, "the worker launched for the rebalance")
    assert [r["restarts"] for r in rows] == [0]
    # Every task runs again, in the one worker: ids of both spout tasks (even and
    # odd) arrive anew. (The worker that stayed used to keep its half of the old
    # layout, and the other half of the tasks ran nowhere.)
    before = cluster.seen()

    def both_spout_tasks_emitting() -> bool:
        now = cluster.seen()
        grown = {i % 2 for i in now if now[i] > before.get(i, 0)}
        return grown == {0, 1}

    wait_for(both_spout_tasks_emitting, "ids of both spout tasks after the rebalance")


def test_a_supervisor_started_before_its_zookeeper_waits_for_it(tmp_path: Path) -> None:
    # A cluster audit: it exited (code 2) after the connection timeout, leaving the
    # workers it would adopt unwatched; Storm's supervisor keeps trying
    server = ZooKeeperServer(free_port(), tmp_path / "zookeeper")
    conf = {"storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": server.port,
            "storm.zookeeper.root": "/late", "storm.zookeeper.connection.timeout": 1000,
            "storm.zookeeper.session.timeout": 4000, "supervisor.monitor.frequency.secs": 1,
            "storm.local.dir": str(tmp_path / "s1"), "supervisor.slots.ports": [free_port()],
            "logviewer.port": free_port()}
    conf_file = tmp_path / "storm.yaml"
    conf_file.write_text(yaml.safe_dump(conf))
    log = tmp_path / "s1.log"
    with open(log, "wb") as out:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "storm_zmq.cli.main", "supervisor", "-c", str(conf_file)],
            stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        wait_for(lambda: "trying again every 1 s" in log.read_text(), "its warning", timeout=30)
        assert supervisor.poll() is None, log.read_text()
        server.start()
        with ClusterState(conf).start(timeout=10) as state:
            wait_for(lambda: len(state.supervisors()) == 1, "the supervisor registered", timeout=30)
        assert "ZooKeeper answers: supervisor starting" in log.read_text()
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(30) == 0, log.read_text()
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
        server.stop()
