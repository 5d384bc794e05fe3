"""The web UI: the HTTP server over fixed reports, the page in headless Chromium, and
end to end on real runs: `storm-zmq run --ui` (local mode) and `storm-zmq ui` over a
real cluster, whose page must show what `storm-zmq stats --json` prints."""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from storm_zmq.cluster import ClusterState
from storm_zmq.metrics.sources import LocalSource, SourceUnavailable, UnknownTopology
from storm_zmq.metrics.summary import ACKER, ComponentLayout, Edge, TopologyLayout, TopologySummary
from storm_zmq.metrics.ui import MAX_CONNECTIONS, MAX_REQUESTS, MetricsServer
from tests.cluster.test_cluster import Cluster, wait_for
from tests.metrics.browser import PageValues, dump_dom
from tests.zk_fixtures import ZooKeeperServer

PROJECT = Path(__file__).parents[1] / "runtime" / "project"
LAYOUT = TopologyLayout(
    (ComponentLayout("words", "spout", 1, 1), ComponentLayout("count", "bolt", 2, 2)),
    (Edge("words", "count", "default", "fields(word)"),),
)
NAME = "word count/ü"  # a name that needs URL encoding


def fixed_source() -> LocalSource:
    now = time.time()
    report = {
        "worker": 0, "host": "127.0.0.1", "port": 6700, "time": now, "pid": 1234,
        "uptime_secs": 12.0, "rss_bytes": 40 << 20, "open_fds": 25,
        "components": {
            "words": {"kind": "spout", "emitted": 1234567, "transferred": 1234567,
                      "acked": 1234000, "failed": 3, "pending": 564,
                      "complete_ms_total": 2469.0, "complete_samples": 1234},
            "count": {"kind": "bolt", "executed": 1234567, "acked": 1234567,
                      "execute_ms_total": 61.5, "execute_samples": 123, "capacity": 0.125,
                      "queued": 17},
            ACKER: {"kind": "acker", "executed": 2469134},
        },
        "peers": {"1": {"frames_sent": 9, "bytes_sent": 9000, "reconnects": 2}},
        "balance": {"figure": 0.875, "weight": 0.5},
        "errors": [{"component": "count", "task": 2, "time": now,
                    "text": "ValueError: <b>not bold</b> & co"}],
    }
    source = LocalSource(LAYOUT, NAME, num_workers=1)
    source.attach(SimpleNamespace(latest={0: report}, started_at=time.monotonic() - 5,
                                  stopped_at=None))
    return source


def get(url: str, timeout: float = 10) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


@pytest.fixture
def server() -> Any:
    with MetricsServer(fixed_source(), "127.0.0.1", 0) as running:
        yield running


def test_the_server_serves_page_api_and_metrics(server: MetricsServer) -> None:
    status, kind, body = get(server.url)
    assert status == 200 and kind.startswith("text/html") and b"ui.js" in body
    for asset in ("ui.js", "ui.css"):
        assert get(server.url + asset)[0] == 200
    status, kind, body = get(server.url + "api/topologies")
    assert status == 200 and kind == "application/json"
    (row,) = json.loads(body)
    assert (row["name"], row["status"], row["num_workers"]) == (NAME, "active", 1)
    status, _, body = get(server.url + "api/topology/" + urllib.request.quote(NAME, safe=""))
    data = json.loads(body)
    assert status == 200 and data["components"][0]["emitted"] == 1234567
    status, kind, body = get(server.url + "metrics")
    assert status == 200 and kind == "text/plain; version=0.0.4; charset=utf-8"
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    emitted = [s for s in families["storm_zmq_component_emitted"].samples
               if s.labels["component"] == "words"]
    assert emitted[0].value == 1234567 and emitted[0].labels["topology"] == NAME


