"""Tests for the component API (storm_zmq.component), run through the in-process
harness of storm_zmq.testing."""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from typing import Any

import pytest

from storm_zmq.component import (
    SYSTEM_COMPONENT,
    TICK_STREAM,
    BatchingBolt,
    Bolt,
    ReliableSpout,
    Spout,
    TicklessBatchingBolt,
    Tuple,
)
from storm_zmq.testing import BoltHarness, SpoutHarness
from storm_zmq.topology import ComponentSpec, Stream


class Boom(Exception):
    pass


# -- bolts ------------------------------------------------------------------------------


class SplitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        for word in tup.values[0].split():
            self.emit([word])


class FailingBolt(Bolt):
    outputs = ["x"]

    def process(self, tup: Tuple) -> None:
        self.emit(["before"])
        raise Boom("no")


def test_auto_ack_acks_after_process() -> None:
    order: list[str] = []

    class Recorder(Bolt):
        outputs = ["x"]

        def process(self, tup: Tuple) -> None:
            order.append(f"process, acked so far {len(h.acked)}")

    h = BoltHarness(Recorder)
    tup = h.process(["a"])
    assert order == ["process, acked so far 0"]
    assert h.acked == [tup]
    assert h.failed == []


def test_auto_anchor_anchors_emits_to_the_input() -> None:
    h = BoltHarness(SplitBolt)
    tup = h.process(["the quick fox"])
    assert h.emitted_values() == [["the"], ["quick"], ["fox"]]
    assert all(e.anchors == [tup] for e in h.emits)
    assert all(e.stream == "default" and e.tup_id is None and e.direct_task is None
               for e in h.emits)
    assert h.acked == [tup]


def test_auto_fail_fails_the_input_and_the_exception_propagates() -> None:
    h = BoltHarness(FailingBolt)
    with pytest.raises(Boom, match="no"):
        h.process(["a"])
    assert h.failed == [h.inputs[0]]
    assert h.acked == []
    assert h.emits[0].anchors == [h.inputs[0]]


def test_the_current_tuple_is_forgotten_after_process() -> None:
    class TickEmitter(Bolt):
        outputs = ["x"]

        def process(self, tup: Tuple) -> None:
            pass

        def process_tick(self, tup: Tuple) -> None:
            self.emit(["tick"])

    h = BoltHarness(TickEmitter)
    h.process(["a"])
    h.tick()
    assert h.emits[0].anchors == []  # not anchored to the previous input

    h2 = BoltHarness(FailingBolt)
    with pytest.raises(Boom):
        h2.process(["a"])
    h2.component.emit(["later"])
    assert h2.emits[-1].anchors == []


class ManualBolt(Bolt):
    outputs = ["x"]
    auto_ack = False
    auto_anchor = False
    auto_fail = False

    def process(self, tup: Tuple) -> None:
        if tup.values[0] == "bad":
            raise Boom("bad")
        self.emit([tup.values[0]])
        if tup.values[0] == "ack":
            self.ack(tup)
        if tup.values[0] == "fail":
            self.fail(tup)


def test_auto_false_variants_leave_everything_to_the_bolt() -> None:
    h = BoltHarness(ManualBolt)
    plain = h.process(["plain"])
    assert h.acked == [] and h.failed == []
    assert h.emits[0].anchors == []
    acked = h.process(["ack"])
    failed = h.process(["fail"])
    assert h.acked == [acked] and h.failed == [failed]
    with pytest.raises(Boom):
        h.process(["bad"])
    assert h.failed == [failed]  # not auto-failed
    assert plain not in h.acked


def test_auto_ack_only_false() -> None:
    class NoAck(SplitBolt):
        auto_ack = False

    h = BoltHarness(NoAck)
    tup = h.process(["a b"])
    assert h.acked == []
    assert [e.anchors for e in h.emits] == [[tup], [tup]]


def test_explicit_anchors() -> None:
    class Anchoring(Bolt):
        outputs = ["x"]

        def process(self, tup: Tuple) -> None:
            self.emit(["none"], anchors=[])
            self.emit(["other"], anchors=[self.other])
            self.emit(["auto"])

    h = BoltHarness(Anchoring)
    other = h.make_tuple(["o"])
    h.component.other = other  # type: ignore[attr-defined]
    tup = h.process(["a"])
    assert [(e.values, e.anchors) for e in h.emits] == [
        (["none"], []), (["other"], [other]), (["auto"], [tup])
    ]


def test_emit_on_an_undeclared_stream_raises_value_error_naming_it() -> None:
    class Wrong(Bolt):
        outputs = ["x"]

        def process(self, tup: Tuple) -> None:
            self.emit(["v"], stream="nope")

    h = BoltHarness(Wrong)
    with pytest.raises(ValueError, match="'nope'"):
        h.process(["a"])
    assert h.emits == []


