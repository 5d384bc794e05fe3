"""Tests for the in-process harness itself (storm_zmq.testing)."""

from __future__ import annotations

import dataclasses
import logging
import textwrap
import time
from collections import Counter
from typing import Any

import pytest

import storm_zmq.testing
from storm_zmq.component import (
    SYSTEM_COMPONENT,
    TICK_STREAM,
    BatchingBolt,
    Bolt,
    Spout,
    TicklessBatchingBolt,
    Tuple,
)
from storm_zmq.config import DEFAULTS
from storm_zmq.testing import BoltHarness, Emit, SpoutHarness
from storm_zmq.topology import Stream


class EchoBolt(Bolt):
    outputs = [Stream(["v"]), Stream(["v", "n"], "pairs"), Stream(["v"], "direct", direct=True)]

    def process(self, tup: Tuple) -> None:
        self.emit((tup.values[0],))
        self.emit([tup.values[0], 2], stream="pairs")


class TickRecorder(Bolt):
    outputs = ["x"]

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.ticks: list[Tuple] = []

    def process(self, tup: Tuple) -> None:
        pass

    def process_tick(self, tup: Tuple) -> None:
        self.ticks.append(tup)


class IdSpout(Spout):
    outputs = ["n"]

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.n = 0
        self.calls: list[tuple[str, Any]] = []

    def next_tuple(self) -> None:
        self.n += 1
        self.emit([self.n], tup_id=self.n)

    def ack(self, tup_id: Any) -> None:
        self.calls.append(("ack", tup_id))

    def fail(self, tup_id: Any) -> None:
        self.calls.append(("fail", tup_id))


class PlainInitBolt(Bolt):
    """As streamparse's examples write a bolt with state of its own."""

    outputs = ["v"]

    def __init__(self) -> None:
        super().__init__()
        self._collector: list[Any] = []  # the bolt's own; pystorm leaves the name free

    def process(self, tup: Tuple) -> None:
        self._collector.append(tup.values[0])
        self.emit([tup.values[0]])


def test_a_bolt_whose_init_takes_no_arguments_runs_with_attributes_of_its_own() -> None:
    h = BoltHarness(PlainInitBolt)
    tup = h.process(["a"])
    assert h.emitted_values() == [["a"]] and h.acked == [tup]
    assert h.component._collector == ["a"]


def test_emitted_values_filters_by_stream() -> None:
    h = BoltHarness(EchoBolt)
    h.process(["a"])
    h.process(["b"])
    assert h.emitted_values() == [["a"], ["a", 2], ["b"], ["b", 2]]
    assert h.emitted_values("default") == [["a"], ["b"]]
    assert h.emitted_values("pairs") == [["a", 2], ["b", 2]]
    assert h.emitted_values("direct") == []
    assert h.emitted_values("unknown") == []


def test_emits_are_recorded_as_emit_records_with_lists() -> None:
    h = BoltHarness(EchoBolt)
    tup = h.process(["a"])
    assert h.emits[0] == Emit(values=["a"], stream="default", anchors=[tup], tup_id=None,
                              direct_task=None)
    assert type(h.emits[0].values) is list  # a tuple emit is stored as a list


def test_refused_emits_are_not_recorded() -> None:
    h = BoltHarness(EchoBolt)
    collector = h.component._storm_zmq_collector
    with pytest.raises(ValueError, match="'nope'"):
        collector.emit(["x"], "nope")
    with pytest.raises(ValueError, match="'pairs'"):
        collector.emit(["x"], "pairs")
    assert h.emits == []


def test_emits_of_a_bolt_without_outputs_are_recorded_and_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Terminal(Bolt):  # declares no streams, emits anyway (Storm 1.x dropped it)
        def process(self, tup: Tuple) -> None:
            self.emit([tup.values[0], 1])

    h = BoltHarness(Terminal, name="terminal")
    with caplog.at_level(logging.WARNING):
        h.process(["a"])
    assert h.emitted_values() == [["a", 1]]
    assert "component 'terminal' emitted on stream 'default', but it declares no streams" \
        in caplog.text