def test_unknown_topologies_and_paths_are_404_with_a_message(server: MetricsServer) -> None:
    status, kind, body = get(server.url + "api/topology/nope")
    assert status == 404 and kind == "application/json"
    assert json.loads(body)["error"] == f"no running topology named 'nope' (running: {NAME})"
    status, _, body = get(server.url + "etc/passwd")
    assert status == 404 and "no page" in json.loads(body)["error"]


class BrokenSource:
    def topologies(self) -> list[dict[str, Any]]:
        raise RuntimeError("ZooKeeper at 127.0.0.1:1 did not answer")

    def summary(self, name: str) -> TopologySummary:
        raise UnknownTopology(name, [])


def test_a_failing_source_is_a_503_the_page_shows() -> None:
    with MetricsServer(BrokenSource(), "127.0.0.1", 0) as server:
        status, _, body = get(server.url + "api/topologies")
        assert status == 503 and "did not answer" in json.loads(body)["error"]
        assert get(server.url + "metrics")[0] == 503
        page = PageValues(dump_dom(server.url, 1500))
        assert "did not answer" in page.body["data-error"]
        assert page.body["data-refreshes"] == "0"


class SlowSource:
    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def topologies(self) -> list[dict[str, Any]]:
        self.entered.release()
        self.release.wait(30)
        return []

    def summary(self, name: str) -> TopologySummary:
        raise UnknownTopology(name, [])


def test_requests_beyond_the_bound_are_refused_at_once() -> None:
    source = SlowSource()
    with MetricsServer(source, "127.0.0.1", 0, deadline=30) as server:
        results: list[int] = []
        threads = [threading.Thread(target=lambda: results.append(
            get(server.url + "api/topologies", timeout=40)[0])) for _ in range(MAX_REQUESTS)]
        for thread in threads:
            thread.start()
        # every slot taken: one request in the source, the others waiting their turn
        assert source.entered.acquire(timeout=10)
        wait_for(lambda: server._slots._value == 0, "every slot taken", timeout=10)  # type: ignore[attr-defined]
        started = time.monotonic()
        assert get(server.url + "api/topologies")[0] == 503
        assert time.monotonic() - started < 5
        source.release.set()
        for thread in threads:
            thread.join(10)
        assert results == [200] * MAX_REQUESTS
        assert get(server.url + "api/topologies")[0] == 200  # slots given back


class UnavailableSource(SlowSource):
    def __init__(self) -> None:
        super().__init__()
        self.down = True

    def check(self) -> None:
        if self.down:
            raise SourceUnavailable("ZooKeeper at 127.0.0.1:1 is unreachable (not connected)")


def test_a_source_that_cannot_answer_now_is_a_503_at_once() -> None:
    source = UnavailableSource()
    source.release.set()
    with MetricsServer(source, "127.0.0.1", 0, deadline=30) as server:
        for path in ("api/topologies", "api/topology/x", "metrics"):
            started = time.monotonic()
            status, kind, body = get(server.url + path)
            assert status == 503 and kind == "application/json"
            assert "ZooKeeper at 127.0.0.1:1 is unreachable" in json.loads(body)["error"]
            assert time.monotonic() - started < 2
        assert not source.entered.acquire(blocking=False), "the source was read"
        assert get(server.url)[0] == 200  # the page itself
        source.down = False
        assert get(server.url + "api/topologies")[0] == 200


def test_a_read_that_hangs_is_a_503_within_the_deadline() -> None:
    source = SlowSource()
    source.activity = "reading ZooKeeper at 127.0.0.1:1"  # type: ignore[attr-defined]
    with MetricsServer(source, "127.0.0.1", 0, deadline=1) as server:
        started = time.monotonic()
        status, _, body = get(server.url + "api/topologies")
        took = time.monotonic() - started
        assert status == 503 and 0.9 < took < 5, took
        assert json.loads(body)["error"] == ("no answer within 1 s (the UI's deadline per "
                                             "request): still reading ZooKeeper at 127.0.0.1:1")
        time.sleep(0.2)  # the read has now run over the deadline: refused without waiting
        started = time.monotonic()
        status, _, body = get(server.url + "metrics")
        assert status == 503 and time.monotonic() - started < 0.9  # not the 1 s deadline
        assert json.loads(body)["error"].startswith("no answer for 1 s: still reading ZooKeeper")
        source.release.set()  # the read ends (its answer dropped): served again
        wait_for(lambda: get(server.url + "api/topologies")[0] == 200, "answers again", timeout=10)


