"""The cluster overview's pure part: slots used and free, by which topology."""

from __future__ import annotations

from typing import Any

from storm_zmq.cluster.overview import cluster_overview, transport_disagreements, transport_settings
from storm_zmq.config import DEFAULTS


def supervisor(host: str, ports: list[Any], **info: Any) -> dict[str, Any]:
    return {"host": host, "ports": ports, "time": 990.0, "started": 400.0, **info}


def assignment(*slots: tuple[str, str, int]) -> dict[str, Any]:
    return {"slots": [list(slot) for slot in slots]}


def test_slots_are_used_by_the_topologies_whose_assignments_place_workers_on_them() -> None:
    overview = cluster_overview(
        {"s2": supervisor("h2", [6700, 6701]), "s1": supervisor("h1", [6701, 6700, 6702])},
        {"n1": {"host": "h1", "time": 100.0}, "n2": {"host": "h2", "time": 500.0}},
        "n2",
        {"wc-1": assignment(("s1", "h1", 6700), ("s2", "h2", 6701)),
         "ids-2": assignment(("s1", "h1", 6702)),
         "gone-3": None},  # an assignment being removed
        {"wc-1": "wordcount", "ids-2": "ids", "gone-3": "gone"},
        now=1000.0,
    )
    assert [s.id for s in overview.supervisors] == ["s1", "s2"]  # by host
    s1, s2 = overview.supervisors
    assert s1.ports == (6700, 6701, 6702)
    assert dict(s1.used) == {6700: "wordcount", 6702: "ids"}
    assert s1.free == (6701,)
    assert dict(s2.used) == {6701: "wordcount"} and s2.free == (6700,)
    assert (s1.uptime_secs, s1.heartbeat_age_secs) == (600.0, 10.0)
    assert (overview.slots, overview.used_slots, overview.free_slots) == (5, 3, 2)
    assert overview.topologies == 3
    assert overview.leader == "n2"
    assert [(n.id, n.leader, n.uptime_secs) for n in overview.nimbuses] == [
        ("n2", True, 500.0), ("n1", False, 900.0)]  # the leader first


def test_a_slot_of_a_supervisor_that_is_gone_or_not_its_own_counts_for_nobody() -> None:
    overview = cluster_overview(
        {"s1": supervisor("h1", [6700])}, {}, None,
        {"wc-1": assignment(("s9", "h9", 6700), ("s1", "h1", 6701))}, {"wc-1": "wordcount"},
        now=1000.0)
    (s1,) = overview.supervisors
    assert not s1.used and s1.free == (6700,)
    assert (overview.slots, overview.used_slots, overview.free_slots) == (1, 0, 1)
    assert overview.leader is None
    # the worker on s9, whose supervisor is not registered, is unsupervised, and
    # so is the one on s1's 6701, a port s1 no longer registers
    assert overview.unsupervised == (("wordcount", "s1", "h1", 6701),
                                     ("wordcount", "s9", "h9", 6700))
    assert overview.to_dict()["unsupervised"][1] == {
        "topology": "wordcount", "supervisor": "s9", "host": "h9", "port": 6700}


def test_a_port_two_supervisors_of_one_host_list_is_one_slot_as_nimbus_counts_it() -> None:
    """A cluster audit: with a port listed by two supervisors of one host and held
    by a worker of one, `cluster` said 4 of 6 slots free where nimbus had 3 of 5,
    and submit did not warn of a topology that could not be placed."""
    overview = cluster_overview(
        {"s2": supervisor("h", [7302, 7303]), "s3": supervisor("h", [7302, 7306]),
         "s1": supervisor("h", [7300, 7301])},
        {}, None, {"wc-1": assignment(("s2", "h", 7302))}, {"wc-1": "wordcount"}, now=1000.0)
    by_id = {s.id: s for s in overview.supervisors}
    assert by_id["s3"].free == (7306,) and by_id["s3"].taken_elsewhere == {7302}
    assert not by_id["s3"].used and dict(by_id["s2"].used) == {7302: "wordcount"}
    assert (overview.slots, overview.used_slots, overview.free_slots) == (5, 1, 4)
    assert overview.slot_warnings("big", 5) == [
        "'big' needs 5 worker slots and 4 of the cluster's 5 are free: it waits until "
        "enough are (kill or rebalance another topology, or add supervisors)"]
    # nobody holds it: one free slot, not two
    idle = cluster_overview({"s2": supervisor("h", [7302]), "s3": supervisor("h", [7302])},
                            {}, None, {}, {}, now=1000.0)
    assert (idle.slots, idle.free_slots) == (1, 1)


