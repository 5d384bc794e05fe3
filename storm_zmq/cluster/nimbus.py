"""The nimbus daemon (`storm-zmq nimbus`): any number may run; one leads.

Every nimbus registers under /nimbuses and contends in a leader election; the leader,
every `nimbus.monitor.freq.secs`:
- assigns submitted topologies without an assignment (executors to worker indexes
  once, worker indexes to free supervisor slots spread over supervisors);
- repairs assignments: a worker whose heartbeat did not change for
  `nimbus.task.timeout.secs` (or that wrote none within `nimbus.task.launch.secs` of
  its placement) moves to a free slot; every other worker stays where it is. A
  worker whose supervisor is gone (its ephemeral node vanished, or its registration
  did not change for `nimbus.supervisor.timeout.secs`) stays while it heartbeats:
  workers outlive their supervisor, as Storm's do, and a host that died stops
  heartbeating. Such a worker that never heartbeat gets the task timeout, not the
  launch grace, and one whose host and port another live supervisor now registers
  (the same host's supervisor, started with another `storm.local.dir`) moves at once,
  as does one on a port its supervisor no longer registers (it stopped the worker
  when it started with other `supervisor.slots.ports`);
- ends a rebalance's wait (status ``rebalancing``, written by `storm-zmq rebalance`)
  once ``rebalance_wait`` has passed since it saw the request: the topology gets
  its status from before the rebalance back and, with ``rebalance_workers``, its new
  number of workers;
- reassigns from scratch a topology being rebalanced (while there are not enough
  free slots for it, its workers are repaired where they are);
- removes a killed topology once its kill wait has passed, heartbeats or errors a
  worker wrote for a topology that is gone, and code and secrets of an interrupted
  submit after `nimbus.inbox.jar.expiration.secs`.
A leader whose ZooKeeper session is suspended or lost, even for a moment it only
notices afterwards, stops acting as leader and contends again; a standby takes over
when the leader dies.

Every age above is measured by the leader's own monotonic clock, from when it saw
something change (cluster/liveness.py): a value another host wrote (a registration's
or heartbeat's time, a ZooKeeper node's creation time) is only compared with the
previous value of the same thing, never with this host's clock, so nimbus needs no
clock agreement between hosts. The price, as in Storm: a leader starts knowing no
ages, so after a leader change every worker and supervisor gets one full timeout,
a killed topology its whole kill wait again, and so on. Which heartbeat belongs to
a slot's current worker is told by a marker, not by time (cluster/heartbeat.py).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any

from storm_zmq.cluster.heartbeat import current_beats
from storm_zmq.cluster.liveness import ChangeClock
from storm_zmq.cluster.overview import transport_disagreements
from storm_zmq.cluster.requests import apply_executors
from storm_zmq.cluster.scheduler import NotEnoughSlots, Slot, choose_slots, free_slots, repair
from storm_zmq.cluster.state import ClusterState
from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.assignment import Assignment, WorkerSlot, assign

log = logging.getLogger(__name__)


def kill_wait(record: dict[str, Any]) -> float:
    """Seconds between a topology's kill and its removal, as `storm-zmq kill` stored
    them (``kill_wait``). A record killed by an older client holds a deadline by that
    client's clock (``kill_at``) instead, which is ignored: such a topology waits its
    ``topology.message.timeout.secs``, the default wait of `kill`."""
    if "kill_wait" in record:
        wait = record["kill_wait"]
        if isinstance(wait, bool) or not isinstance(wait, (int, float)):
            raise ValueError(f"its kill_wait {wait!r} is not a number of seconds")
        return float(wait)
    return float(record.get("conf", {}).get("topology.message.timeout.secs",
                                            DEFAULTS["topology.message.timeout.secs"]))


def rebalance_wait(record: dict[str, Any]) -> float:
    """Seconds between a rebalance's request and the reassignment, as `storm-zmq
    rebalance` stored them (``rebalance_wait``; default the topology's
    ``topology.message.timeout.secs``)."""
    wait = record.get("rebalance_wait")
    if wait is None:
        return float(record.get("conf", {}).get("topology.message.timeout.secs",
                                                DEFAULTS["topology.message.timeout.secs"]))
    if isinstance(wait, bool) or not isinstance(wait, (int, float)):
        raise ValueError(f"its rebalance_wait {wait!r} is not a number of seconds")
    return float(wait)


def end_rebalance_wait(record: dict[str, Any]) -> dict[str, Any]:
    """Pure: the record once a rebalance's wait has passed: its previous status back
    (``rebalance_status``, "active" if missing), ``rebalance_workers`` and
    ``rebalance_components`` (`-e`) applied, and ``rebalance`` set for the
    reassignment."""
    ended = {k: v for k, v in record.items()
             if k not in ("rebalance_wait", "rebalance_status", "rebalance_workers",
                          "rebalance_requested", "rebalance_components")}
    ended["status"] = record.get("rebalance_status") or "active"
    if record.get("rebalance_workers") is not None:
        ended["num_workers"] = int(record["rebalance_workers"])
    if record.get("rebalance_components"):  # rebalance -e
        ended["components"] = apply_executors(record, record["rebalance_components"])
    ended["rebalance"] = True
    return ended


def stored_assignment(assignment: Assignment, slots: list[Slot], launched: list[float]) -> dict[str, Any]:
    """The assignment as stored: `launched` holds, per worker index, the marker of its
    placement (the placing nimbus's wall-clock time, compared only for equality:
    cluster/heartbeat.py)."""
    return {
        "assignment": assignment.to_dict(),
        "slots": [[s.supervisor, s.host, s.port] for s in slots],
        "launched": launched,
    }


class Nimbus:
    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf
        self.id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.state = ClusterState(conf)
        self.stopping = threading.Event()
        self._leading = threading.Event()
        self._session_ok = threading.Event()
        #: Set by any suspension of the session and cleared only when leading
        #: starts: a session lost and re-established between two checks of a
        #: leader (one ZooKeeper call can take minutes) means another nimbus may
        #: have led meanwhile, though `_session_ok` says all is well again.
        self._session_interrupted = threading.Event()
        #: What this nimbus saw change, and when by its clock (cluster/liveness.py):
        #: supervisor id -> its registration's time; (topology id, slot) -> the
        #: slot's placement marker and its worker's heartbeat time; topology id ->
        #: its kill wait (while killed), its rebalance request (while rebalancing),
        #: or its code's creation time (while no topology was submitted with that
        #: code).
        self._supervisors: ChangeClock[str] = ChangeClock()
        self._workers: ChangeClock[tuple[str, Slot]] = ChangeClock()
        self._kills: ChangeClock[str] = ChangeClock()
        self._rebalances: ChangeClock[str] = ChangeClock()
        self._uploads: ChangeClock[str] = ChangeClock()
        #: (topology, slot) of dead workers no free slot could take, said once
        self._said_stranded: set[tuple[str, Slot]] = set()
        self._said_disagreements: list[str] = []  # transport_disagreements, as last said

    def run(self) -> int:
        self.state.start(timeout=self.conf["storm.zookeeper.connection.timeout"] / 1000)
        self.state.close_open_nodes()  # auth switched on for a cluster that ran without it
        self._session_ok.set()
        self.state.on_session_change(self._session_changed)
        self.state.register_nimbus(self.id, {"host": socket.gethostname(), "pid": os.getpid(),
                                             "time": time.time()})
        log.info("nimbus %s started; contending for leadership", self.id)
        while not self.stopping.is_set():
            try:
                election = self.state.leader_election(self.id)
                election.run(self._lead)
            except Exception as exc:
                if self.stopping.is_set():
                    break
                log.warning("leader election interrupted (%s); contending again", exc)
                self.stopping.wait(1)
        self.state.stop()
        return 0

    def _session_changed(self, state: str) -> None:
        if state == "CONNECTED":
            self._session_ok.set()
        else:  # SUSPENDED or LOST: another nimbus may lead now
            self._session_ok.clear()
            self._session_interrupted.set()

    def _lead(self) -> None:
        log.info("nimbus %s is the leader", self.id)
        self._session_interrupted.clear()
        # Whatever it saw before is stale: another nimbus may have led meanwhile,
        # or ZooKeeper was down and nobody could write. Every age starts again.
        for observed in (self._supervisors, self._workers, self._kills, self._rebalances,
                         self._uploads):
            observed.clear()
        self._leading.set()
        interval = float(self.conf["nimbus.monitor.freq.secs"])
        try:
            while not self.stopping.is_set():
                if self._session_interrupted.is_set() or not self._session_ok.is_set():
                    log.warning("ZooKeeper session suspended: no longer acting as leader")
                    return
                try:
                    self.monitor()
                except Exception as exc:  # keep leading; the next round retries
                    log.warning("monitoring round failed: %s", exc)
                self.stopping.wait(interval)
        finally:
            self._leading.clear()

    # -- one round -------------------------------------------------------------------

    def monitor(self, now: float | None = None) -> None:
        """One round. `now`: this nimbus's clock (monotonic seconds), given by tests;
        only differences between the `now` of two rounds matter."""
        now = time.monotonic() if now is None else now
        supervisors = self.state.supervisors()
        for sid, info in supervisors.items():  # "time" changes at every refresh
            self._supervisors.observe(sid, info.get("time"), now)
        self._supervisors.retain(supervisors)
        timeout = self.conf["nimbus.supervisor.timeout.secs"]
        alive_supervisors = {sid for sid in supervisors
                             if self._supervisors.is_fresh(sid, timeout, now)}
        all_slots = [Slot(sid, supervisors[sid]["host"], int(p))
                     for sid in alive_supervisors for p in supervisors[sid]["ports"]]
        self._say_disagreements({sid: supervisors[sid] for sid in alive_supervisors})
        stored = {tid: self.state.get_assignment(tid) for tid in self.state.assignments()}
        used = {Slot(*s) for a in stored.values() if a for s in a["slots"]}
        topologies = self.state.topologies()
        killed: set[str] = set()
        rebalancing: set[str] = set()
        slots_seen: set[tuple[str, Slot]] = set()
        for topology_id in topologies:
            try:
                used = self._monitor_topology(topology_id, stored.get(topology_id), used,
                                              alive_supervisors, all_slots, now, killed,
                                              rebalancing, slots_seen)
            except Exception as exc:  # one broken record must not stop the others' repairs
                log.warning("monitoring topology %s failed (the others go on; this one is "
                            "retried next round): %s: %s", topology_id, type(exc).__name__, exc)
        self._kills.retain(killed)
        self._rebalances.retain(rebalancing)
        self._workers.retain(slots_seen)
        try:  # housekeeping: never in the way of scheduling and repairs
            self._remove_orphans(set(topologies), now)
        except Exception as exc:
            log.warning("removing leftovers of removed topologies failed: %s", exc)

    def _monitor_topology(self, topology_id: str, current: dict[str, Any] | None, used: set[Slot],
                          alive_supervisors: set[str], all_slots: list[Slot], now: float,
                          killed: set[str], rebalancing: set[str],
                          slots_seen: set[tuple[str, Slot]]) -> set[Slot]:
        """One topology's part of a round: removed once its kill wait has passed,
        assigned, rebalanced (once its rebalance wait has passed) or repaired.
        Returns the slots in use afterwards."""
        record = self.state.get_topology(topology_id)
        if record is None:
            return used
        if record["status"] == "killed":
            # The wait runs from when this nimbus first saw the kill; a kill of
            # the killed topology (another kill_at) starts its new wait again.
            wait = kill_wait(record)
            self._kills.observe(topology_id, (wait, record.get("kill_at")), now)
            killed.add(topology_id)
            if self._kills.age(topology_id, now) >= wait:
                self._remove(topology_id)
            return used
        if record["status"] == "rebalancing":
            # The wait runs from when this nimbus first saw the request (a new
            # request, with another marker, starts it again); its workers are
            # kept alive meanwhile.
            wait = rebalance_wait(record)
            self._rebalances.observe(topology_id, (wait, record.get("rebalance_requested")), now)
            rebalancing.add(topology_id)
            if self._rebalances.age(topology_id, now) >= wait:
                marker = record.get("rebalance_requested")
                # compare-and-set: a kill, a new request or a set_log_level written
                # since this round read the record is kept. Killed (or gone): the
                # next round removes it. A new request: its own wait, and meanwhile
                # the repair below, as for any rebalancing topology.
                written = self.state.update_topology(topology_id, lambda r: (
                    end_rebalance_wait(r) if r.get("status") == "rebalancing"
                    and r.get("rebalance_requested") == marker else None))
                if written is None or written.get("status") == "killed":
                    return used
                record = written
                if record.get("rebalance"):
                    log.info("rebalancing %s over %d workers; then %s", topology_id,
                             record["num_workers"], record["status"])
        if current is None or record.get("rebalance"):
            own = {Slot(*s) for s in current["slots"]} if current else set()
            created = self._schedule(topology_id, record, free_slots(all_slots, used - own), all_slots)
            if created is not None:
                used = (used - own) | set(created)
                if record.get("rebalance"):
                    self.state.update_topology(topology_id, lambda r: (
                        {**r, "rebalance": False} if r.get("rebalance") else None))
                return used
            if current is None:
                return used
            # a rebalance waiting for slots: the workers it has are still kept alive
        self._repair(topology_id, current, alive_supervisors, all_slots, used, now, slots_seen)
        return used

    def _schedule(self, topology_id: str, record: dict[str, Any],
                  free: list[Slot], all_slots: list[Slot]) -> list[Slot] | None:
        try:
            slots = choose_slots(record["num_workers"], free)
        except NotEnoughSlots as exc:
            supervisors = len({s.supervisor for s in all_slots})
            addresses = len({(s.host, s.port) for s in all_slots})  # as free_slots counts
            log.warning("cannot assign %s yet: %s (%d slot(s) in all on %d supervisor(s))",
                        topology_id, exc, addresses, supervisors)
            return None
        parallelism = {name: (p, n) for name, (p, n) in record["components"].items()}
        assignment = assign(topology_id, parallelism, [WorkerSlot(s.host, s.port) for s in slots],
                            record["ackers"])
        launched = [time.time()] * len(slots)  # a new marker for every placement
        self.state.set_assignment(topology_id, stored_assignment(assignment, slots, launched))
        log.info("assigned %s to %s", topology_id, ", ".join(f"{s.host}:{s.port}" for s in slots))
        return slots

    def _repair(self, topology_id: str, current: dict[str, Any], alive_supervisors: set[str],
                all_slots: list[Slot], used: set[Slot], now: float,
                slots_seen: set[tuple[str, Slot]]) -> None:
        """Move the workers that are dead to this nimbus. A slot is watched as its
        placement marker plus its current worker's heartbeat time: a new placement
        or a new heartbeat is a change. Until its worker's first heartbeat, a slot
        lives `nimbus.task.launch.secs` from its placement (as this nimbus saw it);
        after, `nimbus.task.timeout.secs` from the last heartbeat that changed."""
        slots = [Slot(*s) for s in current["slots"]]
        launched = list(current["launched"])
        beats = current_beats(current, self.state.worker_beats(topology_id))
        alive: set[Slot] = set()
        reclaimed: set[Slot] = set()  # dead here; their addresses free for a new worker
        offered = set(all_slots)
        claimed = {(s.host, s.port) for s in all_slots}  # by a live supervisor
        for index, (slot, beat) in enumerate(zip(slots, beats, strict=True)):
            key = (topology_id, slot)
            beat_time = None if beat is None else beat.get("time")
            self._workers.observe(key, (launched[index], beat_time), now)
            slots_seen.add(key)
            limit = self.conf["nimbus.task.timeout.secs"]
            if slot.supervisor in alive_supervisors and slot not in offered:
                continue  # its supervisor's slots changed: it stopped the worker there
            if slot.supervisor not in alive_supervisors:
                # Its worker runs on by itself, as Storm's do, while it heartbeats
                # (its supervisor stopped, or is restarting); one that has not yet
                # gets the timeout, not the launch grace: its supervisor may never
                # start it. Unless another supervisor now has its address: that
                # one's run with another storm.local.dir does not adopt it, and
                # a worker it placed there could not bind.
                if (slot.host, slot.port) in claimed:
                    reclaimed.add(slot)
                    continue
                if beat is None:
                    limit = min(limit, self.conf["nimbus.task.launch.secs"])
            elif beat is None:
                limit = self.conf["nimbus.task.launch.secs"]
            if self._workers.is_fresh(key, limit, now):
                alive.add(slot)
        # (a reclaimed address is the new supervisor's slot to offer: counted as
        # used by the old worker still there, it was offered to nobody, and with no
        # other slot free the worker stayed dead for good: a recovery audit)
        repaired = repair(slots, alive, free_slots(all_slots, used - reclaimed))
        self._say_stranded(topology_id, slots, repaired, alive)
        if repaired == slots:
            return
        marker = time.time()  # a new placement's
        for index, (before, after) in enumerate(zip(slots, repaired, strict=True)):
            if before != after:
                launched[index] = marker
                log.info("moving worker %d of %s from %s:%d (supervisor %s) to %s:%d "
                         "(supervisor %s)", index, topology_id, before.host, before.port,
                         before.supervisor, after.host, after.port, after.supervisor)
        used.difference_update(slots)
        used.update(repaired)
        assignment = Assignment.from_dict(current["assignment"])
        assignment = dataclasses.replace(
            assignment, workers=tuple(WorkerSlot(s.host, s.port) for s in repaired))
        self.state.set_assignment(topology_id, stored_assignment(assignment, repaired, launched))

    def _say_disagreements(self, supervisors: dict[str, Any]) -> None:
        """Supervisors whose workers' transport settings differ, said when that
        changes (`overview.transport_disagreements`)."""
        said = transport_disagreements(supervisors)
        if said and said != self._said_disagreements:
            log.warning("supervisors give their workers different transport settings, which "
                        "every worker of a topology must share (between hosts that differ, "
                        "tuples are lost or a link stalls): %s; set them alike in every "
                        "host's storm.yaml, or in a topology's config, which then wins on "
                        "every host", "; ".join(said))
        self._said_disagreements = said

    def _say_stranded(self, topology_id: str, slots: list[Slot], repaired: list[Slot],
                      alive: set[Slot]) -> None:
        """A dead worker that no free slot can take stays dead until one frees up
        (`scheduler.repair`): that used to happen without a word, while `list` said
        the topology was active (a cluster audit). Said once per slot, again after
        it lived or moved."""
        for index, (before, after) in enumerate(zip(slots, repaired, strict=True)):
            key = (topology_id, before)
            if before in alive or before != after:
                self._said_stranded.discard(key)
            elif key not in self._said_stranded:
                self._said_stranded.add(key)
                log.warning("worker %d of %s on %s:%d is down (its heartbeats stopped, or "
                            "its supervisor went before it started) and no free slot can take "
                            "it: the topology runs without it until a slot frees up or it "
                            "comes back", index, topology_id, before.host, before.port)

    def _remove_orphans(self, topologies: set[str], now: float) -> None:
        """Heartbeats and errors of topologies that are gone: a worker still running
        as its topology is removed may write once more, after `_remove`. And code
        and secrets of a submit that never wrote its topology (interrupted): a
        submit in progress has them without the topology too, hence the wait."""
        self._said_stranded = {key for key in self._said_stranded if key[0] in topologies}
        for topology_id in set(self.state.worker_beat_topologies()) - topologies:
            self.state.remove_worker_beats(topology_id)
        for topology_id in set(self.state.error_topologies()) - topologies:
            self.state.remove_errors(topology_id)
        # The wait runs from when this nimbus first saw the upload (its creation time
        # is ZooKeeper's clock: only a change of it, a new upload, matters).
        expiry = self.conf["nimbus.inbox.jar.expiration.secs"]
        pending = {topology_id: created for topology_id, created in self.state.uploads().items()
                   if topology_id not in topologies}
        for topology_id, created in pending.items():
            self._uploads.observe(topology_id, created, now)
        self._uploads.retain(pending)
        for topology_id in pending:
            if self._uploads.age(topology_id, now) >= expiry:
                log.info("removing the code and secrets of %s: no topology was submitted "
                         "with them (nimbus.inbox.jar.expiration.secs)", topology_id)
                self.state.remove_code(topology_id)
                self.state.remove_secrets(topology_id)

    def _remove(self, topology_id: str) -> None:
        log.info("removing killed topology %s", topology_id)
        self.state.remove_assignment(topology_id)
        self.state.remove_worker_beats(topology_id)
        self.state.remove_code(topology_id)
        self.state.remove_errors(topology_id)
        self.state.remove_secrets(topology_id)
        self.state.remove_topology(topology_id)