def test_connections_beyond_the_bound_get_no_thread_and_are_closed() -> None:
    # Clients that connect and send nothing (each would hold a thread for the
    # handler's timeout): the first MAX_CONNECTIONS are held, the next is closed.
    with MetricsServer(fixed_source(), "127.0.0.1", 0) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(MAX_CONNECTIONS)]
        try:
            # accepted in order: by the time this one is, every idle one holds a thread
            extra = socket.create_connection(("127.0.0.1", server.port))
            extra.settimeout(5)  # (the handler's own timeout is 10 s)
            assert extra.recv(1) == b""  # closed by the server, not given a thread
            extra.close()
        finally:
            for sock in idle:
                sock.close()
        # the threads are given back once their connections close (until then a
        # new connection may still be closed at accept)
        deadline = time.monotonic() + 10
        while True:
            try:
                if get(server.url + "api/topologies")[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError, http.client.HTTPException):
                pass
            assert time.monotonic() < deadline, "the connection threads were never given back"
            time.sleep(0.05)


def test_a_busy_port_fails_when_binding(server: MetricsServer) -> None:
    with pytest.raises(OSError):
        MetricsServer(fixed_source(), "127.0.0.1", server.port)


def test_the_page_shows_the_apis_numbers_the_graph_and_the_errors(server: MetricsServer) -> None:
    page = PageValues(dump_dom(server.url, 3000))
    assert int(page.body["data-refreshes"]) >= 2  # it refreshes by itself
    assert page.body["data-error"] == ""
    api = json.loads(get(server.url + "api/topology/" + urllib.request.quote(NAME, safe=""))[2])
    for component in api["components"]:
        scope = ("component", component["name"])
        for metric in ("emitted", "transferred", "executed", "acked", "failed", "pending",
                       "queued", "tasks", "capacity", "execute_latency_ms",
                       "process_latency_ms", "complete_latency_ms"):
            assert page.number(scope, metric) == component[metric], (scope, metric)
    assert page.texts[(("component", "words"), "emitted")] == "1,234,567"
    assert page.texts[(("component", "count"), "execute_latency_ms")] == "0.500"
    assert page.texts[(("component", "words"), "complete_latency_ms")] == "2.001"
    assert page.texts[(("component", "words"), "capacity")] == "-"
    assert page.number(("topology", "topology"), "acked") == 1234000
    assert page.number(("worker", "127.0.0.1:6700"), "rss_bytes") == 40 << 20
    assert page.number(("worker", "127.0.0.1:6700"), "reconnects") == 2
    assert page.texts[(("worker", "127.0.0.1:6700"), "rss_bytes")] == "40.0 MiB"
    assert page.number(("worker", "127.0.0.1:6700"), "cpu_figure") == 0.875
    assert page.texts[(("worker", "127.0.0.1:6700"), "shuffle_weight")] == "0.500"
    assert page.nodes == ["words", "count"]  # the acker is not drawn
    assert page.edges == ["words->count"]
    # the error's text is text: no markup from a worker becomes markup on the page
    assert "".join(page.errors["count"]) == "ValueError: <b>not bold</b> & co"


# ---------------------------------------------------------------- real runs


def compare_counters(before: dict[str, Any], page: PageValues, after: dict[str, Any]) -> None:
    """Every counter the page shows lies between two API reads around it."""
    for b, a in zip(before["components"], after["components"], strict=True):
        scope = ("component", b["name"])
        for metric in ("emitted", "transferred", "executed", "acked"):
            shown = page.number(scope, metric)
            assert shown is not None and b[metric] <= shown <= a[metric], (scope, metric)


