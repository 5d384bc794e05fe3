"""What Storm's topology actions write into a topology's record, and say. Pure.

`kill`, `activate`, `deactivate` and `rebalance` only record a request; the leading
nimbus carries it out (a kill's or rebalance's wait counted by its own clock) and
the workers follow the record's status. The command line (storm_zmq.cli.cluster_cmd)
and the web UI's buttons (storm_zmq.metrics.ui) both make their records and their
messages here, so that the two never do or say a thing differently. Each function
is a `change` for `ClusterState.update_topology`: it may run again on a record
another writer changed meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from storm_zmq.config import DEFAULTS

__all__ = ["NO_NIMBUS", "ActionRefused", "Outcome", "apply_executors", "kill_request",
           "rebalance_request", "seconds", "status_request"]

#: Said after a request that only a leading nimbus carries out, when none leads.
NO_NIMBUS = "no nimbus is running; nothing happens until one starts"


class ActionRefused(ValueError):
    """The action cannot be taken on this topology now; the message says why."""


@dataclass
class Outcome:
    """What a change made: filled in by the last run of the change (the one whose
    record was written)."""

    message: str = ""
    workers: int = 0


def seconds(value: Any, what: str, *, positive: bool = False) -> float:
    """`value` (a number or its text) as seconds: finite and >= 0 (> 0 with
    `positive`); ValueError naming `what` otherwise."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError, OverflowError):  # 10**400 does not fit a float
        number = math.nan
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        raise ValueError(f"{what} must be a number of seconds {'>' if positive else '>='} 0, "
                         f"got {value!r}")
    return number


def _message_timeout(record: Mapping[str, Any]) -> float:
    """The default wait of a kill or rebalance: the topology's message timeout."""
    conf = record.get("conf") if isinstance(record.get("conf"), Mapping) else {}
    return float(conf.get("topology.message.timeout.secs",
                          DEFAULTS["topology.message.timeout.secs"]))


def _executors(record: Mapping[str, Any]) -> int | None:
    """The topology's executors, its ackers included (None for a record without them)."""
    try:
        return sum(int(par) for par, _tasks in record["components"].values()) + int(record["ackers"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _checked_executors(name: str, record: Mapping[str, Any],
                       executors: Mapping[str, int]) -> dict[str, int]:
    components = record.get("components") or {}
    for component, count in executors.items():
        if component not in components:
            raise ActionRefused(
                f"topology {name!r} has no component {component!r} (its components: "
                f"{', '.join(sorted(components))}; the acker's executors cannot change)")
        tasks = int(components[component][1])
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= tasks:
            raise ActionRefused(
                f"{component}: executors between 1 and its {tasks} task(s), got {count!r} (a "
                "rebalance changes how many executors run a component's tasks, not the tasks; "
                "num_tasks in its spec sets them)")
    return dict(executors)


def apply_executors(record: Mapping[str, Any], changes: Mapping[str, int]) -> dict[str, Any]:
    """The record's components (name -> [executors, tasks]) with `changes` applied."""
    components = {n: list(c) for n, c in (record.get("components") or {}).items()}
    for component, count in changes.items():
        if component in components:
            components[component][0] = int(count)
    return components


def _live(name: str, record: Mapping[str, Any]) -> None:
    if record.get("status") == "killed":
        raise ActionRefused(f"topology {name!r} was killed and is being removed")


def kill_request(name: str, topology_id: str, record: Mapping[str, Any], wait: float | None,
                 now: float, outcome: Outcome) -> dict[str, Any]:
    """The record of a killed topology: its wait `wait` seconds, or the topology's
    message timeout. A killed topology may be killed again, as in Storm: the new
    wait replaces the old one."""
    wait = _message_timeout(record) if wait is None else wait
    again = " again" if record.get("status") == "killed" else ""
    outcome.message = (f"killed{again} {name!r} ({topology_id}): deactivated; nimbus removes "
                       f"it {wait:g} s after it sees the kill")
    # A wait, not a deadline: nimbus counts it by its own clock (no clock of the
    # requesting host is compared with nimbus's). kill_at only for a nimbus from
    # before that, which would otherwise remove the topology at once.
    return {**record, "status": "killed", "kill_wait": wait, "kill_at": now + wait}


def status_request(name: str, record: Mapping[str, Any], status: str,
                   outcome: Outcome) -> dict[str, Any]:
    """The record with `status` ("active" or "inactive"). During a rebalance it is
    the status the topology gets back afterwards."""
    if status not in ("active", "inactive"):
        raise ValueError(f"a status is active or inactive, not {status!r}")
    _live(name, record)
    if record.get("status") == "rebalancing":
        outcome.message = f"{name!r} is rebalancing: it becomes {status} afterwards"
        return {**record, "rebalance_status": status}
    outcome.message = f"{name!r} is {status}"
    return {**record, "status": status}


def rebalance_request(name: str, record: Mapping[str, Any], wait: float | None,
                      workers: int | None, now: float, outcome: Outcome,
                      executors: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Storm's rebalance: deactivate, wait, reassign, back to the status before. A
    rebalance of a topology already rebalancing replaces that request and keeps the
    status from before it. `executors` (Storm's ``-e``): components' new numbers of
    executors, each between 1 and its number of tasks, which a rebalance does not
    change. `outcome.workers`: the number of workers after."""
    _live(name, record)
    if workers is not None and workers < 1:
        raise ActionRefused(f"the number of workers must be at least 1, got {workers}")
    wait = _message_timeout(record) if wait is None else wait
    previous = (record.get("rebalance_status") or "active"
                if record["status"] == "rebalancing" else record["status"])
    workers = int(workers or record.get("rebalance_workers") or record["num_workers"])
    changes = {**(record.get("rebalance_components") or {}),
               **_checked_executors(name, record, executors or {})}
    capped = ""
    executors_after = _executors({**record, "components": apply_executors(record, changes)})
    if executors_after is not None and workers > executors_after:
        # a worker with no executor would run nothing and hold a slot (submit caps too)
        capped = (f" (it has {executors_after} executor(s) in all, so {workers} workers would "
                  f"leave {workers - executors_after} with nothing to run)")
        workers = executors_after
    outcome.workers = workers
    with_executors = "".join(f", {component} on {n} executor(s)"
                             for component, n in sorted(changes.items()))
    outcome.message = (f"rebalancing {name!r} over {workers} workers{capped}{with_executors}: "
                       f"deactivated; nimbus reassigns it {wait:g} s after it sees the request, "
                       f"then makes it {previous} again")
    return {
        **record, "status": "rebalancing", "rebalance_wait": wait,
        "rebalance_status": previous, "rebalance_workers": workers, "rebalance": False,
        "rebalance_components": changes,
        # tells a new request from the one before (compared for equality only)
        "rebalance_requested": now}
