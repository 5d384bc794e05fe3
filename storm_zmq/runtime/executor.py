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
"""

from __future__ import annotations

import itertools
import logging
import math
import operator
import random
import reprlib
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from storm_zmq.component import (
    SYSTEM_COMPONENT,
    TICK_STREAM,
    BatchingBolt,
    Bolt,
    Spout,
    TicklessBatchingBolt,
    Tuple,
    check_emitted_values,
    report_and_carry_on,
)
from storm_zmq.config import DEFAULTS
from storm_zmq.messaging.base import TaskMessage
from storm_zmq.runtime.acking import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    AckerState,
    Outcome,
    SpoutPending,
    acker_index,
    anchor_edge,
    anchor_one,
    anchor_roots,
    root_id_for,
    spout_emit_ids,
)
from storm_zmq.runtime.assignment import ACKER, ExecutorAssignment
from storm_zmq.runtime.error_throttle import ErrorThrottle
from storm_zmq.runtime.held import HeldBatch, HeldOutput
from storm_zmq.runtime.queues import BatchQueue, QueueClosed
from storm_zmq.runtime.serialization import (
    SETTLED,
    MalformedTuple,
    SerializationError,
    TupleId,
    TupleTooLarge,
    check_decodes,
    decode_tuples,
    encode_tuples,
    one_tree_id,
)

if TYPE_CHECKING:
    from storm_zmq.runtime.worker import WorkerState
    from storm_zmq.topology.value_types import ValueCodec

log = logging.getLogger(__name__)

# Building Tuples and field namedtuples through tuple.__new__ skips the Python-level
# constructors namedtuple generates (a third of a word count's time went there);
# arity is checked once, at emit.
_new = tuple.__new__

#: A spout that emitted nothing waits this long for acks before calling next_tuple
#: again (Storm's spout wait strategy), so an idle spout does not spin a core.
IDLE_SPOUT_WAIT = 0.001

#: A bolt's turn in a shared thread (storm_zmq.runtime.shared): the interpreter's
#: default switch interval, the most a thread of its own runs before others get a turn.
STEP_SLICE = 0.005
#: The largest chunk of input a bolt runs in one go in a shared thread, and its first
#: (before the bolt's pace is known).
MAX_CHUNK = 1024
FIRST_CHUNK = 64

#: Process-latency samples waiting for their ack, at most (unacked ones are dropped).
MAX_OPEN_SAMPLES = 1000

#: A task warns of the emits it drops (direct ones to tasks that do not subscribe,
#: any of a component that declares no streams) at most this often, per kind.
DROPPED_WARNING_SECS = 10.0


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
        self.roots: list[dict[int, int] | None] = []
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


class ComponentFailed(Exception):
    """A component raised: the worker reports it and dies, as Storm's does."""

    def __init__(self, component: str, task: int, text: str) -> None:
        super().__init__(f"component {component!r} task {task} failed:\n{text}")
        self.component = component
        self.task = task
        self.text = text


class _StreamRoute:
    """Where one task's tuples on one stream go."""

    __slots__ = ("stream", "values_cls", "arity", "choosers", "direct", "direct_targets")

    def __init__(self, stream: str, values_cls: Any, arity: int, direct: bool) -> None:
        self.stream = stream
        self.values_cls = values_cls
        self.arity = arity
        self.choosers: list[Any] = []
        self.direct = direct
        self.direct_targets: frozenset[int] = frozenset()