def test_emit_with_the_wrong_number_of_values_raises_value_error_naming_the_stream() -> None:
    class Wrong(Bolt):
        outputs = [Stream(["a", "b"], "pairs")]

        def process(self, tup: Tuple) -> None:
            self.emit(["only one"], stream="pairs")

    h = BoltHarness(Wrong)
    with pytest.raises(ValueError, match=r"1 values.*'pairs'.*2 fields \['a', 'b'\]"):
        h.process(["a"])
    assert h.emits == []


@pytest.mark.parametrize("values", ["abc", {"x": 1, "y": 2, "z": 3}, {"a", "b", "c"}],
                         ids=["str", "dict", "set"])
def test_emit_of_values_that_are_not_a_list_or_tuple_is_refused_as_pystorm_does(values: Any) -> None:
    """Three characters or three keys would pass a three-field count by chance."""
    class Careless(Bolt):
        outputs = ["a", "b", "c"]

        def process(self, tup: Tuple) -> None:
            self.emit(values)

    h = BoltHarness(Careless, name="careless")
    with pytest.raises(TypeError, match=rf"component 'careless' emitted a {type(values).__name__}: "
                       "a tuple's values are a list or a tuple"):
        h.process(["x"])
    assert h.emits == []


def test_emit_on_the_default_stream_of_a_bolt_with_only_other_streams_raises() -> None:
    class Misrouted(Bolt):
        outputs = [Stream(["x"], "side")]

        def process(self, tup: Tuple) -> None:
            self.emit(["x"])

    with pytest.raises(ValueError, match="'default'"):
        BoltHarness(Misrouted).process(["a"])

    class Silent(Bolt):  # no streams at all: recorded, and a worker drops it (Storm 1.x)
        def process(self, tup: Tuple) -> None:
            self.emit(["x"])

    harness = BoltHarness(Silent)
    harness.process(["a"])
    assert harness.emitted_values() == [["x"]]


def test_need_task_ids_returns_a_list() -> None:
    results: list[Any] = []

    class Asker(Bolt):
        outputs = ["x"]

        def process(self, tup: Tuple) -> None:
            results.append(self.emit(["a"], need_task_ids=True))
            results.append(self.emit(["b"]))

    BoltHarness(Asker).process(["in"])
    assert isinstance(results[0], list) and all(isinstance(t, int) for t in results[0])
    assert results[1] is None


def test_several_output_streams() -> None:
    class Router(Bolt):
        outputs = [Stream(["word"]), Stream(["word", "length"], "long"),
                   Stream(["n"], "direct_out", direct=True)]

        def process(self, tup: Tuple) -> None:
            word = tup.values.word
            if len(word) > 3:
                self.emit([word, len(word)], stream="long")
            else:
                self.emit([word])
            self.emit([1], stream="direct_out", direct_task=7)

    h = BoltHarness(Router)
    h.process(["cat"], fields=["word"])
    h.process(["horse"], fields=["word"])
    assert h.output_fields == {"default": ("word",), "long": ("word", "length"),
                               "direct_out": ("n",)}
    assert h.emitted_values("default") == [["cat"]]
    assert h.emitted_values("long") == [["horse", 5]]
    assert [e.direct_task for e in h.emits if e.stream == "direct_out"] == [7, 7]


# -- exit_on_exception (pystorm's run loop) -----------------------------------------------


class CarryOn(Bolt):
    outputs = ["x"]
    exit_on_exception = False

    def process(self, tup: Tuple) -> None:
        if tup.values[0] == "boom":
            self.emit(["before"])
            raise Boom("boom")
        self.emit([tup.values[0]])


def test_exit_on_exception_is_pystorms_default() -> None:
    assert Bolt.exit_on_exception is True and Spout.exit_on_exception is True
    h = BoltHarness(FailingBolt)
    with pytest.raises(Boom):
        h.process(["a"])
    assert h.errors == []  # not reported here: the worker reports it as it dies


def test_a_bolt_with_exit_on_exception_off_reports_fails_and_goes_on() -> None:
    h = BoltHarness(CarryOn)
    a = h.process(["a"])
    boom = h.process(["boom"])  # no raise
    c = h.process(["c"])
    assert h.acked == [a, c] and h.failed == [boom]
    ((exc, tup),) = h.errors  # reported as pystorm's raise_exception(exc, tup)
    assert isinstance(exc, Boom) and tup is boom
    assert h.emitted_values() == [["a"], ["before"], ["c"]]
    assert h.emits[1].anchors == [boom]  # anchored to the failed input: its tree fails
    assert h.component._current_tups is None


def test_exit_on_exception_off_without_auto_fail_only_reports() -> None:
    class Manual(CarryOn):
        auto_fail = False

    h = BoltHarness(Manual)
    h.process(["boom"])
    assert h.failed == [] and h.acked == [] and len(h.errors) == 1


