"""The executor of a spout's tasks: `next_tuple` in rounds bounded by
`topology.max.spout.pending`, the pending trees and their timeouts
(`SpoutPending`), `ack`/`fail` as the acker's outcomes arrive, and activation."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from storm_zmq.runtime.acking import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    SpoutPending,
    message_timeouts_enabled,
    root_id_for,
    spout_emit_ids,
)
from storm_zmq.runtime.assignment import ExecutorAssignment
from storm_zmq.runtime.collector import StreamRoute
from storm_zmq.runtime.executor import Executor

if TYPE_CHECKING:
    from storm_zmq.runtime.worker import WorkerState

log = logging.getLogger("storm_zmq.runtime.executor")

#: A spout that emitted nothing waits this long for acks before calling next_tuple
#: again (Storm's sleep spout wait strategy), so an idle spout does not spin a core:
#: topology.sleep.spout.wait.strategy.time.ms, this by default.
IDLE_SPOUT_WAIT = 0.001
SPOUT_WAIT_KEY = "topology.sleep.spout.wait.strategy.time.ms"
#: The longest a spout in a thread of its own waits for acks at a time, whatever its
#: wait: a stop, an activation or a deactivation is an event, not a put into its
#: queue, so it is seen between two such waits (a spout waiting 8 s in one go took
#: 8 s to stop, past the worker's grace for it).
MAX_IDLE_STEP = 0.05


class SpoutExecutor(Executor):
    is_spout = True

    def __init__(self, worker: WorkerState, assignment: ExecutorAssignment) -> None:
        super().__init__(worker, assignment)
        self.pending = SpoutPending.from_conf(worker.conf)
        component_conf = worker.component_conf(self.component)
        max_pending = component_conf.get("topology.max.spout.pending")
        self.max_pending = max_pending * len(assignment.tasks) if max_pending else None
        wait_ms = component_conf.get(SPOUT_WAIT_KEY)
        self.idle_wait = IDLE_SPOUT_WAIT if wait_ms is None else wait_ms / 1000
        self.batch_size = max(1, int(worker.conf.get("topology.producer.batch.size") or 1))
        self.flush_interval = (worker.conf.get("topology.batch.flush.interval.millis") or 1) / 1000
        self.active = False
        self._activate_requested = threading.Event()
        self._deactivate_requested = threading.Event()
        self._backlog: deque[list[tuple[int, Any]]] = deque()
        self._deferred_acks: list[tuple[int, Any]] = []
        # Where this spout's roots go: the ackers of its own worker, if any (see
        # acking.root_id_for); messages for them are applied in this thread.
        self._local_acker_positions = [
            position for position, task in enumerate(self._ackers)
            if worker.task_location[task] >= 0]
        self.complete_latencies_ms: list[float] = []
        # topology.enable.message.timeouts false: never rotate, so nothing times out
        # (the acker keeps its entries as long: a tree may complete however late)
        self._next_rotation = (time.monotonic() + self.pending.rotation_interval_secs
                               if message_timeouts_enabled(worker.conf) else math.inf)
        self._idle_until = 0.0  # next_tuple() not before this (the spout wait)
        self.complete_ms_total = 0.0
        self.complete_samples = 0
        self._said_timeouts = False  # _say_timeouts, once

    def _say_timeouts(self, expired: int) -> None:
        """The first trees to time out, said once: a summary that showed only "failed"
        left a user to guess that a bolt never acked. Without anything bounding what
        is in flight, replays join the queues their trees timed out in, behind the
        stale copies, and can time out again and again (a run with a slow sink
        replayed 150,000 times for 20,000 ids and never finished; Storm does the
        same): then the remedy is said too."""
        self._said_timeouts = True
        timeout = self.worker.conf.get("topology.message.timeout.secs")
        if self.max_pending is not None:
            log.warning(
                "spout %r: %d tuple tree(s) timed out (topology.message.timeout.secs %s): "
                "counted as failed and passed to fail(). A bolt that never acks or fails "
                "its input times its trees out, and so does a tree slower than the timeout. "
                "(Said once per spout executor.)", self.component, expired, timeout)
            return
        log.warning(
            "spout %r: %d tuple tree(s) timed out (topology.message.timeout.secs %s) and "
            "topology.max.spout.pending is not set (or 0): with nothing bounding what is in "
            "flight, replays wait behind the tuples that timed out and can time out again, "
            "for ever; set topology.max.spout.pending (a few hundred to a few thousand). "
            "(A tuple that some bolt never acks or fails times out too, whatever is in "
            "flight.)",
            self.component, expired, timeout)

    @property
    def pending_count(self) -> int:
        return len(self.pending)

    @property
    def exhausted_tasks(self) -> int:
        """Tasks of this executor whose spout called report_exhausted()."""
        return len(self._exhausted_tasks)

    @property
    def exhausted(self) -> bool:
        return len(self._exhausted_tasks) == len(self.components)

    def request_activate(self) -> None:
        self._activate_requested.set()

    def request_deactivate(self) -> None:
        self._deactivate_requested.set()

    def _spout_emit_tracked(
        self, source: int, route: StreamRoute, values: Sequence[Any], tup_id: Any,
        targets: Sequence[int],
    ) -> None:
        if not self.acking or not targets:
            # Storm: without ackers (or with nobody subscribed) a tracked emit is
            # acked at once; deferred so that ack() never runs inside emit().
            self._deliver_untracked(source, route, values, targets)
            self._deferred_acks.append((source, tup_id))
            return
        local = self._local_acker_positions
        root = None
        if local:
            position = local[0] if len(local) == 1 else self._rng.choice(local)
            root = root_id_for(self._rng, position, len(self._ackers))
        ids = spout_emit_ids(self._rng, len(targets), root)
        self.pending.add(ids.root_id, tup_id, route.stream, time.monotonic_ns(), task_id=source)
        for target, edge in zip(targets, ids.edge_ids):
            self._deliver_with_roots(source, route, values, target, {ids.root_id: edge})
        self._send_to_acker(source, ACKER_INIT_STREAM_ID, ids.root_id, (ids.root_id, ids.init_xor, source))

    def _while_blocked(self) -> None:
        super()._while_blocked()
        # Take acks off our own queue (without running user code) so that their
        # sender (the acker, or a bolt acking inline), which may be what we wait
        # for, can go on.
        batches = self.incoming.get_all(timeout=0)
        if batches:
            self._backlog.extend(batches)

    def loop(self) -> None:
        while not self.stop_requested.is_set():
            emitted, _ = self._waited_round(check_room=False)  # a full queue waits in the put
            if not emitted:  # acks and fails are puts: they end the wait at once
                remaining = self._idle_until - time.monotonic() if self.active else MAX_IDLE_STEP
                wait = min(max(remaining, 0.0), MAX_IDLE_STEP)
                self._take_input(self.incoming.get_all(timeout=wait))

    def step(self) -> bool:
        emitted, took_input = self._waited_round(check_room=True)
        return bool(emitted or took_input)

    def _waited_round(self, check_room: bool) -> tuple[int, bool]:
        """`_round`, emitting only once the spout wait is over (Storm's: a
        next_tuple() that emitted nothing while active is not called again for
        `idle_wait`) and, with `check_room`, while there is room to produce; acks
        and fails are taken every round."""
        now = time.monotonic()
        may_emit = now >= self._idle_until and (not check_room or self.room_to_produce())
        emitted, took_input = self._round(may_emit)
        if may_emit and not emitted and self.active:  # inactive: called once active
            self._idle_until = now + self.idle_wait
        return emitted, took_input

    def _round(self, may_emit: bool) -> tuple[int, bool]:
        """Acks and fails in, timeouts, then (if `may_emit`) up to
        `topology.producer.batch.size` emits, then flush: (emitted, took input)."""
        components = self.components
        self._control()
        batches = self.incoming.get_all(timeout=0)
        self._take_input(batches)
        now = time.monotonic()
        if now >= self._next_rotation:
            expired_trees = self.pending.rotate()
            for expired in expired_trees:
                self.failed += 1
                self._call_hook(expired.task_id, components[expired.task_id].fail, expired.msg_id)
            if expired_trees and not self._said_timeouts:
                self._say_timeouts(len(expired_trees))
            self._next_rotation = now + self.pending.rotation_interval_secs
        self._run_deferred_acks()
        emitted = 0
        if may_emit and self.active and not self.exhausted:
            deadline = now + self.flush_interval
            while (
                emitted < self.batch_size
                and (self.max_pending is None or len(self.pending) < self.max_pending)
            ):
                before = self.emitted
                for task, component in components.items():
                    if task not in self._exhausted_tasks:
                        try:
                            component.next_tuple()
                        except BaseException as exc:
                            if not self._carry_on(exc, task):
                                raise
                if self.emitted == before or time.monotonic() >= deadline:
                    emitted += self.emitted - before
                    break
                emitted += self.emitted - before
        self.flush()
        return emitted, bool(batches)

    def _control(self) -> None:
        if self._activate_requested.is_set():
            self._activate_requested.clear()
            if not self.active:
                self.active = True
                for task, component in self.components.items():
                    self._call_hook(task, component.activate)
        if self._deactivate_requested.is_set():
            self._deactivate_requested.clear()
            if self.active:
                self.active = False
                for task, component in self.components.items():
                    self._call_hook(task, component.deactivate)

    def _call_hook(self, task: int, hook: Any, *args: Any) -> None:
        """A spout task's callback (ack, fail, activate, deactivate): what it raises
        stops the worker, unless the spout carries on (`_carry_on`)."""
        try:
            hook(*args)
        except BaseException as exc:
            if not self._carry_on(exc, task):
                raise

    def _take_input(self, batches: list[list[tuple[int, Any]]]) -> None:
        while self._backlog:
            self._handle_batch(self._backlog.popleft())
        for batch in batches:
            self._handle_batch(batch)

    def _handle_batch(self, batch: list[tuple[int, Any]]) -> None:
        pending = self.pending
        components = self.components
        for _task, tup in self._tuples_of(batch):
            if tup.stream == ACKER_ACK_STREAM_ID:
                entry = pending.ack(tup.values[0])
                if entry is not None:
                    self.acked += 1
                    latency = entry.complete_latency_ms(time.monotonic_ns())
                    self.complete_ms_total += latency
                    self.complete_samples += 1
                    if len(self.complete_latencies_ms) < 100_000:
                        self.complete_latencies_ms.append(latency)
                    self._call_hook(entry.task_id, components[entry.task_id].ack, entry.msg_id)
            elif tup.stream == ACKER_FAIL_STREAM_ID:
                entry = pending.fail(tup.values[0])
                if entry is not None:
                    self.failed += 1
                    self._call_hook(entry.task_id, components[entry.task_id].fail, entry.msg_id)
            else:
                self.malformed += 1

    def _run_deferred_acks(self) -> None:
        while self._deferred_acks:
            acks, self._deferred_acks = self._deferred_acks, []
            for task, tup_id in acks:
                self.acked += 1
                self._call_hook(task, self.components[task].ack, tup_id)