class TaskCollector:
    """The `Collector` of one task: turns emits, acks and fails into deliveries."""

    def __init__(self, executor: Executor, task: int, routes: dict[str, _StreamRoute]) -> None:
        self._executor = executor
        self._task = task
        self._routes = routes
        self._default_route = routes.get("default")
        self._component = executor.component
        self._is_spout = executor.is_spout
        self._bolt: Bolt | None = None  # whose auto-anchors emit resolves
        self._error_throttle: ErrorThrottle | None = None  # report_error's, made then
        self._dropped_throttles: dict[str, ErrorThrottle] = {}  # _warn_dropped's, per kind
        self._said_acked_twice = False

    def bind(self, component: Any) -> None:
        """Give a bolt this collector's `emit` and `ack` as its own (instance
        attributes shadow the class's methods) unless its class overrides them:
        `Bolt.emit` and `Bolt.ack` only pass their arguments on, and skipping them
        saves a Python call for every emit and every ack."""
        if not isinstance(component, Bolt):
            return
        self._bolt = component
        own = vars(component)  # an emit or ack the bolt set on itself stays
        if type(component).emit is Bolt.emit and "emit" not in own:
            component.emit = self.emit
        if type(component).ack is Bolt.ack and "ack" not in own:
            component.ack = self.ack

    def emit(
        self,
        tup: Sequence[Any],
        stream: str | None = None,
        anchors: Sequence[Tuple] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
        tup_id: Any = None,
    ) -> list[int] | None:
        values = tup  # pystorm's name for the emitted values, kept for emit(tup=...)
        if values.__class__ is not list and not isinstance(values, tuple):  # cheapest first
            check_emitted_values(values, self._component)
        route = self._default_route if not stream else self._routes.get(stream)
        if route is None:
            if not self._routes:
                return self._drop_undeclared(stream or "default", tup_id, need_task_ids)
            raise ValueError(
                f"component {self._component!r} emitted on stream {stream or 'default'!r}, "
                f"which it does not declare (declared: {sorted(self._routes)})"
            )
        if len(values) != route.arity:
            raise ValueError(
                f"component {self._component!r} emitted {len(values)} values on stream "
                f"{route.stream!r}, which has {route.arity} fields"
            )
        if direct_task is not None or route.direct:
            targets: Sequence[int] = self._direct_targets(route, direct_task)
        else:
            choosers = route.choosers
            if len(choosers) == 1:
                targets = choosers[0].choose(values)
            elif choosers:
                targets = [task for chooser in choosers for task in chooser.choose(values)]
            else:  # nobody subscribes to this stream
                targets = ()
        executor = self._executor
        executor.emitted += 1
        if executor.checks_emits:
            values = self._check_emit(route, values, targets)
        if self._is_spout:
            if tup_id is not None:
                executor._spout_emit_tracked(self._task, route, values, tup_id, targets)
            elif targets:
                executor._deliver_untracked(self._task, route, values, targets)
        elif tup_id is not None:  # a bolt's emit is Bolt.emit's, which has no tup_id
            raise TypeError(f"component {self._component!r}: a bolt's emit() takes no tup_id")
        elif not targets:
            pass
        elif executor.acking:
            if anchors is None and self._bolt is not None:
                anchors = self._bolt._auto_anchors()
            if anchors:
                executor._deliver_anchored(self._task, route, values, anchors, targets)
            else:
                executor._deliver_untracked(self._task, route, values, targets)
        else:
            executor._deliver_untracked(self._task, route, values, targets)
        return list(targets) if need_task_ids else None

    def _direct_targets(self, route: _StreamRoute, direct_task: int | None) -> Sequence[int]:
        if direct_task is None:
            raise ValueError(
                f"component {self._component!r}: stream {route.stream!r} is direct; "
                "emit needs direct_task"
            )
        if not route.direct:
            raise ValueError(
                f"component {self._component!r}: direct_task given for stream "
                f"{route.stream!r}, which is not declared direct"
            )
        if direct_task.__class__ is not int:  # a numpy integer is one too; True is not
            if isinstance(direct_task, bool) or not hasattr(type(direct_task), "__index__"):
                raise TypeError(f"component {self._component!r}: direct_task must be a task "
                                f"id (an int), got {direct_task!r}")
            direct_task = operator.index(direct_task)
        if direct_task not in route.direct_targets:
            self._say_dropped_direct(route, direct_task)
            return ()
        return (direct_task,)

    def _drop_undeclared(self, stream: str, tup_id: Any, need_task_ids: bool) -> list[int] | None:
        """An emit of a component that declares no stream at all: Storm 1.x, which
        streamparse ran on, sent it to nobody (streamparse's own examples have
        terminal bolts that emit), so it is dropped with a warning, and a tracked
        spout emit is acked at once, as with no subscriber. A component that declares
        streams and emits on another one has likely misspelt it: that stays an error
        (`emit`), as in Storm 2."""
        if not self._is_spout and tup_id is not None:
            raise TypeError(f"component {self._component!r}: a bolt's emit() takes no tup_id")
        self._warn_dropped("undeclared", "component %r task %d emitted on stream %r, but it "
                           "declares no streams (no `outputs`), so nothing can subscribe: "
                           "dropped, as Storm 1.x dropped it", self._component, self._task, stream)
        if self._is_spout and tup_id is not None:
            self._executor._deferred_acks.append((self._task, tup_id))  # as with no subscriber
        return [] if need_task_ids else None

    def _say_dropped_direct(self, route: _StreamRoute, direct_task: int) -> None:
        """Storm drops a direct emit to a task that does not subscribe to the stream
        (an unknown task id too: its `Task.getOutgoingTasks` finds no grouping) and
        goes on, where raising here stopped the worker; a tracked spout emit is then
        acked at once, as with no subscriber. Not in silence: a warning, at most one
        per task every `DROPPED_WARNING_SECS`, with the count of those since."""
        self._warn_dropped("direct", "component %r task %d: direct emit on stream %r to task %d, "
                           "which does not subscribe to it (subscribed: %s): dropped, as Storm "
                           "drops it", self._component, self._task, route.stream, direct_task,
                           sorted(route.direct_targets))

    def _warn_dropped(self, kind: str, message: str, *args: Any) -> None:
        """A warning of an emit dropped, at most one of each `kind` per task every
        `DROPPED_WARNING_SECS`, with the count of those held back since."""
        throttle = self._dropped_throttles.get(kind)
        if throttle is None:
            throttle = self._dropped_throttles[kind] = ErrorThrottle(1, DROPPED_WARNING_SECS)
        verdict = throttle.admit(time.monotonic())
        if verdict.write:
            since = (f" ({verdict.held_before:,} more dropped since the last warning)"
                     if verdict.held_before else "")
            log.warning(message + "%s", *args, since)

    def _check_emit(
        self, route: _StreamRoute, values: Sequence[Any], targets: Sequence[int],
    ) -> Sequence[Any]:
        """topology.testing.always.try.serialize and topology.debug, off the hot path.
        The values to deliver: with try.serialize, as another worker would decode
        them, anew for each target (`DecodedEachTime`)."""
        executor = self._executor
        if executor.debug:
            log.info(
                "emit component=%s task=%d stream=%s values=%r -> tasks %s",
                self._component, self._task, route.stream, values, list(targets),
            )
        if executor.try_serialize:  # what a remote target would need, checked for all
            (payload,) = executor._encode_remote(self._task, route.stream, None, [values])
            check_decodes(payload, self._component, route.stream, executor._codec)
            return DecodedEachTime(payload, executor._codec, len(values))
        return values

    def ack(self, tup: Tuple) -> None:
        bolt = self._bolt
        if bolt is not None and bolt._current_tups and bolt._ack_is_auto_acks(tup):
            return
        executor = self._executor
        tuple_id = tup.id if type(tup) is Tuple else _id_of(tup)
        if type(tuple_id) is TupleId:
            if tuple_id.ack_val < 0:  # SETTLED: its ack would cancel the first one out
                self._say_acked_twice(tup)
                return
        elif tuple_id is not None:
            raise not_a_tuple_id(self._component, "ack of", tup)
        executor.acked += 1
        samples = executor._process_samples
        if samples:
            sample = samples.pop(id(tup), None)
            if sample is not None and sample[0] is tup:
                executor.process_ms_total += (time.perf_counter() - sample[1]) * 1000.0
                executor.process_samples += 1
        if type(tuple_id) is TupleId and executor.acking:
            tuple_id.ack_into(executor._acks_out)  # one ACKER_ACK per root and batch, at flush
            tuple_id.ack_val = SETTLED

    def _say_acked_twice(self, tup: Any) -> None:
        """A tuple acked a second time (`auto_ack` off): in Storm the two XORs cancel
        and the tree times out, in silence (pystorm's ShellBolt raised). Here the
        second ack is skipped, and the first of each task is said."""
        if not self._said_acked_twice:
            self._said_acked_twice = True
            log.warning("component %r task %d acked %s a second time: the second ack is "
                        "skipped (in Storm its tree would time out); further ones are not "
                        "logged", self._component, self._task, reprlib.repr(tup))

    def fail(self, tup: Tuple) -> None:
        executor = self._executor
        tuple_id = tup.id if type(tup) is Tuple else _id_of(tup)
        if tuple_id is not None and type(tuple_id) is not TupleId:
            raise not_a_tuple_id(self._component, "fail of", tup)
        executor.failed += 1
        if type(tuple_id) is TupleId and executor.acking:
            if executor._acks_out:
                # Acks wait to be folded until the flush; a fail goes at once. Storm's
                # acker sees a tuple acked, then failed, in that order (the tree
                # completes, the fail finds nothing), so the acks go before it.
                acks, executor._acks_out = executor._acks_out, {}
                executor._send_acks(acks)
            for root in tuple_id.roots:
                executor._send_to_acker(self._task, ACKER_FAIL_STREAM_ID, root, (root,))

    def report_error(self, exc: BaseException, tup: Tuple | None) -> None:
        """Count every error; write out (log with traceback, keep for stats and the
        UI) as many as the task's `ErrorThrottle` lets through."""
        executor = self._executor
        executor.errors_reported += 1
        throttle = self._error_throttle
        if throttle is None:
            # (a topology submitted by an older storm-zmq has no such keys)
            conf = {**_ERROR_THROTTLE_DEFAULTS, **executor.worker.component_conf(self._component)}
            throttle = self._error_throttle = ErrorThrottle(
                int(conf["topology.max.error.report.per.interval"]),
                float(conf["topology.error.throttle.interval.secs"]))
        verdict = throttle.admit(time.monotonic())
        if not verdict.write:
            if verdict.first_held:
                log.error("component %r task %d: more than %d errors in %g s; the rest of "
                          "this interval are counted, not logged "
                          "(topology.max.error.report.per.interval, "
                          "topology.error.throttle.interval.secs)", self._component,
                          self._task, throttle.limit, throttle.interval)
            return
        text = "".join(traceback.format_exception(exc))
        executor.worker.record_error(self._component, self._task, text)
        held = f" ({verdict.held_before:,} more since the last one shown)" if verdict.held_before else ""
        log.error("component %r task %d reported an error%s%s:\n%s", self._component, self._task,
                  f" on tuple {tup!r}" if tup is not None else "", held, text)

    def report_exhausted(self) -> None:
        self._executor._exhausted_tasks.add(self._task)