@pytest.mark.slow
def test_run_with_ui_serves_the_local_run(tmp_path: Path) -> None:
    from tests.messaging.conftest import free_port

    ports = [free_port(), free_port()]
    command = [sys.executable, "-m", "storm_zmq.cli.main", "run",
               str(PROJECT / "topologies" / "wordcount.py"), "-w", "2", "-t", "60", "-q",
               "--ui", "--ui-port", "0", "-o", "test.count=100000000", "-o", "test.rate=300",
               "-o", f"test.output_dir={tmp_path}", "-o", f"supervisor.slots.ports={ports}"]
    with ExitStack() as stack:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, cwd=tmp_path)
        stack.callback(process.wait, 30)
        stack.callback(process.send_signal, signal.SIGINT)  # Ctrl-C: a graceful stop
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("storm-zmq UI at http://127.0.0.1:"), line
        url = line.split()[3]
        api = url + "api/topology/FiniteWordCount"
        deadline = time.monotonic() + 60
        while True:
            status, _, body = get(api)
            data = json.loads(body)
            if status == 200 and data["status"] == "active" and \
                    data["components"][2]["executed"] > 0:
                break
            assert time.monotonic() < deadline, f"no counts on {api}: {data}"
            time.sleep(0.2)
        assert [c["name"] for c in data["components"]] == ["sentences", "split", "count", ACKER]
        assert data["totals"]["workers_reporting"] == 2
        before = json.loads(get(api)[2])
        html = dump_dom(url, 1500)
        page = PageValues(html)
        assert '<div id="actions" hidden="">' in html  # a local run takes no actions
        after = json.loads(get(api)[2])
        compare_counters(before, page, after)
        assert page.edges == ["sentences->split", "split->count"]
        assert sorted(k[0][1] for k in page.values if k[1] == "rss_bytes") == \
            sorted(w["key"] for w in after["workers"])
        assert all(page.number(("worker", w["key"]), "rss_bytes") > 0 for w in after["workers"])
        metrics = get(url + "metrics")[2].decode()
        assert 'storm_zmq_component_executed_total{topology="FiniteWordCount",component="count"' \
            in metrics
        assert "storm_zmq_cluster" not in metrics  # a local run has no cluster ...
        status, _, body = get(url + "api/cluster")
        assert (status, json.loads(body)) == (404, {"error": "a local run has no cluster"})
        assert not any(k[0][0] == "cluster" for k in page.values)  # ... nor the page


