"""The collector of one task: what a component's `emit`, `ack`, `fail` and
`report_error` reach (`TaskCollector`). It checks an emit against the stream's
declaration, chooses its targets by the stream's groupings and hands the values to
its executor (`storm_zmq.runtime.executor`) to deliver; it holds no queue and no
thread. Once the executor has stopped, `StoppedCollector` takes its place and says
what arrives late.
"""

from __future__ import annotations

import datetime
import decimal
import logging
import operator
import reprlib
import time
import uuid
from collections.abc import Iterator, Sequence
from threading import get_ident as _get_ident
from typing import TYPE_CHECKING, Any

from storm_zmq.component import Bolt, Tuple, check_emitted_values
from storm_zmq.config import DEFAULTS
from storm_zmq.portable import format_exception
from storm_zmq.runtime.acking import ACKER_FAIL_STREAM_ID
from storm_zmq.runtime.error_throttle import ErrorThrottle
from storm_zmq.runtime.serialization import (
    SETTLED,
    TupleId,
    as_received,
    check_decodes,
    decode_tuples,
)

if TYPE_CHECKING:
    from storm_zmq.runtime.executor import Executor
    from storm_zmq.topology.value_types import ValueCodec

# The logger of the executors' own lines too: `topology.debug`'s emit lines and the
# warnings of what a task emits wrong are found under one name (docs/operations.md).
log = logging.getLogger("storm_zmq.runtime.executor")

#: The types of value an emit passes on as they are (`topology.copy.emitted.values`):
#: nobody can change one after the emit. Exact types: a subclass may add state.
UNCHANGEABLE = frozenset({str, int, float, bool, type(None), bytes, datetime.datetime,
                          datetime.date, datetime.time, datetime.timedelta, decimal.Decimal,
                          uuid.UUID})

def all_unchangeable(values: Sequence[Any]) -> bool:
    """Whether an emit's values need no copy: each of an `UNCHANGEABLE` type."""
    return all(value.__class__ in UNCHANGEABLE for value in values)


#: A task warns of the emits it drops (direct ones to tasks that do not subscribe,
#: any of a component that declares no streams) at most this often, per kind.
DROPPED_WARNING_SECS = 10.0


class StreamRoute:
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

    def __init__(self, executor: Executor, task: int, routes: dict[str, StreamRoute]) -> None:
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
        executor = self._executor
        if _get_ident() != executor.owner:  # a component's own thread: see thread_calls
            return executor.call_in_own_thread(
                self.emit, (tup, stream, anchors, direct_task, need_task_ids, tup_id), need_task_ids)
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
                f"{route.stream!r}, which has {route.arity} fields "
                f"{list(getattr(route.values_cls, '_fields', ()))}"
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
        if executor.checks_emits:
            values = self._check_emit(route, values, targets)
        elif executor.copies_values and targets:
            for value in values:  # all_unchangeable, inlined: this runs per emit
                if value.__class__ not in UNCHANGEABLE:
                    values = self._copy(route, values)
                    break
        executor.emitted += 1  # after the checks: an emit they refuse is not counted
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

    def _direct_targets(self, route: StreamRoute, direct_task: int | None) -> Sequence[int]:
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
        if direct_task.__class__ is not int:
            direct_task = direct_task_id(self._component, direct_task)
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

    def _say_dropped_direct(self, route: StreamRoute, direct_task: int) -> None:
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
        self, route: StreamRoute, values: Sequence[Any], targets: Sequence[int],
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
        if executor.copies_values and targets and not all_unchangeable(values):
            return self._copy(route, values)
        return values

    def _copy(self, route: StreamRoute, values: Sequence[Any]) -> list[Any]:
        """`topology.copy.emitted.values`: the values as another worker would decode
        them, taken now, so that what the emitter changes later (a buffer it clears)
        reaches no target, and a value no worker could decode fails this emit. Not
        the transport's size limit: that holds only for a tuple that crosses, and is
        checked when one does (`Executor._encode_remote`)."""
        return as_received(values, self._task, route.stream, self._component,
                           self._executor._codec)

    def ack(self, tup: Tuple) -> None:
        executor = self._executor
        if _get_ident() != executor.owner:
            return executor.call_in_own_thread(self.ack, (tup,), False)
        bolt = self._bolt
        if bolt is not None and bolt._current_tups and bolt._ack_is_auto_acks(tup):
            return
        tuple_id = tup.id if type(tup) is Tuple else id_of(tup)
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
        if _get_ident() != executor.owner:
            return executor.call_in_own_thread(self.fail, (tup,), False)
        tuple_id = tup.id if type(tup) is Tuple else id_of(tup)
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
            # From the executor's first task, as the folded acks are: a remote acker's
            # messages of one source leave in one batch, in order; under this task's
            # own id the fail could leave in an earlier batch than the ack before it.
            source = executor.assignment.tasks[0]
            for root in tuple_id.roots:
                executor._send_to_acker(source, ACKER_FAIL_STREAM_ID, root, (root,))

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
        text = format_exception(exc)
        executor.worker.record_error(self._component, self._task, text)
        held = f" ({verdict.held_before:,} more since the last one shown)" if verdict.held_before else ""
        log.error("component %r task %d reported an error%s%s:\n%s", self._component, self._task,
                  f" on tuple {tup!r}" if tup is not None else "", held, text)

    def report_exhausted(self) -> None:
        self._executor._exhausted_tasks.add(self._task)


class StoppedCollector:
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
        component._storm_zmq_collector = self
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
                  self._component, self._task, format_exception(exc))

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


def direct_task_id(component: str, direct_task: Any) -> int:
    """`direct_task` as a task id: an int, or what indexes as one (a numpy integer),
    never a bool or a str (`ctx["task->component"]`'s keys are str, as in Storm's
    multilang context, so `direct_task="5"` is an easy mistake). One check for
    workers and the test harness (`storm_zmq.testing`)."""
    if direct_task.__class__ is int:
        return direct_task
    if isinstance(direct_task, bool) or not hasattr(type(direct_task), "__index__"):
        raise TypeError(f"component {component!r}: direct_task must be a task id (an int), "
                        f"got {direct_task!r}")
    return operator.index(direct_task)


def not_a_tuple_id(component: str, what: str, value: Any, hint: str = "") -> TypeError:
    """The error for an ack, fail or anchor given what is no input Tuple or tuple id:
    one text for workers and the test harness (`storm_zmq.testing`)."""
    return TypeError(f"component {component!r}: {what} {reprlib.repr(value)}, which is not "
                     f"an input Tuple or a tuple's id{hint}")


def id_of(tup: Any) -> Any:
    """What a bolt's `ack`, `fail` and `anchors` accept, as pystorm's do: a Tuple, or
    its id (``self.ack(tup.id)``; None for an untracked tuple)."""
    return tup.id if isinstance(tup, Tuple) else tup