def test_exit_on_exception_off_still_stops_on_a_base_exception() -> None:
    class Interrupted(CarryOn):
        def process(self, tup: Tuple) -> None:
            raise KeyboardInterrupt

    h = BoltHarness(Interrupted)
    with pytest.raises(KeyboardInterrupt):
        h.process(["a"])
    assert h.errors == [] and h.failed == h.inputs


def test_exit_on_exception_off_reports_through_an_overridden_raise_exception() -> None:
    seen = []

    class Sentry(CarryOn):
        def raise_exception(self, exc: BaseException, tup: Tuple | None = None) -> None:
            seen.append((type(exc).__name__, tup.values[0] if tup else None))
            super().raise_exception(exc, tup)

    h = BoltHarness(Sentry)
    h.process(["boom"])
    assert seen == [("Boom", "boom")] and len(h.errors) == 1


def test_exit_on_exception_off_covers_process_tick() -> None:
    class TickBoom(CarryOn):
        def process_tick(self, tup: Tuple) -> None:
            raise Boom("tick")

    h = BoltHarness(TickBoom)
    h.tick()
    ((exc, tup),) = h.errors
    assert isinstance(exc, Boom) and tup.is_tick_tuple()
    h.process(["a"])
    assert h.emitted_values() == [["a"]]


# -- tuples ------------------------------------------------------------------------------


def test_tuple_values_are_a_namedtuple_with_field_access() -> None:
    h = BoltHarness(SplitBolt)
    tup = h.make_tuple(["dog", 3], fields=["word", "count"], component="src", stream="s", task=4)
    assert tup.values.word == "dog" and tup.values.count == 3
    assert tup.values[0] == "dog" and tuple(tup.values) == ("dog", 3)
    assert tup.values._fields == ("word", "count")
    assert (tup.component, tup.stream, tup.task) == ("src", "s", 4)
    assert h.make_tuple(["x"]).id != tup.id  # fresh ids


def test_make_tuple_renames_invalid_field_names() -> None:
    tup = BoltHarness(SplitBolt).make_tuple([1, 2], fields=["class", "ok"])
    assert tup.values.ok == 2 and tup.values[0] == 1


def test_is_tick_tuple() -> None:
    tick = Tuple(None, SYSTEM_COMPONENT, TICK_STREAM, -1, (1,))
    assert tick.is_tick_tuple()
    assert not Tuple(1, "spout", TICK_STREAM, 1, ()).is_tick_tuple()
    assert not Tuple(1, SYSTEM_COMPONENT, "default", 1, ()).is_tick_tuple()
    assert not tick.is_heartbeat_tuple()


def test_tick_goes_to_process_tick_not_process() -> None:
    seen: list[Tuple] = []

    class Ticked(Bolt):
        outputs = ["x"]

        def process(self, tup: Tuple) -> None:
            raise AssertionError("process called for a tick")

        def process_tick(self, tup: Tuple) -> None:
            seen.append(tup)

    h = BoltHarness(Ticked)
    h.tick(5)
    assert len(seen) == 1 and seen[0].is_tick_tuple() and seen[0].values[0] == 5
    assert h.acked == [] and h.failed == []


# -- BatchingBolt --------------------------------------------------------------------------


class GroupBolt(BatchingBolt):
    outputs = ["key", "n"]
    batches: list[tuple[Any, list[Any]]]

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.batches = []

    def group_key(self, tup: Tuple) -> Any:
        return tup.values[0][0]

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        self.batches.append((key, [t.values[0] for t in tups]))
        self.emit([key, len(tups)])


def batch_tick(h: BoltHarness) -> None:
    """The ticks after which a BatchingBolt with the default ticks_between_batches
    (1) processes its batches: pystorm's count must exceed it, so the second."""
    h.tick()
    assert h.component._tick_counter == 1 and h.component._batches
    h.tick()


def test_batching_bolt_groups_by_key_and_processes_on_tick() -> None:
    h = BoltHarness(GroupBolt)
    for word in ["apple", "bear", "avocado", "berry", "cat"]:
        h.process([word])
    assert h.component.batches == [] and h.acked == [] and h.emits == []
    batch_tick(h)
    assert h.component.batches == [
        ("a", ["apple", "avocado"]), ("b", ["bear", "berry"]), ("c", ["cat"])
    ]
    assert h.emitted_values() == [["a", 2], ["b", 2], ["c", 1]]
    assert sorted(t.values[0] for t in h.acked) == sorted(t.values[0] for t in h.inputs)
    assert len(h.acked) == 5
    # each batch's emit is anchored to that batch's tuples
    assert [t.values[0] for t in h.emits[0].anchors] == ["apple", "avocado"]
    # the batches are gone
    h.tick()
    assert len(h.component.batches) == 3 and len(h.acked) == 5


