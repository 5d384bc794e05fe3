"""The executor of the `__acker` component: Storm's XOR acker (`AckerState`) for
the trees whose roots map to its task. Messages from executors of its own worker are
applied by their sender's thread (`apply`, `apply_acks`); its own loop takes those
from other workers and rotates the timeouts."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from storm_zmq.component import Tuple
from storm_zmq.runtime.acking import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    AckerState,
    Outcome,
    message_timeouts_enabled,
)
from storm_zmq.runtime.assignment import ExecutorAssignment
from storm_zmq.runtime.executor import Executor

if TYPE_CHECKING:
    from storm_zmq.runtime.worker import WorkerState


class AckerExecutor(Executor):
    """The `__acker` system bolt: XOR bookkeeping, completion sent to the spout task.

    Acker messages from this worker's own executors never pass through this
    executor's queue or thread: the sending executor applies them itself, under the
    acker's lock (`apply`; a flush's folded acks all at once, `apply_acks`), and
    sends the completion on with its own output. Why: a
    queue hand-off is a thread wake-up when its consumer is idle (about 30 us on
    this machine class), and each tuple tree took two that only acking needed: the
    spout's init and the last bolt's ack, each to the acker's queue (the
    completion's hand-off to the spout remains). What is left for this thread:
    messages from other workers' executors (through the receive thread, as any
    remote input) and the timeout rotation."""

    def __init__(self, worker: WorkerState, assignment: ExecutorAssignment) -> None:
        super().__init__(worker, assignment)
        self.state = AckerState.from_conf(worker.conf)
        self.lock = threading.Lock()
        self._next_rotation = (time.monotonic() + self.state.rotation_interval_secs
                               if message_timeouts_enabled(worker.conf) else math.inf)
        for task in assignment.tasks:
            worker.local_ackers[task] = self

    def build_components(self) -> None:
        pass  # the state exists from construction: other executors apply messages to it

    def apply(self, stream: str, values: Sequence[Any]) -> Outcome | None:
        """One acker message (from any thread of this worker); the outcome, if the
        message settled a tree, is for the caller to send on."""
        state = self.state
        with self.lock:
            if stream == ACKER_ACK_STREAM_ID:
                outcome = state.ack(values[0], values[1])
            elif stream == ACKER_INIT_STREAM_ID:
                outcome = state.init(values[0], values[1], values[2])
            elif stream == ACKER_FAIL_STREAM_ID:
                outcome = state.fail(values[0])
            else:
                self.malformed += 1
                return None
            self.executed += 1
        return outcome

    def apply_acks(self, acks: Sequence[tuple[int, int]]) -> list[Outcome]:
        """ACKER_ACKs ``(root, xor)`` from one flush of a thread of this worker, under
        one taking of the lock; the outcomes, for the caller to send on."""
        ack = self.state.ack
        outcomes = []
        with self.lock:
            for root, xor in acks:
                outcome = ack(root, xor)
                if outcome is not None:
                    outcomes.append(outcome)
            self.executed += len(acks)
        return outcomes

    def _apply_received(self, tuples: Sequence[tuple[int, Tuple]]) -> None:
        """Messages from other workers, in their order: each run of ACKER_ACKs to
        one task under one taking of the lock (as a local flush's), anything else
        one at a time. Only runs are grouped, so an ack and a fail of one tree
        are still applied in the order they came."""
        run_task = -1
        run: list[tuple[int, int]] = []
        for task, tup in tuples:
            if tup.stream == ACKER_ACK_STREAM_ID:
                if run and task != run_task:
                    self._apply_acks_to(self, run_task, run)
                    run = []
                run_task = task
                run.append((tup.values[0], tup.values[1]))
                continue
            if run:
                self._apply_acks_to(self, run_task, run)
                run = []
            self._apply_to(self, task, tup.stream, tup.values)
        if run:
            self._apply_acks_to(self, run_task, run)

    def loop(self) -> None:
        incoming = self.incoming
        while not self.stop_requested.is_set():
            self._run_input(incoming.get_all(timeout=0.05))

    def step(self) -> bool:
        if not self.room_to_produce():
            return False
        batches = self.incoming.get_all(timeout=0)
        self._run_input(batches)
        return bool(batches)

    def _run_input(self, batches: list[list[tuple[int, Any]]]) -> None:
        for batch in batches:
            self._apply_received(self._tuples_of(batch))
        now = time.monotonic()
        if now >= self._next_rotation:
            with self.lock:
                expired = self.state.expire()
            del expired  # freed outside the lock, which every acking thread takes
            self._next_rotation = now + self.state.rotation_interval_secs
        self.flush()
