"""The pure records and messages of Storm's topology actions (storm_zmq.cluster.requests);
the command line and the UI that use them are tested with real daemons in
tests/cluster/test_commands.py and tests/metrics/test_ui.py."""

from __future__ import annotations

import math
from typing import Any

import pytest

from storm_zmq.cluster.requests import (
    ActionRefused,
    Outcome,
    kill_request,
    rebalance_request,
    seconds,
    status_request,
)

NOW = 1_000.0


def record(**changes: Any) -> dict[str, Any]:
    return {"status": "active", "num_workers": 2,
            "conf": {"topology.message.timeout.secs": 30}, **changes}


@pytest.mark.parametrize(("value", "expected"), [(0, 0.0), ("2.5", 2.5), (7, 7.0), ("0", 0.0)])
def test_seconds_takes_a_number_or_its_text(value: Any, expected: float) -> None:
    assert seconds(value, "-w") == expected


@pytest.mark.parametrize("value", [-1, "-0.5", "soon", None, True, math.inf, "nan", 10**400, [3]])
def test_seconds_refuses_what_is_no_finite_number_of_seconds_naming_the_option(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^-w must be a number of seconds >= 0, got "):
        seconds(value, "-w")


def test_positive_seconds_refuse_zero() -> None:
    assert seconds("0.1", "wait", positive=True) == 0.1
    with pytest.raises(ValueError, match="wait must be a number of seconds > 0, got 0"):
        seconds(0, "wait", positive=True)


def test_a_kill_waits_the_message_timeout_unless_told_and_may_be_repeated() -> None:
    outcome = Outcome()
    killed = kill_request("wc", "wc-1-100", record(), None, NOW, outcome)
    assert (killed["status"], killed["kill_wait"], killed["kill_at"]) == ("killed", 30.0, NOW + 30)
    assert killed["num_workers"] == 2  # the rest of the record is kept
    assert outcome.message == ("killed 'wc' (wc-1-100): deactivated; nimbus removes it 30 s "
                               "after it sees the kill")
    again = kill_request("wc", "wc-1-100", killed, 0.5, NOW + 1, outcome)
    assert (again["kill_wait"], again["kill_at"]) == (0.5, NOW + 1.5)
    assert outcome.message.startswith("killed again 'wc'")


def test_a_kill_of_a_record_without_conf_waits_the_default_timeout() -> None:
    killed = kill_request("wc", "wc-1", {"status": "active", "conf": None}, None, NOW, Outcome())
    assert killed["kill_wait"] == 30.0  # Storm's topology.message.timeout.secs


@pytest.mark.parametrize("status", ["active", "inactive"])
def test_a_status_is_set_or_kept_for_after_a_rebalance(status: str) -> None:
    outcome = Outcome()
    assert status_request("wc", record(), status, outcome)["status"] == status
    assert outcome.message == f"'wc' is {status}"
    during = status_request("wc", record(status="rebalancing"), status, outcome)
    assert (during["status"], during["rebalance_status"]) == ("rebalancing", status)
    assert outcome.message == f"'wc' is rebalancing: it becomes {status} afterwards"


def test_a_status_that_storm_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="a status is active or inactive, not 'paused'"):
        status_request("wc", record(), "paused", Outcome())


@pytest.mark.parametrize("act", [
    lambda r: status_request("wc", r, "active", Outcome()),
    lambda r: rebalance_request("wc", r, None, None, NOW, Outcome()),
])
def test_a_killed_topology_takes_no_other_action(act: Any) -> None:
    with pytest.raises(ActionRefused, match="topology 'wc' was killed and is being removed"):
        act(record(status="killed"))


def test_a_rebalance_records_its_wait_workers_and_the_status_to_return_to() -> None:
    outcome = Outcome()
    asked = rebalance_request("wc", record(status="inactive"), 5, 3, NOW, outcome)
    assert {k: asked[k] for k in ("status", "rebalance_wait", "rebalance_status",
                                  "rebalance_workers", "rebalance_requested")} == {
        "status": "rebalancing", "rebalance_wait": 5, "rebalance_status": "inactive",
        "rebalance_workers": 3, "rebalance_requested": NOW}
    assert outcome.workers == 3
    assert outcome.message == ("rebalancing 'wc' over 3 workers: deactivated; nimbus reassigns "
                               "it 5 s after it sees the request, then makes it inactive again")


