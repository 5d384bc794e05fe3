"""What a cluster is made of now: its nimbuses, its supervisors and their worker slots.

Storm's UI opens with this (cluster, nimbus and supervisor summaries): how many
slots there are and how many are free is the first question when a submitted
topology is not assigned, or before adding one. `storm-zmq cluster` prints it, the
UI shows it and ``/api/cluster`` serves it, ``/metrics`` exports its counts, and
`submit` and `rebalance` take their free-slot warnings from it.

`cluster_overview` is pure (the records as ZooKeeper holds them, and the time);
`read_overview` is the thin shell that reads them.

A slot is *used* when a topology's stored assignment places a worker on it, as
nimbus counts it, whether that worker runs yet or not; every other slot of a
registered supervisor is *free*. A supervisor is registered while its ZooKeeper
session lives. How long ago it last refreshed its registration is shown as it is
(by this reader's clock against the supervisor's, which may differ): nimbus judges
a supervisor that stops refreshing by its own clock
(``nimbus.supervisor.timeout.secs``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClusterOverview", "NimbusOverview", "SupervisorOverview", "cluster_overview",
           "read_overview"]


@dataclass(frozen=True)
class SupervisorOverview:
    id: str
    host: str
    hostname: str | None
    ports: tuple[int, ...]
    #: port -> the name of the topology whose assignment holds it
    used: Mapping[int, str] = field(default_factory=dict)
    uptime_secs: float | None = None
    #: seconds since it last refreshed its registration (None: it does not say)
    heartbeat_age_secs: float | None = None
    #: its ports that a worker of another supervisor of the same address holds (a
    #: port two supervisors of one host list, which their logs warn of: one worker
    #: binds it, and nimbus counts it once, scheduler.free_slots)
    taken_elsewhere: frozenset[int] = frozenset()

    @property
    def free(self) -> tuple[int, ...]:
        return tuple(port for port in self.ports
                     if port not in self.used and port not in self.taken_elsewhere)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "host": self.host, "hostname": self.hostname,
                "slots": len(self.ports), "used_slots": len(self.used),
                "free_slots": len(self.free), "ports": list(self.ports),
                "used": {str(port): name for port, name in sorted(self.used.items())},
                "uptime_secs": self.uptime_secs,
                "heartbeat_age_secs": self.heartbeat_age_secs}


@dataclass(frozen=True)
class NimbusOverview:
    id: str
    host: str | None
    leader: bool
    uptime_secs: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "host": self.host, "leader": self.leader,
                "uptime_secs": self.uptime_secs}


@dataclass(frozen=True)
class ClusterOverview:
    nimbuses: tuple[NimbusOverview, ...]
    supervisors: tuple[SupervisorOverview, ...]
    topologies: int
    #: the id of the nimbus that leads (its node in the election), None: none leads
    leader: str | None = None
    #: workers an assignment places on a supervisor that is not registered (it
    #: stopped, is restarting, or its host died), or on a port its registration
    #: does not have (it was restarted with other ports): (topology name,
    #: supervisor id, host, port). The first run on by themselves while they
    #: heartbeat (workers outlive their supervisor); nimbus moves those whose
    #: heartbeats stop, and the second at once.
    unsupervised: tuple[tuple[str, str, str, int], ...] = ()

    # Counted by address (host, port), as nimbus counts them: a port two supervisors
    # of one host list is one slot (a cluster audit: `cluster` said 4 free where
    # nimbus had 3, and submit did not warn of a topology that could not be placed).
    @property
    def slots(self) -> int:
        return len({(s.host, port) for s in self.supervisors for port in s.ports})

    @property
    def used_slots(self) -> int:
        return len({(s.host, port) for s in self.supervisors for port in s.used})

    @property
    def free_slots(self) -> int:
        return len({(s.host, port) for s in self.supervisors for port in s.free})

    def slot_warnings(self, name: str, workers: int) -> list[str]:
        """Why topology `name` on `workers` workers would wait (nimbus assigns all of
        a topology's workers or none, and says so only in its own log): what
        `submit` and `rebalance` warn, and the UI's rebalance says."""
        if workers > self.slots:
            return [f"{name!r} needs {workers} worker slots and the cluster's supervisors "
                    f"have {self.slots} in all: it waits until there are enough (or "
                    "rebalance it with -n to fewer workers)"]
        if self.free_slots < workers:
            return [f"{name!r} needs {workers} worker slots and {self.free_slots} of the "
                    f"cluster's {self.slots} are free: it waits until enough are (kill or "
                    "rebalance another topology, or add supervisors)"]
        return []

    def to_dict(self) -> dict[str, Any]:
        return {"supervisors": len(self.supervisors), "slots": self.slots,
                "used_slots": self.used_slots, "free_slots": self.free_slots,
                "topologies": self.topologies, "leader": self.leader,
                "unsupervised": [{"topology": t, "supervisor": s, "host": h, "port": p}
                                 for t, s, h, p in self.unsupervised],
                "nimbus_list": [n.to_dict() for n in self.nimbuses],
                "supervisor_list": [s.to_dict() for s in self.supervisors]}


def _seconds_since(then: Any, now: float) -> float | None:
    if isinstance(then, (int, float)) and not isinstance(then, bool):
        return max(0.0, now - then)
    return None


def _ports(info: Mapping[str, Any]) -> tuple[int, ...]:
    ports = []
    for port in info.get("ports") or ():
        try:
            ports.append(int(port))
        except (TypeError, ValueError):
            continue  # a damaged record: the rest of it still counts
    return tuple(sorted(ports))


def cluster_overview(
    supervisors: Mapping[str, Mapping[str, Any]],
    nimbuses: Mapping[str, Mapping[str, Any]],
    leader: str | None,
    assignments: Mapping[str, Mapping[str, Any] | None],
    names: Mapping[str, str],
    *,
    now: float,
) -> ClusterOverview:
    """The overview of these records: `supervisors` and `nimbuses` are id -> the
    info each registered; `assignments` topology id -> its stored assignment;
    `names` topology id -> name (an id without one is shown as the id). Sorted
    by host and id, so that the output is the same from one call to the next."""
    held: dict[tuple[str, int], str] = {}
    unsupervised = []
    for topology_id, assignment in assignments.items():
        for slot in (assignment or {}).get("slots") or ():
            try:
                supervisor, host, port = slot
                name = names.get(topology_id, topology_id)
                held[(str(supervisor), int(port))] = name
                registered = supervisors.get(str(supervisor))
                if registered is None or int(port) not in _ports(registered):
                    unsupervised.append((name, str(supervisor), str(host), int(port)))
            except (TypeError, ValueError):
                continue
    held_addresses = {(str(supervisors[sid].get("host", "?")), port)
                      for sid, port in held if sid in supervisors}
    rows = []
    for sid, info in supervisors.items():
        ports = _ports(info)
        host = str(info.get("host", "?"))
        rows.append(SupervisorOverview(
            id=sid, host=host,
            hostname=info.get("hostname") if isinstance(info.get("hostname"), str) else None,
            ports=ports,
            used={port: held[(sid, port)] for port in ports if (sid, port) in held},
            taken_elsewhere=frozenset(port for port in ports if (host, port) in held_addresses
                                      and (sid, port) not in held),
            uptime_secs=_seconds_since(info.get("started"), now),
            heartbeat_age_secs=_seconds_since(info.get("time"), now),
        ))
    nimbus_rows = [NimbusOverview(id=nid, host=info.get("host"), leader=nid == leader,
                                  uptime_secs=_seconds_since(info.get("time"), now))
                   for nid, info in nimbuses.items()]
    return ClusterOverview(
        nimbuses=tuple(sorted(nimbus_rows, key=lambda n: (not n.leader, n.host or "", n.id))),
        supervisors=tuple(sorted(rows, key=lambda s: (s.host, s.id))),
        topologies=len(names),
        leader=leader,
        unsupervised=tuple(sorted(unsupervised)),
    )


def read_overview(state: Any, *, leaving_out: str | None = None,
                  clock: Callable[[], float] = time.time) -> ClusterOverview:
    """The overview of the cluster `state` (a started `ClusterState`) now.
    `leaving_out`: a topology id whose slots count as free (a rebalance may reuse
    its own)."""
    names = {}
    for topology_id in state.topologies():
        record = state.get_topology(topology_id)
        if isinstance(record, dict):
            names[topology_id] = str(record.get("name", topology_id))
    assignments = {tid: state.get_assignment(tid) for tid in state.assignments()
                   if tid != leaving_out}
    return cluster_overview(
        state.supervisors(), state.nimbuses(), state.leader(), assignments, names,
        now=clock())


#: The transport settings every worker of a topology must share: the transport, and
#: per transport its frame limit and authentication. A supervisor registers its own
#: (`transport_settings`), and nimbus says when they differ (`transport_disagreements`).
MUST_AGREE = ("storm.messaging.transport",
              *(f"storm.messaging.{t}.{k}" for t in ("zmq", "tcp")
                for k in ("max.frame.size", "curve", "authentication")))


def transport_settings(conf: Mapping[str, Any]) -> dict[str, Any]:
    """A supervisor's `MUST_AGREE` settings, as it registers them."""
    return {key: conf[key] for key in MUST_AGREE if key in conf}


def transport_disagreements(supervisors: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Each `MUST_AGREE` setting the registered supervisors give their workers
    differently, as "KEY: V (s1, s2), W (s3)". Between two hosts whose frame limits
    differ, a worker lost its peer's larger frames on zmq, and on tcp the link
    stalled, without a word (a data-plane audit); a topology that sets the key in
    its own config gives every worker its value, wherever it runs."""
    said = []
    for key in MUST_AGREE:
        holders: dict[str, list[str]] = {}
        for sid, info in sorted(supervisors.items()):
            settings = info.get("transport") or {}
            if key in settings:
                holders.setdefault(repr(settings[key]), []).append(sid)
        if len(holders) > 1:
            said.append(f"{key}: " + ", ".join(f"{value} ({', '.join(sids)})"
                                               for value, sids in holders.items()))
    return said
