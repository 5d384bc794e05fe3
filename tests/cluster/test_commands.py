"""Cluster commands against a real ZooKeeper, without daemons: what they write."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.cli.main import main
from storm_zmq.cluster.nimbus import Nimbus, stored_assignment
from storm_zmq.cluster.scheduler import Slot
from storm_zmq.cluster.state import ClusterState
from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.assignment import WorkerSlot, assign
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


@contextlib.contextmanager
def leading(state: ClusterState, nimbus_id: str) -> Iterator[None]:
    """`nimbus_id` holds the leadership (its node in the election) while inside."""
    elected, done = threading.Event(), threading.Event()

    def lead() -> None:
        elected.set()
        done.wait(30)

    leader = threading.Thread(target=state.leader_election(nimbus_id).run, args=(lead,))
    leader.start()
    try:
        assert elected.wait(10)
        yield
    finally:
        done.set()
        leader.join(10)


@pytest.fixture
def nimbus(make_state: Callable[..., ClusterState], zk_conf: dict[str, Any]) -> Nimbus:
    """A nimbus whose rounds the test runs, with its clock (`monitor(now=...)`)."""
    leader = Nimbus({**DEFAULTS, **zk_conf})
    leader.state = make_state()
    return leader


def topology_on_one_worker(state: ClusterState, status: str, num_workers: int = 1,
                           executors: int = 2) -> None:
    """Topology "ids" in `status` on one worker of supervisor s1 (two slots)."""
    state.register_supervisor("s1", {"host": "h1", "ports": [6700, 6701], "time": 0})
    state.set_topology(TID, {"name": "ids", "status": status, "num_workers": num_workers,
                             "components": {"numbers": [executors, executors]}, "ackers": 0,
                             "conf": {"topology.message.timeout.secs": 30}})
    assignment = assign(TID, {"numbers": (executors, executors)}, [WorkerSlot("h1", 6700)], 0)
    state.set_assignment(TID, stored_assignment(assignment, [Slot("s1", "h1", 6700)], [0.0]))


def test_a_rebalance_that_other_topologies_leave_too_few_free_slots_is_warned_about(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    """A cluster audit: submit warned, rebalance did not. Its own slots count as free."""
    state = make_state()
    topology_on_one_worker(state, "active")  # s1: ports 6700 (held by ids) and 6701
    assert main(["rebalance", "ids", "-n", "2", *cli_overrides(zk_conf)]) == 0
    assert "are free" not in capsys.readouterr().err
    other = assign("other-1", {"numbers": (1, 1)}, [WorkerSlot("h1", 6701)], 0)
    state.set_assignment("other-1", stored_assignment(other, [Slot("s1", "h1", 6701)], [0.0]))
    assert main(["rebalance", "ids", "-n", "2", *cli_overrides(zk_conf)]) == 0
    assert ("warning: 'ids' needs 2 worker slots and 1 of the cluster's 2 are free: it waits "
            "until enough are") in capsys.readouterr().err


@pytest.mark.parametrize("status", ["active", "inactive"])
def test_rebalance_hands_its_wait_to_nimbus_which_restores_the_status_before(
        nimbus: Nimbus, zk_conf: dict[str, Any], capsys: pytest.CaptureFixture[str],
        status: str) -> None:
    state = nimbus.state
    topology_on_one_worker(state, status)
    started = time.monotonic()
    assert main(["rebalance", "ids", "-w", "20", "-n", "2", *cli_overrides(zk_conf)]) == 0
    assert time.monotonic() - started < 10  # it records the request; nimbus waits
    assert capsys.readouterr().out == (
        "rebalancing 'ids' over 2 workers: deactivated; nimbus reassigns it 20 s after it "
        f"sees the request, then makes it {status} again\n")
    # the CLI is done (Ctrl-C or a closed terminal now changes nothing): the spouts
    # are off (workers activate only on "active") until nimbus's wait has passed
    assert (state.get_topology(TID) or {})["status"] == "rebalancing"
    for now in (1000.0, 1019.0):
        nimbus.monitor(now=now)
        record = state.get_topology(TID) or {}
        assert (record["status"], record["num_workers"]) == ("rebalancing", 1), now
        assert len((state.get_assignment(TID) or {})["slots"]) == 1
    nimbus.monitor(now=1020.0)
    record = state.get_topology(TID) or {}
    assert (record["status"], record["num_workers"], record["rebalance"]) == (status, 2, False)
    assert not any(key.startswith("rebalance_") for key in record)
    assert sorted(s[2] for s in (state.get_assignment(TID) or {})["slots"]) == [6700, 6701]


def test_deactivate_during_a_rebalance_is_the_status_it_gets_back(
        nimbus: Nimbus, zk_conf: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    state = nimbus.state
    topology_on_one_worker(state, "active")
    overrides = cli_overrides(zk_conf)
    assert main(["rebalance", "ids", "-w", "5", *overrides]) == 0
    assert main(["deactivate", "ids", *overrides]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == \
        "'ids' is rebalancing: it becomes inactive afterwards"
    assert (state.get_topology(TID) or {})["status"] == "rebalancing"
    nimbus.monitor(now=1000.0)
    nimbus.monitor(now=1005.0)
    assert (state.get_topology(TID) or {})["status"] == "inactive"


def test_a_kill_during_a_rebalances_wait_wins(
        nimbus: Nimbus, zk_conf: dict[str, Any]) -> None:
    state = nimbus.state
    topology_on_one_worker(state, "active", num_workers=2)
    overrides = cli_overrides(zk_conf)
    assert main(["rebalance", "ids", "-w", "5", "-n", "1", *overrides]) == 0
    assert main(["kill", "ids", "-w", "30", *overrides]) == 0
    for now in (1000.0, 1010.0):  # past the rebalance's wait, not the kill's
        nimbus.monitor(now=now)
        record = state.get_topology(TID) or {}
        assert record["status"] == "killed" and record["num_workers"] == 2
        assert not record.get("rebalance")
    nimbus.monitor(now=1030.0)
    assert state.get_topology(TID) is None


def test_a_killed_topologys_name_is_taken_until_nimbus_removes_it(
        nimbus: Nimbus, zk_conf: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Storm's AlreadyAliveException: a killed topology still drains, and a second
    one of its name would share every command that takes the name."""
    state = nimbus.state
    topology_on_one_worker(state, "active")
    overrides = cli_overrides(zk_conf)
    assert main(["kill", "ids", "-w", "30", *overrides]) == 0
    nimbus.monitor(now=1000.0)
    capsys.readouterr()
    assert main(["submit", str(WORDCOUNT), "-n", "ids", *overrides]) == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert "topology 'ids' (ids-1) is killed and still draining: nimbus removes it in about" \
        in error and "storm-zmq kill ids -w 0" in error, error
    assert state.topologies() == [TID]  # nothing of the refused submit was stored
    for command in (["rebalance", "ids"], ["activate", "ids"]):  # only kill takes it
        assert main([*command, *overrides]) == 2
        # `list` shows it as killed: "no running topology named" read as a contradiction
        assert "topology 'ids' was killed and is being removed" in capsys.readouterr().err
    assert (state.get_topology(TID) or {})["status"] == "killed"
    # killed again with a shorter wait: it starts from this kill, as Storm's does
    assert main(["kill", "ids", "-w", "0", *overrides]) == 0
    assert capsys.readouterr().out.startswith("killed again 'ids' (ids-1): deactivated; "
                                              "nimbus removes it 0 s after")
    nimbus.monitor(now=1001.0)
    assert state.get_topology(TID) is None
    assert main(["submit", str(WORDCOUNT), "-n", "ids", *overrides]) == 0
    assert [(state.get_topology(t) or {}).get("status") for t in state.topologies()] == ["active"]


