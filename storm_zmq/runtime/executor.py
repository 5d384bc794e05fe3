"""Executors: what runs a worker's tasks, one component each, by default in turns in
the worker's shared thread (`storm_zmq.runtime.shared`), else each in a thread of its
own (the `Executor` is a `threading.Thread`, and `loop` its body).

An executor runs the tasks of one component. Its input is one bounded `BatchQueue`
of lists of ``(task, item)`` pairs, where item is a `Tuple` (from this worker, no
serialization) or the payload bytes of a batch of remote tuples (decoded here, not
in the receive thread, so decoding work is spread over executors). Its output is
buffered, per local executor as Tuples and per (remote task, source task) in runs of
one stream (`_PendingRun`), and flushed once per input batch or spout round: every
queue operation moves a batch, and every run becomes one payload.

Acking follows Storm exactly: the spout side draws root and edge ids and sends
ACKER_INIT, bolts anchor with fresh edge ids per anchor and destination and send
ACKER_ACK / ACKER_FAIL, and the `__acker` executor keeps `AckerState` (messages for
an acker of the same worker are applied by their sender's thread: `AckerExecutor`);
the pure bookkeeping lives in `storm_zmq.runtime.acking`.

This module has what every kind shares: the output buffers, the flush, delivery and
backpressure (`Executor`). The kinds are in `bolt_executor`, `spout_executor` and
`acker_executor`, and a task's collector (what `emit`, `ack` and `fail` reach) in
`collector`; `new_executor` makes the executor a component needs.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from storm_zmq.component import Bolt, Spout, Tuple, new_component, report_and_carry_on
from storm_zmq.messaging.base import TaskMessage
from storm_zmq.portable import add_note, format_exception
from storm_zmq.runtime.acking import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    Outcome,
    acker_index,
    anchor_edge,
    anchor_one,
    anchor_roots,
)
from storm_zmq.runtime.assignment import ACKER, ExecutorAssignment
from storm_zmq.runtime.collector import (
    StoppedCollector,
    StreamRoute,
    TaskCollector,
    id_of,
    not_a_tuple_id,
)
from storm_zmq.runtime.held import HeldBatch, HeldOutput
from storm_zmq.runtime.queues import BatchQueue, QueueClosed
from storm_zmq.runtime.serialization import (
    MalformedTuple,
    SerializationError,
    TupleId,
    TupleTooLarge,
    are_root_pairs,
    decode_tuples,
    encode_tuples,
    one_tree_id,
    wire_roots,
)
from storm_zmq.runtime.thread_calls import THREAD_CALL_TASK, ThreadCall

if TYPE_CHECKING:
    from storm_zmq.runtime.acker_executor import AckerExecutor
    from storm_zmq.runtime.worker import WorkerState

log = logging.getLogger(__name__)

# Building Tuples and field namedtuples through tuple.__new__ skips the Python-level
# constructors namedtuple generates (a third of a word count's time went there);
# arity is checked once, at emit.
_new = tuple.__new__

#: The stream that tells a spout task each acker outcome (reset_timeout is not sent:
#: no stream asks the acker for it).
OUTCOME_STREAMS = {"ack": ACKER_ACK_STREAM_ID, "fail": ACKER_FAIL_STREAM_ID}


class RemoteBatch(list):
    """TaskMessages for one remote worker, as one element of the transfer queue;
    `tuples` is how many tuples their payloads carry (what the queue counts)."""

    __slots__ = ("worker", "tuples")


class _PendingRun:
    """Tuples buffered for one remote task, from one source task, on one stream,
    in emit order: one payload at flush."""

    __slots__ = ("stream", "roots", "values")

    def __init__(self, stream: str) -> None:
        self.stream = stream
        #: Per tuple: None (untracked), its roots, or its TupleId (an acking bolt's
        #: anchored emit, whose roots dict is not made: `wire_roots`).
        self.roots: list[dict[int, int] | TupleId | None] = []
        self.values: list[Sequence[Any]] = []


class OutputRefused(BaseException):
    """Tuples a task emitted that cannot go to another worker (a value msgpack
    cannot carry, or a tuple larger than the transport's frames), found when its
    executor flushed. Storm's worker dies of it, and so does this one; it is a
    BaseException because the flush may run inside any task's `emit` (a full
    buffer), and a component that catches Exception around its own emit must not
    swallow another emit's error. The executor sends the rest of the flush first."""

    def __init__(self, task: int, cause: Exception) -> None:
        hint = (" (found when the output was flushed: topology.testing.always.try.serialize: "
                "true raises it at the emit, with the emitting line in the traceback)"
                if isinstance(cause, SerializationError) else "")
        super().__init__(f"{type(cause).__name__}: {cause}{hint}")
        self._storm_task = task


def _blame(exc: BaseException, task: int) -> None:
    """Name the task an exception came from, unless a deeper frame already did."""
    if not hasattr(exc, "_storm_task"):
        exc._storm_task = task  # type: ignore[attr-defined]


#: How long a component's own thread waits for room to queue a call before it says so
THREAD_CALL_PATIENCE = 5.0