class _StoppedCollector:
    """What a component's emits and acks reach once its executor stopped (its
    `cleanup()` ran, its output was flushed for the last time): a thread of the
    component's own that emits then used to have its tuples dropped in silence,
    and counted as emitted. Dropped still, nothing flushes them any more, but said
    (once per task)."""

    def __init__(self, component: str, task: int) -> None:
        self._component = component
        self._task = task
        self._said = False

    def take_over(self, component: Any) -> None:
        """Become `component`'s collector, and its bound `emit`/`ack` (TaskCollector.bind)."""
        component._collector = self
        own = vars(component)
        for name in ("emit", "ack"):
            if name in own and getattr(own[name], "__self__", None).__class__ is TaskCollector:
                own[name] = getattr(self, name)

    def _drop(self, what: str) -> None:
        if not self._said:
            self._said = True
            log.warning("component %r task %d: %s after the component stopped (its cleanup() "
                        "had returned): dropped; further ones are not logged",
                        self._component, self._task, what)

    def emit(self, tup: Any, stream: Any = None, anchors: Any = None, direct_task: Any = None,
             need_task_ids: bool = False, tup_id: Any = None) -> list[int] | None:
        self._drop("an emit")
        return [] if need_task_ids else None

    def ack(self, tup: Any) -> None:
        self._drop("an ack")

    def fail(self, tup: Any) -> None:
        self._drop("a fail")

    def report_error(self, exc: BaseException, tup: Any) -> None:
        log.error("component %r task %d reported an error after it stopped:\n%s",
                  self._component, self._task, "".join(traceback.format_exception(exc)))

    def report_exhausted(self) -> None:
        pass


