"""ZooKeeper digest ACLs (storm.zookeeper.auth.*, storm.zookeeper.topology.auth.*)
against a real ZooKeeper: a client without the credentials can read ordinary state
but not change it, and cannot read topology secrets at all; one with them can. And
a whole cluster with ACLs and CURVE on still delivers every tuple."""

from __future__ import annotations

import json
import logging
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from storm_zmq.cluster.state import (
    ClusterState,
    ClusterStateError,
    NotAuthorized,
    worker_zookeeper_conf,
    zookeeper_auth,
)
from storm_zmq.messaging.auth import TopologySecrets
from tests.cluster.test_cluster import Cluster, all_ids_arrive, wait_for
from tests.zk_fixtures import cli_overrides

DAEMONS = {"storm.zookeeper.auth.scheme": "digest",
           "storm.zookeeper.auth.payload": "storm:s3cret"}
TOPOLOGY = {"storm.zookeeper.topology.auth.scheme": "digest",
            "storm.zookeeper.topology.auth.payload": "topo:t0pol0gy"}
TID = "acl-topology-1"


@pytest.fixture
def secured(make_state: Callable[..., ClusterState]) -> ClusterState:
    """Cluster state written by a daemon with credentials: secrets and an assignment."""
    state = make_state(**DAEMONS)
    state.set_secrets(TID, TopologySecrets.generate().to_dict())
    state.set_assignment(TID, {"assignment": {"workers": 1}})
    state.set_topology(TID, {"name": "t", "status": "active"})
    return state


def test_a_client_without_credentials_can_read_state_but_not_secrets_nor_change_it(
        secured: ClusterState, make_state: Callable[..., ClusterState],
        raw_client: KazooClient, zk_conf: dict[str, Any]) -> None:
    root = zk_conf["storm.zookeeper.root"]
    # A plain ZooKeeper client, as an attacker on the network would use.
    with pytest.raises(NoAuthError):
        raw_client.get(f"{root}/secrets/{TID}")
    with pytest.raises(NoAuthError):
        raw_client.set(f"{root}/assignments/{TID}", b'{"assignment": "mine"}')
    with pytest.raises(NoAuthError):
        raw_client.delete(f"{root}/assignments/{TID}")
    with pytest.raises(NoAuthError):
        raw_client.create(f"{root}/storms/evil", b"{}")
    data, _ = raw_client.get(f"{root}/assignments/{TID}")  # world-readable
    assert json.loads(data) == {"assignment": {"workers": 1}}
    # The same through ClusterState: a clear error, not a kazoo exception.
    anonymous = make_state()
    with pytest.raises(NotAuthorized, match="storm.zookeeper.auth"):
        anonymous.get_secrets(TID)
    with pytest.raises(NotAuthorized):
        anonymous.set_assignment(TID, {"assignment": "mine"})
    assert anonymous.get_assignment(TID) == {"assignment": {"workers": 1}}


def test_a_client_with_other_credentials_is_refused_too(
        secured: ClusterState, make_state: Callable[..., ClusterState]) -> None:
    other = make_state(**{"storm.zookeeper.auth.scheme": "digest",
                          "storm.zookeeper.auth.payload": "storm:guessed"})
    with pytest.raises(NotAuthorized, match="has other"):
        other.get_secrets(TID)
    with pytest.raises(NotAuthorized):
        other.set_assignment(TID, {"assignment": "mine"})


def test_a_client_with_the_credentials_reads_secrets_and_changes_assignments(
        secured: ClusterState, make_state: Callable[..., ClusterState]) -> None:
    peer = make_state(**DAEMONS)
    secrets = TopologySecrets.from_dict(peer.get_secrets(TID) or {})
    assert secrets == TopologySecrets.from_dict(secured.get_secrets(TID) or {})
    peer.set_assignment(TID, {"assignment": {"workers": 2}})
    assert secured.get_assignment(TID) == {"assignment": {"workers": 2}}
    peer.remove_secrets(TID)
    assert secured.get_secrets(TID) is None


