"""`storm-zmq stats` against a real ZooKeeper holding a topology record, worker
heartbeats (the workers' report format) and errors, written as the cluster does."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from storm_zmq.cli.main import main
from storm_zmq.cluster import ClusterState
from storm_zmq.metrics.summary import TopologyLayout
from storm_zmq.topology import load_topology
from tests.messaging.conftest import free_port

WORDCOUNT = Path(__file__).parents[1] / "runtime" / "project" / "topologies" / "wordcount.py"


def worker_report(index: int, port: int, now: float) -> dict[str, Any]:
    return {
        "worker": index, "host": "127.0.0.1", "port": port, "pid": 100 + index, "time": now,
        "uptime_secs": 30.0, "rss_bytes": 30 << 20, "open_fds": 20,
        "components": {
            "sentences": {"kind": "spout", "emitted": 1000 * (index + 1),
                          "transferred": 1000 * (index + 1), "acked": 900, "failed": 1,
                          "pending": 5, "complete_ms_total": 90.0, "complete_samples": 45},
            "split": {"kind": "bolt", "executed": 500, "emitted": 4000, "transferred": 4000,
                      "acked": 500, "execute_ms_total": 5.0, "execute_samples": 25,
                      "capacity": 0.1 * (index + 1)},
            "count": {"kind": "bolt", "executed": 2000, "acked": 2000},
        },
        "peers": {str(1 - index): {"frames_sent": 3, "bytes_sent": 3000}},
    }


@pytest.fixture
def conf_file(tmp_path: Path, zk_conf: dict[str, Any]) -> Path:
    path = tmp_path / "storm.yaml"
    path.write_text(yaml.safe_dump(zk_conf))
    return path


@pytest.fixture
def topology(make_state: Any) -> ClusterState:
    """A running "wc" (with a stored layout), two workers reporting, one error; and
    a killed "old"."""
    state = make_state()
    definition = load_topology(WORDCOUNT).definition()
    now = time.time()
    state.set_topology("wc-1", {
        "name": "wc", "status": "active", "num_workers": 2, "launch_time": now - 65,
        "conf": {}, "components": {"sentences": [1, 1], "split": [2, 2], "count": [3, 3]},
        "layout": TopologyLayout.from_definition(definition).to_dict(),
    })
    for index, port in enumerate((6700, 6701)):
        state.heartbeat("wc-1", "127.0.0.1", port, {"time": now,
                                                    "stats": worker_report(index, port, now)})
    state.report_error("wc-1", "split", "Traceback ...\nValueError: bad sentence",
                       host="127.0.0.1", port=6700, task=3, time=now - 1)
    state.set_topology("old-1", {"name": "old", "status": "killed", "num_workers": 1,
                                 "launch_time": now, "conf": {}, "components": {}})
    return state


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["stats", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_table(topology: ClusterState, conf_file: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "wc", "--config", str(conf_file))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "topology wc (wc-1), active, 2/2 workers reporting, up 1m 5s"
    sentences = next(line for line in lines if line.strip().startswith("sentences"))
    assert "3,000" in sentences and "1,800" in sentences  # emitted, acked summed
    split = next(line for line in lines if line.strip().startswith("split"))
    assert split.count("0.200") == 2  # mean execute latency 10/50 ms; capacity max(0.1, 0.2)
    workers = lines[lines.index("workers") + 2:lines.index("recent errors") - 1]
    assert [line.split()[:2] for line in workers] == [["0", "127.0.0.1:6700"],
                                                     ["1", "127.0.0.1:6701"]]
    assert "ValueError: bad sentence" in out


def test_json_and_one_component(topology: ClusterState, conf_file: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "wc", "--json", "--config", str(conf_file))
    data = json.loads(out)
    assert code == 0 and data["id"] == "wc-1" and data["num_workers"] == 2
    by_name = {c["name"]: c for c in data["components"]}
    assert by_name["sentences"]["emitted"] == 3000
    assert by_name["sentences"]["complete_latency_ms"] == 2.0
    assert by_name["count"]["executed"] == 4000
    assert [e["text"] for e in by_name["split"]["errors"]] == \
        ["Traceback ...\nValueError: bad sentence"]
    assert data["edges"][1]["grouping"] == "fields(word)"
    code, out, _ = run(capsys, "wc", "-c", "split", "--json", "--config", str(conf_file))
    assert code == 0 and json.loads(out)["name"] == "split"
    code, out, _ = run(capsys, "wc", "--component", "split", "--config", str(conf_file))
    assert code == 0 and out.startswith("component split of topology wc")
    assert "capacity             0.200" in out


def test_unknown_names_are_one_line_errors(topology: ClusterState, conf_file: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "nope", "--config", str(conf_file))
    assert code == 2
    assert err == "storm-zmq: error: no running topology named 'nope' (running: wc)\n"
    code, _, err = run(capsys, "wc", "-c", "counter", "--config", str(conf_file))
    assert code == 2
    assert err == ("storm-zmq: error: topology wc has no component 'counter' "
                   "(it has sentences, split, count)\n")


def test_a_killed_topology_shows_while_it_drains(topology: ClusterState, conf_file: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Its workers are still finishing their tuples and running cleanup() until
    nimbus removes it (Storm's UI shows a KILLED topology until then too)."""
    code, out, err = run(capsys, "old", "--config", str(conf_file))
    assert code == 0, err
    assert out.splitlines()[0].startswith("topology old (old-1), killed, 0/1 workers reporting")
    # a live topology of the name wins over a killed one still draining
    topology.set_topology("old-2", {"name": "old", "status": "active", "num_workers": 1,
                                    "launch_time": time.time(), "conf": {}, "components": {}})
    code, out, _ = run(capsys, "old", "--config", str(conf_file))
    assert code == 0 and out.startswith("topology old (old-2), active")


