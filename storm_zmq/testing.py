"""Unit-test a spout or bolt in-process: feed it tuples, see what it emitted, acked
and failed. No workers, no sockets; the component runs exactly as in a worker, with
pystorm's auto-ack/anchor/fail, through a recording collector.

    from storm_zmq.testing import BoltHarness
    harness = BoltHarness(WordCountBolt)
    harness.process(["dog"], fields=["word"])
    assert harness.emitted_values() == [["dog", 1]]
    assert harness.acked == harness.inputs

(`fields` names the input tuple's values, so `tup.values.word` works; without it
they are `field0`, `field1`, ...). A `BatchingBolt` processes its batches on
`harness.tick()`, as on tick tuples in a worker (pystorm's timing: on the tick that
makes more than `ticks_between_batches` since the last batches, so the second tick
by default); a `TicklessBatchingBolt` ignores
ticks, as in a worker, and `harness.flush_batches()` processes its batches as its
`secs_between_batches` timer would.

An exception in the component propagates, as it stops a worker; with
`exit_on_exception = False` it is reported instead (`harness.errors` holds
``(exception, tuple)``), the input is failed (`auto_fail`) and the harness goes on,
as a worker does.

`SpoutHarness` runs a spout: `next_tuple(times)` returns the new emits; `ack` and
`fail` take an emitted `tup_id` (recorded in `acked`/`failed`; an id never emitted
is warned of); `activate`/`deactivate`/`cleanup` as a worker calls them. Both
harnesses take `context=`, what to add to the pystorm context dict (a worker's, for
a topology of this one task), e.g. the whole topology's ``"task->component"``.

Every emit is also serialized as it would be between workers
(`topology.testing.always.try.serialize`, on by default here), so a value a tuple
cannot carry raises `SerializationError` naming component, stream and type.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import namedtuple
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from storm_zmq.component import (
    SYSTEM_COMPONENT,
    TICK_STREAM,
    BatchingBolt,
    Bolt,
    Spout,
    TicklessBatchingBolt,
    Tuple,
    check_emitted_values,
    new_component,
    report_and_carry_on,
)
from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.collector import all_unchangeable, direct_task_id, not_a_tuple_id
from storm_zmq.runtime.serialization import as_received
from storm_zmq.topology.registrations import load_codec

TRY_SERIALIZE = "topology.testing.always.try.serialize"
log = logging.getLogger(__name__)


@dataclass
class Emit:
    """One emit as the component made it."""

    values: list[Any]
    stream: str
    anchors: list[Tuple]
    tup_id: Any
    direct_task: int | None


class _RecordingCollector:
    def __init__(self, harness: _Harness) -> None:
        self._harness = harness

    def emit(self, tup, stream=None, anchors=None, direct_task=None, need_task_ids=False, tup_id=None):  # type: ignore[no-untyped-def]
        values = tup
        h = self._harness
        check_emitted_values(values, h.name)
        stream = stream or "default"
        declared = h.output_fields
        if not declared:  # a worker drops it with a warning, as Storm 1.x did
            log.warning("component %r emitted on stream %r, but it declares no streams (no "
                        "`outputs`): a worker drops such emits", h.name, stream)
            h._record(Emit(list(values), stream, list(anchors or []), tup_id, direct_task))
            return [] if need_task_ids else None
        if stream not in declared:
            raise ValueError(f"emit on stream {stream!r}, which the component does not declare "
                             f"(declared: {sorted(declared)})")
        if len(values) != len(declared[stream]):
            raise ValueError(f"emit of {len(values)} values on stream {stream!r}, which has "
                             f"{len(declared[stream])} fields {list(declared[stream])}")
        direct = stream in h.direct_streams
        if direct_task is not None and not direct:
            raise ValueError(f"direct_task given for stream {stream!r}, which is not declared direct")
        if direct and direct_task is None:
            raise ValueError(f"stream {stream!r} is direct; emit needs direct_task")
        dropped = False
        if direct_task is not None:  # as a worker checks it
            direct_task = direct_task_id(h.name, direct_task)
            if h.tasks is not None and direct_task not in h.tasks:
                dropped = True
                log.warning("component %r: direct emit on stream %r to task %d, which is not in "
                            "the context's task->component (%s): a worker drops an emit to a "
                            "task that does not subscribe", h.name, stream, direct_task,
                            sorted(h.tasks))
        if h.try_serialize or (h.copies and not all_unchangeable(values)):
            # as a worker does between workers, or at the emit (topology.copy.emitted.
            # values): a clear error here; what is recorded is what the targets get,
            # not what the bolt may change later
            values = as_received(values, 0, stream, h.name, h.codec)
        anchors = list(anchors or [])
        for anchor in anchors:  # as a worker refuses it (with acking on)
            if anchor is not None and not isinstance(anchor, Tuple) and h.input_of(anchor) is anchor:
                raise not_a_tuple_id(h.name, "emit anchored to", anchor, " (anchors=[tup])")
        h._record(Emit(list(values), stream, anchors, tup_id, direct_task))
        if not need_task_ids:
            return None
        if dropped:
            return []  # recorded in `emits`, but a worker sends it nowhere
        return [direct_task if direct_task is not None else h.target_task]

    def ack(self, tup: Tuple | Any) -> None:
        h = self._harness
        bolt = h.component
        if isinstance(bolt, Bolt) and bolt._ack_is_auto_acks(tup):
            return  # as in a worker: acked once, by auto_ack
        tup = self._input(tup, "ack")
        if tup in h.acked:  # a worker skips the second ack, with a warning
            h.component.logger.warning("acked %r twice: in a topology the second ack is "
                                       "skipped (in Storm its tree would time out)", tup)
        h.acked.append(tup)

    def fail(self, tup: Tuple | Any) -> None:
        self._harness.failed.append(self._input(tup, "fail"))

    def _input(self, tup: Tuple | Any, what: str) -> Tuple | Any:
        """The input `tup` is or names; anything else is refused, as a worker does."""
        found = self._harness.input_of(tup)
        if found is tup and tup is not None and not isinstance(tup, Tuple):
            raise not_a_tuple_id(self._harness.name, f"{what} of", tup)
        return found

    def report_error(self, exc: BaseException, tup: Tuple | None) -> None:
        self._harness.errors.append((exc, tup))

    def report_exhausted(self) -> None:
        self._harness.exhausted = True


class _Harness:
    kind: type = object  # what this harness runs (Bolt, Spout)

    def __init__(self, component_cls: type, conf: dict[str, Any] | None, name: str, task: int,
                 context: dict[str, Any] | None) -> None:
        if not (isinstance(component_cls, type) and issubclass(component_cls, self.kind)):
            raise TypeError(f"{type(self).__name__} runs a {self.kind.__name__} subclass (the "
                            f"class, not an instance), got {component_cls!r}")
        outputs = component_cls.spec().outputs  # the same normalisation a topology applies
        self.output_fields = {s: tuple(stream.fields) for s, stream in outputs.items()}
        self.direct_streams = {s for s, stream in outputs.items() if stream.direct}
        self.emits: list[Emit] = []
        # every tup_id emitted with, a test's clearing of `emits` aside (`_was_emitted`);
        # a list or a dict, which a worker carries too, in the list
        self._emitted_ids: set[Any] = set()
        self._emitted_unhashable_ids: list[Any] = []
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.errors: list[tuple[BaseException, Tuple | None]] = []
        self.exhausted = False
        self.target_task = 1
        self.name = name
        # Storm's testing key, on by default here: a value a tuple cannot carry fails
        # in the unit test rather than only once a tuple crosses workers.
        conf = {**DEFAULTS, TRY_SERIALIZE: True, **(conf or {})}
        self.try_serialize = bool(conf[TRY_SERIALIZE])
        self.copies = bool(conf["topology.copy.emitted.values"])
        self.codec = load_codec(conf)  # with the types conf's topology.kryo.register names
        self.component = new_component(component_cls, _RecordingCollector(self), name, task)
        # a worker's context (WorkerState.context_for) for a topology of this one task;
        # `context` adds to it or replaces it, e.g. a bigger "task->component"
        given_context = context
        context = {"taskid": task, "componentid": name, "task->component": {str(task): name},
                   "streams": list(outputs),
                   "stream->outputfields": {s: list(f) for s, f in self.output_fields.items()},
                   "stream->target->grouping": {}, "source->stream->grouping": {},
                   "source->stream->fields": {},
                   "stormid": "harness-1", "worker.port": 0, **(context or {})}
        # the topology's tasks when the test gave them (a direct emit elsewhere is
        # dropped by a worker); None: a topology of this one task, where any goes
        self.tasks = ({int(t) for t in context["task->component"]}
                      if "task->component" in (given_context or {}) else None)
        self.component._setup_component(conf, context)
        self.component.initialize(conf, context)

    def input_of(self, tup: Tuple | Any) -> Tuple | Any:
        """What `ack`/`fail` were given, as the input Tuple when it is an input's id
        (they take either, as in pystorm), so `acked == inputs` holds for both."""
        return tup

    def _record(self, emit: Emit) -> None:
        """Keep an emit, and its tup_id for `SpoutHarness._was_emitted`."""
        self.emits.append(emit)
        if emit.tup_id is not None:
            try:
                self._emitted_ids.add(emit.tup_id)
            except TypeError:
                self._emitted_unhashable_ids.append(emit.tup_id)

    def _call(self, method: Callable[..., Any], *args: Any, tup: Tuple | None = None) -> None:
        """`method(*args)` as an executor calls it: what it raises propagates, unless
        the component carries on (`exit_on_exception` off): then it is reported,
        into `errors`, with `tup`."""
        try:
            method(*args)
        except BaseException as exc:
            if not report_and_carry_on(self.component, exc, tup):
                raise

    def emitted_values(self, stream: str | None = None) -> list[list[Any]]:
        """The values of every emit, or of those on `stream` only."""
        return [e.values for e in self.emits if stream is None or e.stream == stream]

    def cleanup(self) -> None:
        """The component's `cleanup()`, as a worker calls it at the end of a run."""
        self._call(self.component.cleanup)