def test_a_batching_bolt_may_override_process_batches_as_in_pystorm() -> None:
    # pystorm's hook for changing how batches are processed, called on ticks
    class OnlyA(GroupBolt):
        def process_batches(self) -> None:
            self._batches = defaultdict(list, {"a": self._batches["a"]})
            super().process_batches()

    h = BoltHarness(OnlyA)
    for word in ["apple", "bear"]:
        h.process([word])
    batch_tick(h)
    assert h.component.batches == [("a", ["apple"])]


def test_batching_bolt_acks_after_process_batch() -> None:
    acked_during: list[int] = []

    class Watch(GroupBolt):
        def process_batch(self, key: Any, tups: list[Tuple]) -> None:
            acked_during.append(len(h.acked))

    h = BoltHarness(Watch)
    h.process(["a1"])
    h.process(["a2"])
    batch_tick(h)
    assert acked_during == [0]
    assert h.acked == h.inputs


def test_batching_bolt_ticks_between_batches_as_in_pystorm() -> None:
    """pystorm: batches go on the tick that makes the count exceed
    ticks_between_batches (`>`, not `>=`), and the count restarts only then."""
    class Every3(GroupBolt):
        ticks_between_batches = 3

    h = BoltHarness(Every3)
    h.process(["a"])
    for _ in range(3):
        h.tick()
    assert h.component.batches == []  # 3 ticks: not more than 3
    h.tick()
    assert h.component.batches == [("a", ["a"])]
    h.process(["b"])
    for _ in range(3):
        h.tick()
    assert len(h.component.batches) == 1
    h.tick()
    assert h.component.batches[-1] == ("b", ["b"])


def test_batching_bolt_processes_every_other_tick_by_default() -> None:
    h = BoltHarness(GroupBolt)
    processed_on = []
    for tick in range(1, 7):
        h.process([f"a{tick}"])
        h.tick()
        processed_on += [tick] * (len(h.component.batches) - len(processed_on))
    assert processed_on == [2, 4, 6]
    assert [len(words) for _, words in h.component.batches] == [2, 2, 2]


def test_batching_bolt_counts_ticks_without_batches_and_processes_at_once_after() -> None:
    """pystorm's count goes on while nothing is batched (it restarts only when
    batches were processed): the first tick after an idle spell processes them."""
    class Every2(GroupBolt):
        ticks_between_batches = 2

    h = BoltHarness(Every2)
    for _ in range(5):
        h.tick()
    assert h.component._tick_counter == 5
    h.process(["a"])
    h.tick()
    assert h.component.batches == [("a", ["a"])]
    assert h.component._tick_counter == 0


def test_batching_bolt_process_tick_still_called() -> None:
    class Ticky(GroupBolt):
        ticks = 0

        def process_tick(self, tup: Tuple) -> None:
            self.ticks += 1

    h = BoltHarness(Ticky)
    h.tick()
    h.tick()
    assert h.component.ticks == 2


def test_batching_bolt_fails_the_batch_on_exception() -> None:
    class Broken(GroupBolt):
        def process_batch(self, key: Any, tups: list[Tuple]) -> None:
            raise Boom(key)

    h = BoltHarness(Broken)
    h.process(["a1"])
    h.process(["a2"])
    h.tick()
    with pytest.raises(Boom):
        h.tick()
    assert h.failed == h.inputs
    assert h.acked == []


def test_batching_bolt_fails_every_unprocessed_tuple_on_exception() -> None:
    class Broken(GroupBolt):
        def process_batch(self, key: Any, tups: list[Tuple]) -> None:
            raise Boom(key)

    h = BoltHarness(Broken)
    for word in ["a1", "b1", "a2", "c1"]:
        h.process([word])
    h.tick()
    with pytest.raises(Boom):
        h.tick()
    assert h.acked == []
    assert sorted(t.values[0] for t in h.failed) == ["a1", "a2", "b1", "c1"]


def test_batching_bolt_without_auto_ack_and_auto_fail() -> None:
    class Manual(GroupBolt):
        auto_ack = False
        auto_fail = False

        def process_batch(self, key: Any, tups: list[Tuple]) -> None:
            if key == "x":
                raise Boom(key)
            self.ack(tups[0])

    h = BoltHarness(Manual)
    first = h.process(["a1"])
    h.process(["a2"])
    batch_tick(h)
    assert h.acked == [first]
    h.process(["x"])
    h.tick()
    with pytest.raises(Boom):
        h.tick()
    assert h.failed == []


class CarryOnBatches(GroupBolt):
    exit_on_exception = False
    raise_for = "b"

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        if key == self.raise_for:
            raise Boom(key)
        super().process_batch(key, tups)


