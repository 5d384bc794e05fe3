"""The component API, streamparse/pystorm compatible: Spout, Bolt, BatchingBolt,
TicklessBatchingBolt, ReliableSpout and Tuple.

Components never touch queues or sockets. Everything they emit, ack or fail goes to
an injected `Collector` (the runtime's executor in a worker, or the in-process
harness of `storm_zmq.testing`), which is what makes a bolt unit-testable by feeding
it tuples and capturing what it does.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from storm_zmq.portable import add_note
from storm_zmq.topology.errors import TopologyError
from storm_zmq.topology.spec import ComponentSpec


class Tuple(NamedTuple):
    """pystorm's Tuple. `values` is a namedtuple of the stream's fields, so both
    `tup.values[0]` and `tup.values.word` work."""

    id: Any
    component: str
    stream: str
    task: int
    values: Any

    def is_tick_tuple(self) -> bool:
        return self.stream == TICK_STREAM and self.component == SYSTEM_COMPONENT

    def is_heartbeat_tuple(self) -> bool:  # pystorm API; there are no heartbeats here
        return False


SYSTEM_COMPONENT = "__system"
TICK_STREAM = "__tick"


class Collector(Protocol):
    """What a component's emits, acks and fails go to (implemented by the runtime).

    `emit` takes `Bolt.emit`'s parameters, names and order, with the spout's
    `tup_id` last, and `ack` takes `Bolt.ack`'s: so a runtime may give a bolt its
    collector's methods as its own and save a Python call per tuple
    (`storm_zmq.runtime.collector.TaskCollector.bind`); one that does resolves the
    bolt's auto-anchors itself when `anchors` is None (`Bolt._auto_anchors`), as
    `Bolt.emit` would."""

    def emit(
        self,
        tup: Sequence[Any],
        stream: str | None = None,
        anchors: Sequence[Tuple] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
        tup_id: Any = None,
    ) -> list[int] | None: ...

    def ack(self, tup: Tuple) -> None: ...

    def fail(self, tup: Tuple) -> None: ...

    def report_error(self, exc: BaseException, tup: Tuple | None) -> None: ...

    def report_exhausted(self) -> None: ...


TRACE = 5  # Storm's TRACE, below logging.DEBUG
if logging.getLevelName(TRACE) == f"Level {TRACE}":
    logging.addLevelName(TRACE, "TRACE")

_LOG_LEVELS = {
    "trace": TRACE,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


def check_emitted_values(values: Any, component: str) -> None:
    """pystorm's rule: an emit's values are a list or a tuple, one item per field. A
    str or a dict would pass the field count by chance and be taken apart (into
    characters, or keys)."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(
            f"component {component!r} emitted a {type(values).__name__}: a tuple's values "
            "are a list or a tuple, one item per field (e.g. emit([word]))")


class StormHandler(logging.NullHandler):
    """pystorm's handler that sends a component's log records to Storm. Here a
    component's records reach its worker's log without it (`Component.logger`
    propagates there), so this handler adds nothing: a streamparse component that
    adds one to its logger keeps working, and logs each record once."""

    def __init__(self, stream: Any = None) -> None:
        super().__init__()


def _log_level(level: Any) -> int:
    """pystorm's level names (case-insensitive) to a `logging` level; an unknown
    level is info, so `log()` never raises for its level."""
    if isinstance(level, int) and not isinstance(level, bool):
        return level
    if isinstance(level, str):
        return _LOG_LEVELS.get(level.lower(), logging.INFO)
    return logging.INFO


ComponentT = TypeVar("ComponentT", bound="Component")


def new_component(cls: type[ComponentT], collector: Collector | None, name: str, task: int) -> ComponentT:
    """An instance of a user's component class, made as streamparse makes it:
    ``cls()``, with no arguments (streamparse's run.py), so that an ``__init__(self)``
    that calls ``super().__init__()`` works; then attached to its collector, name and
    task, before `initialize`."""
    component = cls()
    Component._attach(component, collector, name, task)  # not a user's own _attach
    return component


