"""`storm-zmq logs` and the supervisors' log viewer.

Unit tests of the pure parts (record filter, follow bookkeeping, tails), the log
viewer as a real HTTP server on a temporary directory (including path traversal),
and a real cluster: ZooKeeper, nimbus and supervisors as processes, a submitted
topology, and `storm-zmq logs` reading its workers' logs over HTTP.
"""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.cli.logs_cmd import (
    REFRESH_INTERVAL,
    FollowState,
    LogPrinter,
    RecordFilter,
    tail_lines,
    worker_logs,
)
from storm_zmq.cli.main import main
from storm_zmq.cluster import ClusterState
from storm_zmq.cluster.logviewer import MAX_READ, LogViewer
from tests.cluster.test_cluster import TOPOLOGY, Cluster, wait_for
from tests.metrics.browser import PageValues, dump_dom
from tests.zk_fixtures import cli_overrides, free_port

T = "2024-05-01 12:00:0"


# ----------------------------------------------------------------- pure parts

def test_record_filter_keeps_records_naming_the_component_with_their_continuations() -> None:
    keep = RecordFilter("count")
    lines = [
        "continuation of a record cut by the tail",
        f"{T}1 t worker-0 INFO storm_zmq.component.count: counted 10",
        f"{T}2 t worker-0 ERROR storm_zmq.runtime.executor: component 'count' task 3 failed:",
        "Traceback (most recent call last):",
        "  ValueError: boom",
        f"{T}3 t worker-0 INFO storm_zmq.component.counter: not this one",
        f"{T}4 t worker-0 INFO storm_zmq.component.split: split",
        "  its traceback",
        f"{T}5 t worker-0 INFO storm_zmq.runtime.executor: emit component=count task=4",
        f"{T}6 t worker-0 INFO STDOUT [count:3]: printed by the component",
        f"{T}7 t worker-0 INFO STDOUT [counter:5]: printed by another",
    ]
    assert [line for line in lines if keep(line)] == [lines[1], lines[2], lines[3], lines[4],
                                                      lines[8], lines[9]]
    everything = RecordFilter(None)
    assert all(everything(line) for line in lines)


def test_follow_state_prints_complete_lines_and_notices_rotation() -> None:
    state = FollowState()
    assert state.feed(0, b"one\ntw") == (["one"], False)
    assert state.feed(6, b"o\nthree\n") == (["two", "three"], False)
    assert state.offset == 14
    # the file was rotated: the viewer restarted at 0
    assert state.feed(0, b"fresh\n") == (["fresh"], True)
    assert state.offset == 6


def test_tail_lines_drops_the_cut_first_line_and_keeps_the_last_n() -> None:
    assert tail_lines(0, b"a\nb\nc\n", 2) == ["b", "c"]
    assert tail_lines(100, b"ut line\nb\nc\n", 10) == ["b", "c"]
    assert tail_lines(0, b"a\nb", 10) == ["a", "b"]
    assert tail_lines(0, b"a\n", 0) == []


def test_worker_logs_from_an_assignment() -> None:
    assignment = {
        "slots": [["s1", "10.0.0.1", 6700], ["s2", "10.0.0.2", 6701]],
        "assignment": {"executors": [[0, "count", [1], 0], [1, "count", [2], 1],
                                     [2, "split", [3], 0], [3, "__acker", [4], 1]]},
    }
    supervisors = {"s1": {"host": "10.0.0.1", "logviewer_port": 8000,
                          "logs_dir": "/var/storm/logs"},
                   "s2": {"host": "10.0.0.2", "logviewer_port": None, "logs_dir": "/x/logs"}}
    first, second = worker_logs("wc-1", assignment, supervisors)
    assert (first.label, first.file, first.components, first.url) == (
        "10.0.0.1:6700", "wc-1-6700.log", ["count", "split"], "http://10.0.0.1:8000")
    assert (second.components, second.url) == (["__acker", "count"], None)
    assert second.where() == "/x/logs/wc-1-6701.log on host 10.0.0.2"


def test_a_worker_whose_supervisor_is_not_registered_is_said_so_not_a_viewer_turned_off() -> None:
    # A recovery audit: a stopped supervisor's workers run on, and `logs` said its
    # viewer was off (logviewer.port: 0) and pointed at "<storm.local.dir>/logs"
    assignment = {"slots": [["s1", "10.0.0.1", 6700], ["gone", "10.0.0.2", 6700]],
                  "assignment": {"executors": [[0, "count", [1], 0], [1, "count", [2], 1]]}}
    supervisors = {"s1": {"host": "10.0.0.1", "logviewer_port": None, "logs_dir": "/x/logs"}}
    err = io.StringIO()
    printer = LogPrinter(io.StringIO(), err, None, 5)
    for worker in worker_logs("wc-1", assignment, supervisors):
        printer.tail(worker)
    assert err.getvalue().splitlines() == [
        "10.0.0.1:6700: the log viewer of supervisor s1 is off (logviewer.port: 0, or its port "
        "was taken); the log is /x/logs/wc-1-6700.log on host 10.0.0.1",
        "10.0.0.2:6700: its supervisor gone is not registered (stopped, or its ZooKeeper "
        "session expired), so neither is its log viewer; the worker runs on without it; "
        "the log is wc-1-6700.log in logs/ under its supervisor's storm.local.dir on host 10.0.0.2",
    ]