def test_inputs_list_records_every_processed_tuple() -> None:
    h = BoltHarness(EchoBolt)
    t1 = h.process(["a"])
    t2 = h.process(["b"], fields=["v"], component="up", stream="s", task=3)
    assert h.inputs == [t1, t2]
    assert (t2.component, t2.stream, t2.task, t2.values.v) == ("up", "s", 3, "b")
    assert (t1.component, t1.stream, t1.task) == ("source", "default", 0)
    assert t1.values.field0 == "a"
    assert t1.id != t2.id


def test_process_accepts_a_made_tuple_as_is() -> None:
    h = BoltHarness(EchoBolt)
    tup = h.make_tuple(["z"], fields=["v"])
    assert h.process(tup) is tup
    assert h.inputs == [tup]
    assert h.acked == [tup]


def test_inputs_include_a_tuple_whose_processing_raised() -> None:
    class Raising(Bolt):
        outputs = ["x"]

        def process(self, tup: Tuple) -> None:
            raise RuntimeError("x")

    h = BoltHarness(Raising)
    with pytest.raises(RuntimeError):
        h.process(["a"])
    assert len(h.inputs) == 1 and h.failed == h.inputs


def test_tick_delivers_a_system_tick_tuple() -> None:
    h = BoltHarness(TickRecorder)
    h.tick()
    h.tick(30)
    ticks = h.component.ticks
    assert [t.values[0] for t in ticks] == [1, 30]
    assert all(t.is_tick_tuple() for t in ticks)
    assert (ticks[0].component, ticks[0].stream, ticks[0].task) == (SYSTEM_COMPONENT, TICK_STREAM, -1)
    assert h.inputs == []  # ticks are not inputs


def test_need_task_ids_returns_the_target_task() -> None:
    h = BoltHarness(EchoBolt)
    h.target_task = 42
    assert h.component.emit(["x"], need_task_ids=True) == [42]


def test_need_task_ids_of_a_direct_emit_is_the_direct_task() -> None:
    h = BoltHarness(EchoBolt)
    assert h.component.emit(["x"], stream="direct", direct_task=7, need_task_ids=True) == [7]


class Router(Bolt):
    """Finds its direct targets in the context, as a ported streamparse bolt may."""

    outputs = [Stream(["w"], "out", direct=True)]

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.targets = sorted(int(t) for t, c in context["task->component"].items() if c == "sink")

    def process(self, tup: Tuple) -> None:
        self.emit([tup.values.w], stream="out", direct_task=self.targets[len(tup.values.w) % 2])


def test_a_bolt_harness_takes_a_context_for_initialize() -> None:
    h = BoltHarness(Router, name="router", task=3,
                    context={"task->component": {"3": "router", "6": "sink", "7": "sink"}})
    h.process(["ab"], fields=["w"])
    h.process(["abc"], fields=["w"])
    assert [e.direct_task for e in h.emits] == [6, 7]
    context = h.component.context
    assert (context["taskid"], context["componentid"], context["stormid"]) == (3, "router", "harness-1")
    # Storm's multilang keys, as a worker gives them, for a topology of this one task
    assert (context["streams"], context["stream->outputfields"]) == (["out"], {"out": ["w"]})
    assert context["source->stream->fields"] == {}


@pytest.mark.parametrize("values", ["hello", {"a": 1}, 5])
def test_input_values_that_are_not_a_sequence_are_refused(values: Any) -> None:
    """Bug: process("hello") made a tuple of five one-letter fields."""
    h = BoltHarness(EchoBolt)
    with pytest.raises(TypeError, match="an input tuple's values are a list or a tuple, got "):
        h.process(values)
    assert h.inputs == []


def test_input_values_that_do_not_fit_their_fields_say_both() -> None:
    h = BoltHarness(EchoBolt)
    with pytest.raises(ValueError, match=r"^1 values \['a'\] for 2 fields \['w', 'n'\]$"):
        h.process(["a"], fields=["w", "n"])


