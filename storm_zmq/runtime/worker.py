"""A worker: one OS process bound to one slot port, running executors of one topology.

Threads: one shared executor thread that runs every executor in turns (when a
component blocks it, the others go on in a new one; or one thread per executor, with
`worker.shared.executor.thread: false`), one receive thread (transport `recv` ->
group by task's executor -> one list per executor onto its bounded queue), one send
thread (bounded transfer queue -> group by destination worker -> one `send` per
worker per batch), a "backpressure" thread (throttle statuses to the peers), and the
main thread, which answers to a `WorkerControl` (the local runner over a pipe, or
ZooKeeper in cluster mode): activate, deactivate, stop; ready, stats, error, stopped.
A worker follows peers that move (`update_peers`) without restarting.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import math
import os
import queue
import random
import reprlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, Protocol

from storm_zmq.cluster.processes import process_age
from storm_zmq.component import Tuple
from storm_zmq.config import component_may_set
from storm_zmq.logs import configure_worker_logging
from storm_zmq.messaging import Connection, load_context
from storm_zmq.messaging.base import SendTimeout, TaskMessage
from storm_zmq.messaging.counters import RefusalLog
from storm_zmq.portable import ON_PYPY, format_exception
from storm_zmq.runtime.acker_executor import AckerExecutor
from storm_zmq.runtime.acking import ACKER_INIT_STREAM_ID
from storm_zmq.runtime.assignment import ACKER, Assignment, WorkerSlot
from storm_zmq.runtime.backpressure import (
    BACKPRESSURE_TASK,
    STATUS_REPEAT_SECS,
    Inbound,
    MalformedStatus,
    ThrottleTable,
    cyclic_edges,
    decode_status,
    encode_status,
)
from storm_zmq.runtime.balance import (
    REPORT_SECS,
    BusyMeter,
    WorkerBalance,
    falls_behind,
    short_of_cpu,
)
from storm_zmq.runtime.bolt_executor import BoltExecutor
from storm_zmq.runtime.collector import StreamRoute
from storm_zmq.runtime.executor import Executor, RemoteBatch, new_executor
from storm_zmq.runtime.queues import BatchQueue, QueueClosed
from storm_zmq.runtime.reports import encode_report
from storm_zmq.runtime.serialization import (
    MalformedTuple,
    TupleId,
    WireRoots,
    are_root_pairs,
    check_system_tuples,
    one_tree_id,
    payload_tuple_count,
    roots_per_tuple,
)
from storm_zmq.runtime.shared import SharedExecutorThread
from storm_zmq.runtime.spout_executor import SpoutExecutor
from storm_zmq.runtime.tuning import (
    CollectionClock,
    RunnableMeter,
    pin_worker,
    receive_buffer_size,
    tune_gc,
    tune_jit,
    wake_without_preempting,
)
from storm_zmq.topology import load_topology
from storm_zmq.topology.definition import storm_context
from storm_zmq.topology.grouping import make_chooser
from storm_zmq.topology.loader import is_user_file, user_code_line
from storm_zmq.topology.registrations import load_codec

log = logging.getLogger(__name__)

STATS_INTERVAL = 0.5
#: A blocked send to a peer is retried after this long, so that the send thread can
#: follow a peer that moved (and stop) while it waits.
SEND_WAIT_SLICE_MS = 500
#: Stopping, a peer that takes nothing gets this long before its messages are dropped.
SHUTDOWN_SEND_GRACE = 5.0
#: A worker whose components' initialize() take longer says every this often which
#: (a SparkSpout starting Spark, a client connecting): else a slow start looked hung.
INITIALIZE_NOTICE_SECS = 30.0
#: A component's code that holds the shared executor thread this long in one go
#: (the worker's other components wait) is named, then again every
#: HOLD_NOTICE_REPEAT_SECS while it goes on.
HOLD_NOTICE_SECS = 10.0
HOLD_NOTICE_REPEAT_SECS = 60.0
#: ...but the other components of that thread go on in a new one after this long: a
#: spout that waits seconds in `next_tuple` for its first client (or a long poll)
#: stopped every other component of its worker until the notice. A long computation
#: is handed off too, which costs nothing but a thread.
HAND_OFF_SECS = 1.0
LATENCY_SAMPLES_PER_REPORT = 5000
_SYSTEM_STREAM_PREFIX = "__"


class WorkerThreadFailed(Exception):
    """One of a worker's own threads raised (a bug, not a user's mistake)."""


class WorkerStopTimedOut(Exception):
    """Executors still running when the worker had to exit."""


def _describe_runner(runner: threading.Thread) -> str:
    """A thread that runs executors, for a message: what it runs and where it is."""
    where = _where_in_user_code(runner)
    if isinstance(runner, SharedExecutorThread) and runner.handed_over is not None:
        runner = runner.handed_over  # the thread runs that one alone (hand_over)
    if isinstance(runner, SharedExecutorThread):
        components = sorted({executor.component for executor in runner.executors})
        stepping = runner.stepping
        inside = f"; in the code of component {stepping.component!r}" if stepping is not None else ""
        return (f"the shared executor thread (components {', '.join(map(repr, components))}"
                f"{inside}{', at ' + where if where else ''})")
    return (f"the executor thread of component {getattr(runner, 'component', runner.name)!r}"
            f"{' (at ' + where + ')' if where else ''}")


# PyPy cannot walk another running thread's frames: its JIT's frames are virtual,
# and following f_back out of one raised SystemError (InvalidVirtualRef) in the
# thread that looked (PyPy 7.3.11). So under PyPy a thread's place in the user's
# code is not said, and an executor stuck alone is not noticed (docs/pypy.md).


def _running_frame(thread: threading.Thread) -> FrameType | None:
    """The frame `thread` runs now; None under PyPy (above)."""
    return None if ON_PYPY else sys._current_frames().get(thread.ident or -1)


def _where_in_user_code(thread: threading.Thread) -> str:
    """``file:line in function`` of the innermost frame of the user's code that
    `thread` is running now ('' if none is, or under PyPy)."""
    return user_code_line(_running_frame(thread))


def _outermost_user_frame(thread: threading.Thread) -> FrameType | None:
    """The outermost frame of the user's code that `thread` is running now: the
    call of a component's hook (`process`, `next_tuple`) the runtime made (None
    under PyPy)."""
    frame = _running_frame(thread)
    found = None
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            found = frame
        frame = frame.f_back
    return found


def left_behind(state: WorkerState, executors: Sequence[Executor]) -> tuple[int, int]:
    """(tuples queued for `state`'s executors, tuples they emitted and never
    flushed): what is dropped if they have all stopped."""
    return (sum(len(queue) for queue in state.queues.values()),
            sum(executor.unflushed for executor in executors))


def _arity_error(values: Sequence[Any], stream: str, component: str, arity: int) -> MalformedTuple:
    return MalformedTuple(
        f"{len(values)} values on stream {stream!r} of {component!r}, which has {arity} fields"
    )


#: A gap this long in the worker's main loop (it runs every 50 ms or so) means the
#: whole process was stopped or starved: time in it is nobody's to blame.
STALL_SECS = 1.0


class WorkerState:
    """What the threads of one worker share. Everything here is set up before any
    thread starts and read-only afterwards, except the queues and counters."""

    def __init__(
        self, conf: dict[str, Any], definition: Any, assignment: Assignment, worker_index: int
    ) -> None:
        # Storm's topology.name, when neither submit nor the run set it, and its
        # storm.id, which a worker's topology conf carries (pystorm's storm_conf had it)
        self.conf = {**conf, "storm.id": assignment.storm_id}
        if not self.conf.get("topology.name"):
            self.conf["topology.name"] = definition.name
        self.definition = definition
        self.assignment = assignment
        self.worker_index = worker_index
        self.storm_id = assignment.storm_id
        #: What tuples carry between workers: the built-in types and the topology's
        #: own (topology.kryo.register), imported now, the project on the path.
        self.codec = load_codec(self.conf)
        self.stopping = threading.Event()
        self.refused = RefusalLog(log, f"worker {worker_index}")
        # Task messages handed to the transport for peers, and taken from it for this
        # worker's tasks (or refused: they arrived). Summed over a run's workers, their
        # difference is what the network holds, which no queue shows (local.py's drain).
        self.remote_sent = 0  # the send thread's
        self.remote_received = 0  # the receive thread's
        # Task messages the send thread took from the transfer queue and has not
        # handed over yet (a peer's connection still being made): in no queue either.
        self.sending = 0
        self.local_executors = assignment.executors_of(worker_index)
        receive_size = receive_buffer_size(conf)
        self._executor_tasks = {e.index: e.tasks for e in self.local_executors}
        self.queues: dict[int, BatchQueue[Any]] = {
            e.index: BatchQueue(receive_size) for e in self.local_executors
        }
        self.transfer: BatchQueue[Any] = BatchQueue(int(conf["topology.transfer.buffer.size"]))
        # >= 0: index of a local executor; < 0: -1 - index of the remote worker
        self.task_location: dict[int, int] = {}
        for executor in assignment.executors:
            for task in executor.tasks:
                self.task_location[task] = (
                    executor.index if executor.worker == worker_index else -1 - executor.worker
                )
        self._local_tasks = frozenset(t for t, where in self.task_location.items() if where >= 0)
        #: Storm's "task->component" of every task's context: one dict for them all,
        #: as a copy per task grows with the square of the tasks (4,000 tasks of one
        #: component took 770 MB).
        self._task_component_names = {str(t): c for t, c in assignment.task_component.items()}
        self._values_classes: dict[tuple[str, str], Any] = {}
        #: Acker task -> its executor, for the executors of this worker to apply
        #: their acker messages through (`AckerExecutor.apply`); filled as the
        #: acker executors are built, before any executor starts.
        self.local_ackers: dict[int, AckerExecutor] = {}
        self._ready = threading.Semaphore(0)
        #: Why the worker dies: the first executor or I/O thread that failed.
        self.failures: list[Exception] = []
        self.failed = threading.Event()
        # The main thread's loop, which runs every 50 ms or so: when it last ran, and
        # when the last gap of more than STALL_SECS in it ended (the whole process was
        # stopped, SIGSTOP or a paused VM, or starved): `stalled_since`.
        self.main_loop_at: float | None = None  # (None: not looping yet)
        self.stalled_until = 0.0
        #: The largest serialized tuple the transport carries to another worker, and
        #: the setting that says so (`Context.max_message_size`); None: no limit.
        self.max_payload: int | None = None
        self.max_payload_setting: str | None = None
        self.started_at = time.time()
        #: The most recent errors components reported (collector.report_error).
        self.errors: collections.deque[dict[str, Any]] = collections.deque(maxlen=10)
        # Per-task backpressure (runtime/backpressure.py): what peers throttle, what
        # this worker's receive thread holds back, and the topology's cycles.
        self.throttle = ThrottleTable()
        self._throttle_changed = threading.Condition()
        #: The receive thread waits on a full queue (`_wait_put`): it reads no
        #: status meanwhile, so a throttle a peer has lifted may still be in force
        #: here. Executors whose own input is full then pass throttles
        #: (`Executor._may_pass_throttle`). Written by the receive thread only.
        self.receive_waiting = False
        # CPU-aware shuffles (runtime/balance.py): this worker's receive thread
        # weighs the workers by how busy each says it is; executors read the
        # weights per task, a dict replaced whole, never changed in place.
        self.balances_load = len(assignment.workers) > 1 and not conf.get(
            "topology.disable.loadaware.messaging"
        )
        self.balance = WorkerBalance(len(assignment.workers))
        self.task_weights: dict[int, float] = {}
        #: This worker's latest figure (balance.short_of_cpu), for its peers and its stats.
        self.cpu_figure: float | None = None
        # Beyond its queue, an executor's input may wait in the overflow up to what
        # peers can have in flight before they hear of the throttle.
        in_flight = 8 * int(conf["topology.transfer.batch.size"])
        self.inbound = Inbound(
            self.queues, self._executor_tasks,
            overflow_limit=max(receive_size, in_flight), wait_put=self._wait_put,
        )
        #: Called every 0.1 s while the receive thread waits on a full queue (the
        #: worker repeats its throttle status from there).
        self.while_receive_waits: Callable[[], None] = lambda: None
        graph: dict[str, set[str]] = {}
        #: (source component, stream, consumer component) of every subscription
        self._subscriptions: set[tuple[str, str, str]] = set()
        #: (source task, stream, target task) -> (component, values class, arity) of
        #: user streams that passed make_tuples' checks once
        self._checked_streams: dict[tuple[int, str, int], tuple[str, Any, int]] = {}
        for name, component in definition.components.items():
            for source, stream, _grouping in component.inputs:
                graph.setdefault(source, set()).add(name)
                self._subscriptions.add((source, stream, name))
        self._cyclic = cyclic_edges(graph)
        self._cyclic_executors: dict[str, frozenset[int]] = {}
        self._cyclic_tasks: dict[str, frozenset[int]] = {}

    # -- what executors ask -------------------------------------------------------

    def component_conf(self, component: str) -> dict[str, Any]:
        """Topology conf with the component's own `config` on top, less the known
        keys a component may not set (Storm's rule, `PER_COMPONENT_KEYS`): what its
        executors read and its `initialize` gets, so that a component sees the
        values the runtime uses (validation warns about the rest)."""
        spec = self.definition.components.get(component)
        if spec is None or not spec.config:
            return self.conf
        own = {key: value for key, value in spec.config.items() if component_may_set(key)}
        return {**self.conf, **own}

    def context_for(self, task: int) -> dict[str, Any]:
        """pystorm's context dict: Storm's multilang context, and where the task runs."""
        component = self.assignment.task_component[task]
        return {
            "taskid": task,
            "componentid": component,
            "task->component": self._task_component_names,
            **storm_context(self.definition, component),
            "stormid": self.storm_id,
            "worker.port": self.assignment.workers[self.worker_index].port,
        }

    def values_class(self, component: str, stream: str) -> Any:
        key = (component, stream)
        cls = self._values_classes.get(key)
        if cls is None:
            fields = self.definition.components[component].outputs[stream].fields
            cls = collections.namedtuple("Values", fields, rename=True)  # type: ignore[misc]
            self._values_classes[key] = cls
        return cls

    def routes_for(self, component: str, task: int, rng: random.Random) -> dict[str, StreamRoute]:
        """Per stream of `component`: the choosers of every subscriber, for `task`."""
        routes: dict[str, StreamRoute] = {}
        spec = self.definition.components[component]
        for stream_name, stream in spec.outputs.items():
            route = StreamRoute(
                stream_name, self.values_class(component, stream_name), len(stream.fields),
                stream.direct,
            )
            direct_targets: set[int] = set()
            for consumer, grouping in self.definition.consumers(component, stream_name):
                targets = sorted(self.assignment.component_tasks[consumer])
                if stream.direct:
                    direct_targets.update(targets)
                else:
                    route.choosers.append(
                        make_chooser(grouping, stream.fields, targets, self._local_tasks, rng,
                                     self.codec)
                    )
            route.direct_targets = frozenset(direct_targets)
            routes[stream_name] = route
        return routes

    def make_tuples(
        self, source: int, stream: str, roots: WireRoots,
        values: Sequence[Sequence[Any]], target: int,
    ) -> list[Tuple]:
        """Tuples for task `target` from a decoded remote payload (one source task,
        one stream), checked against the topology; system tuples (the acker
        protocol) against their shapes, since the acker and spout executors use
        their values without looking.

        Every remote tuple comes through here, so what a user stream's (source
        task, stream, target task) was checked against once is remembered; only
        the arity is checked per tuple. The memo holds valid triples only, of
        which a topology has a bounded number."""
        known = self._checked_streams.get((source, stream, target))
        if known is None:
            known = self._check_stream(source, stream, target)
            if known is None:  # a system stream: every tuple checked on its own
                component = self.assignment.task_component[source]
                from_acker = component == ACKER
                to_acker = self.assignment.task_component.get(target) == ACKER
                check_system_tuples(stream, source, values, from_acker=from_acker, to_acker=to_acker)
                if roots is None:  # the acker protocol: untracked
                    return [tuple.__new__(Tuple, (None, component, stream, source, tuple_values))
                            for tuple_values in values]
                return [
                    Tuple(TupleId(tuple_roots) if tuple_roots else None, component, stream, source,
                          tuple_values)
                    for tuple_roots, tuple_values in zip(roots_per_tuple(roots, len(values)), values)
                ]
        component, values_cls, arity = known
        for tuple_values in values:
            if len(tuple_values) != arity:
                raise _arity_error(tuple_values, stream, component, arity)
        new = tuple.__new__
        if roots is None:
            return [
                new(Tuple, (None, component, stream, source, new(values_cls, tuple_values)))
                for tuple_values in values
            ]
        if are_root_pairs(roots):  # each tuple in one tree: the acking bolts' remote emits
            pair = iter(roots)
            return [
                new(Tuple, (one_tree_id(root, edge), component, stream, source,
                            new(values_cls, tuple_values)))
                for root, edge, tuple_values in zip(pair, pair, values)  # counts checked
            ]
        return [
            new(Tuple, (TupleId(tuple_roots) if tuple_roots else None, component, stream, source,
                        new(values_cls, tuple_values)))
            for tuple_roots, tuple_values in zip(roots, values)  # one each: decode_tuples
        ]

    def _check_stream(self, source: int, stream: str, target: int) -> tuple[str, Any, int] | None:
        """What tuples from task `source` on `stream` to task `target` must be, the
        first time they come: a user stream's (component, values class, arity),
        remembered; None for a system stream whose receiver may take it (each of
        its tuples is then checked against the stream's shape). Raises
        MalformedTuple for anything else."""
        component = self.assignment.task_component.get(source)
        if component is None:
            raise MalformedTuple(f"unknown source task {source}")
        if stream.startswith(_SYSTEM_STREAM_PREFIX):
            receiver = self.assignment.task_component.get(target)
            to_acker = receiver == ACKER
            if not to_acker and (receiver is None or self.definition.components[receiver].kind != "spout"):
                raise MalformedTuple(f"system stream {reprlib.repr(stream)} for {receiver!r}, not an acker or spout")
            if stream == ACKER_INIT_STREAM_ID and (
                component == ACKER or self.definition.components[component].kind != "spout"
            ):  # the acker would send the tree's completion to that task's process()
                raise MalformedTuple(f"system stream {reprlib.repr(stream)} from {component!r}, not a spout")
            return None
        spec = self.definition.components.get(component)
        stream_def = spec.outputs.get(stream) if spec is not None else None
        if stream_def is None:
            raise MalformedTuple(f"component {component!r} has no stream {reprlib.repr(stream)}")
        receiver = self.assignment.task_component.get(target)
        if (component, stream, receiver) not in self._subscriptions:
            raise MalformedTuple(
                f"{receiver!r} does not subscribe to stream {reprlib.repr(stream)} of {component!r}"
            )
        known = (component, self.values_class(component, stream), len(stream_def.fields))
        self._checked_streams[(source, stream, target)] = known
        return known

    def cyclic_executors(self, component: str) -> frozenset[int]:
        """Local executors whose component is on a cycle with `component`: one answer
        per component, as every executor asks (a scan per executor grows with the
        square of the executors: 15,000 took a minute to start)."""
        found = self._cyclic_executors.get(component)
        if found is None:
            found = self._cyclic_executors[component] = frozenset(
                e.index for e in self.local_executors if (component, e.component) in self._cyclic
            )
        return found

    def cyclic_tasks(self, component: str) -> frozenset[int]:
        """Tasks (anywhere) of components on a cycle with `component`, one answer per
        component as `cyclic_executors`."""
        found = self._cyclic_tasks.get(component)
        if found is None:
            found = self._cyclic_tasks[component] = frozenset(
                task for consumer, tasks in self.assignment.component_tasks.items()
                if (component, consumer) in self._cyclic for task in tasks
            )
        return found

    def task_loads(self) -> dict[int, float]:
        """What load-aware shuffles choose by (`topology.disable.loadaware.messaging`):
        a local task's queued and taken-but-unfinished tuples over its queue's
        capacity (a full queue is about 1), and infinity for a task its worker
        throttles; tasks not listed have load 0.

        Why these: a local wait ends when the consumer takes its next batch, a
        throttle only once the remote queue has half drained and the news has come
        back, hence infinity. A queue at most half full counts as idle (not
        listed), as it does for lifting a throttle: its consumer keeps up, and an
        even spread is then worth more than chasing a few queued tuples (of a
        remote task this worker only knows whether it is throttled, so that would
        send more across workers for nothing)."""
        loads = dict.fromkeys(self.throttle.throttled, math.inf)
        for index, incoming in self.queues.items():
            backlog = incoming.backlog
            if backlog * 2 > incoming.capacity:
                loads.update(dict.fromkeys(self._executor_tasks[index], backlog / incoming.capacity))
        return loads

    def some_executor_behind(self) -> bool:
        """Whether some executor falls behind (`storm_zmq.runtime.balance.falls_behind`
        of its queue), for `balance.short_of_cpu`."""
        return any(falls_behind(q.backlog, q.capacity) for q in self.queues.values())

    def wait_throttle_change(self, timeout: float) -> None:
        if self.throttle.expire(time.monotonic()):
            return
        with self._throttle_changed:
            self._throttle_changed.wait(timeout)

    def throttle_changed(self) -> None:
        with self._throttle_changed:
            self._throttle_changed.notify_all()

    def _wait_put(self, queue: BatchQueue[Any], batch: list[Any], weight: int) -> None:
        if queue.put(batch, timeout=0.1, weight=weight):
            return
        self.receive_waiting = True
        self.throttle_changed()  # executors holding for a throttle look again
        try:
            self._wait_put_longer(queue, batch, weight)
        finally:
            self.receive_waiting = False

    def _wait_put_longer(self, queue: BatchQueue[Any], batch: list[Any], weight: int) -> None:
        while not queue.put(batch, timeout=0.1, weight=weight):
            if self.stopping.is_set():
                raise QueueClosed()
            # The receive thread waits here (an overflow at its bound), so it neither
            # reads its peers' newer statuses nor expires their old ones, which its
            # loop does. An executor of the shared thread holding a batch for a task a
            # peer throttled once would hold it for ever, and this queue, which only
            # that thread drains, would stay full: two workers deadlocked so after a
            # peer's SIGSTOP (tests/runtime/test_faults.py). Stale throttles expire
            # here too; a peer that still throttles repeats itself, read once this
            # wait ends.
            if self.throttle.expire(time.monotonic()):
                self.throttle_changed()
            # its peers must keep hearing this worker's throttle, or it expires and
            # they send at full speed
            self.while_receive_waits()

    def record_error(self, component: str, task: int, text: str) -> None:
        self.errors.append(
            {"component": component, "task": task, "time": time.time(), "text": text[-4000:]}
        )

    def executor_ready(self, executor: Executor) -> None:
        self._ready.release()

    def executor_failed(self, executor: Executor) -> None:
        assert executor.failure is not None
        self.failures.append(executor.failure)
        self.failed.set()

    def stalled_since(self, moment: float) -> bool:
        """Whether the process was stopped or starved after `moment` (or is: its main
        loop has not run for STALL_SECS): a turn of a component's code that spans
        that is not the component's waiting (a data-plane audit: a SIGSTOP of 20 s
        moved the components it caught mid-turn to threads of their own)."""
        looped = self.main_loop_at
        return self.stalled_until > moment or (
            looped is not None and time.monotonic() - looped > STALL_SECS)

    def thread_failed(self, name: str, exc: BaseException) -> None:
        """One of the worker's own threads (receive, send, backpressure) raised:
        without it the worker would go on looking alive while its tuples stop, so
        it dies, as for a component's failure, with the traceback."""
        text = format_exception(exc)
        self.failures.append(WorkerThreadFailed(f"the worker's {name} thread failed:\n{text}"))
        self.failed.set()