def test_a_record_without_layout_or_code_still_shows_its_numbers(
        make_state: Any, conf_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = make_state()
    now = time.time()
    state.set_topology("bare-1", {"name": "bare", "status": "inactive", "num_workers": 1,
                                  "launch_time": now, "conf": {},
                                  "components": {"sentences": [1, 1], "split": [2, 2]}})
    state.heartbeat("bare-1", "127.0.0.1", 6702, {"time": now,
                                                  "stats": worker_report(0, 6702, now)})
    code, out, err = run(capsys, "bare", "--json", "--config", str(conf_file))
    assert code == 0, err
    data = json.loads(out)
    assert [(c["name"], c["kind"]) for c in data["components"]] == \
        [("sentences", "spout"), ("split", "bolt"), ("count", "bolt")]
    assert data["edges"] == [] and data["status"] == "inactive"


def test_zookeeper_unreachable_is_one_clear_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "storm.yaml"
    conf.write_text(yaml.safe_dump({"storm.zookeeper.servers": ["127.0.0.1"],
                                    "storm.zookeeper.port": free_port(),
                                    "storm.zookeeper.connection.timeout": 500}))
    started = time.monotonic()
    code, _, err = run(capsys, "wc", "--config", str(conf))
    assert code == 2 and time.monotonic() - started < 10
    assert err.startswith("storm-zmq: error: cannot reach ZooKeeper at 127.0.0.1:")
    assert err.count("\n") == 1


@pytest.mark.parametrize("value", ["/etc/storm/storm.yaml", "common.yml", "conf/storm"])
def test_a_config_file_given_with_c_is_told_apart_at_once(
        value: str, capsys: pytest.CaptureFixture[str]) -> None:
    # everywhere else -c is the config file: it waited 15 s on the default ZooKeeper
    started = time.monotonic()
    code, _, err = run(capsys, "wc", "-c", value)
    assert code == 2 and time.monotonic() - started < 2
    assert f"-c {value}: in stats, -c is the component" in err and "--config" in err


def test_a_closed_stdout_ends_it_quietly(topology: ClusterState, conf_file: Path,
                                         tmp_path: Path) -> None:
    """`stats wc --json | head -c 600`: the reader gone, no BrokenPipeError traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "storm_zmq.cli.main", "stats", "wc", "--json",
         "--config", str(conf_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before it writes anything: every write fails
    errors = process.stderr.read()
    assert process.wait(timeout=60) == 0, errors
    assert errors == ""