class Logs(Bolt):
    outputs = []

    def process(self, tup: Tuple) -> None:
        self.logger.info("processing %s", tup.values[0])


def test_a_log_level_set_by_one_harness_does_not_stay_for_the_next(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Bug: pystorm.log.level (or topology.debug) of one harness stayed on the
    component's logger (named by the component) for every later test."""
    BoltHarness(Logs, conf={"pystorm.log.level": "error"}).process(["quiet"])
    with caplog.at_level("INFO"):
        BoltHarness(Logs).process(["heard"])
    assert caplog.messages == ["processing heard"]


def test_an_ack_by_id_is_recorded_as_the_input_and_a_second_ack_is_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class ById(Bolt):
        outputs = []
        auto_ack = False

        def process(self, tup: Tuple) -> None:
            self.ack(tup.id)

    h = BoltHarness(ById)
    tup = h.process(["a"])
    assert h.acked == h.inputs == [tup]
    with caplog.at_level("WARNING"):
        h.component.ack(tup)
    assert len(caplog.messages) == 1 and "acked" in caplog.messages[0] and "twice" in caplog.messages[0]


def test_conf_overrides_defaults_and_name_and_task_are_passed() -> None:
    class Conf(Bolt):
        def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
            self.conf = storm_conf
            self.context = context

    h = BoltHarness(Conf, conf={"topology.message.timeout.secs": 7, "x": 1}, name="c", task=5)
    conf = h.component.conf
    assert conf["topology.message.timeout.secs"] == 7 and conf["x"] == 1
    assert set(DEFAULTS) <= set(conf)
    assert DEFAULTS["topology.message.timeout.secs"] != 7  # the default itself is untouched
    assert h.component.context["taskid"] == 5
    assert (h.component.component_name, h.component.task_id) == ("c", 5)


def test_harness_starts_empty() -> None:
    h = SpoutHarness(IdSpout)
    assert (h.emits, h.acked, h.failed, h.errors, h.exhausted) == ([], [], [], [], False)
    assert h.output_fields == {"default": ("n",)}


def test_spout_harness_next_tuple_returns_only_new_emits() -> None:
    h = SpoutHarness(IdSpout)
    first = h.next_tuple()
    assert [e.tup_id for e in first] == [1]
    more = h.next_tuple(times=3)
    assert [e.tup_id for e in more] == [2, 3, 4]
    assert [e.values for e in h.emits] == [[1], [2], [3], [4]]


def test_spout_harness_ack_and_fail_pass_through() -> None:
    h = SpoutHarness(IdSpout)
    h.next_tuple(2)
    h.ack(1)
    h.fail(2)
    h.ack("never emitted")
    assert h.component.calls == [("ack", 1), ("fail", 2), ("ack", "never emitted")]
    # recorded, as a bolt harness records its acks and fails (they stayed empty)
    assert h.acked == [1, "never emitted"] and h.failed == [2]


def test_a_spout_harness_says_when_a_test_acks_an_id_never_emitted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = SpoutHarness(IdSpout)
    h.next_tuple()
    with caplog.at_level("WARNING"):
        h.ack(1)
        assert caplog.messages == []
        h.fail("nope")
    assert caplog.messages == ["fail('nope'): the spout emitted no tuple with that tup_id, so in "
                               "a topology this never happens"]


def test_a_spout_harness_knows_list_ids_and_the_emits_after_a_test_cleared_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class ListIds(Spout):
        outputs = ["n"]

        def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
            self.n = 0

        def next_tuple(self) -> None:
            self.n += 1
            self.emit([self.n], tup_id=["partition", self.n] if self.n % 2 else self.n)

    h = SpoutHarness(ListIds)
    h.next_tuple(2)
    with caplog.at_level("WARNING"):
        h.ack(["partition", 1])
        h.ack(2)
        h.emits.clear()
        h.next_tuple(2)
        h.fail(["partition", 3])
        h.fail(4)
        assert caplog.messages == []
        h.ack(["partition", 2])
    assert caplog.messages == ["ack(['partition', 2]): the spout emitted no tuple with that "
                               "tup_id, so in a topology this never happens"]


class Lifecycle(Spout):
    outputs = ["n"]
    exit_on_exception = False

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.calls: list[str] = []
        self.left = 2

    def activate(self) -> None:
        self.calls.append("activate")
        raise RuntimeError("activate broke")

    def deactivate(self) -> None:
        self.calls.append("deactivate")

    def cleanup(self) -> None:
        self.calls.append("cleanup")

    def next_tuple(self) -> None:
        self.calls.append("next_tuple")
        self.left -= 1
        self.emit([self.left])
        if not self.left:
            self.report_exhausted()


def test_a_spout_harness_runs_the_lifecycle_hooks_as_a_worker_does() -> None:
    """Bug: an activate() that raised escaped the harness although the spout carries
    on (a worker reports it); deactivate and cleanup had no way in; next_tuple went
    on after report_exhausted, which a worker stops calling."""
    h = SpoutHarness(Lifecycle)
    assert [str(exc) for exc, _ in h.errors] == ["activate broke"]
    assert len(h.next_tuple(times=5)) == 2 and h.exhausted
    h.deactivate()
    h.cleanup()
    assert h.component.calls == ["activate", "next_tuple", "next_tuple", "deactivate", "cleanup"]


@pytest.mark.parametrize("harness", [BoltHarness, SpoutHarness])
@pytest.mark.parametrize("given", [EchoBolt(), IdSpout, EchoBolt, "EchoBolt"])
def test_a_harness_given_the_wrong_thing_says_what_it_takes(harness: type, given: Any) -> None:
    if (harness, given) in ((BoltHarness, EchoBolt), (SpoutHarness, IdSpout)):
        harness(given)  # the right thing
        return
    kind = "Bolt" if harness is BoltHarness else "Spout"
    with pytest.raises(TypeError, match=f"^{harness.__name__} runs a {kind} subclass "
                       r"\(the class, not an instance\), got "):
        harness(given)


def test_spout_harness_records_errors_and_exhaustion() -> None:
    class Done(Spout):
        outputs = ["n"]

        def next_tuple(self) -> None:
            self.raise_exception(exception=ValueError("odd"))  # pystorm's argument name
            self.report_exhausted()

    h = SpoutHarness(Done)
    h.next_tuple()
    assert h.exhausted is True
    assert len(h.errors) == 1 and isinstance(h.errors[0][0], ValueError) and h.errors[0][1] is None


def test_direct_task_on_a_non_direct_stream_is_refused_as_in_a_worker() -> None:
    h = BoltHarness(EchoBolt)
    with pytest.raises(ValueError, match="direct"):
        h.component.emit(["x"], direct_task=3)


def test_emit_on_a_direct_stream_needs_direct_task_as_in_a_worker() -> None:
    h = BoltHarness(EchoBolt)
    with pytest.raises(ValueError, match="direct"):
        h.component.emit(["x"], stream="direct")


def test_an_unserializable_emit_fails_in_the_harness_as_it_would_between_workers() -> None:
    from storm_zmq.runtime.serialization import SerializationError

    harness = BoltHarness(EchoBolt, name="echo")
    with pytest.raises(SerializationError,
                       match="component 'echo', stream 'default': value 0 of the tuple is a builtins.set"):
        harness.process([{1, 2}])
    copying = BoltHarness(EchoBolt, conf={"topology.testing.always.try.serialize": False})
    with pytest.raises(SerializationError, match="builtins.set"):  # copied at the emit
        copying.process([{1, 2}])
    relaxed = BoltHarness(EchoBolt, conf={"topology.testing.always.try.serialize": False,
                                          "topology.copy.emitted.values": False})
    relaxed.process([{1, 2}])
    assert relaxed.emitted_values() == [[{1, 2}], [{1, 2}, 2]]


class Coordinates:
    """A type of the user's, registered in the next test."""

    def __init__(self, lat: float, lon: float) -> None:
        self.lat, self.lon = lat, lon


def test_the_harness_records_an_emitted_buffer_as_it_was_at_the_emit() -> None:
    # A review: it recorded the list itself, emptied by the bolt after the emit,
    # while a worker delivers what the emit held
    class Buffering(Bolt):
        outputs = ["ids"]

        def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
            self.buffer: list[int] = []

        def process(self, tup: Tuple) -> None:
            self.buffer.append(tup.values.id)
            if len(self.buffer) == 2:
                self.emit([self.buffer])
                self.buffer.clear()

    for conf in ({}, {"topology.testing.always.try.serialize": False}):
        h = BoltHarness(Buffering, conf=conf)
        for i in (1, 2):
            h.process([i], fields=["id"])
        assert h.emitted_values() == [[[1, 2]]]


def test_the_harness_serializes_with_the_types_its_conf_registers() -> None:
    from storm_zmq.runtime.serialization import SerializationError

    with pytest.raises(SerializationError, match=r"value 0 of the tuple is a tests.test_testing.Coordinates, "
                                                 r"which cannot be serialized .*topology.kryo.register"):
        BoltHarness(EchoBolt, name="echo").process([Coordinates(1.0, 2.0)])
    registered = BoltHarness(EchoBolt, conf={"topology.kryo.register": ["tests.test_testing.Coordinates"]})
    where = Coordinates(1.0, 2.0)
    registered.process([where])
    (arrived,) = registered.emitted_values()[0]  # as a target gets it: a copy
    assert type(arrived) is Coordinates and vars(arrived) == vars(where) and arrived is not where


@dataclasses.dataclass(frozen=True)
class Cell:
    """A registered key whose tuple field arrives as a list: unhashable there."""

    at: tuple


def test_the_harness_decodes_too_so_what_a_worker_would_refuse_fails_here() -> None:
    from storm_zmq.runtime.serialization import SerializationError

    harness = BoltHarness(EchoBolt, conf={"topology.kryo.register": ["tests.test_testing.Cell"]})
    with pytest.raises(SerializationError, match="component 'bolt', stream 'default': another worker "
                                                 "could not decode this tuple: .*unhashable"):
        harness.process([{Cell((1, 2)): "x"}])


class WordCountBolt(Bolt):  # the module docstring's (and README's) example bolt
    outputs = ["word", "count"]

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.counts: Counter[str] = Counter()

    def process(self, tup: Tuple) -> None:
        word = tup.values.word
        self.counts[word] += 1
        self.emit([word, self.counts[word]])


def test_the_module_docstring_example_runs_as_written() -> None:
    doc = storm_zmq.testing.__doc__ or ""
    lines = doc.split("\n\n")[1]  # the indented example after the first paragraph
    example = textwrap.dedent(lines)
    assert "harness.process(" in example
    exec(compile(example, "storm_zmq.testing docstring", "exec"), {"WordCountBolt": WordCountBolt})


class Batcher(BatchingBolt):
    outputs = ["key", "n"]
    ticks_between_batches = 2

    def group_key(self, tup: Tuple) -> Any:
        return tup.values[0]

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        self.emit([key, len(tups)])


class TicklessBatcher(TicklessBatchingBolt):
    outputs = ["key", "n"]
    secs_between_batches = 3600.0  # never by time during the test

    def group_key(self, tup: Tuple) -> Any:
        return tup.values[0]

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        self.emit([key, len(tups)])


def test_flush_batches_processes_a_tickless_batching_bolts_batches() -> None:
    h = BoltHarness(TicklessBatcher)
    for word in ["a", "b", "a"]:
        h.process([word])
    h.tick()  # ignored by a TicklessBatchingBolt, as in a worker
    assert h.emits == [] and h.acked == []
    h.flush_batches()
    assert h.emitted_values() == [["a", 2], ["b", 1]]
    assert sorted(t.id for t in h.acked) == sorted(t.id for t in h.inputs)
    assert all(e.anchors for e in h.emits)  # anchored to their batch
    assert h.component._next_flush > time.monotonic() + 3000  # the timer restarted
    h.flush_batches()  # nothing batched: nothing happens
    assert len(h.emits) == 2


def test_flush_batches_processes_a_batching_bolts_batches_without_a_tick() -> None:
    h = BoltHarness(Batcher)
    h.process(["a"])
    h.tick()  # 1 of ticks_between_batches = 2
    h.flush_batches()
    assert h.emitted_values() == [["a", 1]] and h.acked == h.inputs
    h.process(["b"])
    h.tick()  # the tick count restarted with the flush: 1, then 2, not more than 2
    h.tick()
    assert h.emitted_values() == [["a", 1]]
    h.tick()
    assert h.emitted_values() == [["a", 1], ["b", 1]]


def test_flush_batches_refuses_a_bolt_without_batches() -> None:
    with pytest.raises(TypeError, match="not a BatchingBolt"):
        BoltHarness(EchoBolt).flush_batches()


def test_a_bolts_own_ack_of_what_auto_ack_acks_is_recorded_once_as_in_a_worker() -> None:
    class AcksToo(Bolt):
        outputs = ["x"]

        def process(self, tup: Tuple) -> None:
            self.ack(tup)  # auto_ack acks it too

    h = BoltHarness(AcksToo)
    first, second = h.process(["a"]), h.process(["b"])
    assert h.acked == [first, second]


def test_flush_batches_of_a_batching_bolt_that_carries_on_reports_as_a_worker_would() -> None:
    class Carrier(Batcher):
        exit_on_exception = False

        def process_batch(self, key: Any, tups: list[Tuple]) -> None:
            if key == "b":
                raise ValueError("b")
            super().process_batch(key, tups)

    h = BoltHarness(Carrier)
    for word in ["a", "b", "c"]:
        h.process([word])
    h.tick()
    h.flush_batches()  # reported, not raised
    assert [str(exc) for exc, _ in h.errors] == ["b"]
    assert [t.values[0] for t in h.failed] == ["b"]
    assert h.emitted_values() == [["a", 1]]
    assert h.component._tick_counter == 1  # not restarted by a flush that raised
    h.tick()
    assert h.emitted_values() == [["a", 1]]
    h.tick()  # 3 > ticks_between_batches = 2: c's batch, which waited
    assert h.emitted_values() == [["a", 1], ["c", 1]]


def test_the_harness_raises_what_a_worker_dies_of() -> None:
    class Raises(Batcher):
        def group_key(self, tup: Tuple) -> Any:
            raise ValueError("key")

    h = BoltHarness(Raises)
    with pytest.raises(ValueError, match="key"):
        h.process(["a"])
    assert h.failed == h.inputs and h.errors == []


class EveryThirdTuple(BatchingBolt):
    """Decides itself when its batches go, by overriding process_tick (pystorm's
    BatchingBolt keeps the timing there)."""

    outputs = ["n"]

    def process_tick(self, tup: Tuple) -> None:
        if sum(len(b) for b in self._batches.values()) >= 3:
            self.process_batches()

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        self.emit([len(tups)])


def test_a_batching_bolts_own_process_tick_decides_when_batches_go() -> None:
    """Bug: the counter and the flush ran after any process_tick override, so a
    subclass could not hold its batches back (pystorm lets it)."""
    h = BoltHarness(EveryThirdTuple)
    h.process([1])
    for _ in range(3):
        h.tick()
    assert h.emits == []
    h.process([2])
    h.process([3])
    h.tick()
    assert h.emitted_values() == [[3]]


def test_a_batching_bolts_emit_gives_no_task_ids_as_in_pystorm() -> None:
    class Asks(BatchingBolt):
        outputs = ["n"]

        def process_batch(self, key: Any, tups: list[Tuple]) -> None:
            self.answers = self.emit([len(tups)], need_task_ids=True)

    h = BoltHarness(Asks)
    h.process([1])
    h.flush_batches()
    assert h.emitted_values() == [[1]] and h.component.answers is None


def test_an_emit_anchored_to_what_is_no_tuple_is_refused_as_in_a_worker() -> None:
    class AnchorsValues(Bolt):
        outputs = ["w"]

        def process(self, tup: Tuple) -> None:
            self.emit([tup.values.w], anchors=[tup.values])

    h = BoltHarness(AnchorsValues)
    with pytest.raises(TypeError, match="emit anchored to .*, which is not an input Tuple or a tuple's id"):
        h.process(["a"], fields=["w"])
    h = BoltHarness(EchoBolt)
    tup = h.process(["a"])
    h.component.emit(["b"], anchors=[tup.id])  # an input's id is fine, as in pystorm
    assert h.emits[-1].anchors == [tup.id]


def test_ack_or_fail_of_what_is_no_input_is_refused_as_in_a_worker() -> None:
    h = BoltHarness(EchoBolt)
    tup = h.process(["a"])
    for method in (h.component.ack, h.component.fail):
        with pytest.raises(TypeError, match="of 'x', which is not an input Tuple or a tuple's id"):
            method("x")
    h.component.ack(tup.id)  # an input's id is fine
    assert h.acked[-1] is tup


def test_emit_many_of_streamparse_2_emits_each_tuple() -> None:
    """A porting audit: code from streamparse 2 (the many tweet word counts) calls
    `emit_many`, which streamparse 3 dropped; it emits each tuple, as it did."""

    class ManyBolt(Bolt):
        outputs = ["v"]

        def process(self, tup: Tuple) -> None:
            self.returned = self.emit_many([[word] for word in tup.values[0].split()])

    h = BoltHarness(ManyBolt)
    tup = h.make_tuple(["a b c"])
    h.process(tup)
    assert h.emitted_values() == [["a"], ["b"], ["c"]]
    assert all(e.anchors == [tup] for e in h.emits)  # auto-anchored, as emit is
    assert h.component.returned == [[1], [1], [1]]  # need_task_ids (streamparse 2's default): the target

    class ManySpout(Spout):
        outputs = ["n"]

        def next_tuple(self) -> None:
            self.emit_many([[1], [2]], tup_ids=["one", "two"], need_task_ids=False)

    s = SpoutHarness(ManySpout)
    assert [(e.values, e.tup_id) for e in s.next_tuple()] == [([1], "one"), ([2], "two")]


def test_a_direct_task_is_checked_as_a_worker_checks_it() -> None:
    # A new user's audit: the harness took direct_task="5" (task->component's keys are
    # str) and task 999, and the topology then died at its first direct emit
    h = BoltHarness(Router, name="router", task=3,
                    context={"task->component": {"3": "router", "6": "sink", "7": "sink"}})
    with pytest.raises(TypeError, match="component 'router': direct_task must be a task id "
                                        "\\(an int\\), got '6'"):
        h.component.emit(["x"], stream="out", direct_task="6")
    assert h.component.emit(["x"], stream="out", direct_task=6, need_task_ids=True) == [6]
    # a task the topology does not have: a worker drops the emit (recorded here)
    assert h.component.emit(["x"], stream="out", direct_task=999, need_task_ids=True) == []
    assert [e.direct_task for e in h.emits] == [6, 999]


def test_a_bolt_harness_runs_cleanup_and_says_what_fields_an_unnamed_input_has() -> None:
    class Writes(Bolt):
        def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
            self.seen: list[str] = []
            self.flushed = False

        def process(self, tup: Tuple) -> None:
            self.seen.append(tup.values.word)

        def cleanup(self) -> None:
            self.flushed = True

    h = BoltHarness(Writes)
    h.process(["a"], fields=["word"])
    with pytest.raises(AttributeError, match="this input has no field 'word': it was made "
                                             "without fields=, so its fields are \\['field0'\\]"):
        h.process(["b"])
    h.cleanup()
    assert h.component.seen == ["a"] and h.component.flushed