# ------------------------------------------------------------------ log viewer

@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "topo-1-6700.log").write_text("".join(f"line {i}\n" for i in range(1000)))
    (logs / "topo-1-6700.out").write_text("")
    (logs / "other-2-6701.log").write_text("other\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET CONTENT\n")
    (logs / "link.log").symlink_to(tmp_path / "secret.txt")
    server = LogViewer(logs, 0, host="127.0.0.1").start()
    yield f"http://127.0.0.1:{server.port}", logs
    server.stop()


def get(url: str) -> tuple[int, bytes, Any]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def test_viewer_lists_a_topologys_files(viewer: tuple[str, Path]) -> None:
    url, _ = viewer
    status, body, _ = get(f"{url}/api/v1/logs?topology=topo-1")
    assert status == 200
    assert [(f["name"], f["size"]) for f in json.loads(body)] == [
        ("topo-1-6700.log", sum(len(f"line {i}\n") for i in range(1000))),
        ("topo-1-6700.out", 0)]
    names = [f["name"] for f in json.loads(get(f"{url}/api/v1/logs")[1])]
    assert "other-2-6701.log" in names and "link.log" not in names  # leads outside


def test_viewer_serves_tails_and_ranges_for_following(viewer: tuple[str, Path]) -> None:
    url, logs = viewer
    size = (logs / "topo-1-6700.log").stat().st_size
    status, body, headers = get(f"{url}/api/v1/log?file=topo-1-6700.log&length=16")
    assert status == 200 and body == b"ne 998\nline 999\n"
    assert (headers["X-Log-Start"], headers["X-Log-End"]) == (str(size - 16), str(size))
    status, body, headers = get(f"{url}/api/v1/log?file=topo-1-6700.log&start=0&length=14")
    assert body == b"line 0\nline 1\n" and headers["X-Log-End"] == "14"
    # nothing new at the end; a start beyond the end (rotated) reads from 0
    assert get(f"{url}/api/v1/log?file=topo-1-6700.log&start={size}")[1] == b""
    status, body, headers = get(f"{url}/api/v1/log?file=other-2-6701.log&start=500")
    assert (body, headers["X-Log-Start"]) == (b"other\n", "0")
    assert int(get(f"{url}/api/v1/log?file=topo-1-6700.log&length={10 * MAX_READ}")[2][
        "Content-Length"]) <= MAX_READ


@pytest.mark.parametrize("name", [
    "../secret.txt", "..%2Fsecret.txt", "%2e%2e/secret.txt", "logs/../../secret.txt",
    "/etc/passwd", "%2Fetc%2Fpasswd", "..", ".", "link.log", "..\\secret.txt",
])
def test_viewer_refuses_paths_leading_out_of_the_logs_directory(
        viewer: tuple[str, Path], name: str) -> None:
    url, _ = viewer
    status, body, _ = get(f"{url}/api/v1/log?file={name}")
    assert status == 403, (name, body)
    assert b"TOP SECRET" not in body and b"root:" not in body


def test_viewer_answers_bad_requests_clearly(viewer: tuple[str, Path]) -> None:
    url, _ = viewer
    assert get(f"{url}/api/v1/log?file=nope.log")[0] == 404
    assert get(f"{url}/api/v1/log")[0] == 400
    status, body, _ = get(f"{url}/api/v1/log?file=topo-1-6700.log&start=-5")
    assert status == 400 and b"start must be an integer >= 0" in body
    assert get(f"{url}/../../etc/passwd")[0] == 404


# ------------------------------------------------------ a registered topology