@pytest.mark.parametrize("command", [["kill", "ids"], ["rebalance", "ids"],
                                     ["submit", str(WORDCOUNT), "-n", "wc"]])
def test_a_request_without_nimbus_warns_that_nothing_happens_yet(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    topology_on_one_worker(make_state(), "active")
    assert main([*command, *cli_overrides(zk_conf)]) == 0  # the request is recorded
    assert capsys.readouterr().err.splitlines()[-1] == \
        "warning: no nimbus is running; nothing happens until one starts"


def test_a_request_with_a_leading_nimbus_has_no_warning(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    state = make_state()
    topology_on_one_worker(state, "active")
    with leading(state, "n1"):
        assert main(["kill", "ids", *cli_overrides(zk_conf)]) == 0
        assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize(("workers", "text"), [("1", "(1 worker)"), ("2", "(2 workers)")])
def test_submit_counts_its_workers_in_words(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str], workers: str, text: str) -> None:
    make_state()
    assert main(["submit", str(WORDCOUNT), "-w", workers, *cli_overrides(zk_conf)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(text)


@pytest.mark.parametrize("submit", [True, False], ids=["submit", "rebalance"])
def test_more_workers_than_the_cluster_has_slots_are_warned_about(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str], submit: bool) -> None:
    # nimbus assigns all of a topology's workers or none: 3 on 2 slots would wait
    def request(name: str) -> list[str]:
        if submit:
            return ["submit", str(WORDCOUNT), "-n", name, "-w", "3", *cli_overrides(zk_conf)]
        return ["rebalance", "ids", "-n", "3", *cli_overrides(zk_conf)]

    state = make_state()
    topology_on_one_worker(state, "active", executors=4)
    state.register_supervisor("s1", {"host": "h1", "ports": [6700, 6701], "time": 0})
    assert main(request("wc")) == 0
    name = "wc" if submit else "ids"
    assert (f"warning: {name!r} needs 3 worker slots and the cluster's supervisors have 2 in "
            "all") in capsys.readouterr().err
    state.register_supervisor("s2", {"host": "h2", "ports": [6700], "time": 0})
    assert main(request("wc2")) == 0
    assert "in all" not in capsys.readouterr().err  # (for submit: "ids" holds one, see below)


def test_submit_records_the_settings_the_topology_chose(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any]) -> None:
    # the supervisors let its storm.messaging.* choices win (cluster/supervisor.py)
    state = make_state()
    assert main(["submit", str(WORDCOUNT), "-o", "storm.messaging.transport=tcp",
                 *cli_overrides(zk_conf)]) == 0
    (topology_id,) = state.topologies()
    chosen = state.get_topology(topology_id)["conf_set"]
    assert "storm.messaging.transport" in chosen and "storm.zookeeper.port" in chosen
    # neither a default nor the submitter's storm.yaml (conf/storm.yaml sets it)
    assert "storm.messaging.zmq.hwm" not in chosen


def test_submit_stores_the_components_registrations_in_the_topologys(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any]) -> None:
    # as Storm's nimbus adds them (registrations.topology_registrations): every
    # worker reads the one list stored with the topology
    state = make_state()
    project = Path(__file__).parents[1] / "runtime" / "project"
    assert main(["submit", str(project / "topologies" / "value_types_per_component.py"),
                 *cli_overrides(zk_conf)]) == 0
    (topology_id,) = state.topologies()
    assert state.get_topology(topology_id)["conf"]["topology.kryo.register"] == [
        "testparts.components.Point",
        {"testparts.components.Money": "testparts.components.MoneySerializer"},
        "testparts.components.Side"]  # the components' first, in their order