def test_a_batching_bolt_that_carries_on_fails_only_the_batch_that_raised() -> None:
    """pystorm's BatchingBolt._handle_run_exception with exit_on_exception off: the
    batches before were acked, the one that raised is failed, the ones after stay
    batched and go on the next tick (the count did not restart)."""
    h = BoltHarness(CarryOnBatches)
    for word in ["a1", "b1", "c1", "b2"]:
        h.process([word])
    batch_tick(h)  # no raise
    assert [t.values[0] for t in h.acked] == ["a1"]
    assert [t.values[0] for t in h.failed] == ["b1", "b2"]
    ((exc, _),) = h.errors
    assert isinstance(exc, Boom)
    assert any("key 'b' (2 tuples)" in note for note in exc.__notes__)
    assert h.component.batches == [("a", ["a1"])]
    h.tick()  # the next tick: c's batch, which waited
    assert h.component.batches == [("a", ["a1"]), ("c", ["c1"])]
    assert [t.values[0] for t in h.acked] == ["a1", "c1"]
    assert h.component._tick_counter == 0
    h.process(["b3"])  # b's batch fails again, alone
    batch_tick(h)
    assert [t.values[0] for t in h.failed] == ["b1", "b2", "b3"] and len(h.errors) == 2


def test_a_batching_bolt_that_carries_on_without_auto_fail_keeps_the_batch() -> None:
    """pystorm: with auto_fail off the batch that raised is not failed and stays
    batched, for process_batch again with the next batches."""
    class Manual(CarryOnBatches):
        auto_fail = False

    h = BoltHarness(Manual)
    h.process(["b1"])
    batch_tick(h)
    assert h.failed == [] and len(h.errors) == 1
    h.component.raise_for = None
    h.process(["b2"])
    h.tick()
    assert h.component.batches == [("b", ["b1", "b2"])]


def test_a_batching_bolt_that_carries_on_fails_a_tuple_whose_group_key_raised() -> None:
    class BadKey(CarryOnBatches):
        def group_key(self, tup: Tuple) -> Any:
            if tup.values[0] == "bad":
                raise Boom("key")
            return super().group_key(tup)

    h = BoltHarness(BadKey)
    bad = h.process(["bad"])
    h.process(["a1"])
    assert h.failed == [bad] and len(h.errors) == 1
    batch_tick(h)
    assert h.component.batches == [("a", ["a1"])]


def test_a_batching_bolts_own_process_anchors_its_emits_to_the_input_as_in_pystorm() -> None:
    """pystorm's BatchingBolt._run makes the input the current tuple around
    `process`, so a pass-through that also batches has its emit anchored: a
    failure downstream fails the input's tree."""
    class PassAndBatch(GroupBolt):
        def process(self, tup: Tuple) -> None:
            super().process(tup)
            self.emit([tup.values[0], 0])

    h = BoltHarness(PassAndBatch)
    first = h.process(["a1"])
    second = h.process(["b1"])
    assert [e.anchors for e in h.emits] == [[first], [second]]
    batch_tick(h)
    assert [e.anchors for e in h.emits[2:]] == [[first], [second]]  # the batches'


@pytest.mark.parametrize("where", ["group_key", "process"])
def test_a_batching_bolt_whose_process_raises_fails_every_batched_tuple_when_it_dies(where: str) -> None:
    """pystorm's BatchingBolt._handle_run_exception with exit_on_exception (the
    default): the worker dies, so the input and every tuple batched before are
    failed at once rather than left to the message timeout."""
    class Breaks(GroupBolt):
        def group_key(self, tup: Tuple) -> Any:
            if where == "group_key" and tup.values[0] == "bad":
                raise Boom("key")
            return super().group_key(tup)

        def process(self, tup: Tuple) -> None:
            super().process(tup)
            if where == "process" and tup.values[0] == "bad":
                raise Boom("process")

    h = BoltHarness(Breaks)
    batched = [h.process(["a1"]), h.process(["b1"])]
    with pytest.raises(Boom):
        h.process(["bad"])
    assert h.failed == [*batched, h.inputs[-1]]  # each once
    assert h.acked == [] and h.component._batches == {}


# -- TicklessBatchingBolt ------------------------------------------------------------------


class Tickless(TicklessBatchingBolt):
    outputs = ["n"]
    secs_between_batches = 10.0
    flushed: list[list[Any]]

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.flushed = []

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        self.flushed.append([t.values[0] for t in tups])


def test_tickless_batching_bolt_flushes_after_secs_between_batches() -> None:
    import time

    before = time.monotonic()
    h = BoltHarness(Tickless)
    after = time.monotonic()
    bolt = h.component
    h.process([1])
    h.process([2])
    bolt._maybe_flush(before + 9.99)
    assert bolt.flushed == [] and h.acked == []
    bolt._maybe_flush(after + 10.0)
    assert bolt.flushed == [[1, 2]]
    assert h.acked == h.inputs
    # the next flush is secs_between_batches after that one
    h.process([3])
    bolt._maybe_flush(after + 19.99)
    assert bolt.flushed == [[1, 2]]
    bolt._maybe_flush(after + 20.0)
    assert bolt.flushed == [[1, 2], [3]]