def test_workers_with_topology_credentials_write_beats_and_errors_only(
        make_state: Callable[..., ClusterState], zk_conf: dict[str, Any]) -> None:
    daemon = make_state(**DAEMONS)
    daemon.set_secrets(TID, TopologySecrets.generate().to_dict(),
                       topology_auth=("digest", "topo:t0pol0gy"))
    daemon.set_assignment(TID, {"assignment": {"workers": 1}})
    worker = make_state(**worker_zookeeper_conf({**zk_conf, **DAEMONS, **TOPOLOGY}))
    assert worker.auth == ("digest", "topo:t0pol0gy")
    worker.heartbeat(TID, "h", 6700, {"time": 1.0})
    worker.report_error(TID, "split", "boom", host="h", port=6700)
    assert daemon.worker_beats(TID) == {"h-6700": {"time": 1.0}}
    assert daemon.errors(TID)["split"][0]["text"] == "boom"
    with pytest.raises(NotAuthorized):
        worker.get_secrets(TID)
    with pytest.raises(NotAuthorized):
        worker.set_assignment(TID, {"assignment": "mine"})
    # Nimbus (daemon credentials) still removes everything of the topology.
    daemon.remove_worker_beats(TID)
    daemon.remove_errors(TID)
    assert daemon.worker_beats(TID) == {} and daemon.errors(TID) == {}


def test_without_auth_config_nodes_stay_open_as_before(
        make_state: Callable[..., ClusterState], raw_client: KazooClient,
        zk_conf: dict[str, Any]) -> None:
    state = make_state()
    assert state.auth is None
    state.set_secrets(TID, {"hmac_key": "00"})
    state.set_assignment(TID, {"a": 1})
    root = zk_conf["storm.zookeeper.root"]
    raw_client.set(f"{root}/assignments/{TID}", b'{"a": 2}')
    assert state.get_assignment(TID) == {"a": 2}
    assert json.loads(raw_client.get(f"{root}/secrets/{TID}")[0]) == {"hmac_key": "00"}
    with pytest.raises(ClusterStateError, match="storm.zookeeper.auth"):
        state.set_secrets(TID, {}, topology_auth=("digest", "topo:x"))


@pytest.mark.parametrize(("conf", "message"), [
    ({"storm.zookeeper.auth.scheme": "digest"}, "must be set together"),
    ({"storm.zookeeper.auth.payload": "a:b"}, "must be set together"),
    ({"storm.zookeeper.auth.scheme": "digest", "storm.zookeeper.auth.payload": "nocolon"},
     "user:password"),
])
def test_incomplete_auth_config_is_a_clear_error(conf: dict[str, Any], message: str) -> None:
    with pytest.raises(ClusterStateError, match=message):
        zookeeper_auth(conf)
    with pytest.raises(ClusterStateError, match=message):
        ClusterState(conf)


def test_worker_conf_takes_topology_credentials_when_set() -> None:
    assert worker_zookeeper_conf(DAEMONS)["storm.zookeeper.auth.payload"] == "storm:s3cret"
    conf = worker_zookeeper_conf({**DAEMONS, **TOPOLOGY})
    assert conf["storm.zookeeper.auth.payload"] == "topo:t0pol0gy"