_ERROR_THROTTLE_DEFAULTS = {key: DEFAULTS[key] for key in (
    "topology.max.error.report.per.interval", "topology.error.throttle.interval.secs")}


class DecodedEachTime(Sequence[Any]):
    """An emit's values under `topology.testing.always.try.serialize`: every Tuple
    made of them (one per target; `Executor._deliver_untracked_each`) gets its own
    copy, decoded from the payload as another worker would decode it. So a run in
    one worker behaves as one spread over many: a consumer that changes its input
    in place does not change a sibling consumer's, values changed after the emit
    do not reach the consumers, and a tuple arrives as a list."""

    __slots__ = ("_payload", "_codec", "_arity")

    def __init__(self, payload: bytes, codec: ValueCodec, arity: int) -> None:
        self._payload, self._codec, self._arity = payload, codec, arity

    def _decoded(self) -> list[Any]:
        return decode_tuples(self._payload, self._codec)[3][0]

    def __len__(self) -> int:
        return self._arity

    def __iter__(self) -> Iterator[Any]:
        return iter(self._decoded())

    def __getitem__(self, index: Any) -> Any:
        return self._decoded()[index]

    def __repr__(self) -> str:
        return repr(self._decoded())


def not_a_tuple_id(component: str, what: str, value: Any, hint: str = "") -> TypeError:
    """The error for an ack, fail or anchor given what is no input Tuple or tuple id:
    one text for workers and the test harness (`storm_zmq.testing`)."""
    return TypeError(f"component {component!r}: {what} {reprlib.repr(value)}, which is not "
                     f"an input Tuple or a tuple's id{hint}")