def _unnamed_values(cls: type, names: list[str]) -> type:
    """Input values made without `fields=`: a bolt reading `tup.values.word` gets an
    error that says why, not a bare AttributeError."""
    class Values(cls):  # type: ignore[valid-type, misc]
        __slots__ = ()

        def __getattr__(self, name: str) -> Any:
            raise AttributeError(
                f"this input has no field {name!r}: it was made without fields=, so its "
                f"fields are {names}; give process() or make_tuple() fields=[...] as the "
                "upstream stream declares them")

    return Values


class BoltHarness(_Harness):
    """Runs a Bolt in-process. `context` adds to the pystorm context dict its
    `initialize` gets (`task->component` of the whole topology, say)."""

    kind = Bolt

    def __init__(self, bolt_cls: type[Bolt], conf: dict[str, Any] | None = None,
                 name: str = "bolt", task: int = 1, context: dict[str, Any] | None = None) -> None:
        self.inputs: list[Tuple] = []
        self._ids = itertools.count(1)
        super().__init__(bolt_cls, conf, name, task, context)

    def input_of(self, tup: Tuple | Any) -> Tuple | Any:
        if isinstance(tup, Tuple):
            return tup
        return next((t for t in self.inputs if t.id == tup), tup)

    def make_tuple(self, values: Sequence[Any], fields: Sequence[str] | None = None,
                   component: str = "source", stream: str = "default", task: int = 0) -> Tuple:
        if not isinstance(values, (list, tuple)):
            raise TypeError(f"an input tuple's values are a list or a tuple, got "
                            f"{type(values).__name__} {values!r}")
        if fields is not None and len(fields) != len(values):
            raise ValueError(f"{len(values)} values {list(values)!r} for {len(fields)} fields "
                             f"{list(fields)!r}")
        names = fields or [f"field{i}" for i in range(len(values))]
        cls = namedtuple("Values", names, rename=True)  # type: ignore[misc]
        if fields is None:
            cls = _unnamed_values(cls, names)
        return Tuple(next(self._ids), component, stream, task, cls._make(values))

    def process(self, values: Sequence[Any] | Tuple, **tuple_fields: Any) -> Tuple:
        """Feed one tuple (values, or a Tuple from `make_tuple`) through `process`
        with auto-ack/anchor/fail, as the executor would. Exceptions propagate
        (with `exit_on_exception` off they are reported into `errors`)."""
        tup = values if isinstance(values, Tuple) else self.make_tuple(values, **tuple_fields)
        self.inputs.append(tup)
        self._call(self.component._run_process, tup, tup=tup)
        return tup

    def tick(self, freq_secs: int = 1) -> None:
        """Deliver one tick tuple (a BatchingBolt processes its batches on the tick
        that makes more than `ticks_between_batches` since it last did). The
        runtime sends them only with `topology.tick.tuple.freq.secs` set (topology
        or component config): without it a BatchingBolt that passes here never
        flushes in a real topology. A TicklessBatchingBolt only gets `process_tick`,
        as in a worker: flush it with `flush_batches()`."""
        tick = Tuple(None, SYSTEM_COMPONENT, TICK_STREAM, -1, (freq_secs,))
        self._call(self.component._run_tick, tick, tup=tick)

    def flush_batches(self) -> None:
        """Process a batching bolt's batches now, then ack them (auto_ack), without a
        tick tuple: for a TicklessBatchingBolt as its `secs_between_batches` timer
        would (the timer restarts), for a BatchingBolt as a tick that processes them
        would, without `process_tick` (the tick count restarts). Any other bolt
        raises TypeError."""
        bolt = self.component
        if isinstance(bolt, TicklessBatchingBolt):
            self._call(bolt._maybe_flush, max(time.monotonic(), bolt._next_flush))
        elif isinstance(bolt, BatchingBolt):
            self._call(self._flush_batching_bolt)
        else:
            raise TypeError(f"{type(bolt).__name__} is not a BatchingBolt: it has no batches to flush")

    def _flush_batching_bolt(self) -> None:
        bolt = self.component
        bolt.process_batches()
        bolt._tick_counter = 0  # as after a tick that processed the batches