#: What to do instead of a signal handler, which works in pystorm's process of its
#: own and not in a thread of a shared worker
SIGNAL_HINT = (
    "storm-zmq: a component cannot install a signal handler: it runs in a thread of its "
    "worker process, which it shares with other tasks, not in a process of its own as in "
    "pystorm. Do on-stop work in cleanup(), which runs on every graceful stop (SIGTERM, "
    "Ctrl-C, kill, -t) before the worker exits (docs/streamparse.md)")


def add_hint(exc: BaseException) -> None:
    """A note on `exc` (shown under its traceback) when it is a known mistake of
    code written for pystorm's process-per-task model."""
    if isinstance(exc, ValueError) and str(exc).startswith("signal only works in main thread"):
        add_note(exc, SIGNAL_HINT)


class ComponentFailed(Exception):
    """A component raised: the worker reports it and dies, as Storm's does."""

    def __init__(self, component: str, task: int, text: str) -> None:
        super().__init__(f"component {component!r} task {task} failed:\n{text}")
        self.component = component
        self.task = task
        self.text = text


def executor_label(component: str, tasks: Sequence[int]) -> str:
    """An executor as its worker's log lines name it: ``count:3``, or ``count:3-4``
    for an executor of several tasks (Storm's ``[3 4]``)."""
    first, last = min(tasks), max(tasks)
    if first == last:
        return f"{component}:{first}"
    if len(tasks) == last - first + 1:
        return f"{component}:{first}-{last}"
    return f"{component}:{','.join(str(task) for task in sorted(tasks))}"