def test_tickless_batching_bolt_ignores_ticks() -> None:
    h = BoltHarness(Tickless)
    h.process([1])
    for _ in range(5):
        h.tick()
    assert h.component.flushed == [] and h.acked == []


# -- spouts ------------------------------------------------------------------------------


class CountSpout(Spout):
    outputs = ["n"]

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.n = 0
        self.acks: list[Any] = []
        self.fails: list[Any] = []

    def next_tuple(self) -> None:
        if self.n >= 3:
            self.report_exhausted()
            return
        self.n += 1
        self.emit([self.n], tup_id=f"id{self.n}")

    def ack(self, tup_id: Any) -> None:
        self.acks.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        self.fails.append(tup_id)


def test_spout_emits_with_tup_id_and_reports_exhausted() -> None:
    h = SpoutHarness(CountSpout)
    emits = h.next_tuple(3)
    assert [(e.values, e.tup_id, e.stream, e.anchors) for e in emits] == [
        ([1], "id1", "default", []), ([2], "id2", "default", []), ([3], "id3", "default", []),
    ]
    assert h.exhausted is False
    assert h.next_tuple() == []
    assert h.exhausted is True


def test_spout_ack_and_fail_reach_the_spout() -> None:
    h = SpoutHarness(CountSpout)
    h.next_tuple(2)
    h.ack("id1")
    h.fail("id2")
    assert h.component.acks == ["id1"] and h.component.fails == ["id2"]


def test_spout_need_task_ids() -> None:
    class Asker(Spout):
        outputs = ["n"]

        def next_tuple(self) -> None:
            self.result = self.emit([1], need_task_ids=True)

    h = SpoutHarness(Asker)
    h.next_tuple()
    assert isinstance(h.component.result, list) and len(h.component.result) == 1


def test_base_spout_next_tuple_and_bolt_process_are_abstract() -> None:
    class Bare(Spout):
        pass

    with pytest.raises(NotImplementedError):
        SpoutHarness(Bare).next_tuple()

    class BareBolt(Bolt):
        pass

    h = BoltHarness(BareBolt)
    with pytest.raises(NotImplementedError):
        h.process(["x"])
    assert h.failed == h.inputs


def test_a_tickless_batching_bolt_that_carries_on_fails_the_batch_and_keeps_its_timer() -> None:
    class CarryOnTickless(Tickless):
        exit_on_exception = False

        def process_batch(self, key: Any, tups: list[Tuple]) -> None:
            if any(t.values[0] == "boom" for t in tups):
                raise Boom("batch")
            super().process_batch(key, tups)

    h = BoltHarness(CarryOnTickless)
    bolt = h.component
    boom = h.process(["boom"])
    h.flush_batches()  # no raise
    assert h.failed == [boom] and len(h.errors) == 1 and dict(bolt._batches) == {None: []}
    h.process([1])
    h.flush_batches()
    assert bolt.flushed == [[1]] and h.acked == [h.inputs[-1]]


def test_a_spout_with_exit_on_exception_off_reports_and_goes_on() -> None:
    class Flaky(Spout):
        outputs = ["n"]
        exit_on_exception = False

        def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
            self.n = 0

        def next_tuple(self) -> None:
            self.n += 1
            if self.n == 2:
                raise Boom("next")
            self.emit([self.n], tup_id=self.n)

        def ack(self, tup_id: Any) -> None:
            raise Boom("ack")

    h = SpoutHarness(Flaky)
    assert [e.values for e in h.next_tuple(3)] == [[1], [3]]
    h.ack(1)
    assert [str(exc) for exc, tup in h.errors] == ["next", "ack"]
    assert all(tup is None for _, tup in h.errors)

    class Strict(Flaky):
        exit_on_exception = True

    with pytest.raises(Boom):
        SpoutHarness(Strict).next_tuple(2)


class Reliable(ReliableSpout):
    outputs = [Stream(["n"]), Stream(["n"], "other")]

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.n = 0

    def next_tuple(self) -> None:
        self.n += 1
        self.emit([self.n], tup_id=self.n, stream="other" if self.n == 2 else None)


def test_reliable_spout_re_emits_a_failed_tuple_up_to_max_fails_then_gives_up() -> None:
    h = SpoutHarness(Reliable)
    h.next_tuple()
    assert Reliable.max_fails == 3
    for attempt in range(1, 4):
        h.fail(1)
        assert len(h.emits) == 1 + attempt
        assert (h.emits[-1].values, h.emits[-1].tup_id, h.emits[-1].stream) == ([1], 1, "default")
    h.fail(1)  # the 4th failure: gives up
    assert len(h.emits) == 4
    assert 1 not in h.component.unacked_tuples and 1 not in h.component.failed_tuples
    h.fail(1)  # unknown from now on
    assert len(h.emits) == 4


