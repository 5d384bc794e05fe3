"""`storm-zmq ui` as a real process over a real ZooKeeper: it serves what is in
ZooKeeper, stops on SIGTERM, and fails in one line when it cannot start."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.messaging.conftest import free_port
from tests.metrics.test_ui import post


def start_ui(conf_file: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "storm_zmq.cli.main", "ui", "-c", str(conf_file), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def fetch(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        body = response.read().decode()
        return json.loads(body) if "json" in response.headers["Content-Type"] else body


def test_the_ui_serves_the_cluster_and_stops_on_sigterm(tmp_path: Path, zk_conf: dict[str, Any],
                                                        make_state: Any) -> None:
    state = make_state()
    now = time.time()
    state.set_topology("t-1", {"name": "t", "status": "active", "num_workers": 1,
                               "launch_time": now, "conf": {}, "components": {"s": [1, 1]}})
    state.heartbeat("t-1", "127.0.0.1", 6700, {"time": now, "stats": {
        "worker": 0, "components": {"s": {"kind": "spout", "emitted": 77}}}})
    conf_file = tmp_path / "storm.yaml"
    port = free_port()
    conf_file.write_text(yaml.safe_dump({**zk_conf, "ui.port": port}))  # the port from config
    process = start_ui(conf_file)
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line == f"storm-zmq UI at http://127.0.0.1:{port}/ (Prometheus metrics at " \
            f"http://127.0.0.1:{port}/metrics; topology actions on)\n", \
            process.stderr.read()  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}/"
        assert [row["name"] for row in fetch(url + "api/topologies")] == ["t"]
        summary = fetch(url + "api/topology/t")
        assert summary["components"][0]["emitted"] == 77 and summary["id"] == "t-1"
        assert 'storm_zmq_component_emitted_total{topology="t",component="s",kind="spout",' \
            'host="127.0.0.1",port="6700",worker="0"} 77' in fetch(url + "metrics")

        # Storm's topology actions, as the page's buttons send them
        assert post(url + "api/topology/t/deactivate", action_header=False) == (403, {
            "error": "an action needs the header X-Requested-By (the UI's page sends it)"})
        assert state.get_topology("t-1")["status"] == "active"  # nothing done
        assert post(url + "api/topology/t/deactivate") == (200, {"message": "'t' is inactive"})
        assert state.get_topology("t-1")["status"] == "inactive"
        status, answer = post(url + "api/topology/t/rebalance", b'{"num_workers": 2, "wait_secs": 1}')
        assert status == 200 and answer["message"].startswith(
            "rebalancing 't' over 2 workers: deactivated; nimbus reassigns it 1 s after")
        assert ("; 't' needs 2 worker slots and the cluster's supervisors have 0 in all: it "
                "waits until there are enough") in answer["message"]  # as the CLI warns
        assert answer["message"].endswith("; no nimbus is running; nothing happens until one starts")
        record = state.get_topology("t-1")
        assert (record["status"], record["rebalance_wait"], record["rebalance_workers"],
                record["rebalance_status"]) == ("rebalancing", 1, 2, "inactive")
        assert post(url + "api/topology/nope/kill")[0] == 404
        assert post(url + "api/topology/t/rebalance", b'{"num_workers": 0}') == (400, {
            "error": "num_workers must be an integer >= 1, got 0"})
        # rebalance -e, from the UI
        status, answer = post(url + "api/topology/t/rebalance", b'{"executors": {"s": 2}}')
        assert (status, answer["error"].split(" (")[0]) == (
            409, "s: executors between 1 and its 1 task(s), got 2")
        assert post(url + "api/topology/t/rebalance", b'{"executors": {"s": 1}}')[0] == 200
        assert state.get_topology("t-1")["rebalance_components"] == {"s": 1}
        assert post(url + "api/topology/t/kill", b'{"wait_secs": 5}')[0] == 200
        assert state.get_topology("t-1")["kill_wait"] == 5
        assert post(url + "api/topology/t/activate") == (409, {
            "error": "topology 't' was killed and is being removed"})
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_busy_port_is_one_line(tmp_path: Path, zk_conf: dict[str, Any]) -> None:
    conf_file = tmp_path / "storm.yaml"
    conf_file.write_text(yaml.safe_dump(zk_conf))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        process = start_ui(conf_file, "--port", str(port))
        _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert err == f"storm-zmq: error: cannot serve the UI on 127.0.0.1:{port}: Address " \
        "already in use (ui.host / ui.port, --host / --port)\n"


def test_zookeeper_unreachable_is_one_line(tmp_path: Path) -> None:
    conf_file = tmp_path / "storm.yaml"
    conf_file.write_text(yaml.safe_dump({"storm.zookeeper.servers": ["127.0.0.1"],
                                         "storm.zookeeper.port": free_port(),
                                         "storm.zookeeper.connection.timeout": 500}))
    process = start_ui(conf_file, "--port", "0")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert err.startswith("storm-zmq: error: cannot reach ZooKeeper at 127.0.0.1:")
    assert err.count("\n") == 1


@pytest.mark.parametrize("port", ["-1", "70000"])
def test_a_port_out_of_range_is_refused(tmp_path: Path, port: str) -> None:
    process = start_ui(tmp_path / "missing.yaml", "--port", port)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2 and "error" in err