def test_a_rebalance_over_a_rebalance_keeps_the_status_and_workers_from_before() -> None:
    first = rebalance_request("wc", record(status="inactive"), None, 4, NOW, Outcome())
    outcome = Outcome()
    second = rebalance_request("wc", first, 1, None, NOW + 1, outcome)
    assert (second["rebalance_status"], second["rebalance_workers"]) == ("inactive", 4)
    assert second["rebalance_wait"] == 1 and second["rebalance_requested"] != first["rebalance_requested"]
    assert outcome.workers == 4


def test_a_rebalance_without_a_worker_count_keeps_the_topologys_own() -> None:
    outcome = Outcome()
    asked = rebalance_request("wc", record(), None, None, NOW, outcome)
    assert (asked["rebalance_workers"], asked["rebalance_wait"], outcome.workers) == (2, 30.0, 2)
    assert asked["rebalance_status"] == "active"


def test_a_rebalance_over_more_workers_than_executors_uses_as_many_as_executors() -> None:
    # Bug (a cluster audit): the extra worker ran nothing and held a slot, and the
    # others' send threads died of the peer list growing under them
    outcome = Outcome()
    topology = record(components={"numbers": [1, 1], "sink": [1, 2]}, ackers=0)
    asked = rebalance_request("tiny", topology, None, 3, NOW, outcome)
    assert asked["rebalance_workers"] == outcome.workers == 2
    assert outcome.message.startswith(
        "rebalancing 'tiny' over 2 workers (it has 2 executor(s) in all, so 3 workers would "
        "leave 1 with nothing to run): deactivated;")
    with_ackers = record(components={"numbers": [1, 1], "sink": [1, 2]}, ackers=2)
    assert rebalance_request("tiny", with_ackers, None, 3, NOW, Outcome())["rebalance_workers"] == 3


@pytest.mark.parametrize("workers", [0, -2])
def test_a_rebalance_to_fewer_than_one_worker_is_refused(workers: int) -> None:
    with pytest.raises(ActionRefused, match=f"at least 1, got {workers}"):
        rebalance_request("wc", record(), None, workers, NOW, Outcome())


def test_a_rebalance_may_change_components_executors_within_their_tasks() -> None:
    # Storm's rebalance -e COMPONENT=N
    topology = record(components={"numbers": [1, 1], "relay": [2, 4]}, ackers=1, num_workers=2)
    outcome = Outcome()
    asked = rebalance_request("ids", topology, 1, None, NOW, outcome, {"relay": 4})
    assert asked["rebalance_components"] == {"relay": 4}
    assert asked["components"] == {"numbers": [1, 1], "relay": [2, 4]}  # until nimbus applies it
    assert outcome.message.startswith("rebalancing 'ids' over 2 workers, relay on 4 executor(s):")
    again = rebalance_request("ids", asked, 1, None, NOW + 1, Outcome(), {"numbers": 1})
    assert again["rebalance_components"] == {"relay": 4, "numbers": 1}  # the first kept


@pytest.mark.parametrize(("executors", "refused"), [
    ({"nope": 1}, "topology 'ids' has no component 'nope' \\(its components: numbers, relay;"),
    ({"relay": 5}, "relay: executors between 1 and its 4 task\\(s\\), got 5"),
    ({"relay": 0}, "relay: executors between 1 and its 4 task\\(s\\), got 0"),
    ({"relay": True}, "got True"),
])
def test_a_rebalance_refuses_executors_a_component_cannot_have(
        executors: dict[str, Any], refused: str) -> None:
    topology = record(components={"numbers": [1, 1], "relay": [2, 4]}, ackers=1)
    with pytest.raises(ActionRefused, match=refused):
        rebalance_request("ids", topology, None, None, NOW, Outcome(), executors)


def test_fewer_executors_cap_the_workers_of_the_same_rebalance() -> None:
    topology = record(components={"numbers": [1, 1], "relay": [3, 3]}, ackers=0, num_workers=4)
    outcome = Outcome()
    asked = rebalance_request("ids", topology, None, None, NOW, outcome, {"relay": 1})
    assert asked["rebalance_workers"] == outcome.workers == 2