class WorkerControl(Protocol):
    """Who a worker answers to: the local runner (a pipe) or, in cluster mode,
    ZooKeeper. Commands are "activate", "deactivate", "stop", "report" (a stats
    report now, besides the one every `STATS_INTERVAL`) and, from the local runner
    before it stops the others after a failure, "peers-gone:I,J" (the worker indices
    that failed or died: nothing more is sent to them)."""

    def poll(self, timeout: float) -> str | None:
        """The next command, or None after `timeout`; "stop" when the controller
        is gone."""

    def ready(self, worker: int) -> None: ...

    def report_stats(self, worker: int, stats: dict[str, Any]) -> None: ...

    def report_error(self, worker: int, text: str) -> None: ...

    def stopped(self, worker: int, stats: dict[str, Any]) -> None: ...


class PipeControl:
    """The local runner's end of a multiprocessing pipe (runtime/local.py)."""

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe

    def poll(self, timeout: float) -> str | None:
        if not self.pipe.poll(timeout):
            return None
        try:
            return self.pipe.recv()
        except EOFError:  # whoever started us is gone: stop
            return "stop"

    def _send(self, message: tuple[Any, ...]) -> None:
        try:
            self.pipe.send_bytes(encode_report(message))
        except OSError:
            pass  # the runner is gone; it will not read this

    def ready(self, worker: int) -> None:
        self._send(("ready", worker))

    def report_stats(self, worker: int, stats: dict[str, Any]) -> None:
        self._send(("stats", worker, stats))

    def report_error(self, worker: int, text: str) -> None:
        self._send(("error", worker, text))

    def stopped(self, worker: int, stats: dict[str, Any]) -> None:
        self._send(("stopped", worker, stats))


