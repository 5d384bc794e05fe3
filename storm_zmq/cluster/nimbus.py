"""The nimbus daemon (`storm-zmq nimbus`): any number may run; one leads.

Every nimbus registers under /nimbuses and contends in a leader election; the leader,
every `nimbus.monitor.freq.secs`:
- assigns submitted topologies without an assignment (executors to worker indexes
  once, worker indexes to free supervisor slots spread over supervisors);
- repairs assignments: a worker whose supervisor is gone (its ephemeral node vanished
  or was not refreshed for `nimbus.supervisor.timeout.secs`), or whose heartbeat is
  older than `nimbus.task.timeout.secs` (after `nimbus.task.launch.secs` of grace),
  moves to a free slot; every other worker stays where it is;
- reassigns from scratch a topology being rebalanced (while there are not enough
  free slots for it, its workers are repaired where they are);
- removes a killed topology once its kill wait has passed, heartbeats or errors a
  worker wrote for a topology that is gone, and code and secrets of an interrupted
  submit after `nimbus.inbox.jar.expiration.secs`.
A leader whose ZooKeeper session is suspended or lost, even for a moment it only
notices afterwards, stops acting as leader and contends again; a standby takes over
when the leader dies.
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

from storm_zmq.cluster.scheduler import NotEnoughSlots, Slot, choose_slots, free_slots, repair
from storm_zmq.cluster.state import ClusterState
from storm_zmq.runtime.assignment import Assignment, WorkerSlot, assign

log = logging.getLogger(__name__)


def stored_assignment(assignment: Assignment, slots: list[Slot], launched: list[float]) -> dict[str, Any]:
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

    def run(self) -> int:
        self.state.start(timeout=self.conf["storm.zookeeper.connection.timeout"] / 1000)
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
        """One round; `now` (unix time) for tests."""
        now = time.time() if now is None else now
        supervisors = self.state.supervisors()
        timeout = self.conf["nimbus.supervisor.timeout.secs"]
        alive_supervisors = {sid for sid, info in supervisors.items()
                             if now - info.get("time", now) <= timeout}
        all_slots = [Slot(sid, supervisors[sid]["host"], int(p))
                     for sid in alive_supervisors for p in supervisors[sid]["ports"]]
        stored = {tid: self.state.get_assignment(tid) for tid in self.state.assignments()}
        used = {Slot(*s) for a in stored.values() if a for s in a["slots"]}
        topologies = self.state.topologies()
        for topology_id in topologies:
            record = self.state.get_topology(topology_id)
            if record is None:
                continue
            if record["status"] == "killed":
                if now >= record.get("kill_at", now):
                    self._remove(topology_id)
                continue
            current = stored.get(topology_id)
            if current is None or record.get("rebalance"):
                own = {Slot(*s) for s in current["slots"]} if current else set()
                created = self._schedule(topology_id, record, free_slots(all_slots, used - own), now)
                if created is not None:
                    used = (used - own) | set(created)
                    if record.get("rebalance"):
                        record = {**record, "rebalance": False}
                        self.state.set_topology(topology_id, record)
                    continue
                if current is None:
                    continue
                # a rebalance waiting for slots: the workers it has are still kept alive
            self._repair(topology_id, current, alive_supervisors, all_slots, used, now)
        try:  # housekeeping: never in the way of scheduling and repairs
            self._remove_orphans(set(topologies), now)
        except Exception as exc:
            log.warning("removing leftovers of removed topologies failed: %s", exc)

    def _schedule(self, topology_id: str, record: dict[str, Any], free: list[Slot],
                  now: float) -> list[Slot] | None:
        try:
            slots = choose_slots(record["num_workers"], free)
        except NotEnoughSlots as exc:
            log.warning("cannot assign %s yet: %s", topology_id, exc)
            return None
        parallelism = {name: (p, n) for name, (p, n) in record["components"].items()}
        assignment = assign(topology_id, parallelism, [WorkerSlot(s.host, s.port) for s in slots],
                            record["ackers"])
        self.state.set_assignment(topology_id, stored_assignment(assignment, slots, [now] * len(slots)))
        log.info("assigned %s to %s", topology_id, ", ".join(f"{s.host}:{s.port}" for s in slots))
        return slots

    def _repair(self, topology_id: str, current: dict[str, Any], alive_supervisors: set[str],
                all_slots: list[Slot], used: set[Slot], now: float) -> None:
        slots = [Slot(*s) for s in current["slots"]]
        launched = list(current["launched"])
        beats = self.state.worker_beats(topology_id)
        alive: set[Slot] = set()
        for index, slot in enumerate(slots):
            if slot.supervisor not in alive_supervisors:
                continue
            beat = beats.get(f"{slot.host}-{slot.port}")
            if beat is not None and beat.get("time", 0) < launched[index]:
                beat = None  # a worker's that ran in this slot before this one launched
            in_grace = now - launched[index] < self.conf["nimbus.task.launch.secs"]
            fresh = beat is not None and now - beat.get("time", 0) <= self.conf["nimbus.task.timeout.secs"]
            if fresh or (in_grace and beat is None):
                alive.add(slot)
        repaired = repair(slots, alive, free_slots(all_slots, used))
        if repaired == slots:
            return
        for index, (before, after) in enumerate(zip(slots, repaired, strict=True)):
            if before != after:
                launched[index] = now
                log.info("moving worker %d of %s from %s:%d to %s:%d", index, topology_id,
                         before.host, before.port, after.host, after.port)
        used.difference_update(slots)
        used.update(repaired)
        assignment = Assignment.from_dict(current["assignment"])
        assignment = dataclasses.replace(
            assignment, workers=tuple(WorkerSlot(s.host, s.port) for s in repaired))
        self.state.set_assignment(topology_id, stored_assignment(assignment, repaired, launched))

    def _remove_orphans(self, topologies: set[str], now: float) -> None:
        """Heartbeats and errors of topologies that are gone: a worker still running
        as its topology is removed may write once more, after `_remove`. And code
        and secrets of a submit that never wrote its topology (interrupted): a
        submit in progress has them without the topology too, hence the wait."""
        for topology_id in set(self.state.worker_beat_topologies()) - topologies:
            self.state.remove_worker_beats(topology_id)
        for topology_id in set(self.state.error_topologies()) - topologies:
            self.state.remove_errors(topology_id)
        expiry = self.conf["nimbus.inbox.jar.expiration.secs"]
        for topology_id, created in self.state.uploads().items():
            if topology_id not in topologies and now - created >= expiry:
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