def test_rebalance_options_have_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rebalance", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "-w SECS, --wait SECS seconds between deactivation and the reassignment" in help_text
    assert "-n WORKERS, --num-workers WORKERS the number of workers afterwards" in help_text


def test_submit_names_the_settings_the_supervisors_decide(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    # worked in local mode, silently unused in a cluster (each host's storm.yaml wins)
    make_state()
    assert main(["submit", str(WORDCOUNT), "-n", "wc1", "-o", "worker.shared.executor.thread=false",
                 "-o", "storm.messaging.zmq.hwm=64", *cli_overrides(zk_conf)]) == 0
    err = capsys.readouterr().err
    assert ("warning: 'wc1' sets worker.shared.executor.thread, which each supervisor takes "
            "from its own storm.yaml") in err
    assert "hwm" not in err  # a transport setting the topology chose is its workers'
    # the -o storm.zookeeper.* that reach the cluster are the submit's own: no warning
    assert main(["submit", str(WORDCOUNT), "-n", "wc2", *cli_overrides(zk_conf)]) == 0
    assert "supervisor takes" not in capsys.readouterr().err


def test_a_submit_that_other_topologies_leave_too_few_free_slots_is_warned_about(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    # enough slots in all, one held by "ids": nimbus waited, saying so in its own log only
    state = make_state()
    topology_on_one_worker(state, "active")  # s1: ports 6700 (held by ids) and 6701
    assert main(["submit", str(WORDCOUNT), "-n", "wc", "-w", "2", *cli_overrides(zk_conf)]) == 0
    err = capsys.readouterr().err
    assert ("warning: 'wc' needs 2 worker slots and 1 of the cluster's 2 are free: it waits "
            "until enough are") in err
    assert "in all" not in err  # not the too-few-in-all warning as well
    state.register_supervisor("s2", {"host": "h2", "ports": [6700], "time": 0})
    assert main(["submit", str(WORDCOUNT), "-n", "wc2", "-w", "2", *cli_overrides(zk_conf)]) == 0
    assert "are free" not in capsys.readouterr().err


def test_cluster_shows_the_supervisors_slots_used_and_free_and_the_leader(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    state = make_state()
    assert main(["cluster", *cli_overrides(zk_conf)]) == 0
    assert "no supervisor is registered" in capsys.readouterr().out
    topology_on_one_worker(state, "active")  # s1: 6700 held by ids, 6701 free
    state.register_supervisor("s2", {"host": "h2", "ports": [6700], "time": time.time(),
                                     "started": time.time() - 120})
    state.register_nimbus("n1", {"host": "h1", "time": time.time()})
    with leading(state, "n1"):
        assert main(["cluster", *cli_overrides(zk_conf)]) == 0
        out = capsys.readouterr().out
        assert main(["cluster", "--json", *cli_overrides(zk_conf)]) == 0
        data = json.loads(capsys.readouterr().out)
    assert out.splitlines()[0] == ("2 supervisors, 3 worker slots: 1 used, 2 free; "
                                   "1 topology; nimbus n1 leads")
    assert re.search(r"^\s+s1\s+h1\s+2\s+1\s+1\s+-\s+\S.*\s+ids: 6700$", out, re.M), out
    assert re.search(r"^\s+s2\s+h2\s+1\s+0\s+1\s+2m \d+s\s+\d+s\s+-$", out, re.M), out
    assert (data["slots"], data["used_slots"], data["free_slots"]) == (3, 1, 2)
    assert data["leader"] == "n1"
    assert [s["used"] for s in data["supervisor_list"]] == [{"6700": "ids"}, {}]


def test_monitor_names_what_it_cannot_find(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    topology_on_one_worker(make_state(), "active")
    assert main(["monitor", "nope", *cli_overrides(zk_conf)]) == 2
    assert "no running topology named 'nope' (running: ids)" in capsys.readouterr().err
    assert main(["monitor", "ids", "-m", "numbers", "-m", "count", *cli_overrides(zk_conf)]) == 2
    assert "topology ids has no component 'count' (it has numbers)" in capsys.readouterr().err
    for interval in ("0", "1e-9", "nan"):  # below a report a second it only spins
        assert main(["monitor", "ids", "-i", interval, *cli_overrides(zk_conf)]) == 2
        assert f"expected a number of seconds >= 1 (workers report once a second), got " \
            f"{interval!r}" in capsys.readouterr().err
    assert main(["monitor", "ids", "-n", "0", *cli_overrides(zk_conf)]) == 2  # was: for ever
    assert "expected a number of rounds >= 1, got '0'" in capsys.readouterr().err


def test_monitor_rounds_bound_its_time_while_no_worker_reports(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    """A cluster audit: `-n` counted printed lines only, so with no worker
    reporting `monitor NAME -n 2` never ended and a script waited for ever."""
    topology_on_one_worker(make_state(), "active")  # no worker reports
    started = time.monotonic()
    assert main(["monitor", "ids", "-i", "1", "-n", "1", *cli_overrides(zk_conf)]) == 0
    assert time.monotonic() - started < 10  # two intervals of 1 s, and a connect
    out, err = capsys.readouterr()
    assert out == "" and "no worker of 'ids' reports" in err


def test_monitor_ends_with_exit_0_when_its_topology_is_removed_as_logs_f_does(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any]) -> None:
    # (a cluster audit: `monitor` exited 1 there, `logs -f` 0)
    state = make_state()
    topology_on_one_worker(state, "active")  # no worker reports: it waits
    monitor = subprocess.Popen(
        [sys.executable, "-m", "storm_zmq.cli.main", "monitor", "ids", "-i", "1",
         *cli_overrides(zk_conf)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert monitor.stderr is not None
        assert "no worker of 'ids' reports" in monitor.stderr.readline()
        state.remove_topology(TID)
        _, errors = monitor.communicate(timeout=15)
    finally:
        monitor.kill()
    assert monitor.returncode == 0, errors
    assert "topology 'ids' was killed; stopping" in errors


def test_monitor_ends_on_ctrl_c_even_when_started_with_it_ignored(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any]) -> None:
    # as a shell without job control starts a background command: Python then never
    # raises KeyboardInterrupt, and monitor went on for 10 minutes
    topology_on_one_worker(make_state(), "active")  # no worker reports: it waits
    monitor = subprocess.Popen(
        ["sh", "-c", 'trap "" INT; exec "$@"', "sh", sys.executable, "-m", "storm_zmq.cli.main",
         "monitor", "ids", "-i", "1", *cli_overrides(zk_conf)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert monitor.stderr is not None
        assert "no worker of 'ids' reports" in monitor.stderr.readline()
    finally:
        monitor.send_signal(signal.SIGINT)
        _, errors = monitor.communicate(timeout=15)
    assert monitor.returncode == 130, errors


def test_set_log_level_records_requests_for_the_workers_and_resets_them(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    state = make_state()
    topology_on_one_worker(state, "active")
    assert main(["set_log_level", "ids", "-l", "ROOT=DEBUG:30", "-l", "a.b=warn",
                 *cli_overrides(zk_conf)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "'ids': logger ROOT at DEBUG for 30 s", "'ids': logger a.b at WARN until reset"]
    levels = state.get_topology(TID)["log_levels"]
    assert {name: (r["level"], r["timeout_secs"]) for name, r in levels.items()} == {
        "ROOT": ("DEBUG", 30.0), "a.b": ("WARN", 0.0)}
    assert main(["set_log_level", "ids", "-r", "a.b", "-r", "x.y", *cli_overrides(zk_conf)]) == 0
    assert capsys.readouterr().out == ("'ids': logger a.b back to the level it had\n"
                                       "'ids': logger x.y had no level set (nothing to reset)\n")
    assert set(state.get_topology(TID)["log_levels"]) == {"ROOT"}
    # a timed request long over is dropped with the next one
    record = state.get_topology(TID)
    record["log_levels"]["ROOT"]["requested"] -= 3600
    state.set_topology(TID, record)
    assert main(["set_log_level", "ids", "-l", "c=ERROR", *cli_overrides(zk_conf)]) == 0
    assert set(state.get_topology(TID)["log_levels"]) == {"c"}


@pytest.mark.parametrize(("args", "says"), [
    ([], "set_log_level needs -l LOGGER=LEVEL[:SECS] or -r LOGGER"),
    (["-l", "ROOT=LOUD"], "-l 'ROOT=LOUD': unknown level 'LOUD'"),
])
def test_set_log_level_refuses_what_it_cannot_do(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    topology_on_one_worker(make_state(), "active")
    assert main(["set_log_level", "ids", *args, *cli_overrides(zk_conf)]) == 2
    assert says in capsys.readouterr().err


def test_a_kill_between_nimbus_reading_and_ending_a_rebalance_is_kept_and_nothing_reassigned(
        nimbus: Nimbus, zk_conf: dict[str, Any]) -> None:
    state = nimbus.state
    topology_on_one_worker(state, "active")
    assert main(["rebalance", "ids", "-w", "0", "-n", "2", *cli_overrides(zk_conf)]) == 0
    update = state.update_topology

    def kill_first(topology_id: str, change: Any, attempts: int = 10) -> Any:
        # the user's kill lands after this round read the record, before it writes
        assert main(["kill", "ids", "-w", "30", *cli_overrides(zk_conf)]) == 0
        return update(topology_id, change, attempts)

    state.update_topology = kill_first  # type: ignore[method-assign]
    try:
        nimbus.monitor(now=1000.0)
    finally:
        state.update_topology = update  # type: ignore[method-assign]
    record = state.get_topology(TID) or {}
    assert (record["status"], record.get("rebalance")) == ("killed", False)  # not undone
    assert len((state.get_assignment(TID) or {})["slots"]) == 1  # not reassigned


@pytest.mark.parametrize("option", ["relay", "relay=", "relay=two", "=3", "relay=²"])
def test_a_malformed_executors_option_is_one_error_line(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str], option: str) -> None:
    topology_on_one_worker(make_state(), "active")
    assert main(["rebalance", "ids", "-e", option, *cli_overrides(zk_conf)]) == 2
    assert f"-e {option}: expected COMPONENT=N" in capsys.readouterr().err


def test_rebalance_e_records_the_executors_for_nimbus(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    state = make_state()
    topology_on_one_worker(state, "active")
    assert main(["rebalance", "ids", "-e", "numbers=1", *cli_overrides(zk_conf)]) == 0
    assert state.get_topology(TID)["rebalance_components"] == {"numbers": 1}
    assert ", numbers on 1 executor(s):" in capsys.readouterr().out
    assert main(["rebalance", "ids", "-e", "numbers=3", *cli_overrides(zk_conf)]) == 2
    assert "numbers: executors between 1 and its 2 task(s), got 3" in capsys.readouterr().err


def test_list_shows_how_many_workers_are_assigned_when_not_all_are(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    # A cluster audit: "active 3" for a topology waiting for slots, where Storm's
    # list shows the workers assigned
    state = make_state()
    topology_on_one_worker(state, "active", num_workers=3)  # one of its three assigned
    state.update_topology(TID, lambda r: {**r, "launch_time": time.time()})
    assert main(["list", *cli_overrides(zk_conf)]) == 0
    header, row, legend = capsys.readouterr().out.splitlines()
    assert row.split()[:3] == ["ids", "active", "1/3"]
    assert legend.startswith("workers A/N: A assigned of the N it asks for")
    state.update_topology(TID, lambda r: {**r, "num_workers": 1})
    assert main(["list", *cli_overrides(zk_conf)]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert row.split()[:3] == ["ids", "active", "1"]