def test_reliable_spout_acks_through_its_own_ack_after_max_fails_as_pystorm(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """pystorm: past the retry limit the id is logged and `self.ack(tup_id)` is
    called, so an overridden ack (committing an offset, say) runs for it."""
    committed = []

    class Committing(Reliable):
        def ack(self, tup_id: Any) -> None:
            super().ack(tup_id)
            committed.append(tup_id)

    h = SpoutHarness(Committing)
    h.next_tuple()
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            h.fail(1)
        assert committed == [] and "retry limit" not in caplog.text
        h.fail(1)
    assert committed == [1]
    assert "Acking tuple ID 1 after it exceeded retry limit (3)" in caplog.text
    assert 1 not in h.component.unacked_tuples and 1 not in h.component.failed_tuples
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_reliable_spout_logs_an_error_for_an_unknown_id(caplog: pytest.LogCaptureFixture) -> None:
    h = SpoutHarness(Reliable)
    h.next_tuple()
    with caplog.at_level(logging.INFO):
        h.ack(1)
        h.ack(1)
        h.fail(7)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == ["Received ack for unknown tuple ID: 1", "Received fail for unknown tuple ID: 7"]
    assert len(h.emits) == 1


def test_reliable_spout_replays_through_its_own_emit_with_the_saved_arguments() -> None:
    emitted = []

    class Watching(Reliable):
        def emit(self, tup: Any, tup_id: Any = None, stream: str | None = None,
                 direct_task: int | None = None, need_task_ids: bool = False) -> Any:
            emitted.append((list(tup), tup_id, stream, need_task_ids))
            return super().emit(tup, tup_id, stream, direct_task, need_task_ids)

    h = SpoutHarness(Watching)
    h.next_tuple(2)
    h.fail(2)
    assert emitted[-1] == ([2], 2, "other", False)
    assert h.component.unacked_tuples[2] == ([2], "other", None, False)  # pystorm's layout
    assert h.component.failed_tuples[2] == 1


def test_reliable_spout_re_emits_on_the_original_stream() -> None:
    h = SpoutHarness(Reliable)
    h.next_tuple(2)
    h.fail(2)
    assert (h.emits[-1].values, h.emits[-1].tup_id, h.emits[-1].stream) == ([2], 2, "other")


def test_reliable_spout_max_fails_is_configurable() -> None:
    class Once(Reliable):
        max_fails = 1

    h = SpoutHarness(Once)
    h.next_tuple()
    h.fail(1)
    h.fail(1)
    h.fail(1)
    assert len(h.emits) == 2


def test_reliable_spout_forgets_acked_tuples() -> None:
    h = SpoutHarness(Reliable)
    h.next_tuple(2)
    h.fail(1)
    h.ack(1)
    assert 1 not in h.component.unacked_tuples and 1 not in h.component.failed_tuples
    assert 2 in h.component.unacked_tuples
    before = len(h.emits)
    h.fail(1)
    assert len(h.emits) == before


def test_reliable_spout_emit_without_tup_id_raises() -> None:
    class NoId(ReliableSpout):
        outputs = ["n"]

        def next_tuple(self) -> None:
            self.emit([1])

    h = SpoutHarness(NoId)
    with pytest.raises(ValueError, match="tup_id"):
        h.next_tuple()
    assert h.emits == [] and h.component.unacked_tuples == {}


# -- lifecycle and helpers -----------------------------------------------------------------


def test_initialize_receives_conf_and_context() -> None:
    got: dict[str, Any] = {}

    class Init(Bolt):
        outputs = ["x"]

        def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
            got["conf"] = storm_conf
            got["context"] = context
            got["name"] = self.component_name
            got["task"] = self.task_id
            # pystorm's instance attributes are set before initialize()
            got["pystorm"] = (self.storm_conf is storm_conf, self.context is context,
                              self.topology_name, self.debug, self.pid)

    BoltHarness(Init, conf={"my.key": 5, "topology.name": "wc", "topology.debug": True},
                name="init_bolt", task=9)
    assert got["pystorm"] == (True, True, "wc", True, os.getpid())
    assert got["conf"]["my.key"] == 5
    assert "topology.message.timeout.secs" in got["conf"]  # defaults included
    assert got["context"]["taskid"] == 9
    assert got["context"]["componentid"] == "init_bolt"
    assert got["context"]["task->component"] == {"9": "init_bolt"}
    assert (got["name"], got["task"]) == ("init_bolt", 9)


def test_is_tick_and_is_heartbeat_are_pystorms_static_methods() -> None:
    tick = Tuple(None, "__system", "__tick", -1, (1,))
    word = Tuple(None, "split", "default", 3, ("a",))
    assert Bolt.is_tick(tick) and not Bolt.is_tick(word)
    assert not Bolt.is_heartbeat(tick) and not Spout.is_heartbeat(word)  # none here


def test_raise_exception_records_the_error_without_raising() -> None:
    class Reporter(Bolt):
        outputs = ["x"]

        def process(self, tup: Tuple) -> None:
            self.raise_exception(Boom("reported"), tup)

    h = BoltHarness(Reporter)
    tup = h.process(["a"])
    assert len(h.errors) == 1
    exc, where = h.errors[0]
    assert isinstance(exc, Boom) and str(exc) == "reported" and where is tup
    assert h.acked == [tup]


def test_spout_activate_called_by_harness() -> None:
    class Act(Spout):
        outputs = ["x"]
        activated = 0

        def activate(self) -> None:
            self.activated += 1

    assert SpoutHarness(Act).component.activated == 1


def test_component_without_collector_refuses_to_emit() -> None:
    # an error that says what to use, not an assertion (python -O skips those)
    said = "is not running in a topology: emit, ack, fail and raise_exception work in a worker"
    with pytest.raises(RuntimeError, match=f"SplitBolt {said}"):
        SplitBolt().emit(["x"])
    with pytest.raises(RuntimeError, match=f"CountSpout {said}"):
        CountSpout().emit([1])
    with pytest.raises(RuntimeError, match="storm_zmq.testing.BoltHarness, SpoutHarness"):
        SplitBolt().ack(None)


def test_log_uses_the_component_logger(caplog: pytest.LogCaptureFixture) -> None:
    bolt = SplitBolt(name="splitter")
    with caplog.at_level("DEBUG", logger="storm_zmq.component.splitter"):
        bolt.log("hello")
        bolt.log("careful", level="warning")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "hello"), ("WARNING", "careful")
    ]