class Worker:
    """Runs one worker in this process until told to stop or a component fails."""

    def __init__(self, spec: dict[str, Any], control: WorkerControl) -> None:
        self.spec = spec
        self.control = control
        self._peer_updates: queue.SimpleQueue[list[WorkerSlot]] = queue.SimpleQueue()
        self.conf: dict[str, Any] = spec["conf"]
        self.index: int = spec["worker_index"]
        self.assignment = Assignment.from_dict(spec["assignment"])
        self.server: Connection | None = None
        self.clients: dict[int, Connection] = {}
        self._failure_reported = False  # a worker reports its (first) failure once
        # spout executor index -> its trees completed as of the last report
        self._completions_reported: dict[int, int] = {}
        # a "deactivate" came after the last "activate": the stop follows a drain
        self._drained_before_stop = False
        # the reverse channel: backpressure statuses to every peer, from their own
        # thread and connections, so that they never wait behind data
        self._status_out: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._next_status_repeat = 0.0  # the receive thread's, in its loop or waiting
        self._control_peer_updates: queue.SimpleQueue[list[WorkerSlot]] = queue.SimpleQueue()
        self._last_busy: dict[int, tuple[float, float]] = {}
        #: While stopping, when the send thread stops waiting for peers that take
        #: nothing: one deadline for every send, not one per batch, so that the
        #: thread ends before the transport is closed under it.
        self._give_up_sending_at: float | None = None
        # peers the runner said are gone (failed or died): a send to one is dropped at
        # once, where it waited SHUTDOWN_SEND_GRACE for a peer that takes nothing
        self._peers_gone: frozenset[int] = frozenset()
        #: Set once shutdown closes the transport: an I/O thread that fails after
        #: that failed of the closing, not of a fault worth a report.
        self._transport_closed = False

    def run(self) -> int:
        port = self.assignment.workers[self.index].port
        # before any thread of the data path starts; a local run names its ports
        pin_worker(self.conf, port, self.spec.get("host_ports"))
        tune_jit(self.conf, port)
        topology = load_topology(self.spec["topology_file"], self.spec.get("topology_name"))
        definition = topology.definition()
        state = self.state = WorkerState(self.conf, definition, self.assignment, self.index)
        state.while_receive_waits = self._repeat_throttle_status
        self.context = load_context(_bounded_send_waits(self.conf), self.spec.get("secrets"))
        state.max_payload = getattr(self.context, "max_message_size", None)
        state.max_payload_setting = getattr(self.context, "max_message_setting", None)
        self.server = self.context.bind(self.assignment.storm_id, port)
        for index, slot in enumerate(self.assignment.workers):
            if index != self.index:
                self.clients[index] = self.context.connect(self.assignment.storm_id, slot.host, slot.port)
        self.executors: list[Executor] = [new_executor(state, ex) for ex in state.local_executors]
        # The threads that run the executors: one each, or one for all of them.
        self._hold_said: dict[threading.Thread, tuple[float, float]] = {}  # step start, next notice
        # executor in a thread of its own -> (its call of user code, since, next notice)
        self._own_calls: dict[Executor, tuple[FrameType, float, float]] = {}
        self._next_own_check = 0.0
        self._runners: list[threading.Thread] = []
        if self.conf.get("worker.shared.executor.thread"):  # and those it hands over to
            self._runners.append(SharedExecutorThread(state, self.executors, self._runners.append))
        else:
            self._runners += self.executors
        threads = [
            threading.Thread(target=self._guarded, args=("receive", self._receive_loop, True),
                             name="receive", daemon=True),
            threading.Thread(target=self._guarded, args=("send", self._send_loop, True),
                             name="send", daemon=True),
        ]
        if len(self.assignment.workers) > 1:
            threads.append(threading.Thread(target=self._guarded, args=("backpressure", self._status_loop),
                                            name="backpressure", daemon=True))
        for thread in threads:
            thread.start()
        for runner in list(self._runners):  # a runner's successor is started by it
            runner.start()
        # said before a supervisor (or `run`) gives up on the worker, whose wait began
        # at the launch: counted from the process's start, not from here (a worker
        # that took 2 s to start on a busy machine said it after `run` gave up)
        notice_every = min(INITIALIZE_NOTICE_SECS,
                           float(self.conf.get("supervisor.worker.start.timeout.secs", 120)) / 2)
        next_notice = time.monotonic() + max(0.0, notice_every - (process_age(os.getpid()) or 0.0))
        for _ in self.executors:  # every component initialized (or one failed)
            while not state._ready.acquire(timeout=0.1):
                if state.failed.is_set():
                    return self._die()
                if time.monotonic() >= next_notice:
                    next_notice += notice_every
                    self._say_who_is_initializing()
                # Only "stop" can come before ready (the runner gave up on the start, a
                # supervisor's SIGTERM): an initialize() that hangs must not hold it up.
                if self.control.poll(0) == "stop":
                    log.warning("worker %d: asked to stop before its components finished "
                                "initialize(); exiting without cleanup()", self.index)
                    return 1
        tune_gc()
        self.control.ready(self.index)
        code = self._main_loop()
        if not self._shutdown(threads) and code == 0:
            code = 1
        return code

    # -- main thread ----------------------------------------------------------------

    def _main_loop(self) -> int:
        state = self.state
        next_stats = time.monotonic()
        garbage = CollectionClock()
        spouts = self._spouts()
        bolts = [e for e in self.executors if isinstance(e, BoltExecutor)]
        finished_reported = False
        while True:
            if state.failed.is_set():
                return self._die()
            # a wait of 50 ms that took over STALL_SECS: the process was stopped (the
            # loop's own work, a report of many executors say, is not counted)
            state.main_loop_at = polled_at = time.monotonic()
            command = self.control.poll(0.05)
            now = time.monotonic()
            if now - polled_at > STALL_SECS:
                state.stalled_until = now  # its components' turns since are not judged
            state.main_loop_at = now
            if command == "activate":
                self._drained_before_stop = False
                for executor in spouts:
                    executor.request_activate()
                for executor in bolts:
                    executor.set_deactivated(False)
            elif command == "deactivate":
                self._drained_before_stop = True
                for executor in spouts:
                    executor.request_deactivate()
                for executor in bolts:
                    executor.set_deactivated(True)
            elif command == "report":  # the local runner draining: a round now
                next_stats = now
            elif command is not None and command.startswith("peers-gone:"):
                self._peers_gone = frozenset(int(i) for i in command.split(":", 1)[1].split(",") if i)
            elif command == "stop":
                return 0
            if not finished_reported and spouts and all(
                    e.exhausted and not e.pending_count for e in spouts):
                # a finite run stops on this news: it goes out now, not at the next tick
                finished_reported, next_stats = True, now
            garbage.tick()
            self._say_who_holds_the_thread(now)
            self._say_who_is_stuck_alone(now)
            if now >= next_stats:
                next_stats = now + STATS_INTERVAL
                self.control.report_stats(self.index, self.stats())

    def _spouts(self) -> list[SpoutExecutor]:
        return [e for e in self.executors if isinstance(e, SpoutExecutor)]

    def stats(self) -> dict[str, Any]:
        """This worker's metrics report (format: docs/observability.md)."""
        now = time.monotonic()
        components: dict[str, dict[str, Any]] = {}
        for executor in self.executors:
            entry = components.get(executor.component)
            if entry is None:
                entry = components[executor.component] = {
                    "kind": "acker" if executor.component == ACKER
                    else "spout" if executor.is_spout else "bolt",
                    "tasks": [], "executors": 0,
                    "emitted": 0, "transferred": 0, "executed": 0, "acked": 0, "failed": 0,
                    "malformed": 0, "errors_reported": 0,
                    "queued": 0, "queue_capacity": 0, "pending": 0, "exhausted_tasks": 0,
                    "execute_ms_total": 0.0, "execute_samples": 0,
                    "process_ms_total": 0.0, "process_samples": 0,
                    "complete_ms_total": 0.0, "complete_samples": 0,
                    # None until a report window (a bolt's; Storm has none for spouts)
                    "capacity": None, "latencies_ms": [], "latency_runs": [], "by_executor": [],
                }
            entry["tasks"] += executor.assignment.tasks
            entry["executors"] += 1
            entry["emitted"] += executor.emitted
            entry["transferred"] += executor.transferred
            entry["executed"] += executor.executed
            entry["acked"] += executor.acked
            entry["failed"] += executor.failed
            entry["malformed"] += executor.malformed
            entry["errors_reported"] += executor.errors_reported
            entry["queued"] += executor.queued
            entry["queue_capacity"] += executor.incoming.capacity
            busy = executor.busy_secs
            entry["execute_ms_total"] += busy * 1000.0
            entry["execute_samples"] += executor.executed
            entry["process_ms_total"] += executor.process_ms_total
            entry["process_samples"] += executor.process_samples
            last = self._last_busy.get(executor.index)
            self._last_busy[executor.index] = (now, busy)
            capacity = None
            if last is not None and now > last[0] and not executor.is_spout:
                capacity = min(1.0, (busy - last[1]) / (now - last[0]))
                entry["capacity"] = (capacity if entry["capacity"] is None
                                     else max(entry["capacity"], capacity))
            # Storm's unit of statistics: the executor (its tasks share its counters)
            entry["by_executor"].append({
                "executor": executor.index, "tasks": list(executor.assignment.tasks),
                "emitted": executor.emitted, "transferred": executor.transferred,
                "executed": executor.executed, "acked": executor.acked,
                "failed": executor.failed, "queued": executor.queued,
                "capacity": capacity,
            })
            if isinstance(executor, SpoutExecutor):
                entry["pending"] += executor.pending_count
                entry["exhausted_tasks"] += executor.exhausted_tasks
                entry["complete_ms_total"] += executor.complete_ms_total
                entry["complete_samples"] += executor.complete_samples
                samples, executor.complete_latencies_ms = executor.complete_latencies_ms, []
                completed = executor.complete_samples - self._completions_reported.get(executor.index, 0)
                self._completions_reported[executor.index] = executor.complete_samples
                if len(samples) > LATENCY_SAMPLES_PER_REPORT:  # unbiased, not the first N
                    samples = random.sample(samples, LATENCY_SAMPLES_PER_REPORT)
                if samples:
                    # how many trees these samples stand for: a busy executor's are a
                    # draw, a quiet one's all of its trees (RunStats weighs them so)
                    entry["latency_runs"].append([len(samples), max(completed, len(samples))])
                    entry["latencies_ms"] += samples
        slot = self.assignment.workers[self.index]
        state = self.state
        return {
            "worker": self.index,
            "host": slot.host,
            "port": slot.port,
            "pid": os.getpid(),
            "time": time.time(),
            "uptime_secs": time.time() - state.started_at,
            **_process_usage(),
            "components": components,
            "transfer_queued": len(state.transfer),
            "sending": state.sending,
            "remote_sent": state.remote_sent,
            "remote_received": state.remote_received,
            "transfer_capacity": state.transfer.capacity,
            "refused": dict(state.refused.counts),
            # the transport's class (storm.messaging.transport, resolved) and counters
            "transport_class": f"{type(self.context).__module__}.{type(self.context).__qualname__}",
            "transport": self.server.stats() if self.server is not None else {},
            "peers": {str(index): client.stats() for index, client in list(self.clients.items())},
            "backpressure": {
                "events": state.inbound.events,
                "throttled_tasks": sorted(state.inbound.throttled_tasks),
                "overflow": state.inbound.overflow_items(),
                "held_by_peers": sorted(state.throttle.throttled),
            },
            # load-aware shuffles' CPU weights (runtime/balance.py); none with one worker
            "balance": {
                "figure": state.cpu_figure,
                "weight": state.balance.weights.get(self.index),
            } if state.balances_load else {},
            "errors": list(state.errors),
        }

    def _say_who_holds_the_thread(self, now: float) -> None:
        """A component blocked in its code (a `process` or `next_tuple` that never
        returns) showed only as 0 tuples a second, and as a thread that did not stop
        when the run ended, and every other component of its shared thread waited for
        it. Now the others go on in a new shared thread after `HAND_OFF_SECS`
        (`SharedExecutorThread.move_others_off`; the component is then alone, and
        `_say_who_is_stuck_alone` names it if the call goes on), and a component that
        is alone in its shared thread is named after `HOLD_NOTICE_SECS`."""
        for runner in self._runners:
            if not isinstance(runner, SharedExecutorThread):
                continue
            stepping, since = runner.stepping, max(runner.step_started, self.state.stalled_until)
            held = now - since
            if stepping is None or held < HAND_OFF_SECS:
                continue
            if held < HOLD_NOTICE_SECS:
                if len(runner.executors) < 2:
                    continue  # alone: nobody waits for it
                others = sorted({e.component for e in runner.executors} - {stepping.component})
                if runner.move_others_off(stepping):
                    where = _where_in_user_code(runner)
                    log.info("component %r (tasks %s) has held its worker's shared executor "
                             "thread for %.1f s in its own code%s: the other components (%s) go "
                             "on in a new one, and it keeps this one", stepping.component,
                             ", ".join(map(str, stepping.assignment.tasks)), held,
                             f", at {where}" if where else "", ", ".join(others))
                continue
            said = self._hold_said.get(runner)
            if said is not None and said[0] == since and now < said[1]:
                continue
            self._hold_said[runner] = (since, now + HOLD_NOTICE_REPEAT_SECS)
            others = ", ".join(sorted({e.component for e in runner.executors} - {stepping.component}))
            where = _where_in_user_code(runner)
            moved = runner.move_others_off(stepping)
            log.warning("component %r (tasks %s) has been in its own code for %.0f s%s; %s",
                        stepping.component, ", ".join(map(str, stepping.assignment.tasks)), held,
                        f", at {where}" if where else "",
                        f"the other components of its shared executor thread ({others}) go on "
                        "without it, in a new one" if moved else
                        f"the components of its shared executor thread wait for it ({others or 'none'})")

    def _say_who_is_stuck_alone(self, now: float) -> None:
        """An executor in a thread of its own (`worker.shared.executor.thread:
        false`, or one that left the shared thread, often for waiting in its code)
        blocked for good in a call of its component showed only as 0 tuples a
        second, and was named at the stop. Once a second, the outermost frame of the
        user's code on its stack is looked at: the same frame object 10 s later is
        the same call (a kept reference cannot be reused by another), so it is
        named, with the line it is at; a spout polling in short calls never is."""
        if now < self._next_own_check:
            return
        self._next_own_check = now + 1.0
        calls = self._own_calls
        alone = {}
        for runner in self._executor_threads():
            executor = runner.handed_over if isinstance(runner, SharedExecutorThread) else runner
            if isinstance(executor, Executor) and runner.is_alive():
                alone[executor] = runner
        for executor in list(calls):
            if executor not in alone:
                del calls[executor]
        for executor, runner in alone.items():
            frame = _outermost_user_frame(runner)
            seen = calls.get(executor)
            if frame is None:
                calls.pop(executor, None)
            elif seen is None or seen[0] is not frame or self.state.stalled_since(seen[1]):
                calls[executor] = (frame, now, now + HOLD_NOTICE_SECS)
            elif now >= seen[2]:
                calls[executor] = (frame, seen[1], now + HOLD_NOTICE_REPEAT_SECS)
                where = _where_in_user_code(runner)
                log.warning("component %r (tasks %s) has been in one call of its own code for "
                            "%.0f s%s (it runs in a thread of its own: no other component "
                            "waits for it)", executor.component,
                            ", ".join(map(str, executor.assignment.tasks)), now - seen[1],
                            f", at {where}" if where else "")

    def _say_who_is_initializing(self) -> None:
        """Name the executors in start-up now, not those waiting their turn behind
        them in the shared thread; the number of those."""
        busy = [e for e in self.executors if e.starting_up]
        queued = sum(1 for e in self.executors if not e.started_up and not e.starting_up)
        if not busy and not queued:
            return
        names = ", ".join(f"{e.component} (tasks {', '.join(map(str, e.assignment.tasks))})"
                          for e in busy) or "its components"
        more = ""
        if busy and queued:
            more = (" (1 more executor waits its turn)" if queued == 1
                    else f" ({queued} more executors wait their turn)")
        give_up = float(self.conf.get("supervisor.worker.start.timeout.secs", 120))
        log.warning("worker %d still waiting for initialize() of %s after %.0f s%s; a "
                    "worker not ready after %.0f s (supervisor.worker.start.timeout.secs) "
                    "fails", self.index, names, time.time() - self.state.started_at, more,
                    give_up)

    def _die(self) -> int:
        # the counts so far first: a failure before the first report would leave
        # the run's summary at zero
        try:
            self.control.report_stats(self.index, self.stats())
        except Exception:  # the report is a courtesy; the failure is what matters
            log.exception("worker %d: no final report", self.index)
        self._report_failure()
        return 1

    def _report_failure(self) -> None:
        if self._failure_reported:
            return
        self._failure_reported = True
        text = str(self.state.failures[0])
        log.error("worker %d (port %d): %s", self.index,
                  self.assignment.workers[self.index].port, text)
        self.control.report_error(self.index, text)

    def _shutdown(self, threads: list[threading.Thread]) -> bool:
        """Stop executors (each flushes and runs cleanup), then drain the transfer
        queue to the network, then close the transport. False when a component
        raised while stopping (in `cleanup()`, say): reported as any failure is,
        before the final report, so that the run does not end as if all went well."""
        for executor in self.executors:
            executor.stop_requested.set()
        # A short grace to finish the batch in hand and run cleanup(); then
        # `stopping` releases producers blocked on a queue whose consumer already
        # stopped (their output was not drained in time and is dropped).
        grace = time.monotonic() + 2
        for runner in self._executor_threads():
            runner.join(max(0.0, grace - time.monotonic()))
        self.state.stopping.set()
        deadline = time.monotonic() + 10
        for runner in self._executor_threads():
            runner.join(max(0.0, deadline - time.monotonic()))
        stuck = list(dict.fromkeys(  # a handed-over executor is listed under two threads
            _describe_runner(runner) for runner in self._executor_threads() if runner.is_alive()))
        if stuck:  # the process ends without them: say so rather than exit as if clean
            hanging = [f"{executor.component!r} task {executor.in_cleanup}" for executor in self.executors
                       if executor.in_cleanup is not None]
            if hanging:
                how = f" (in the cleanup() of {', '.join(hanging)})"
            else:  # the hook a stuck thread is in, where its code is the user's
                hooks = sorted({frame.f_code.co_name + "()" for frame in (
                    _outermost_user_frame(runner) for runner in self._executor_threads()
                    if runner.is_alive()) if frame is not None})
                how = f" (in {', '.join(hooks)})" if hooks else ""
            skipped = ", ".join(f"{executor.component!r} task {task}" for executor in self.executors
                                for task in executor.components if task not in executor.cleaned_up
                                and not executor.component.startswith("__"))
            self.state.failures.append(WorkerStopTimedOut(
                f"{'; '.join(stuck)}: did not stop within 12 s of being told to{how}; "
                f"cleanup() has not finished for {skipped or 'no component'}"))
            self.state.failed.set()
        if not stuck and not self.state.failed.is_set():  # a failure tells its own story
            self._say_left_behind()
        for thread in threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        final = self.stats()
        self._transport_closed = True
        for client in self.clients.values():
            client.close()
        if self.server is not None:
            self.server.close()
        self.context.term()
        failed = self.state.failed.is_set()
        if failed:
            self._report_failure()
        self.control.stopped(self.index, final)
        return not failed

    def _say_left_behind(self) -> None:
        """Once every executor stopped: tuples still in their queues, or emitted
        and never flushed, are dropped with the worker. A soak audit lost 8,200 of
        15 million so, unsaid: emitted by a thread of a component's own after their
        consumers stopped. A drain that timed out leaves some too (the runner's count
        of them is the whole run's, at the drain's end). What components emitted in
        cleanup() was said already."""
        queued, unflushed = left_behind(self.state, self.executors)
        dropped = queued + unflushed - sum(e.emitted_in_cleanup for e in self.executors)
        if dropped > 0 and not self._drained_before_stop:
            log.warning(
                "worker %d: %d tuple(s) were still queued for its executors, or emitted "
                "and never flushed, when they stopped: dropped (the stop came without a "
                "deactivate and drain first: in local mode, another worker failed; in a "
                "cluster, a SIGTERM from the supervisor or kill_workers, a kill with no "
                "wait, or the slot's reassignment)", self.index, dropped)
        elif dropped > 0:
            log.warning(
                "worker %d: %d tuple(s) were still queued for its executors, or emitted "
                "and never flushed, when they stopped: dropped (left by a drain that timed "
                "out or was cut short, or emitted after their consumers stopped, by a thread "
                "of a component's own)", self.index, dropped)

    def _executor_threads(self) -> list[threading.Thread]:
        """The threads that run executors now: a shared thread's executors that
        left for a thread of their own (`SharedExecutorThread.own_threads`) after it
        (it starts them, so it is joined first)."""
        threads = list(self._runners)
        for runner in self._runners:
            if isinstance(runner, SharedExecutorThread):
                threads += runner.own_threads
        return threads

    # -- I/O threads ------------------------------------------------------------------

    def _guarded(self, name: str, loop: Callable[[], None], batch: bool = False) -> None:
        """Run an I/O thread's `loop`, its failure the worker's. `batch`: the thread
        wakes without preempting the executor thread (`tuning.wake_without_preempting`)."""
        if batch:
            wake_without_preempting()
        try:
            loop()
        except BaseException as exc:
            if self._transport_closed:  # closed under it while stopping: not a fault
                log.info("the worker's %s thread ended as the transport closed: %s", name,
                         f"{type(exc).__name__}: {exc}")
                return
            log.error("the worker's %s thread failed", name, exc_info=exc)
            self.state.thread_failed(name, exc)

    def _receive_loop(self) -> None:
        state = self.state
        server = self.server
        assert server is not None
        location = state.task_location
        inbound = state.inbound
        throttled: frozenset[int] = frozenset()
        has_peers = len(self.assignment.workers) > 1
        balance = state.balance if state.balances_load else None
        meter, executors_meter = BusyMeter(), RunnableMeter()
        next_report = 0.0
        task_worker = {task: state.assignment.worker_of_task(task) for task in location}
        try:
            while not state.stopping.is_set():
                messages = server.recv(timeout=0.005 if inbound.holding else 0.1)
                changed = False
                if messages:
                    by_executor: dict[int, list[Any]] = {}
                    weights: dict[int, int] = {}  # the tuples each executor's messages carry
                    state.remote_received += len(messages)
                    for message in messages:
                        where = location.get(message.task, -1)
                        if where < 0:
                            if message.task == BACKPRESSURE_TASK:
                                state.remote_received -= 1  # a status, not a task message
                                self._on_status(message.message)
                            else:
                                state.refused.record(
                                    "unknown_task", f"message for task {message.task}, not in this worker"
                                )
                            continue
                        batch = by_executor.get(where)
                        if batch is None:
                            batch = by_executor[where] = []
                            weights[where] = 0
                        batch.append(message)
                        weights[where] += payload_tuple_count(message.message)
                    for executor, batch in by_executor.items():
                        changed |= inbound.offer(executor, batch, weights[executor])
                if inbound.holding:
                    changed |= inbound.drain()
                now = time.monotonic()
                if state.throttle.expire(now):
                    state.throttle_changed()
                measured = False
                if balance is not None and now >= next_report:
                    next_report = now + REPORT_SECS
                    # the CPU it got, or more if an executor thread waited for a CPU (`RunnableMeter`)
                    executors = [t.native_id for t in self._executor_threads() if t.native_id is not None]
                    sample = meter.sample(time.process_time(), now)
                    executors_sample = executors_meter.sample(executors, now)
                    if sample is not None:
                        sample = max(sample, executors_sample or 0.0)
                        measured = True
                        state.cpu_figure = short_of_cpu(sample, state.some_executor_behind())
                        balance.observe(self.index, state.cpu_figure, now)
                    if balance.update(now):
                        state.task_weights = balance.task_weights(task_worker)
                if (changed or measured or (throttled and now >= self._next_status_repeat)) and has_peers:
                    # (one worker alone has nobody to tell, and no thread to take it;
                    # every status carries the latest figure, since only the newest
                    # status waiting for the backpressure thread is sent)
                    throttled = self._send_status(now)
        except QueueClosed:
            return

    def _send_status(self, now: float) -> frozenset[int]:
        """Hand this worker's status (throttled tasks, CPU figure) to the backpressure
        thread, and return the throttled tasks it carries. Receive thread only."""
        throttled = self.state.inbound.throttled_tasks
        self._status_out.put(encode_status(self.index, throttled, self.state.cpu_figure))
        self._next_status_repeat = now + STATUS_REPEAT_SECS
        return throttled

    def _repeat_throttle_status(self) -> None:
        """The receive loop's repeat of a throttle status, for while the receive
        thread itself waits on a full queue (`WorkerState.while_receive_waits`): a
        wait longer than `STATUS_EXPIRY_SECS` would otherwise let the peers forget
        the throttle and send at full speed to the task that holds everything up."""
        now = time.monotonic()
        if (now >= self._next_status_repeat and len(self.assignment.workers) > 1
                and self.state.inbound.throttled_tasks):
            self._send_status(now)

    def _on_status(self, payload: bytes) -> None:
        try:
            worker, tasks, busy = decode_status(payload)
        except MalformedStatus as exc:
            self.state.refused.record("control", str(exc))
            return
        if not 0 <= worker < len(self.assignment.workers) or worker == self.index:
            self.state.refused.record(
                "control", f"backpressure status from worker {worker}, not a peer of worker {self.index}"
            )
            return
        now = time.monotonic()
        if busy is not None:
            self.state.balance.observe(worker, busy, now)
        if self.state.throttle.update(worker, tasks, now):
            self.state.throttle_changed()

    def _status_loop(self) -> None:
        """Send backpressure statuses to every peer (connections made on first use)."""
        clients: dict[int, Connection] = {}
        slots = list(self.assignment.workers)
        while not self.state.stopping.is_set():
            while not self._control_peer_updates.empty():
                slots = self._control_peer_updates.get()
                for client in clients.values():
                    client.close()
                clients.clear()
            try:
                payload = self._status_out.get(timeout=0.1)
            except queue.Empty:
                continue
            while not self._status_out.empty():  # only the newest status matters
                payload = self._status_out.get()
            for index, slot in enumerate(slots):
                if index == self.index:
                    continue
                client = clients.get(index)
                if client is None:
                    client = clients[index] = self.context.connect(
                        self.assignment.storm_id, slot.host, slot.port
                    )
                try:
                    client.send([TaskMessage(BACKPRESSURE_TASK, payload)])
                except Exception as exc:  # a peer that is gone: it hears the next one
                    log.debug("backpressure status to worker %d not sent: %s", index, exc)
        for client in clients.values():
            client.close()

    def update_peers(self, workers: list[WorkerSlot]) -> None:
        """Follow an assignment change: peers that moved get new connections.
        Applied by the send thread, the only user of the client connections."""
        self._peer_updates.put(workers)
        self._control_peer_updates.put(list(workers))

    def _apply_peer_updates(self) -> None:
        while not self._peer_updates.empty():
            workers = self._peer_updates.get()
            for index, slot in enumerate(workers):
                if index == self.index or self.assignment.workers[index] == slot:
                    continue
                old = self.clients.pop(index, None)
                if old is not None:
                    old.close()
                log.info("worker %d moved to %s:%d; reconnecting", index, slot.host, slot.port)
                if self.state.throttle.forget(index):  # what it said no longer holds
                    self.state.throttle_changed()
                self.clients[index] = self.context.connect(self.assignment.storm_id, slot.host, slot.port)
            self.assignment = dataclasses.replace(self.assignment, workers=tuple(workers))

    def _send_loop(self) -> None:
        state = self.state
        transfer = state.transfer
        while True:
            self._apply_peer_updates()
            batches = transfer.get_all(timeout=0.1)
            if not batches:
                if state.stopping.is_set():
                    return
                continue
            grouped: dict[int, list[Any]] = {}
            for batch in batches:
                assert isinstance(batch, RemoteBatch)
                existing = grouped.get(batch.worker)
                if existing is None:
                    grouped[batch.worker] = batch
                else:
                    existing.extend(batch)
            state.sending = sum(len(messages) for messages in grouped.values())
            for worker, messages in grouped.items():
                self._send(worker, messages)
            state.sending = 0

    def _send(self, worker: int, messages: list[Any]) -> None:
        """Send to a peer, waiting as long as it takes (nothing is dropped), but in
        slices: between them the thread follows a peer that moved (a send to where
        it was would otherwise wait for ever) and notices the worker stopping."""
        state = self.state
        while True:
            if worker in self._peers_gone:
                log.warning("stopping: %d message(s) for worker %d not sent (it failed or "
                            "died)", len(messages), worker)
                return
            try:
                self.clients[worker].send(messages)
                state.remote_sent += len(messages)
                return
            except SendTimeout as exc:
                state.remote_sent += len(messages) - len(exc.unsent)
                messages = exc.unsent
            self._apply_peer_updates()
            if state.stopping.is_set():
                if self._give_up_sending_at is None:
                    self._give_up_sending_at = time.monotonic() + SHUTDOWN_SEND_GRACE
                if time.monotonic() >= self._give_up_sending_at:
                    log.warning("stopping: %d message(s) for worker %d not sent (it does "
                                "not take them)", len(messages), worker)
                    return