def test_run_with_ui_on_a_busy_port_fails_before_any_worker_starts(tmp_path: Path) -> None:
    with MetricsServer(fixed_source(), "127.0.0.1", 0) as busy:
        result = subprocess.run(
            [sys.executable, "-m", "storm_zmq.cli.main", "run",
             str(PROJECT / "topologies" / "wordcount.py"), "--ui", "--ui-port", str(busy.port),
             "-o", "test.count=10", "-o", f"test.output_dir={tmp_path}"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"storm-zmq: error: cannot serve the UI on 127.0.0.1:{busy.port}: " \
        "Address already in use (ui.host / ui.port, --ui-port)\n"
    assert "worker(s) on port(s)" not in result.stdout


COMPARED = ("emitted", "transferred", "executed", "acked", "failed", "pending", "queued",
            "tasks", "capacity", "execute_latency_ms", "process_latency_ms",
            "complete_latency_ms")


def stats_json(cluster: Cluster, *args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "storm_zmq.cli.main", "stats", "ClusterIds", "--json",
         "--config", str(cluster.conf_file), *args],
        capture_output=True, text=True, timeout=60, cwd=cluster.tmp)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def counters(data: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {c["name"]: tuple(c[m] for m in COMPARED) for c in data["components"]}


@pytest.mark.slow
def test_the_cluster_ui_shows_what_stats_prints(cluster: Cluster) -> None:
    cluster.start("nimbus", "nimbus")
    cluster.supervisor("s1")
    cluster.submit(count=400, rate=400)
    cluster.start("ui", "ui", "--port", "0")

    def finished() -> dict[str, Any] | None:
        data = stats_json(cluster)
        spout = data["components"][0]
        done = spout["acked"] == 400 and spout["pending"] == 0 and \
            data["totals"]["workers_reporting"] == 2
        return data if done else None

    previous = wait_for(finished, "the bounded input acked", timeout=90)

    def stable() -> dict[str, Any] | None:
        """Nothing changed between two reads whose every worker report is newer
        (one read can see the same heartbeat twice: that says nothing)."""
        nonlocal previous
        data = stats_json(cluster)
        times = {w["key"]: w["time"] for w in previous["workers"]}
        newer = all(w["time"] > times.get(w["key"], float("inf")) for w in data["workers"])
        if not newer:
            return None
        same = counters(data) == counters(previous)
        previous = data
        return data if same else None

    before = wait_for(stable, "counters to settle", timeout=30)
    assert [c["name"] for c in before["components"]] == ["numbers", "relay", "sink", ACKER]
    assert [c["kind"] for c in before["components"]] == ["spout", "bolt", "bolt", "acker"]
    assert before["components"][2]["executed"] >= 400  # every id reached the sink

    url = wait_for(lambda: next((line.split()[3] for line in cluster.log("ui").splitlines()
                                 if line.startswith("storm-zmq UI at ")), None), "the UI")
    html = dump_dom(url + "?topology=ClusterIds", 2500)
    page = PageValues(html)
    after = stats_json(cluster)
    assert counters(after) == counters(before), "the topology moved on: cannot compare"
    assert page.body["data-error"] == "" and int(page.body["data-refreshes"]) >= 1
    for component in before["components"]:
        for metric in COMPARED:
            assert page.number(("component", component["name"]), metric) == \
                component[metric], (component["name"], metric)
    for metric in ("emitted", "transferred", "acked", "failed", "complete_latency_ms"):
        assert page.number(("topology", "topology"), metric) == before["totals"][metric]
    assert sorted(k[0][1] for k in page.values if k[1] == "pid") == \
        sorted(w["key"] for w in before["workers"])
    # the graph comes from the code package: nothing in the record describes the inputs
    assert page.nodes == ["numbers", "relay", "sink"]
    assert page.edges == ["numbers->relay", "relay->sink"]
    # one component through -c, and the table
    relay = stats_json(cluster, "-c", "relay")
    assert relay["name"] == "relay" and relay["executed"] == before["components"][1]["executed"]
    table = subprocess.run(
        [sys.executable, "-m", "storm_zmq.cli.main", "stats", "ClusterIds",
         "--config", str(cluster.conf_file)], capture_output=True, text=True, timeout=60)
    assert table.returncode == 0 and "topology ClusterIds (ClusterIds-" in table.stdout
    assert f"{before['components'][2]['executed']:,}" in table.stdout
    metrics = get(url + "metrics")[2].decode()
    acked = [float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(
        'storm_zmq_component_acked_total{topology="ClusterIds",component="numbers",kind="spout",host=')]
    assert len(acked) == 2 and sum(acked) == 400  # one series per worker

    # the cluster: what `storm-zmq cluster` prints, the page's table and /metrics agree
    overview = subprocess.run(
        [sys.executable, "-m", "storm_zmq.cli.main", "cluster", "--json",
         "--config", str(cluster.conf_file)], capture_output=True, text=True, timeout=60)
    assert overview.returncode == 0, overview.stderr
    data = json.loads(overview.stdout)
    (supervisor,) = data["supervisor_list"]
    assert (data["supervisors"], data["topologies"], data["used_slots"]) == (1, 1, 2)
    assert data["free_slots"] == supervisor["slots"] - 2 and data["leader"]
    assert sorted(supervisor["used"].values()) == ["ClusterIds", "ClusterIds"]
    assert supervisor["uptime_secs"] > 0  # the supervisor registers when it started
    for metric in ("supervisors", "slots", "used_slots", "free_slots"):
        assert page.number(("cluster", "cluster"), metric) == data[metric], metric
    assert page.values[(("cluster", "cluster"), "leader")] == data["leader"]
    sup = ("supervisor", supervisor["id"])
    for metric in ("slots", "used_slots", "free_slots"):
        assert page.number(sup, metric) == supervisor[metric], metric
    assert page.values[(sup, "used_by")] == "ClusterIds: " + ",".join(sorted(supervisor["used"]))
    slots = {line.split('state="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
             for line in metrics.splitlines() if line.startswith("storm_zmq_supervisor_slots{")}
    assert slots == {"used": 2, "free": data["free_slots"]}
    assert "storm_zmq_cluster_leader 1" in metrics.splitlines()
    # Storm's topology actions: the page shows their buttons (POSTs: test_ui_cmd.py)
    assert re.search(r'<div id="actions">\s*<button type="button" data-action="activate">', html)


def timed_get(url: str) -> tuple[int, Any, float]:
    """(status, decoded body, seconds); a request of the old UI (90+ s) fails here."""
    started = time.monotonic()
    status, kind, body = get(url, timeout=15)
    data = json.loads(body) if kind.startswith("application/json") else body.decode()
    return status, data, time.monotonic() - started


@pytest.mark.slow
def test_the_cluster_ui_answers_at_once_while_zookeeper_is_down(
        cluster: Cluster, zookeeper: ZooKeeperServer) -> None:
    """ZooKeeper stopped under a running `storm-zmq ui`: the API and /metrics are a
    503 naming ZooKeeper within seconds (not after the daemons' retries, a minute and
    more); back to 200 without a restart once ZooKeeper is."""
    with ClusterState(cluster.zk_conf).start(timeout=10) as state:
        state.set_topology("ids-1", {
            "name": "ids", "status": "active", "num_workers": 1, "launch_time": time.time(),
            "conf": {}, "components": {"numbers": [1, 1]},
            "layout": {"components": [{"name": "numbers", "kind": "spout", "par": 1,
                                       "tasks": 1}]}})
    cluster.start("ui", "ui", "--port", "0")
    url = wait_for(lambda: next((line.split()[3] for line in cluster.log("ui").splitlines()
                                 if line.startswith("storm-zmq UI at ")), None), "the UI")
    paths = ("api/topologies", "api/topology/ids", "metrics")
    for path in paths:
        assert timed_get(url + path)[0] == 200, path
    zookeeper.stop()
    try:
        for _ in range(2):  # the first requests after the stop, and later ones
            for path in paths:
                status, data, took = timed_get(url + path)
                assert status == 503, (path, status, data)
                assert "ZooKeeper at 127.0.0.1:" in data["error"], data
                assert took < 7, (path, took)
            time.sleep(1)
        assert timed_get(url)[0] == 200  # the page itself
    finally:
        zookeeper.start()
    for path in paths:
        wait_for(lambda path=path: timed_get(url + path)[0] == 200, f"{path} answering again",
                 timeout=30)
    assert timed_get(url + "api/topologies")[1][0]["name"] == "ids"
    assert "serving" in cluster.log("ui") and "Traceback" not in cluster.log("ui")


def post(url: str, body: bytes = b"{}", headers: dict[str, str] | None = None,
         action_header: bool = True) -> tuple[int, Any]:
    """A topology action as the page sends it (with `action_header`): (status, JSON)."""
    sent = {"X-Requested-By": "test"} if action_header else {}
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={**sent, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class ActingSource:
    """Takes every action (the real one, over ZooKeeper: tests/cli/test_ui_cmd.py)."""

    def __init__(self) -> None:
        self.done: list[tuple[Any, ...]] = []

    def act(self, name: str, action: str, *, wait: Any = None, workers: Any = None,
            **more: Any) -> str:
        self.done.append((name, action, wait, workers, *more.values()))
        return "done"


def test_actions_are_refused_when_off_in_a_local_run_and_for_a_bad_body() -> None:
    with MetricsServer(fixed_source(), "127.0.0.1", 0) as local:
        assert post(local.url + "api/topology/wc/kill") == (
            404, {"error": "a local run takes no topology actions (Ctrl-C stops it)"})
    source = ActingSource()
    with MetricsServer(source, "127.0.0.1", 0, actions=False) as off:  # type: ignore[arg-type]
        assert post(off.url + "api/topology/wc/kill") == (
            403, {"error": "topology actions are off on this UI (ui.actions.enabled: false)"})
    with MetricsServer(source, "127.0.0.1", 0) as on:  # type: ignore[arg-type]
        url = on.url + "api/topology/a%2Fb/rebalance"  # a name is taken as it is, unquoted
        for body, error in [
            (b"[]", "expected a JSON object as the body, got []"),
            (b'{"workers": 2}', "rebalance takes executors and num_workers and wait_secs, not "
                                "workers"),
            (b'{"executors": {"relay": "2"}}', "executors must be an object of component names "
                                               "to whole numbers (rebalance -e)"),
            (b'{"executors": [2]}', "executors must be an object"),
            (b"{", "the body is not JSON: "),
            (b'{"wait_secs": -1}', "wait_secs must be a number of seconds >= 0, got -1"),
            (b'{"wait_secs": true}', "wait_secs must be a number of seconds >= 0, got true"),
            (b'{"num_workers": 1.5}', "num_workers must be an integer >= 1, got 1.5"),
            (b"x" * 5000, "a body of at most 4096 bytes, got 5000"),
        ]:
            status, answer = post(url, body)
            assert status == 400 and answer["error"].startswith(error), (body, answer)
        assert post(on.url + "api/topology/wc/explode")[0] == 404
        assert post(on.url + "api/topology/wc/activate", b'{"wait_secs": 2}') == (
            400, {"error": "activate takes no body, not wait_secs"})
        assert post(on.url + "api/topology/wc/kill", b'{"num_workers": 2}') == (
            400, {"error": "kill takes wait_secs, not num_workers"})
        status, _, body = get(on.url + "api/topology/wc/kill")  # a GET changes nothing
        assert (status, json.loads(body)) == (
            405, {"error": "a topology action is a POST (see docs/observability.md)"})
        assert source.done == []
        assert post(url, b'{"wait_secs": 2, "num_workers": 3}') == (200, {"message": "done"})
        assert post(on.url + "api/topology/wc/kill", b"") == (200, {"message": "done"})
        assert post(url, b'{"executors": {"relay": 1}}') == (200, {"message": "done"})
        assert source.done == [("a/b", "rebalance", 2.0, 3), ("wc", "kill", None, None),
                               ("a/b", "rebalance", None, None, {"relay": 1})]


def test_an_action_for_another_sites_name_is_refused_dns_rebinding() -> None:
    import socket

    from storm_zmq.metrics.ui import host_may_act

    for host in ["127.0.0.1:8080", "10.1.2.3", "[::1]:8080", "::1", "localhost:8080",
                 "LOCALHOST", f"{socket.gethostname()}:8080", socket.getfqdn() + "."]:
        assert host_may_act(host), host
    for host in ["evil.example:8080", "evil.example", "", "localhost.evil.example",
                 f"{socket.gethostname()}.evil.example"]:
        assert not host_may_act(host), host
    source = ActingSource()
    with MetricsServer(source, "127.0.0.1", 0) as on:  # type: ignore[arg-type]
        assert post(on.url + "api/topology/wc/kill", headers={"Host": "evil.example:8080"}) == (
            403, {"error": "an action needs the UI reached by an address or this machine's "
                           "name, not 'evil.example:8080'"})
        assert source.done == []