def test_log_takes_pystorm_level_names_and_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    # pystorm's names, any case; an unknown level is info (pystorm's fallback).
    bolt = SplitBolt(name="leveled")
    with caplog.at_level(1, logger="storm_zmq.component.leveled"):
        for level in ("trace", "DEBUG", "Info", "warn", "WARNING", "error", "critical",
                      "verbose", "", None, logging.ERROR, 3.5):
            bolt.log(f"at {level!r}", level=level)  # type: ignore[arg-type]
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (5, "at 'trace'"), (logging.DEBUG, "at 'DEBUG'"), (logging.INFO, "at 'Info'"),
        (logging.WARNING, "at 'warn'"), (logging.WARNING, "at 'WARNING'"),
        (logging.ERROR, "at 'error'"), (logging.CRITICAL, "at 'critical'"),
        (logging.INFO, "at 'verbose'"), (logging.INFO, "at ''"), (logging.INFO, "at None"),
        (logging.ERROR, "at 40"), (logging.INFO, "at 3.5"),
    ]
    assert caplog.records[0].levelname == "TRACE"


@pytest.mark.parametrize(("conf", "level"), [
    ({}, logging.NOTSET),  # the worker's level (info) applies
    ({"pystorm.log.level": "debug"}, logging.DEBUG),
    ({"pystorm.log.level": "WARNING"}, logging.WARNING),
    ({"pystorm.log.level": "warning", "topology.debug": True}, logging.DEBUG),
])
def test_pystorm_log_level_and_topology_debug_set_the_component_loggers_level(
        conf: dict[str, Any], level: int) -> None:
    name = f"leveled-{len(conf)}-{conf.get('pystorm.log.level')}"
    logger = logging.getLogger(f"storm_zmq.component.{name}")
    try:
        harness = BoltHarness(SplitBolt, conf=conf, name=name)
        assert harness.component.logger is logger and logger.level == level
    finally:
        logger.setLevel(logging.NOTSET)


def test_trace_is_below_debug(caplog: pytest.LogCaptureFixture) -> None:
    bolt = SplitBolt(name="tracer")
    with caplog.at_level("DEBUG", logger="storm_zmq.component.tracer"):
        bolt.log("hidden", level="trace")
        bolt.log("shown", level="debug")
    assert [r.getMessage() for r in caplog.records] == ["shown"]


def test_spec_builds_component_specs() -> None:
    s = CountSpout.spec(name="s", par=2, num_tasks=4)
    b = SplitBolt.spec(inputs=[s], par=3)
    assert isinstance(s, ComponentSpec) and s.kind == "spout"
    assert (s.name, s.par, s.num_tasks) == ("s", 2, 4)
    assert b.kind == "bolt" and b.par == 3 and b.num_tasks == 3
    assert list(b.outputs) == ["default"] and b.outputs["default"].fields == ("word",)