class Component:
    """Base of spouts and bolts. Subclasses set `outputs` (field names for the
    default stream, or `Stream` objects) and override the hooks."""

    outputs: Sequence[Any] = ()
    #: streamparse's defaults for `spec()`'s `par` and `config`, which a subclass
    #: may set instead of passing them
    par: int = 1
    config: dict[str, Any] | None = None
    _kind = "component"

    def __init__(self, collector: Collector | None = None, name: str = "", task: int = 0) -> None:
        self._attach(collector, name, task)
        # pystorm's instance attributes; the conf and context ones are set by
        # _setup_component, before initialize()
        self.topology_name: str = ""
        self.debug = False
        self.storm_conf: dict[str, Any] = {}
        self.context: dict[str, Any] = {}

    def _attach(self, collector: Collector | None, name: str, task: int) -> None:
        """Where the component's emits, acks and errors go, and who it is: set by
        `__init__` for a component made by hand, and by `new_component` after a
        subclass's own `__init__` took no arguments. The collector's attribute name
        is one no pystorm component uses for its own things."""
        self._storm_zmq_collector = collector
        self.component_name = name
        self.task_id = task
        self.logger = logging.getLogger(f"storm_zmq.component.{name or type(self).__name__}")
        self.pid = os.getpid()

    @staticmethod
    def is_heartbeat(tup: Tuple) -> bool:
        """pystorm's: whether `tup` is a multilang heartbeat. There are none here (no
        subprocess to keep alive), so always False."""
        return Tuple.is_heartbeat_tuple(tup)

    # -- lifecycle ------------------------------------------------------------------

    def _setup_component(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        """What pystorm sets from Storm's handshake before `initialize`:
        `storm_conf`, `context`, `topology_name` (``topology.name``) and `debug`
        (``topology.debug``). `initialize` gets the same two dicts. As in pystorm,
        ``pystorm.log.level`` (topology or component config) sets the level of
        `logger`, and ``topology.debug`` makes it debug; otherwise the worker's
        level (info) applies."""
        self.storm_conf = storm_conf
        self.context = context
        self.topology_name = storm_conf.get("topology.name") or ""
        self.debug = bool(storm_conf.get("topology.debug", False))
        level = storm_conf.get("pystorm.log.level")
        if self.debug:
            self.logger.setLevel(logging.DEBUG)
        elif level is not None:
            self.logger.setLevel(_log_level(level))
        else:  # the logger is the component name's: what an earlier setup set goes
            self.logger.setLevel(logging.NOTSET)

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        """Called once in the worker before any tuple; `context` is pystorm's dict
        (``taskid``, ``componentid``, ``task->component``, ...)."""

    def cleanup(self) -> None:
        """Storm's cleanup hook: called once when the topology stops gracefully,
        after in-flight tuples drained. A no-op by default."""

    # -- helpers --------------------------------------------------------------------

    def raise_exception(self, exception: BaseException, tup: Tuple | None = None) -> None:
        """Report an error to Storm (pystorm API, its argument names) without
        raising it here."""
        if self._storm_zmq_collector is None:
            raise _not_running(self)
        self._storm_zmq_collector.report_error(exception, tup)

    def log(self, message: str, level: str | int | None = None) -> None:
        """pystorm's log(); prefer `self.logger`. `level` is one of pystorm's names,
        any case: trace (`TRACE`, 5, below debug), debug, info, warn or warning,
        error, critical; any other value logs at info, as in pystorm. A `logging`
        level number is taken as is."""
        self.logger.log(_log_level(level), message)

    @classmethod
    def spec(cls, *args: Any, **kwargs: Any) -> ComponentSpec:
        """Only a spout or a bolt has a spec (streamparse's error, a TopologyError
        here as every DSL mistake is)."""
        raise TopologyError(f"{cls.__name__}.spec(): a topology's components are spouts or "
                            "bolts: subclass Spout or Bolt, not Component")


def _carries_on(component: Any, exc: BaseException) -> bool:
    """Whether `component` goes on after `exc`, as pystorm's run loop does: only
    with `exit_on_exception` off, and only after an `Exception` (KeyboardInterrupt,
    SystemExit and the runtime's own BaseExceptions stop it whatever the setting)."""
    return not getattr(component, "exit_on_exception", True) and isinstance(exc, Exception)


def report_and_carry_on(component: Any, exc: BaseException, tup: Tuple | None = None) -> bool:
    """pystorm's run loop with `exit_on_exception` off: the exception is reported
    (`raise_exception`: logged with component, task and traceback, and counted in
    the stats' errors) and the component goes on, True. Otherwise nothing is done
    and False says the caller re-raises (the worker dies of it, as by default in
    pystorm and Storm). Only called once something raised: no cost per tuple."""
    if not _carries_on(component, exc):
        return False
    component.raise_exception(exc, tup)
    return True


class Spout(Component):
    """A source of tuples. `next_tuple()` emits zero or more tuples per call;
    return without emitting when there is nothing to do (the executor backs off).

    `exit_on_exception` (pystorm's, default True): an exception in `next_tuple`,
    `ack`, `fail`, `activate` or `deactivate` stops the worker. Set it to False and
    the exception is reported (`raise_exception`: logged with its traceback,
    counted in the stats' errors) and the spout goes on."""

    _kind = "spout"
    exit_on_exception = True

    @classmethod
    def spec(
        cls, name: str | None = None, par: int | None = None, config: dict[str, Any] | None = None,
        num_tasks: int | None = None,
    ) -> ComponentSpec:
        return ComponentSpec(
            component_cls=cls, kind="spout", name=name, inputs=None, par=par, config=config,
            num_tasks=num_tasks,
        )

    def next_tuple(self) -> None:
        raise NotImplementedError(f"{type(self).__name__}.next_tuple")

    def ack(self, tup_id: Any) -> None:
        """The tuple tree of `tup_id` completed."""

    def fail(self, tup_id: Any) -> None:
        """The tuple tree of `tup_id` failed or timed out."""

    def activate(self) -> None:
        """The topology became active: `next_tuple` will be called."""

    def deactivate(self) -> None:
        """The topology is being deactivated: `next_tuple` is no longer called."""

    def emit(
        self,
        tup: Sequence[Any],
        tup_id: Any = None,
        stream: str | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        """Emit a tuple; with a `tup_id` it is tracked and `ack`/`fail` follow."""
        if self._storm_zmq_collector is None:
            raise _not_running(self)
        return self._storm_zmq_collector.emit(tup, stream, None, direct_task, need_task_ids, tup_id)

    def emit_many(
        self,
        tuples: Sequence[Sequence[Any]],
        stream: str | None = None,
        tup_ids: Sequence[Any] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = True,
    ) -> list[list[int] | None]:
        """streamparse 2's, gone from streamparse 3 but still in much code: `emit`
        for each of `tuples` (with the matching one of `tup_ids`), what each
        returned. Emits are batched anyway, so it is no faster than a loop."""
        ids = [None] * len(tuples) if tup_ids is None else tup_ids
        if len(ids) != len(tuples):
            raise ValueError(f"emit_many: {len(tuples)} tuples but {len(ids)} tup_ids")
        return [self.emit(tup, tup_id=tup_id, stream=stream, direct_task=direct_task,
                          need_task_ids=need_task_ids)
                for tup, tup_id in zip(tuples, ids)]

    def report_exhausted(self) -> None:
        """Say that this spout will emit nothing more. `storm-zmq run` stops by
        itself once every spout task said so and its pending tuples completed."""
        if self._storm_zmq_collector is None:
            raise _not_running(self)
        self._storm_zmq_collector.report_exhausted()


def _not_running(component: Component) -> RuntimeError:
    """An emit, ack or fail of a component made by hand (`MyBolt()`): said as what
    to use instead, not as an assertion (which `python -O` would skip, failing
    later with an AttributeError)."""
    return RuntimeError(
        f"{type(component).__name__} is not running in a topology: emit, ack, fail and "
        "raise_exception work in a worker (storm-zmq run) or a test harness "
        "(storm_zmq.testing.BoltHarness, SpoutHarness)")


class ReliableSpout(Spout):
    """pystorm's ReliableSpout: remembers what it emitted under each `tup_id` and
    emits it again on `fail`, up to `max_fails` times per id; the next failure logs
    "Acking tuple ID ... after it exceeded retry limit" and calls `self.ack(tup_id)`,
    so that an overridden `ack` (committing an offset, say) runs for it too. An ack
    or fail of an id it does not know is logged as an error."""

    max_fails = 3

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failed_tuples: Counter[Any] = Counter()
        # tup_id -> (tup, stream, direct_task, need_task_ids), pystorm's layout
        self.unacked_tuples: dict[Any, tuple[Sequence[Any], str | None, int | None, bool]] = {}

    def emit(
        self,
        tup: Sequence[Any],
        tup_id: Any = None,
        stream: str | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        if tup_id is None:
            raise ValueError("ReliableSpout.emit needs a tup_id")
        self.unacked_tuples[tup_id] = (tup, stream, direct_task, need_task_ids)
        return super().emit(tup, tup_id, stream, direct_task, need_task_ids)

    def ack(self, tup_id: Any) -> None:
        self.failed_tuples.pop(tup_id, None)
        if self.unacked_tuples.pop(tup_id, _UNKNOWN) is _UNKNOWN:
            self.logger.error("Received ack for unknown tuple ID: %r", tup_id)

    def fail(self, tup_id: Any) -> None:
        saved = self.unacked_tuples.get(tup_id)
        if saved is None:
            self.logger.error("Received fail for unknown tuple ID: %r", tup_id)
            return
        tup, stream, direct_task, need_task_ids = saved
        if self.failed_tuples[tup_id] < self.max_fails:
            self.emit(tup, tup_id=tup_id, stream=stream, direct_task=direct_task,
                      need_task_ids=need_task_ids)
            self.failed_tuples[tup_id] += 1
        else:  # pystorm: pretend it was acked
            self.logger.info("Acking tuple ID %r after it exceeded retry limit (%r)",
                             tup_id, self.max_fails)
            self.ack(tup_id)


_UNKNOWN = object()


class Bolt(Component):
    """Processes tuples. With `auto_ack` the input is acked after `process`
    returns; with `auto_anchor` emits in `process` are anchored to the input; with
    `auto_fail` an exception in `process` fails the input. Then, with
    `exit_on_exception` (pystorm's, default True), the error is reported and the
    worker dies, as in Storm; with it False the error is reported
    (`raise_exception`: logged with its traceback, counted in the stats' errors)
    and the bolt goes on with its next tuple, as pystorm's run loop does."""

    _kind = "bolt"
    auto_anchor = True
    auto_ack = True
    auto_fail = True
    exit_on_exception = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._current_tups: list[Tuple] | None = None
        self._warned_double_ack = False

    @classmethod
    def spec(
        cls,
        name: str | None = None,
        inputs: Any = None,
        par: int | None = None,
        config: dict[str, Any] | None = None,
        num_tasks: int | None = None,
    ) -> ComponentSpec:
        return ComponentSpec(
            component_cls=cls, kind="bolt", name=name, inputs=inputs, par=par, config=config,
            num_tasks=num_tasks,
        )

    def process(self, tup: Tuple) -> None:
        raise NotImplementedError(f"{type(self).__name__}.process")

    def process_tick(self, tup: Tuple) -> None:
        """Called for each tick tuple (`topology.tick.tuple.freq.secs`)."""

    @staticmethod
    def is_tick(tup: Tuple) -> bool:
        """pystorm's: whether `tup` is a tick tuple (`Tuple.is_tick_tuple`)."""
        return Tuple.is_tick_tuple(tup)

    def emit(
        self,
        tup: Sequence[Any],
        stream: str | None = None,
        anchors: Sequence[Tuple] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        if self._storm_zmq_collector is None:
            raise _not_running(self)
        if anchors is None:
            anchors = self._auto_anchors()
        return self._storm_zmq_collector.emit(tup, stream, anchors, direct_task, need_task_ids)

    def emit_many(
        self,
        tuples: Sequence[Sequence[Any]],
        stream: str | None = None,
        anchors: Sequence[Tuple] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = True,
    ) -> list[list[int] | None]:
        """streamparse 2's, gone from streamparse 3 but still in much code: `emit`
        for each of `tuples`, what each returned. Emits are batched anyway, so it
        is no faster than a loop."""
        return [self.emit(tup, stream=stream, anchors=anchors, direct_task=direct_task,
                          need_task_ids=need_task_ids) for tup in tuples]

    def _auto_anchors(self) -> list[Tuple] | None:
        """What an emit without `anchors` is anchored to: the tuples being processed
        when `auto_anchor` is on (pystorm's rule; a collector that gives the bolt its
        own emit calls this too)."""
        return self._current_tups if self.auto_anchor else None

    def _ack_is_auto_acks(self, tup: Any) -> bool:
        """Whether an `ack(tup)` the bolt makes itself is one `auto_ack` makes too: of
        an input being processed (or its id) while `auto_ack` is on. Acked twice, its
        tree would never complete (the two XORs cancel) and time out; pystorm's
        Storm killed the worker for it. Here the bolt's own ack is skipped, and the
        first such ack of each task is warned about, so the tuple is acked once."""
        current = self._current_tups
        if not (self.auto_ack and current):
            return False
        if not any(t is tup or (tup is not None and t.id is tup) for t in current):
            return False
        if not self._warned_double_ack:
            self._warned_double_ack = True
            self.logger.warning(
                "task %s acked its input in %s while auto_ack is on, which acks it "
                "afterwards: acked once, not twice (set auto_ack = False to ack "
                "yourself)", self.task_id,
                "process_batch()" if isinstance(self, BatchingBolt) else "process()")
        return True

    def ack(self, tup: Tuple) -> None:
        if self._storm_zmq_collector is None:
            raise _not_running(self)
        self._storm_zmq_collector.ack(tup)

    def fail(self, tup: Tuple) -> None:
        if self._storm_zmq_collector is None:
            raise _not_running(self)
        self._storm_zmq_collector.fail(tup)

    # -- called by the executor -------------------------------------------------------

    def _run_process(self, tup: Tuple) -> None:
        """One input tuple through `process` with pystorm's auto-ack/anchor/fail."""
        self._current_tups = [tup]
        try:
            self.process(tup)
        except BaseException:
            if self.auto_fail:
                self.fail(tup)
            raise
        finally:
            self._current_tups = None
        if self.auto_ack:
            self.ack(tup)

    def _run_tick(self, tup: Tuple) -> None:
        self.process_tick(tup)


class BatchingBolt(Bolt):
    """pystorm's BatchingBolt: tuples are grouped by `group_key(tup)` and handed to
    `process_batch(key, tups)` on tick tuples (so set `topology.tick.tuple.freq.secs`,
    or its component config). Acks, anchors and fails apply to the whole batch.

    The timing is pystorm's: each tick is counted, and the batches are processed on
    a tick that makes the count exceed `ticks_between_batches` while some tuple is
    batched; the count then restarts. So batches go every `ticks_between_batches`
    + 1 ticks while tuples keep coming (every other tick by default), and the first
    tick after an idle spell processes at once what came in since.

    When `process_batch` raises, the batches before it were acked already; with
    `auto_fail` its batch is failed, and every other batched tuple too unless the
    bolt goes on (`exit_on_exception` off), in which case the batches after it wait
    for the next tick (the count did not restart). Without `auto_fail` the batch
    that raised stays batched, as in pystorm. When `process` or `group_key` raises,
    its input is failed, and every batched tuple too unless the bolt goes on.
    An emit in an overridden `process` is anchored to its input."""

    ticks_between_batches = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._batches: defaultdict[Any, list[Tuple]] = defaultdict(list)
        self._tick_counter = 0

    def group_key(self, tup: Tuple) -> Any:
        return None

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        raise NotImplementedError(f"{type(self).__name__}.process_batch")

    def process(self, tup: Tuple) -> None:
        self._batches[self.group_key(tup)].append(tup)

    def _run_process(self, tup: Tuple) -> None:
        """`process` with the input as the auto-anchor (pystorm's `_run`: an emit of
        an overridden `process` is anchored to its input). The input is acked when
        its batch is processed."""
        self._current_tups = [tup]
        try:
            self.process(tup)
        except BaseException as exc:
            self._current_tups = None
            self._process_raised(exc, tup)
            raise
        self._current_tups = None

    def _process_raised(self, exc: BaseException, tup: Tuple) -> None:
        """pystorm's BatchingBolt._handle_run_exception, for `process` and
        `group_key`: with `auto_fail` the input is failed, and when the worker dies
        of it every batched tuple too (they would otherwise wait for the message
        timeout); a bolt that carries on keeps its batches."""
        if not self.auto_fail:
            return
        if not _carries_on(self, exc):
            for batched in self._batched():
                if batched is not tup:  # an overridden process may have batched it
                    self.fail(batched)
            self._batches = defaultdict(list)
        self.fail(tup)

    def _batched(self) -> list[Tuple]:
        """Every tuple waiting in a batch."""
        return [tup for batch in self._batches.values() for tup in batch]

    def process_tick(self, tup: Tuple) -> None:
        """Count the tick and process the batches when it is time (pystorm's place
        for the timing: a subclass that overrides this decides when batches go,
        `process_batches()` doing it; pystorm advises against it)."""
        self._tick_counter += 1
        if self._tick_counter > self.ticks_between_batches and self._batches:
            self.process_batches()
            self._tick_counter = 0

    def emit(
        self,
        tup: Sequence[Any],
        stream: str | None = None,
        anchors: Sequence[Tuple] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        """As `Bolt.emit`, without task ids (pystorm's BatchingBolt: None always)."""
        super().emit(tup, stream, anchors, direct_task, False)
        return None

    def process_batches(self) -> None:
        """Every batch through `process_batch`, then acked (pystorm's name: a
        subclass may override it to change how batches are processed)."""
        batches = self._batches
        for key, tups in list(batches.items()):
            if not tups:  # a batch already done before one that raised
                continue
            self._current_tups = tups
            try:
                self.process_batch(key, tups)
            except BaseException as exc:
                self._current_tups = None
                self._batch_raised(exc, key, tups)
                raise
            self._current_tups = None
            if self.auto_ack:
                for tup in tups:
                    self.ack(tup)
            batches[key] = []  # done, should a later batch raise
        self._batches = defaultdict(list)

    def _batch_raised(self, exc: BaseException, key: Any, tups: list[Tuple]) -> None:
        """pystorm's BatchingBolt._handle_run_exception, for `process_batch`."""
        add_note(exc, f"raised by process_batch for the batch of key {key!r} ({len(tups)} tuples)")
        if not self.auto_fail:
            return  # pystorm: the batch stays batched
        if _carries_on(self, exc):
            failing = tups
        else:  # the worker dies: every tuple still batched
            failing = self._batched()
        for tup in failing:
            self.fail(tup)
        self._batches[key] = []


class TicklessBatchingBolt(BatchingBolt):
    """A BatchingBolt whose batches are flushed every `secs_between_batches` seconds
    without tick tuples: the executor calls `_maybe_flush()` between inputs."""

    secs_between_batches = 2.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._next_flush = time.monotonic() + self.secs_between_batches

    def process_tick(self, tup: Tuple) -> None:
        """Ticks are ignored: the batches go on `secs_between_batches` (pystorm's)."""

    def _maybe_flush(self, now: float) -> None:
        if now >= self._next_flush:
            self._next_flush = now + self.secs_between_batches
            self.process_batches()