def test_damaged_records_are_read_as_far_as_they_go() -> None:
    overview = cluster_overview(
        {"s1": {"host": "h1", "ports": [6700, "x", None, "6701"], "time": "?", "started": True}},
        {"n1": {}}, "n1",
        {"wc-1": {"slots": [["s1", "h1", "6701"], ["s1"], "junk", ["s1", "h1", "nan"]]},
         "ids-2": {"slots": None}},
        {},  # no topology records: an assignment is shown by its id
        now=1000.0)
    (s1,) = overview.supervisors
    assert s1.ports == (6700, 6701)
    assert dict(s1.used) == {6701: "wc-1"}
    assert s1.uptime_secs is None and s1.heartbeat_age_secs is None
    assert overview.nimbuses[0].host is None and overview.nimbuses[0].uptime_secs is None


def test_the_dict_is_what_the_ui_and_json_show() -> None:
    overview = cluster_overview(
        {"s1": supervisor("h1", [6700, 6701], hostname="box")}, {"n1": {"host": "h1", "time": 0}},
        "n1", {"wc-1": assignment(("s1", "h1", 6701))}, {"wc-1": "wordcount"}, now=1000.0)
    assert overview.to_dict() == {
        "supervisors": 1, "slots": 2, "used_slots": 1, "free_slots": 1, "topologies": 1,
        "leader": "n1", "unsupervised": [],
        "nimbus_list": [{"id": "n1", "host": "h1", "leader": True, "uptime_secs": 1000.0}],
        "supervisor_list": [{
            "id": "s1", "host": "h1", "hostname": "box", "slots": 2, "used_slots": 1,
            "free_slots": 1, "ports": [6700, 6701], "used": {"6701": "wordcount"},
            "uptime_secs": 600.0, "heartbeat_age_secs": 10.0}],
    }


def test_slot_warnings_say_why_a_topology_would_wait() -> None:
    overview = cluster_overview(
        {"s1": supervisor("h1", [6700, 6701, 6702])}, {}, None,
        {"other-1": assignment(("s1", "h1", 6700))}, {"other-1": "other"}, now=1000.0)
    assert overview.slot_warnings("wc", 2) == []
    (few,) = overview.slot_warnings("wc", 3)
    assert few.startswith("'wc' needs 3 worker slots and 2 of the cluster's 3 are free: it waits")
    (short,) = overview.slot_warnings("wc", 4)
    assert short.startswith("'wc' needs 4 worker slots and the cluster's supervisors have 3 in all")


def test_supervisors_whose_workers_transport_settings_differ_are_named_by_setting() -> None:
    # (a data-plane audit: between hosts whose max.frame.size differ, zmq lost the
    # larger frames and a tcp link stalled, without a word)
    alike = transport_settings(DEFAULTS)
    assert alike["storm.messaging.zmq.max.frame.size"] == DEFAULTS["storm.messaging.zmq.max.frame.size"]
    lower = {**alike, "storm.messaging.zmq.max.frame.size": 1 << 20}
    supervisors = {"s1": {"transport": alike}, "s2": {"transport": lower},
                   "s3": {"transport": alike}, "old": {}}  # (one of before the setting)
    size = DEFAULTS["storm.messaging.zmq.max.frame.size"]
    assert transport_disagreements(supervisors) == [
        f"storm.messaging.zmq.max.frame.size: {size} (s1, s3), 1048576 (s2)"]
    assert transport_disagreements({"s1": {"transport": alike}, "s3": {"transport": alike}}) == []