class Executor(threading.Thread):
    """Runs the tasks of one component; subclasses give the loop."""

    is_spout = False

    def __init__(self, worker: WorkerState, assignment: ExecutorAssignment) -> None:
        super().__init__(name=f"executor-{assignment.component}-{assignment.index}", daemon=True)
        self.worker = worker
        self.assignment = assignment
        self.component = assignment.component
        self.index = assignment.index
        #: What the worker's log lines written while its code runs say (`storm_zmq_log_context`)
        self.log_label = executor_label(assignment.component, assignment.tasks)
        self.incoming: BatchQueue[tuple[int, Any]] = worker.queues[assignment.index]
        #: The thread that runs it (`threading.get_ident`; set by `run` and by the
        #: shared thread that runs or takes it over): its components' collector calls
        #: from any other thread are made here (`storm_zmq.runtime.thread_calls`).
        #: The constructing thread until then (a test that drives it).
        self.owner = threading.get_ident()
        self._finished = False
        self._task_location = worker.task_location
        self._codec = worker.codec  # the topology's value types, for remote tuples
        # Storm's rule: a component's own config may turn its debug logging on (or off)
        self.debug = bool(worker.component_conf(self.component).get("topology.debug"))
        self.try_serialize = bool(worker.conf.get("topology.testing.always.try.serialize"))
        self.checks_emits = self.debug or self.try_serialize
        # (a topology submitted by an older storm-zmq has no such key: it did not copy)
        self.copies_values = bool(worker.component_conf(self.component).get(
            "topology.copy.emitted.values", False))
        if self.try_serialize:  # a Tuple (a copy of the values) per target
            self._deliver_untracked = self._deliver_untracked_each  # type: ignore[method-assign]
        self.acking = bool(worker.assignment.ackers)
        self._ackers = worker.assignment.ackers
        self._local_ackers = worker.local_ackers  # filled before any executor starts
        self._rng = random.Random()  # seeded from os.urandom in this process: never shared
        self._out_local: dict[int, list[tuple[int, Any]]] = {}
        # (target task, source task) -> what that source task emitted to that remote
        # task since the last flush, in runs of one stream (see _remote)
        self._out_remote: dict[tuple[int, int], list[_PendingRun]] = {}
        self._buffered = 0
        self._acks_out: dict[int, int] = {}  # root -> XOR of this batch's acks
        # Output buffered beyond this is published mid-batch, bounding memory.
        self._max_buffered = int(worker.conf.get("topology.transfer.batch.size") or 1000)
        self._max_payload = worker.max_payload  # set by the worker before executors exist
        self.failure: ComponentFailed | None = None
        self.stop_requested = threading.Event()
        # counters, read by the worker's stats loop (metrics: docs/observability.md)
        self.emitted = self.transferred = self.acked = self.failed = self.executed = 0
        #: Tuples its components emitted in cleanup(), which `finish` warns about
        self.emitted_in_cleanup = 0
        self.malformed = self.errors_reported = 0
        self.busy_secs = 0.0  # time in process(), process_tick() and process_batch()
        self.process_ms_total = 0.0
        self.process_samples = 0
        # id(tuple) -> (tuple, perf_counter at arrival): process-latency samples
        self._process_samples: dict[int, tuple[Tuple, float]] = {}
        rate = float(worker.conf.get("topology.stats.sample.rate") or 0)
        self._sample_every = max(1, round(1 / rate)) if rate > 0 else 0
        # Backpressure (runtime/backpressure.py): where waiting could close a cycle.
        self._cyclic_executors = worker.cyclic_executors(self.component)
        self._cyclic_tasks = worker.cyclic_tasks(self.component)
        self._exhausted_tasks: set[int] = set()
        self.components: dict[int, Any] = {}
        #: the tasks whose cleanup() has returned or raised, and the one whose
        #: cleanup() runs now: a stop that timed out names the others and says
        #: whether it hangs in cleanup() (`Worker._shutdown`)
        self.cleaned_up: set[int] = set()
        self.in_cleanup: int | None = None
        # Load-aware shuffles (topology.disable.loadaware.messaging), refreshed per flush.
        self._load_aware = not worker.conf.get("topology.disable.loadaware.messaging")
        self._shuffles: list[Any] = []
        #: Run by a `SharedExecutorThread` (worker.shared.executor.thread): never wait
        #: on a queue; what a full queue or a throttle would wait for is held instead.
        self.shared = False
        self._started_up = False  # components built and initialized (start_up)
        self._starting_up = False  # start_up began
        #: In a shared thread, batches for a full local queue or a throttled remote
        #: task, and those for the same tasks after them (`storm_zmq.runtime.held`);
        #: the executor takes no input and emits nothing while they carry
        #: `_hold_limit` tuples or more.
        self._held = HeldOutput()
        self._hold_limit = self._max_buffered
        #: Held output no turn can reach but one call of the component's code that
        #: emits without end: the thread then hands its other executors over and
        #: this one waits for room (`SharedExecutorThread.hand_over`).
        self._hand_over_at = 16 * max(self._hold_limit, self.incoming.capacity)
        self.shared_thread: Any = None  # the SharedExecutorThread running it, if one
        #: Input batches a shared thread's bolt took but left for later (its output
        #: is held, or its turn is over); replaced whole, never changed in place
        #: (stats read it).
        self._input_backlog: list[list[tuple[int, Any]]] = []
        self._in_hand = 0  # tuples of the input batch being run (queued, for a drain)
        #: With peers, the transfer queue: every executor of a shared thread waits
        #: while it is full (see `_send_or_hold`).
        self._transfer_gate = worker.transfer if len(worker.assignment.workers) > 1 else None

    # -- set-up -------------------------------------------------------------------

    def build_components(self) -> None:
        """Instantiate one component object per task and call `initialize`."""
        definition = self.worker.definition
        spec = definition.components.get(self.component)
        for task in self.assignment.tasks:
            routes = self.worker.routes_for(self.component, task, self._rng)
            if self._load_aware:  # shuffles with a choice to make
                self._shuffles.extend(
                    chooser for route in routes.values() for chooser in route.choosers
                    if hasattr(chooser, "refresh") and len(chooser.tasks) > 1
                )
            collector = TaskCollector(self, task, routes)
            self.components[task] = self._instantiate(spec, collector, task)
        for task, component in self.components.items():
            conf, context = self.worker.component_conf(self.component), self.worker.context_for(task)
            component._setup_component(conf, context)
            component.initialize(conf, context)

    def _instantiate(self, spec: Any, collector: TaskCollector, task: int) -> Any:
        component = new_component(spec.component_cls, collector, self.component, task)
        collector.bind(component)
        return component

    # -- thread ---------------------------------------------------------------------

    def storm_zmq_log_context(self) -> str | None:
        """Which executor's code this thread runs (storm_zmq.logs.ExecutorContext):
        its own, in a thread of its own."""
        return self.log_label

    def run(self) -> None:
        self.owner = threading.get_ident()
        try:
            if not self._started_up:  # else it ran in a shared thread until now
                self.start_up()
            try:
                self._release_held()
                self.loop()
            except QueueClosed:  # shutting down while blocked on a stopped consumer
                pass
            self.finish()
        except BaseException as exc:  # user code: report with traceback, the worker dies
            self.report_failure(exc)

    @property
    def started_up(self) -> bool:
        """Its components are built and initialized."""
        return self._started_up

    @property
    def starting_up(self) -> bool:
        """Its components are being built and initialized now (in a shared thread
        the executors start one after another)."""
        return self._starting_up and not self._started_up

    def start_up(self) -> None:
        self._starting_up = True
        self.build_components()
        self._started_up = True
        self.worker.executor_ready(self)

    def finish(self) -> None:
        """After the loop: flush, Storm's `cleanup()` hook (runs even if output
        cannot be flushed), flush what it emitted.

        What a component emits in `cleanup()` is flushed, but every executor stops
        at once, so its consumers may already be gone; Storm does not promise such
        tuples either. That is said in a warning rather than left to be found
        missing: state is kept by writing it out from `cleanup()`, not by emitting it."""
        self._run_thread_calls_left()  # before cleanup(), which may wait for them
        self._flush_unless_closed()
        for task, component in self.components.items():
            emitted = self.emitted
            self.in_cleanup = task
            try:
                component.cleanup()
            finally:
                self.in_cleanup = None
                self.cleaned_up.add(task)
            if self.emitted != emitted:
                self.emitted_in_cleanup += self.emitted - emitted  # said here, once
                log.warning(
                    "component %r task %d emitted %d tuple(s) in cleanup(): the topology is "
                    "stopping, and they are delivered only to consumers that have not stopped "
                    "yet (write final state out from cleanup() instead)",
                    self.component, task, self.emitted - emitted,
                )
        self._run_thread_calls_left()
        self._flush_unless_closed()
        for task, component in self.components.items():
            StoppedCollector(self.component, task).take_over(component)
        self._finished = True  # a thread waiting for a call it queued stops waiting

    def report_failure(self, exc: BaseException) -> None:
        """User code raised: report it with its traceback; the worker dies of it."""
        add_hint(exc)
        task = getattr(exc, "_storm_task", self.assignment.tasks[0])
        self.failure = ComponentFailed(self.component, task, format_exception(exc))
        self.worker.executor_failed(self)

    def _carry_on(self, exc: BaseException, task: int, tup: Tuple | None = None) -> bool:
        """A task's component raised `exc`. With pystorm's `exit_on_exception` off
        it reports it (`raise_exception`: logged with component, task and
        traceback, counted in `errors_reported` and the worker's errors) and this
        executor goes on: True. Otherwise (the default, a BaseException, or
        `QueueClosed`: stopping) the task is named for the worker's report and the
        caller re-raises: False. Only called once something raised."""
        if isinstance(exc, QueueClosed) or not report_and_carry_on(self.components[task], exc, tup):
            _blame(exc, task)
            return False
        return True

    def step(self) -> bool:
        """One turn of `loop` for a shared thread: whatever can be done now, without
        waiting; True if it took input or emitted."""
        raise NotImplementedError

    def _flush_unless_closed(self) -> None:
        try:
            self.flush()
            self._release_held(stopping=True)
        except QueueClosed:  # shutting down and nobody takes it any more: dropped
            dropped = self._buffered + self._held.tuples
            if dropped:
                log.warning("component %r: %d tuple(s) not delivered while stopping: their "
                            "consumers had stopped", self.component, dropped)
            self._out_local.clear()
            self._out_remote.clear()
            self._buffered = 0
            self._held.clear()

    def _release_held(self, stopping: bool = False) -> None:
        """Put what a shared thread's executor held, waiting as an executor's own
        thread does (`_publish`): it leaves the shared thread, whose executors go on
        without it. What may go goes first: a batch waits only behind held batches
        for its own tasks (`HeldOutput.release`), so a remote consumer is not left
        idle behind a full local queue (a soak audit saw a burst of replays do
        that). Stopping, in the shared thread: in order, into local queues at once
        (their consumers run in this thread and stop too, so waiting for room would
        wait for nothing), and into the transfer queue once it has room, whatever
        the throttles say, as the receiving worker has stopped throttling."""
        held = self._held
        if not stopping:
            while not held.release(self._put_if_room, self._must_wait, self._part_of):
                first = held.first()  # what is left waits for room, or for a throttle
                if first.remote and any(self._must_wait(task) for task in first.tasks):
                    self._while_blocked()
                    self.worker.wait_throttle_change(0.01)
                elif not first.queue.wait_for_room(0.05):
                    self._while_blocked()
            return
        while held:
            entry = held.first()
            if entry.remote:
                self._put_waiting(entry.queue, entry.batch, weight=entry.weight)
            else:
                entry.queue.put(entry.batch, force=True, weight=entry.weight)
            held.pop()

    @staticmethod
    def _put_if_room(held: HeldBatch, remote_past_bound: bool = False) -> bool:
        """Put a held batch if its queue has room (by one batch past its bound at
        most, as a waiting put goes). With `remote_past_bound` (a shared thread's
        executor, `_try_put`) the transfer queue takes it whatever its length."""
        queue = held.queue
        if len(queue) >= queue.capacity and not (remote_past_bound and held.remote):
            return False
        queue.put(held.batch, force=True, weight=held.weight)
        return True

    def loop(self) -> None:
        raise NotImplementedError

    # -- input ----------------------------------------------------------------------

    def _tuples_of(self, batch: list[tuple[int, Any]]) -> list[tuple[int, Tuple]]:
        """The (task, Tuple) pairs of an input batch. A batch from the receive thread
        holds payloads only, one from an executor Tuples only: the first kind is
        decoded here, in the consuming executor's thread (so decoding is spread over
        executors, and whatever counts tuples afterwards, sampling included, sees
        them all); the second is returned as it is. This is the hot path of every
        remote tuple, hence a comprehension."""
        kind = type(batch[0][1])
        if kind is not bytes:
            if kind is ThreadCall:
                self._run_thread_calls(batch)
                return []
            return batch
        decode = self._decode
        return [(task, tup) for task, payload in batch for tup in decode(task, payload)]

    def call_in_own_thread(self, method: Any, args: tuple[Any, ...], wait: bool) -> Any:
        """`method(*args)`, a collector call made in another thread, queued for this
        executor's thread (`storm_zmq.runtime.thread_calls`); its result if `wait`."""
        call = ThreadCall(method, args, wait)
        try:
            said = False
            while not self.incoming.put([(THREAD_CALL_TASK, call)], timeout=THREAD_CALL_PATIENCE):
                if not said:  # a slow executor, or one that waits for this very thread
                    said = True
                    log.warning(
                        "component %r: thread %r has waited %.0f s for room in its executor's "
                        "input queue to emit, ack or fail (the calls of a component's own "
                        "threads queue there): the executor is slow, or it waits in its own "
                        "code for this thread, which waits for it (emit after that wait "
                        "instead)", self.component, call.thread, THREAD_CALL_PATIENCE)
        except QueueClosed:
            log.warning("component %r: a call from thread %r after its executor stopped "
                        "was dropped", self.component, call.thread)
            return None
        if call.done is None:
            return None
        while not call.done.wait(0.1):
            if self._finished:
                log.warning("component %r: a call from thread %r was not run: its executor "
                            "stopped first", self.component, call.thread)
                return None
        return call.outcome()

    def _run_thread_calls(self, batch: list[tuple[int, Any]]) -> None:
        """Run collector calls from the components' own threads, in order. What one
        raised, with no caller waiting to receive it, is reported as the task's error
        (logged with its traceback) and the executor goes on, as the thread would
        have; stopping (`QueueClosed`) is not an error."""
        for _task, call in batch:
            call.run()
            error = call.unclaimed_error()
            if error is None:
                continue
            if isinstance(error, QueueClosed) or not isinstance(error, Exception):
                raise error
            add_note(error, f"in a call from thread {call.thread!r}, run in the executor's thread")
            call.method.__self__.report_error(error, None)

    def _run_thread_calls_left(self) -> None:
        """Stopping: the calls still queued are run; input still queued was going to
        be dropped anyway."""
        for batch in self.incoming.get_all(timeout=0):
            if type(batch[0][1]) is ThreadCall:
                self._run_thread_calls(batch)

    def _decode(self, task: int, payload: bytes) -> Sequence[Tuple]:
        """The tuples of a remote payload for `task` (what one task sent it on one
        stream); none if the payload is refused (counted and logged)."""
        try:
            source, stream, roots, values = decode_tuples(payload, self._codec)
            return self.worker.make_tuples(source, stream, roots, values, task)
        except MalformedTuple as exc:
            self.malformed += 1
            self.worker.refused.record("tuple", f"payload for task {task}: {exc}")
            return ()

    # -- output ---------------------------------------------------------------------

    def _deliver_untracked(
        self, source: int, route: StreamRoute, values: Sequence[Any], targets: Sequence[int]
    ) -> None:
        # The per-tuple hot path: local delivery is inlined rather than a call per
        # target, and one Tuple (or one copy of the values) serves every target.
        location = self._task_location
        out_local = self._out_local
        tup = None
        snapshot = None
        self.transferred += len(targets)
        for target in targets:
            where = location[target]
            if where >= 0:
                if tup is None:
                    tup = _new(Tuple, (None, self.component, route.stream, source,
                                       _new(route.values_cls, values)))
                batch = out_local.get(where)
                if batch is None:
                    batch = out_local[where] = []
                batch.append((target, tup))
                self._buffered += 1
            else:
                if snapshot is None:
                    snapshot = tuple(values)
                self._remote(target, source, route.stream, None, snapshot)
        if self._buffered >= self._max_buffered:
            self.flush()

    def _deliver_untracked_each(
        self, source: int, route: StreamRoute, values: Sequence[Any], targets: Sequence[int]
    ) -> None:
        """`_deliver_untracked` under try.serialize: one Tuple per target, so that
        each is made of its own copy of `values` (a `DecodedEachTime`)."""
        for target in targets:
            Executor._deliver_untracked(self, source, route, values, (target,))

    def _deliver_with_roots(
        self, source: int, route: StreamRoute, values: Sequence[Any], target: int,
        roots: dict[int, int] | None,
    ) -> None:
        self.transferred += 1
        where = self._task_location[target]
        if where >= 0:
            tuple_id = TupleId(roots) if roots else None
            self._local(
                where, target,
                _new(Tuple, (tuple_id, self.component, route.stream, source,
                             _new(route.values_cls, values))),
            )
        else:
            self._remote(target, source, route.stream, roots or None, tuple(values))
        if self._buffered >= self._max_buffered:
            self.flush()

    def _anchor_ids(self, anchors: Any) -> list[TupleId]:
        """The tracked ids among `anchors` (an untracked tuple's id is None). Anything
        else is refused: an emit anchored to a tuple's values, say, went untracked in
        silence, and a tuple failed downstream was then never replayed (Storm's
        ShellBolt refuses an anchor it does not know, too)."""
        ids = []
        for anchor in anchors:
            anchor_id = id_of(anchor)
            if type(anchor_id) is TupleId:
                ids.append(anchor_id)
            elif anchor_id is not None:
                raise not_a_tuple_id(self.component, "emit anchored to", anchor, " (anchors=[tup])")
        return ids

    def _deliver_anchored(
        self, source: int, route: StreamRoute, values: Sequence[Any],
        anchors: Sequence[Tuple], targets: Sequence[int],
    ) -> None:
        if type(anchors) is list and len(anchors) == 1:  # auto-anchoring: the input
            anchor = anchors[0]
            anchor_id = anchor.id if type(anchor) is Tuple else id_of(anchor)
            if type(anchor_id) is TupleId and (anchor_id.many is None or anchor_id.many):
                # the per-word path of an acking bolt: _deliver_with_roots inlined,
                # and _local for the targets of this worker (only buffering in the
                # loop: a flush renews _out_local); an input in one tree (nearly
                # all) gives ids without a roots dict (TupleId)
                rng = self._rng
                location = self._task_location
                out_local = self._out_local
                one_tree = anchor_id.many is None
                root = anchor_id.root
                self.transferred += len(targets)
                for target in targets:
                    if one_tree:
                        edge = anchor_edge(anchor_id, rng)
                        tuple_id = one_tree_id(root, edge)
                    else:
                        tuple_id = TupleId(anchor_one(anchor_id, rng))
                    where = location[target]
                    if where < 0:
                        self._remote(target, source, route.stream, tuple_id, tuple(values))
                        continue
                    batch = out_local.get(where)
                    if batch is None:
                        batch = out_local[where] = []
                    batch.append((target, _new(Tuple, (
                        tuple_id, self.component, route.stream, source,
                        _new(route.values_cls, values)))))
                    self._buffered += 1
                if self._buffered >= self._max_buffered:
                    self.flush()
                return
            # an id in no tree (None, or empty roots) anchors to nothing; what is no
            # id at all is refused there
            anchor_ids = [] if anchor_id is None or type(anchor_id) is TupleId else self._anchor_ids(anchors)
        else:
            anchor_ids = self._anchor_ids(anchors)
        if not anchor_ids:
            self._deliver_untracked(source, route, values, targets)
            return
        for target in targets:
            self._deliver_with_roots(source, route, values, target, anchor_roots(anchor_ids, self._rng))

    def _send_system(self, source: int, target: int, stream: str, values: tuple[Any, ...]) -> None:
        where = self.worker.task_location[target]
        if where >= 0:
            self._local(where, target, _new(Tuple, (None, self.component, stream, source, values)))
        else:
            self._remote(target, source, stream, None, values)
        if self._buffered >= self._max_buffered:
            self.flush()

    def _send_to_acker(self, source: int, stream: str, root: int, values: tuple[Any, ...]) -> None:
        acker = self._ackers[acker_index(root, len(self._ackers))]
        local = self._local_ackers.get(acker)
        if local is None:
            self._send_system(source, acker, stream, values)
        else:
            self._apply_to(local, acker, stream, values)

    def _send_acks(self, acks: dict[int, int]) -> None:
        """A flush's folded acks (root -> XOR): each local acker gets its share
        under one taking of its lock (every acking thread of the worker takes it),
        the others one ACKER_ACK per root. The local ones go first: they cannot
        fail, and a send that does (the worker dies of it) then loses no more."""
        ackers = self._ackers
        count = len(ackers)
        local_ackers = self._local_ackers
        shares: dict[int, list[tuple[int, int]]] = {}
        remote: list[tuple[int, int, int]] = []
        for root, xor in acks.items():
            acker = ackers[acker_index(root, count)]
            if acker in local_ackers:
                share = shares.get(acker)
                if share is None:
                    share = shares[acker] = []
                share.append((root, xor))
            else:
                remote.append((acker, root, xor))
        for acker, share in shares.items():
            self._apply_acks_to(local_ackers[acker], acker, share)
        source = self.assignment.tasks[0]
        for acker, root, xor in remote:
            self._send_system(source, acker, ACKER_ACK_STREAM_ID, (root, xor))

    # An acker of this worker is applied to by the thread whose message it is (the
    # acker's own thread for messages from other workers); the outcome leaves with
    # that thread's output, from acker task `task`.
    def _apply_to(self, acker: AckerExecutor, task: int, stream: str, values: Sequence[Any]) -> None:
        outcome = acker.apply(stream, values)
        if outcome is not None:
            self._send_outcome(task, outcome)

    def _apply_acks_to(self, acker: AckerExecutor, task: int, acks: list[tuple[int, int]]) -> None:
        for outcome in acker.apply_acks(acks):
            self._send_outcome(task, outcome)

    def _send_outcome(self, acker: int, outcome: Outcome) -> None:
        """A tree's completion (or failure), from acker task `acker` to its spout task."""
        stream = OUTCOME_STREAMS[outcome.kind]  # KeyError: an outcome nobody sends
        target = outcome.spout_task
        where = self._task_location[target]
        if where >= 0:
            self._local(where, target, _new(Tuple, (None, ACKER, stream, acker, (outcome.root_id,))))
        else:
            self._remote(target, acker, stream, None, (outcome.root_id,))
        if self._buffered >= self._max_buffered:
            self.flush()

    def _encode_remote(
        self, source: int, stream: str, roots: list[Any] | None, values: list[Any]
    ) -> list[bytes]:
        """The payloads that carry these tuples to another worker: one, or more when
        one would be larger than the transport carries. A single tuple that large is
        refused here, in the executor that emitted it, with the component, stream
        and setting named; found later, by the send thread, it would take the rest
        of its batch with it."""
        payload = encode_tuples(source, stream, roots, values, self.component, self._codec)
        limit = self._max_payload
        if limit is None or len(payload) <= limit:
            return [payload]
        if len(values) == 1:
            raise TupleTooLarge(
                f"component {self.component!r}, stream {stream!r}: a tuple of {len(payload):,} "
                f"bytes serialized, more than the transport carries to another worker "
                f"({limit:,} bytes; raise {self.worker.max_payload_setting or 'its max frame size'}, "
                "or emit smaller tuples)"
            )
        half = len(values) // 2
        cut = 2 * half if roots and are_root_pairs(roots) else half  # two ids a tuple
        return self._encode_remote(
            source, stream, roots and roots[:cut], values[:half]
        ) + self._encode_remote(source, stream, roots and roots[cut:], values[half:])

    # _local and _remote only buffer; every delivery path checks the bound once at
    # its end, so a flush never happens while a caller holds a buffer.
    def _local(self, executor: int, target: int, tup: Tuple) -> None:
        batch = self._out_local.get(executor)
        if batch is None:
            batch = self._out_local[executor] = []
        batch.append((target, tup))
        self._buffered += 1

    def _remote(
        self, target: int, source: int, stream: str, roots: dict[int, int] | TupleId | None,
        values: Sequence[Any],
    ) -> None:
        """Buffer a tuple for a task of another worker. Each run of tuples on one
        stream becomes one payload, and runs are sent in order, so a remote task
        gets a source task's tuples in emit order, across streams too, as a local
        task does."""
        key = (target, source)
        runs = self._out_remote.get(key)
        if runs is None:
            run = _PendingRun(stream)
            self._out_remote[key] = [run]
        else:
            run = runs[-1]
            if run.stream != stream:
                run = _PendingRun(stream)
                runs.append(run)
        run.roots.append(roots)
        run.values.append(values)
        self._buffered += 1

    def flush(self) -> None:
        """Hand buffered output on: one queue put per destination. Then the
        load-aware shuffles learn their targets' loads and their workers' weights,
        so the next batch goes around the busy ones."""
        self._publish()
        if self._shuffles:
            loads = self.worker.task_loads()
            weights = self.worker.task_weights
            for chooser in self._shuffles:
                chooser.refresh(loads, weights)

    def _publish(self) -> None:
        if not self.shared and self._held:  # handed over mid-step: what it held goes first
            self._release_held()
        if self._acks_out:
            acks, self._acks_out = self._acks_out, {}
            self._send_acks(acks)
        if not self._buffered:
            return
        local, self._out_local = self._out_local, {}
        remote, self._out_remote = self._out_remote, {}
        self._buffered = 0
        queues = self.worker.queues
        cyclic = self._cyclic_executors
        for executor, batch in local.items():
            self._put(queues[executor], batch, executor in cyclic)
        if not remote:
            return
        location = self._task_location
        batches: dict[int, RemoteBatch] = {}
        refused: OutputRefused | None = None  # raised once the rest is on its way
        for (target, source), runs in remote.items():
            worker = -1 - location[target]
            batch = batches.get(worker)
            if batch is None:
                batch = batches[worker] = RemoteBatch()
                batch.worker = worker
                batch.tuples = 0
            for run in runs:
                roots = wire_roots(run.roots)
                try:
                    payloads = self._encode_remote(source, run.stream, roots, run.values)
                except (SerializationError, TupleTooLarge) as exc:
                    refused = refused or OutputRefused(source, exc)
                    continue
                batch.extend([TaskMessage(target, payload) for payload in payloads])
                batch.tuples += len(run.values)
        throttle = self.worker.throttle
        for batch in batches.values():
            if self.shared:
                self._send_or_hold(batch)
                continue
            if throttle.throttled:
                self._hold_while_throttled(batch)
            self._put(self.worker.transfer, batch, weight=batch.tuples)
        if refused is not None:
            raise refused

    def _put(
        self, queue: BatchQueue[Any], batch: list[Any], cyclic: bool = False,
        weight: int | None = None,
    ) -> None:
        if self.shared:
            # A local consumer runs in this same thread: waiting for it would wait
            # for ever. A cycle goes past the bound, as with threads; otherwise what
            # does not fit now is held (`_hold_or_put`).
            if cyclic:
                queue.put(batch, force=True, weight=weight)
            else:
                self._hold_or_put(queue, batch, len(batch) if weight is None else weight, remote=False)
            return
        self._put_waiting(queue, batch, cyclic, weight)

    def _put_waiting(
        self, queue: BatchQueue[Any], batch: list[Any], cyclic: bool = False,
        weight: int | None = None,
    ) -> None:
        while not queue.put(batch, timeout=0.05, weight=weight):
            if cyclic and self._input_full():
                # the consumer may be waiting for us: go past its bound by one batch
                queue.put(batch, force=True, weight=weight)
                return
            self._while_blocked()

    def _input_full(self) -> bool:
        incoming = self.incoming
        return len(incoming) >= incoming.capacity or self.worker.inbound.overflowing(self.index)

    def _hold_while_throttled(self, batch: RemoteBatch) -> None:
        """Per-task backpressure: keep a remote batch here while a task it goes to
        is throttled by its worker, so that only this executor (and, upstream, its
        spout) waits, not the transfer queue every executor shares."""
        while self._throttled(batch):
            self._while_blocked()
            self.worker.wait_throttle_change(0.01)

    def _throttled(self, batch: RemoteBatch) -> bool:
        """Whether `batch` must wait for a throttle to lift."""
        throttled = self.worker.throttle.throttled
        if not throttled:
            return False
        blocking = [m.task for m in batch if m.task in throttled]
        if not blocking:
            return False
        return not any(self._may_pass_throttle(task) for task in blocking)

    def _may_pass_throttle(self, task: int) -> bool:
        """Send to a throttled `task` anyway, past its bound by one batch, when our
        own input is full and either the edge is on a cycle (the consumer may be
        waiting for us: backpressure.py) or this worker's receive thread waits on a
        full queue: it reads no status while it waits, so the peer may have lifted
        the throttle long ago. Two workers took turns in 3 s stalls (the throttles'
        expiry) that way, each one's receive thread waiting behind executors held
        by the other's stale throttle (a chaos run with tiny queues, session 20)."""
        return self._input_full() and (task in self._cyclic_tasks or self.worker.receive_waiting)

    # -- in a shared thread (storm_zmq.runtime.shared) -------------------------------

    def _send_or_hold(self, batch: RemoteBatch) -> None:
        """A remote batch from a shared thread's executor: what goes to a throttled
        task is held. The transfer queue takes the rest past its bound (by one
        turn's output of each executor at most): the thread runs no executor while
        that queue is full (`outputs_full`), and all of them get their turn when it
        has room, where a put that had to find room would go to whoever asked first
        after the send thread took, round after round."""
        self._hold_or_put(self.worker.transfer, batch, batch.tuples, remote=True)

    def _hold_or_put(self, queue: BatchQueue[Any], batch: list[Any], weight: int, remote: bool) -> None:
        """Where an executor's own thread would wait (a full local queue, a
        throttled remote task), a shared thread's executor holds the batch
        (`storm_zmq.runtime.held`) and goes on: a producer that chooses around the
        full queue or the throttled task keeps going, as it would with threads."""
        if not self._held and (
            not self.worker.throttle.throttled if remote else len(queue) < queue.capacity
        ):  # the common case, once per flushed batch: no HeldBatch (its task set) built
            queue.put(batch, force=True, weight=weight)
            if remote and len(queue) >= queue.capacity + self._hand_over_at:  # by one call
                self._hand_over()
            return
        self._held.add(HeldBatch(queue, batch, weight, remote), self._try_put, self._must_wait,
                       self._part_of)
        if self._held.tuples >= self._hand_over_at:
            self._hand_over()

    def _hand_over(self) -> None:
        """Output of one call of the component's code (held, or past the transfer
        queue's bound) that no turn reaches: it emits without end. The shared thread
        hands its other executors to another and runs this one alone, which waits
        for room from now on, as in a thread of its own: memory stays bounded
        (`SharedExecutorThread.hand_over`)."""
        if self.shared_thread is None or self.stop_requested.is_set():
            return
        self.shared_thread.hand_over(self)
        self._release_held()  # waiting for room now, as a thread of its own would

    def _try_put(self, held: HeldBatch) -> bool:
        """Put a held batch if its queue may take it: a local queue with room; the
        transfer queue always (`_must_wait` kept what may not go)."""
        return self._put_if_room(held, remote_past_bound=True)

    def _must_wait(self, task: int) -> bool:
        """A remote task to which nothing may go now: its worker throttles it (but
        see `_may_pass_throttle`)."""
        return task in self.worker.throttle.throttled and not self._may_pass_throttle(task)

    @staticmethod
    def _part_of(held: HeldBatch, messages: list[Any], weight: int) -> HeldBatch:
        part = RemoteBatch(messages)
        part.worker = held.batch.worker
        part.tuples = weight
        return HeldBatch(held.queue, part, weight, remote=True)

    def send_held(self) -> bool:
        """Put what is held, in order, as far as it may go now; True when nothing
        is held any more."""
        return self._held.release(self._try_put, self._must_wait, self._part_of)

    def room_to_produce(self) -> bool:
        """A shared thread's executor may take input or emit: what it holds (after
        putting what may go now) carries fewer than `_hold_limit` tuples and, with
        peers, the transfer queue is not full."""
        if self._held:
            self.send_held()
        return self._held.tuples < self._hold_limit and not self.outputs_full()

    def outputs_full(self) -> bool:
        """With peers, the transfer queue is full: in a shared thread, no executor
        runs until the send thread has taken from it."""
        gate = self._transfer_gate
        return gate is not None and len(gate) >= gate.capacity

    @property
    def queued(self) -> int:
        """Tuples waiting at this executor: in its queue, the input batch it is
        running until its output is flushed, and in a shared thread what it keeps
        back (input it took but left for later, output it holds for a full queue or
        a throttle), so that a drain waits for those too. Read from other threads."""
        backlog = self._input_backlog
        return (len(self.incoming) + self._in_hand + self._held.tuples
                + sum(len(batch) for batch in backlog))

    @property
    def unflushed(self) -> int:
        """Tuples emitted and not handed to a queue yet (buffered until the flush)."""
        return self._buffered

    @property
    def holding(self) -> bool:
        """Batches wait in this executor for room in a queue or a throttle to lift."""
        return bool(self._held)

    def _while_blocked(self) -> None:
        """Called while a downstream queue is full. Spouts keep taking acks here, so
        that whoever sends a spout its completions (the acker executor, or a bolt
        that applied the last ack of a tree) never waits on a spout that waits on
        that sender's consumers."""
        if self.worker.stopping.is_set() and self.stop_requested.is_set():
            raise QueueClosed()


def new_executor(worker: WorkerState, assignment: ExecutorAssignment) -> Executor:
    """The executor of `assignment`'s component, of the kind that component needs
    (not started: a worker builds all of its executors before it starts any)."""
    from storm_zmq.runtime.acker_executor import AckerExecutor
    from storm_zmq.runtime.bolt_executor import BoltExecutor
    from storm_zmq.runtime.spout_executor import SpoutExecutor

    component = assignment.component
    if component == ACKER:
        return AckerExecutor(worker, assignment)
    component_cls = worker.definition.components[component].component_cls
    if issubclass(component_cls, Spout):
        return SpoutExecutor(worker, assignment)
    if issubclass(component_cls, Bolt):
        return BoltExecutor(worker, assignment)
    raise TypeError(f"component {component!r}: {component_cls!r} is neither a Spout nor a Bolt")