def _id_of(tup: Any) -> Any:
    """What a bolt's `ack`, `fail` and `anchors` accept, as pystorm's do: a Tuple, or
    its id (``self.ack(tup.id)``; None for an untracked tuple)."""
    return tup.id if isinstance(tup, Tuple) else tup


#: A bolt whose `_run_process` and `ack` are still these has them done inline
#: (`BoltExecutor._acks_inline`).
_BOLT_RUN_PROCESS = Bolt._run_process
_COLLECTOR_ACK = TaskCollector.ack


class Executor(threading.Thread):
    """Runs the tasks of one component; subclasses give the loop."""

    is_spout = False

    def __init__(self, worker: WorkerState, assignment: ExecutorAssignment) -> None:
        super().__init__(name=f"executor-{assignment.component}-{assignment.index}", daemon=True)
        self.worker = worker
        self.assignment = assignment
        self.component = assignment.component
        self.index = assignment.index
        self.incoming: BatchQueue[tuple[int, Any]] = worker.queues[assignment.index]
        self._task_location = worker.task_location
        self._codec = worker.codec  # the topology's value types, for remote tuples
        # Storm's rule: a component's own config may turn its debug logging on (or off)
        self.debug = bool(worker.component_conf(self.component).get("topology.debug"))
        self.try_serialize = bool(worker.conf.get("topology.testing.always.try.serialize"))
        self.checks_emits = self.debug or self.try_serialize
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
        component = spec.component_cls(collector=collector, name=self.component, task=task)
        collector.bind(component)
        return component

    # -- thread ---------------------------------------------------------------------

    def run(self) -> None:
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
        self._flush_unless_closed()
        for task, component in self.components.items():
            emitted = self.emitted
            component.cleanup()
            if self.emitted != emitted:
                self.emitted_in_cleanup += self.emitted - emitted  # said here, once
                log.warning(
                    "component %r task %d emitted %d tuple(s) in cleanup(): the topology is "
                    "stopping, and they are delivered only to consumers that have not stopped "
                    "yet (write final state out from cleanup() instead)",
                    self.component, task, self.emitted - emitted,
                )
        self._flush_unless_closed()
        for task, component in self.components.items():
            _StoppedCollector(self.component, task).take_over(component)

    def report_failure(self, exc: BaseException) -> None:
        """User code raised: report it with its traceback; the worker dies of it."""
        task = getattr(exc, "_storm_task", self.assignment.tasks[0])
        self.failure = ComponentFailed(self.component, task, "".join(traceback.format_exception(exc)))
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
        if type(batch[0][1]) is not bytes:
            return batch
        decode = self._decode
        return [(task, tup) for task, payload in batch for tup in decode(task, payload)]

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
        self, source: int, route: _StreamRoute, values: Sequence[Any], targets: Sequence[int]
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
        self, source: int, route: _StreamRoute, values: Sequence[Any], targets: Sequence[int]
    ) -> None:
        """`_deliver_untracked` under try.serialize: one Tuple per target, so that
        each is made of its own copy of `values` (a `DecodedEachTime`)."""
        for target in targets:
            Executor._deliver_untracked(self, source, route, values, (target,))

    def _deliver_with_roots(
        self, source: int, route: _StreamRoute, values: Sequence[Any], target: int,
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
            anchor_id = _id_of(anchor)
            if type(anchor_id) is TupleId:
                ids.append(anchor_id)
            elif anchor_id is not None:
                raise not_a_tuple_id(self.component, "emit anchored to", anchor, " (anchors=[tup])")
        return ids

    def _deliver_anchored(
        self, source: int, route: _StreamRoute, values: Sequence[Any],
        anchors: Sequence[Tuple], targets: Sequence[int],
    ) -> None:
        if type(anchors) is list and len(anchors) == 1:  # auto-anchoring: the input
            anchor = anchors[0]
            anchor_id = anchor.id if type(anchor) is Tuple else _id_of(anchor)
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
                        self._remote(target, source, route.stream, tuple_id.roots, tuple(values))
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
        return self._encode_remote(
            source, stream, roots and roots[:half], values[:half]
        ) + self._encode_remote(source, stream, roots and roots[half:], values[half:])

    # _local and _remote only buffer; every delivery path checks the bound once at
    # its end, so a flush never happens while a caller holds a buffer.
    def _local(self, executor: int, target: int, tup: Tuple) -> None:
        batch = self._out_local.get(executor)
        if batch is None:
            batch = self._out_local[executor] = []
        batch.append((target, tup))
        self._buffered += 1

    def _remote(
        self, target: int, source: int, stream: str, roots: dict[int, int] | None,
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
                roots = run.roots if any(run.roots) else None
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


class BoltExecutor(Executor):
    def build_components(self) -> None:
        super().build_components()
        self._tickless = [(task, c) for task, c in self.components.items()
                          if isinstance(c, TicklessBatchingBolt)]
        # Tick tuples come from the executor's own clock, between batches, rather
        # than through the queue: they then never wait behind a full queue, and
        # never make a drained queue look busy.
        self._tick_secs = self.worker.component_conf(self.component).get("topology.tick.tuple.freq.secs")
        self._next_tick = time.monotonic() + self._tick_secs if self._tick_secs else None
        if not self._tick_secs and any(
            isinstance(c, BatchingBolt) and not isinstance(c, TicklessBatchingBolt)
            for c in self.components.values()
        ):
            log.warning(
                "component %r is a BatchingBolt, which processes its batches on tick tuples, "
                "but topology.tick.tuple.freq.secs is not set (topology or component config): "
                "its batches will wait for ever (or use TicklessBatchingBolt)", self.component)
        self._until_sample = 0  # tuples to run before the next process-latency sample
        self._chunk_size = FIRST_CHUNK  # a shared thread's: input tuples of about STEP_SLICE

    def loop(self) -> None:
        while not self.stop_requested.is_set():
            self._run_input(self._next_input(timeout=0.05))

    def _next_input(self, timeout: float) -> list[list[tuple[int, Any]]]:
        """What a shared thread's turn left for later, else what the queue holds."""
        if self._input_backlog:
            batches, self._input_backlog = self._input_backlog, []
            return batches
        return self.incoming.get_all(timeout=timeout)

    def step(self) -> bool:
        """A turn lasts about `STEP_SLICE`, in chunks of input sized by how long the
        last one took, and ends early when a consumer's queue fills: a slow bolt
        cannot keep the thread's other executors waiting (what a thread of its own
        would get from the interpreter's switch interval). Input left over is taken
        before the queue again, so the queue fills behind it and throttles."""
        if not self.room_to_produce():
            return False
        batches = self._next_input(timeout=0)
        self._run_input(batches, until=time.perf_counter() + STEP_SLICE)
        return bool(batches)

    def _run_input(self, batches: list[list[tuple[int, Any]]], until: float | None = None) -> None:
        """Run `batches` through the tasks, then ticks, then flush. With `until` (a
        shared thread's turn), batches after the first wait in `_input_backlog`
        once that time has passed or a consumer's queue is full."""
        sample_every = self._sample_every
        perf_counter = time.perf_counter
        for index, batch in enumerate(batches):
            if self.stop_requested.is_set():
                break  # stopping: what is left was not drained in time
            if until is not None and index and (
                self._held.tuples >= self._hold_limit or self.outputs_full()
                or perf_counter() >= until
            ):
                self._input_backlog = batches[index:]  # the others' turn first
                break
            started = perf_counter()
            batch = self._tuples_of(batch)
            last = False
            if until is not None and len(batch) > self._chunk_size:
                size = self._chunk_size  # a chunk now, the rest in a later turn
                self._input_backlog = [batch[size:], *batches[index + 1:]]
                batch, last = batch[:size], True
            self._in_hand = len(batch)
            if not sample_every:
                self._run_batch(batch)
            elif self._acks_inline():
                # acked as process() returns: each tuple's process latency is its
                # share of this loop's time, so every tuple is in the mean and none
                # is followed on its own (which cost one worker 4-16 % of its words/s)
                began = perf_counter()
                self._run_inline(batch)
                self.process_ms_total += (perf_counter() - began) * 1000.0
                self.process_samples += len(batch)
            else:
                # every `sample_every`-th tuple is followed from here to its ack;
                # the rest run in plain slices, so the per-tuple loop is unchanged
                until_sample = self._until_sample
                position, size = 0, len(batch)
                while position < size:
                    if until_sample >= size - position:
                        until_sample -= size - position
                        self._run_batch(itertools.islice(batch, position, None))
                        break
                    sampled = position + until_sample
                    if sampled > position:
                        self._run_batch(itertools.islice(batch, position, sampled))
                    self._run_one(*batch[sampled], sampled_at=perf_counter())
                    position = sampled + 1
                    until_sample = sample_every - 1
                self._until_sample = until_sample
            took = perf_counter() - started
            self.busy_secs += took
            if until is not None:
                self._chunk_size = max(1, min(MAX_CHUNK, int(STEP_SLICE * len(batch) / max(took, 1e-6))))
            if last:
                break
        now = time.monotonic()
        if self._next_tick is not None and now >= self._next_tick:
            self._next_tick = now + self._tick_secs
            tick = _new(Tuple, (None, SYSTEM_COMPONENT, TICK_STREAM, -1, (self._tick_secs,)))
            started = perf_counter()
            for task, component in self.components.items():
                try:
                    component._run_tick(tick)
                except BaseException as exc:
                    if not self._carry_on(exc, task, tick):
                        raise
            # busy too: a BatchingBolt's process_batch runs here (capacity and
            # execute latency read 0.001 and 0.01 ms for one at 60 %)
            self.busy_secs += perf_counter() - started
        if self._tickless:
            started = perf_counter()
            for task, component in self._tickless:
                try:
                    component._maybe_flush(now)
                except BaseException as exc:
                    if not self._carry_on(exc, task):
                        raise
            self.busy_secs += perf_counter() - started
        self.flush()
        self._in_hand = 0

    def _run_batch(self, items: Any) -> None:
        """The per-tuple hot path: `items` of (task, tuple) through process().

        Bolts that keep pystorm's defaults (`auto_ack`, `Bolt._run_process`, the
        collector's own `ack`) have `_run_process` and the ack done inline
        (`_run_inline`): two Python calls a tuple fewer, 15 % of the word count's
        instructions a word without acking, 5.6 % with it. Every other bolt goes
        through `_run_each`, and so does a tuple sampled for its process latency
        (`_run_one`: its ack closes the sample; `_run_input` times inline bolts per
        batch instead). Checked every batch, since a bolt may change `auto_ack`."""
        if self._acks_inline():
            self._run_inline(items)
        else:
            self._run_each(items)

    def _acks_inline(self) -> bool:
        for bolt in self.components.values():
            if not (bolt.auto_ack and type(bolt)._run_process is _BOLT_RUN_PROCESS
                    and getattr(bolt.ack, "__func__", None) is _COLLECTOR_ACK):
                return False
        return True

    def _run_each(self, items: Any) -> None:
        components = self.components
        executed = 0
        task = self.assignment.tasks[0]
        tup = None
        items = iter(items)
        try:
            while True:  # once, unless a bolt that carries on raised: then the rest
                try:
                    for task, tup in items:
                        components[task]._run_process(tup)
                        executed += 1
                    break
                except BaseException as exc:
                    if not self._carry_on(exc, task, tup):
                        raise
                    executed += 1  # given to process(), and failed
        finally:
            self.executed += executed

    def _run_inline(self, items: Any) -> None:
        """`Bolt._run_process` and `TaskCollector.ack`, inline. With acking off the
        ack is only counted, and no emit reads the auto-anchor. With acking on the
        input is the auto-anchor while `process` runs, and its ack is folded into
        the flush's acks (`_acks_out`, read per tuple: an emit may flush and renew
        it)."""
        components = self.components
        acking = self.acking
        executed = 0
        task = self.assignment.tasks[0]
        tup = None
        items = iter(items)
        try:
            while True:  # once, unless a bolt that carries on raised: then the rest
                try:
                    for task, tup in items:
                        if acking:
                            bolt = components[task]
                            bolt._current_tups = [tup]
                            bolt.process(tup)
                            bolt._current_tups = None
                            tuple_id = tup.id
                            if type(tuple_id) is TupleId:
                                if tuple_id.many is None:  # TupleId.ack_into, inline
                                    folded = self._acks_out
                                    root = tuple_id.root
                                    folded[root] = (folded.get(root, 0) ^ tuple_id.edge
                                                    ^ tuple_id.ack_val)
                                else:
                                    tuple_id.ack_into(self._acks_out)
                                tuple_id.ack_val = SETTLED  # a later ack of it is told
                        else:
                            components[task].process(tup)
                        executed += 1
                    break
                except BaseException as exc:
                    components[task]._current_tups = None
                    if not self._process_raised(exc, task, tup):
                        raise
                    self.executed += 1  # given to process(), and failed (not acked)
        finally:
            self.executed += executed
            self.acked += executed

    def _process_raised(self, exc: BaseException, task: int, tup: Tuple | None) -> bool:
        """What `Bolt._run_process` does when `process` raises: fail the input if
        `auto_fail`; then the bolt carries on (True) or the task is named for the
        report (False; see `_carry_on`)."""
        bolt = self.components[task]
        if tup is not None and bolt.auto_fail:
            bolt.fail(tup)
        return self._carry_on(exc, task, tup)

    def _run_one(self, task: int, tup: Tuple, sampled_at: float) -> None:
        """A tuple followed from here to its ack (process latency)."""
        samples = self._process_samples
        if len(samples) >= MAX_OPEN_SAMPLES:
            samples.clear()  # never acked (or acked elsewhere): start over
        samples[id(tup)] = (tup, sampled_at)
        self._run_each(((task, tup),))


def _message_timeouts(conf: dict[str, Any]) -> bool:
    """topology.enable.message.timeouts, a topology-wide setting as in Storm (a
    topology submitted by an older storm-zmq has no such key)."""
    return bool(conf.get("topology.enable.message.timeouts", True))


#: The stream that tells a spout task each acker outcome (reset_timeout is not sent:
#: no stream asks the acker for it).
OUTCOME_STREAMS = {"ack": ACKER_ACK_STREAM_ID, "fail": ACKER_FAIL_STREAM_ID}


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
                               if _message_timeouts(worker.conf) else math.inf)
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


class SpoutExecutor(Executor):
    is_spout = True

    def __init__(self, worker: WorkerState, assignment: ExecutorAssignment) -> None:
        super().__init__(worker, assignment)
        self.pending = SpoutPending.from_conf(worker.conf)
        max_pending = worker.component_conf(self.component).get("topology.max.spout.pending")
        self.max_pending = max_pending * len(assignment.tasks) if max_pending else None
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
                               if _message_timeouts(worker.conf) else math.inf)
        self._idle_until = 0.0  # a shared thread's spout: next_tuple() not before this
        self.complete_ms_total = 0.0
        self.complete_samples = 0
        self._said_unbounded = False  # _say_unbounded, once

    def _say_unbounded(self, expired: int) -> None:
        """Trees time out while nothing bounds what is in flight: replays join the
        queues their trees timed out in, behind the stale copies, and can time out
        again and again (a run with a slow sink replayed 150,000 times for 20,000
        ids and never finished; Storm does the same). Said once, with the remedy."""
        self._said_unbounded = True
        timeout = self.worker.conf.get("topology.message.timeout.secs")
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
        self, source: int, route: _StreamRoute, values: Sequence[Any], tup_id: Any,
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
        for target, edge in zip(targets, ids.edge_ids, strict=True):
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
            emitted, _ = self._round(may_emit=True)
            if not emitted:
                self._take_input(self.incoming.get_all(timeout=IDLE_SPOUT_WAIT))

    def step(self) -> bool:
        # Storm's spout wait: next_tuple() that emitted nothing is not called again
        # for IDLE_SPOUT_WAIT; acks and fails are taken every turn.
        now = time.monotonic()
        may_emit = now >= self._idle_until and self.room_to_produce()
        emitted, took_input = self._round(may_emit)
        if may_emit and not emitted:
            self._idle_until = now + IDLE_SPOUT_WAIT
        return bool(emitted or took_input)

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
            if expired_trees and self.max_pending is None and not self._said_unbounded:
                self._say_unbounded(len(expired_trees))
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


def new_executor(worker: WorkerState, assignment: ExecutorAssignment) -> Executor:
    """The executor of `assignment`'s component, of the kind that component needs
    (not started: a worker builds all of its executors before it starts any)."""
    component = assignment.component
    if component == ACKER:
        return AckerExecutor(worker, assignment)
    component_cls = worker.definition.components[component].component_cls
    if issubclass(component_cls, Spout):
        return SpoutExecutor(worker, assignment)
    if issubclass(component_cls, Bolt):
        return BoltExecutor(worker, assignment)
    raise TypeError(f"component {component!r}: {component_cls!r} is neither a Spout nor a Bolt")