@pytest.fixture
def topo(viewer: tuple[str, Path], make_state: Any,
         zk_conf: dict[str, Any], tmp_path: Path) -> tuple[ClusterState, Path]:
    """Topology "topo" (topo-1) in ZooKeeper with one worker, whose supervisor's log
    viewer serves `viewer`'s directory; and a config file to reach it."""
    url, logs = viewer
    state = make_state()
    state.set_topology("topo-1", {"name": "topo", "status": "active", "num_workers": 1,
                                  "conf": {"topology.message.timeout.secs": 30},
                                  "components": {"count": [1, 1]}, "launch_time": 0})
    state.register_supervisor("s1", {"host": "127.0.0.1", "ports": [6700],
                                     "logviewer_port": int(url.rsplit(":", 1)[1]),
                                     "logs_dir": str(logs)})
    state.set_assignment("topo-1", {"slots": [["s1", "127.0.0.1", 6700]],
                                    "assignment": {"executors": [[0, "count", [1], 0]]},
                                    "launched": [0]})
    conf_file = tmp_path / "storm.yaml"
    conf_file.write_text(json.dumps(zk_conf))  # JSON is YAML
    return state, conf_file


def logs_process(conf_file: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "storm_zmq.cli.main", "logs", "topo", *args,
         "-c", str(conf_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=conf_file.parent)


def test_logs_reads_a_workers_log_through_its_viewer(topo: tuple[ClusterState, Path]) -> None:
    _, conf_file = topo
    out, err = logs_process(conf_file, "-n", "2").communicate(timeout=60)
    assert out == "127.0.0.1:6700 line 998\n127.0.0.1:6700 line 999\n" and err == ""


def test_a_closed_stdout_ends_logs_quietly(topo: tuple[ClusterState, Path]) -> None:
    """`logs topo -n 200 | head -1`: the reader gone, no BrokenPipeError traceback."""
    _, conf_file = topo
    process = logs_process(conf_file, "-n", "200")
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before it writes anything: every write fails
    errors = process.stderr.read()
    assert process.wait(timeout=60) == 0, errors
    assert errors == ""


@pytest.mark.parametrize("how", ["killed", "removed"])
def test_following_ends_when_the_topology_is_killed(
        topo: tuple[ClusterState, Path], zk_conf: dict[str, Any], how: str) -> None:
    state, conf_file = topo
    follow = logs_process(conf_file, "-f", "-n", "1")
    try:
        assert follow.stdout is not None
        assert follow.stdout.readline() == "127.0.0.1:6700 line 999\n"  # following now
        if how == "killed":
            assert main(["kill", "topo", "-w", "30", *cli_overrides(zk_conf)]) == 0
        else:  # gone already, as after the kill's wait
            state.remove_topology("topo-1")
        out, err = follow.communicate(timeout=REFRESH_INTERVAL + 15)
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.communicate()
    assert follow.returncode == 0 and out == ""
    assert err == "topology 'topo' was killed; stopping\n"
    if how == "killed":  # draining until nimbus removes it: its logs still show
        shown = logs_process(conf_file, "-f", "-n", "1")
        out, err = shown.communicate(timeout=30)
        assert (shown.returncode, out) == (0, "127.0.0.1:6700 line 999\n")
        assert err == "topology 'topo' is killed: showing its logs, not following\n"


# ------------------------------------------------------------- a real cluster

def logs_cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return cluster.cli("logs", *args, check=False)


@pytest.mark.slow
def test_logs_shows_the_workers_logs_of_a_submitted_topology(
        tmp_path: Path, zk_conf: dict[str, Any]) -> None:  # noqa: F811 - fixture
    cluster = Cluster(tmp_path, zk_conf)
    try:
        cluster.start("nimbus", "nimbus")
        viewer_port = free_port()
        # both registered before the submit, so that each gets one of the two workers
        cluster.supervisor("s1", "-o", f"logviewer.port={viewer_port}")
        # s2's viewer is off: logs says where its workers' files are instead
        cluster.supervisor("s2", "-o", "logviewer.port=0", slots=1)
        submit = cluster.cli("submit", str(TOPOLOGY), "-w", "2", "-o", "test.count=1000000",
                             "-o", "test.rate=20", "-o", f"test.output_dir={cluster.output}",
                             "-o", "topology.debug=true", "--wait", "60")
        assert "submitted topology 'ClusterIds'" in submit.stdout
        progress = submit.stderr.splitlines()
        assert progress[0] == f"packaging {TOPOLOGY} ..."
        assert re.fullmatch(r"packaged \d+ files, [\d,]+ bytes", progress[1])
        assert re.fullmatch(r"uploaded [\d,]+ bytes in [\d.]+ s", progress[3])
        assert progress[-1] == "waiting for workers: 2/2 ready"
        wait_for(lambda: "log viewer serving" in cluster.log("s1"), "s1's log viewer")

        def twenty_lines() -> subprocess.CompletedProcess[str] | None:
            result = logs_cli(cluster, "ClusterIds", "--lines", "20")
            return result if len(result.stdout.splitlines()) >= 20 else None

        result = wait_for(twenty_lines, "worker log lines through the viewer")
        lines = result.stdout.splitlines()
        assert len(lines) == 20  # --lines, from s1's one worker (s2's is not reachable)
        prefixes = {line.split()[0] for line in lines}
        assert len(prefixes) == 1
        s1_worker = next(iter(prefixes))
        assert s1_worker.startswith("127.0.0.1:")
        assert (tmp_path / "s1" / "logs" / f"{submitted_id(cluster)}-{s1_worker.split(':')[1]}.log"
                ).is_file()
        s2_file = next((tmp_path / "s2" / "logs").glob("ClusterIds-*.log"))
        assert (f"the log is {tmp_path / 's2' / 'logs'}/{s2_file.name} on host 127.0.0.1"
                in result.stderr)
        everything = logs_cli(cluster, "ClusterIds", "--lines", "1000000").stdout
        assert f"starting on {s1_worker} (pid " in everything and "components: " in everything
        assert any((tmp_path / "s1" / "logs").glob("ClusterIds-*.out"))  # raw output apart

        # the web UI links each worker to the end of its log on its supervisor's viewer
        cluster.start("ui", "ui", "--port", "0")
        ui = wait_for(lambda: next((line.split()[3] for line in cluster.log("ui").splitlines()
                                    if line.startswith("storm-zmq UI at ")), None), "the UI")
        with urllib.request.urlopen(ui + "api/topology/ClusterIds", timeout=10) as response:
            workers = {w["key"]: w["log_url"] for w in json.load(response)["workers"]}
        s2_worker = next(key for key in workers if key != s1_worker)
        assert workers[s2_worker] is None  # s2's viewer is off
        with urllib.request.urlopen(workers[s1_worker], timeout=10) as response:
            assert f"starting on {s1_worker} (pid " in response.read().decode()
        page = PageValues(dump_dom(ui + "?topology=ClusterIds", 2500))
        assert page.log_links == {s1_worker: workers[s1_worker]}

        relay = logs_cli(cluster, "ClusterIds", "--component", "relay", "--lines", "30")
        assert relay.returncode == 0, relay.stderr
        relay_lines = relay.stdout.splitlines()
        assert relay_lines and all("relay" in line for line in relay_lines)
        unknown = logs_cli(cluster, "ClusterIds", "--component", "nope")
        assert unknown.returncode == 2 and "no component 'nope'" in unknown.stderr

        # started with SIGINT ignored, as a shell without job control starts a
        # background command: Ctrl-C must end the follow all the same
        follow = subprocess.Popen(
            ["sh", "-c", 'trap "" INT; exec "$@"', "sh", sys.executable, "-m",
             "storm_zmq.cli.main", "logs", "ClusterIds", "-f", "--lines", "0",
             "-c", str(cluster.conf_file)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        try:
            assert follow.stdout is not None
            first = follow.stdout.readline()  # new lines arrive while following
            assert first.startswith("127.0.0.1:") and "INFO" in first
        finally:
            follow.send_signal(signal.SIGINT)
            # communicate, not wait: the follower keeps printing until it has seen
            # the signal, and a pipe nobody drains would block it
            _, errors = follow.communicate(timeout=15)
            assert follow.returncode == 0, errors
        missing = logs_cli(cluster, "NoSuchTopology")
        assert missing.returncode == 2 and "no running topology named" in missing.stderr

        # Storm's set_log_level: the emits topology.debug logs (INFO) stop while their
        # logger is at WARN, for 2 s, and come back once the worker puts it back
        log_file = (tmp_path / "s1" / "logs" /
                    f"{submitted_id(cluster)}-{s1_worker.split(':')[1]}.log")
        # (a worker that sees the request late says how much of the 2 s is left)
        set_at = re.compile(r"set_log_level: logger storm_zmq\.runtime\.executor at WARN for "
                            r"(2 s|[\d.]+ s, what is left of 2)\n")
        back_at = "set_log_level: logger storm_zmq.runtime.executor back to its parent (time is up)"
        cluster.cli("set_log_level", "ClusterIds", "-l", "storm_zmq.runtime.executor=WARN:2")

        def emitting_again() -> str | None:
            text = log_file.read_text()
            after = text.split(back_at, 1)[1] if back_at in text else ""
            return text if after.count("emit component=") >= 5 else None

        text = wait_for(emitting_again, "the level set, put back and the emits logged again")
        before, _, rest = set_at.split(text, 1)
        during = rest.split(back_at, 1)[0]
        assert before.count("emit component=") >= 20
        assert during.count("emit component=") <= 2, during  # at most one in flight
    finally:
        cluster.stop_all()


def submitted_id(cluster: Cluster) -> str:
    rows = [line.split() for line in cluster.cli("list").stdout.splitlines()]
    return next(row[-1] for row in rows if row[0] == "ClusterIds")
