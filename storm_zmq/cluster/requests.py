"""What Storm's topology actions write into a topology's record. Pure.

`kill`, `activate`, `deactivate` and `rebalance` only record a request; the leading
nimbus carries it out (a kill's or rebalance's wait counted by its own clock) and
the workers follow the record's status. The command line (storm_zmq.cli.cluster_cmd)
and the web UI's buttons (storm_zmq.metrics.ui) both make their records here, so the
two can never do a thing differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storm_zmq.config import DEFAULTS

__all__ = ["ActionRefused", "kill_request", "rebalance_request", "status_request"]


class ActionRefused(ValueError):
    """The action cannot be taken on this topology now; the message says why."""


def _message_timeout(record: Mapping[str, Any]) -> float:
    """The default wait of a kill or rebalance: the topology's message timeout."""
    conf = record.get("conf") if isinstance(record.get("conf"), Mapping) else {}
    return float(conf.get("topology.message.timeout.secs",
                          DEFAULTS["topology.message.timeout.secs"]))


def _live(name: str, record: Mapping[str, Any]) -> None:
    if record.get("status") == "killed":
        raise ActionRefused(f"topology {name!r} was killed and is being removed")


def kill_request(record: Mapping[str, Any], wait: float | None,
                 now: float) -> tuple[dict[str, Any], float]:
    """The record of a killed topology, and the wait it got: `wait` seconds, or the
    topology's message timeout. A killed topology may be killed again, as in Storm:
    the new wait replaces the old one."""
    if wait is None:
        wait = _message_timeout(record)
    # A wait, not a deadline: nimbus counts it by its own clock (no clock of the
    # requesting host is compared with nimbus's). kill_at only for a nimbus from
    # before that, which would otherwise remove the topology at once.
    return {**record, "status": "killed", "kill_wait": wait, "kill_at": now + wait}, wait


def status_request(name: str, record: Mapping[str, Any], status: str) -> tuple[dict[str, Any], str]:
    """The record with `status` ("active" or "inactive") and what to tell the user.
    During a rebalance it is the status the topology gets back afterwards."""
    if status not in ("active", "inactive"):
        raise ValueError(f"a status is active or inactive, not {status!r}")
    _live(name, record)
    if record.get("status") == "rebalancing":
        return ({**record, "rebalance_status": status},
                f"{name!r} is rebalancing: it becomes {status} afterwards")
    return {**record, "status": status}, f"{name!r} is {status}"


def rebalance_request(name: str, record: Mapping[str, Any], wait: float | None,
                      workers: int | None, now: float) -> tuple[dict[str, Any], str, int]:
    """Storm's rebalance: deactivate, wait, reassign, back to the status before.
    Returns the record, what to tell the user and the number of workers after. A
    rebalance of a topology already rebalancing replaces that request and keeps the
    status from before it."""
    _live(name, record)
    if workers is not None and workers < 1:
        raise ActionRefused(f"the number of workers must be at least 1, got {workers}")
    if wait is None:
        wait = _message_timeout(record)
    previous = (record.get("rebalance_status") or "active"
                if record["status"] == "rebalancing" else record["status"])
    workers = workers or record.get("rebalance_workers") or record["num_workers"]
    updated = {
        **record, "status": "rebalancing", "rebalance_wait": wait,
        "rebalance_status": previous, "rebalance_workers": workers, "rebalance": False,
        # tells a new request from the one before (compared for equality only)
        "rebalance_requested": now}
    said = (f"rebalancing {name!r} over {workers} workers: deactivated; nimbus "
            f"reassigns it {wait:g} s after it sees the request, then makes it {previous} "
            "again")
    return updated, said, int(workers)