@pytest.mark.slow
def test_a_cluster_with_acls_and_curve_delivers_and_keeps_its_secrets(
        tmp_path: Path, zk_conf: dict[str, Any], raw_client: KazooClient) -> None:
    cluster = Cluster(tmp_path, {**zk_conf, **DAEMONS, **TOPOLOGY,
                                 "storm.messaging.zmq.curve": True})
    try:
        cluster.start("nimbus", "nimbus")
        cluster.supervisor("s1")
        cluster.submit(count=300, rate=300)
        all_ids_arrive(cluster.output, 300)
        root = zk_conf["storm.zookeeper.root"]
        (topology_id,) = raw_client.get_children(f"{root}/storms")
        with pytest.raises(NoAuthError):
            raw_client.get(f"{root}/secrets/{topology_id}")
        record = json.loads(raw_client.get(f"{root}/storms/{topology_id}")[0])
        assert "storm.zookeeper.auth.payload" not in record["conf"]
        assert "storm.zookeeper.topology.auth.payload" not in record["conf"]
        launch_files = list((tmp_path / "s1" / "workers").glob("*/launch.json"))
        assert launch_files
        for launch_file in launch_files:
            assert stat.S_IMODE(launch_file.stat().st_mode) == 0o600
            launch = json.loads(launch_file.read_text())
            assert TopologySecrets.from_dict(launch["secrets"])
            # the workers got their own ZooKeeper credentials, not the daemons'
            assert launch["conf"]["storm.zookeeper.auth.payload"] == "topo:t0pol0gy"
            # and this supervisor's slot ports (where worker.cpu.pinning places them)
            assert launch["port"] in launch["conf"]["supervisor.slots.ports"]
        beats = f"{root}/workerbeats/{topology_id}"  # (made by the first heartbeat)
        wait_for(lambda: raw_client.exists(beats) and raw_client.get_children(beats),
                 "heartbeats written with the topology's credentials")
    finally:
        cluster.stop_all()


def test_a_command_the_cluster_refuses_is_one_error_line_and_changes_nothing(
        secured: ClusterState, zk_conf: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from storm_zmq.cli.main import main

    overrides = cli_overrides(zk_conf)
    code = main(["deactivate", "t", *overrides])  # no storm.zookeeper.auth.*: refused
    _, err = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in err
    assert err.startswith("storm-zmq: error:") and "storm.zookeeper.auth" in err
    assert (secured.get_topology(TID) or {})["status"] == "active"


def test_nimbus_closes_nodes_made_before_auth_was_switched_on(
        make_state: Callable[..., ClusterState], raw_client: KazooClient,
        zk_conf: dict[str, Any]) -> None:
    # A cluster that ran without auth: its directories and nodes let anyone write,
    # and kept that once auth was on: anyone could add a topology and its code.
    root = zk_conf["storm.zookeeper.root"]
    before = make_state()
    before.set_topology(TID, {"name": "t", "status": "active"})
    before.set_secrets(TID, TopologySecrets.generate().to_dict())
    daemon = make_state(**DAEMONS)  # auth switched on
    raw_client.create(f"{root}/storms/evil-1", b"{}")  # still possible: world ALL
    raw_client.delete(f"{root}/storms/evil-1")
    closed = daemon.close_open_nodes()  # what nimbus does at its start
    assert f"{root}/storms" in closed and f"{root}/storms/{TID}" in closed
    assert f"{root}/secrets/{TID}" in closed
    with pytest.raises(NoAuthError):
        raw_client.create(f"{root}/storms/evil-1", b"{}")
    with pytest.raises(NoAuthError):
        raw_client.set(f"{root}/storms/{TID}", b'{"name": "t", "status": "killed"}')
    with pytest.raises(NoAuthError):
        raw_client.get(f"{root}/secrets/{TID}")  # creator only, as secrets made with auth
    assert daemon.get_topology(TID) == {"name": "t", "status": "active"}
    assert daemon.get_secrets(TID) is not None
    assert daemon.close_open_nodes() == []  # nothing left open
    assert make_state().close_open_nodes() == []  # without auth: nothing to do


def test_the_credentials_never_reach_a_log_even_at_debug(
        make_state: Callable[..., ClusterState], caplog: pytest.LogCaptureFixture) -> None:
    # kazoo logs each request at DEBUG, Auth(... auth='storm:s3cret') too; a worker's
    # log at ROOT=DEBUG is served by its supervisor's log viewer to anyone
    with caplog.at_level(logging.DEBUG, logger="kazoo.client"):
        make_state(**DAEMONS)
    assert "Auth(auth_type=0, scheme='digest', auth=<redacted>)" in caplog.text
    assert "s3cret" not in caplog.text