def _bounded_send_waits(conf: dict[str, Any]) -> dict[str, Any]:
    """The worker's own transport settings: a send that may block for ever (the
    default, -1) blocks in slices of SEND_WAIT_SLICE_MS instead (see Worker._send)."""
    conf = dict(conf)
    for key in ("storm.messaging.zmq.send.timeout.ms", "storm.messaging.tcp.send.timeout.ms",
                "storm.messaging.local.send.timeout.ms"):
        if int(conf.get(key, -1)) < 0:
            conf[key] = SEND_WAIT_SLICE_MS
    return conf


def _process_usage() -> dict[str, float]:
    """CPU time, resident memory and open file descriptors of this process (Linux
    /proc). CPU seconds are cumulative, every thread's, so that a reader on another
    host (scripts/bench_cluster.py, Prometheus) can take the share of a core between
    two reports without /proc access to this one."""
    usage: dict[str, float] = {"cpu_secs": time.process_time(), "rss_bytes": 0, "open_fds": 0}
    try:
        with open("/proc/self/statm") as statm:
            usage["rss_bytes"] = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        usage["open_fds"] = len(os.listdir("/proc/self/fd")) - 1  # not the one listing it
    except (OSError, ValueError, IndexError):  # not Linux: leave them 0
        pass
    return usage


def worker_main(spec: dict[str, Any], pipe: Any) -> None:
    """What a local-mode worker process runs (runtime/worker_process.py); `pipe` is its
    end of the runner's."""
    # Ctrl-C in a terminal reaches the whole process group, and so does the SIGTERM
    # of `timeout` or a service manager: the runner orchestrates the graceful stop,
    # so a worker must not die of either on its own (it stops when the runner's pipe
    # closes, if the runner is gone).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # The terminal's stderr, every line named by the worker; a component's print()
    # and stderr too (the run's own progress and summary are on stdout).
    configure_worker_logging(spec["conf"], None, f"worker-{spec['worker_index']}",
                             capture_stdio=True)
    try:
        code = Worker(spec, PipeControl(pipe)).run()
    except BaseException as exc:
        text = format_exception(exc)
        log.error("worker %d failed to start:\n%s", spec["worker_index"], text.rstrip())
        PipeControl(pipe).report_error(spec["worker_index"], text)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