class SpoutHarness(_Harness):
    """Runs a Spout in-process: call `next_tuple`, then `ack`/`fail` what it emitted
    (`acked` and `failed` record the ids given); `deactivate`, `activate` and
    `cleanup` as a worker calls them. Once the spout said it is exhausted
    (`report_exhausted`), `next_tuple` is no longer called, as in a worker."""

    kind = Spout

    def __init__(self, spout_cls: type[Spout], conf: dict[str, Any] | None = None,
                 name: str = "spout", task: int = 1, context: dict[str, Any] | None = None) -> None:
        super().__init__(spout_cls, conf, name, task, context)
        self.activate()

    def next_tuple(self, times: int = 1) -> list[Emit]:
        before = len(self.emits)
        for _ in range(times):
            if self.exhausted:
                break
            self._call(self.component.next_tuple)
        return self.emits[before:]

    def ack(self, tup_id: Any) -> None:
        self._check_emitted(tup_id, "ack")
        self.acked.append(tup_id)
        self._call(self.component.ack, tup_id)

    def fail(self, tup_id: Any) -> None:
        self._check_emitted(tup_id, "fail")
        self.failed.append(tup_id)
        self._call(self.component.fail, tup_id)

    def activate(self) -> None:
        self._call(self.component.activate)

    def deactivate(self) -> None:
        self._call(self.component.deactivate)

    def _was_emitted(self, tup_id: Any) -> bool:
        """Whether the spout emitted with `tup_id`, looked up in the ids `_record`
        kept: a scan of every emit per ack took a test of a 50,000-row partition
        452 s (a Spark audit)."""
        try:
            return tup_id in self._emitted_ids
        except TypeError:
            return tup_id in self._emitted_unhashable_ids

    def _check_emitted(self, tup_id: Any, what: str) -> None:
        """A worker acks and fails only ids the spout emitted with (its acker never
        completes another): say so when a test does otherwise, and go on."""
        if tup_id is None or not self._was_emitted(tup_id):
            self.component.logger.warning("%s(%r): the spout emitted no tuple with that "
                                          "tup_id, so in a topology this never happens", what, tup_id)
