"""A task's collector (storm_zmq.runtime.collector) through real executors of one
worker, driven by hand in one thread: what `emit`, `ack`, `fail` and `report_error`
do with what a component gives them, and what they say about its mistakes."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from storm_zmq import Bolt
from storm_zmq.component import Tuple
from storm_zmq.runtime.acking import ACKER_ACK_STREAM_ID, ACKER_FAIL_STREAM_ID
from storm_zmq.runtime.assignment import ACKER
from storm_zmq.runtime.executor import new_executor
from storm_zmq.runtime.serialization import TupleId
from storm_zmq.runtime.spout_executor import SpoutExecutor
from tests.runtime.test_executor import (
    GROUPINGS,
    a_sentence_at_the_split,
    built_executors,
    one_worker,
    sentence,
    taken,
    whole_word_count,
    word_tuples,
)
from tests.runtime.wordcount_state import word_count_state


def test_a_bolt_gets_its_collectors_emit_and_ack_unless_it_overrides_them() -> None:
    _, executors = one_worker(acking=False)
    split = executors["split_bolt"]
    (task, component), = split.components.items()
    assert component.emit.__self__ is component._storm_zmq_collector  # bound straight to the collector
    assert component.ack.__self__ is component._storm_zmq_collector

    calls = []

    class Overriding(Bolt):
        outputs = ["word"]

        def emit(self, tup, *args: Any, **kwargs: Any) -> Any:  # type: ignore[no-untyped-def]
            calls.append(list(tup))
            return super().emit(tup, *args, **kwargs)

        def process(self, tup: Tuple) -> None:
            self.emit([tup.values[0]])

    collector = component._storm_zmq_collector
    bolt = Overriding(collector=collector, name="split_bolt", task=task)
    collector.bind(bolt)
    assert bolt.emit.__func__ is Overriding.emit  # an override is kept ...
    assert bolt.ack.__self__ is collector  # (ack is not overridden: bound)
    bolt._run_process(Tuple(None, "sentence_spout", "default", 1, ("hello",)))
    assert calls == [["hello"]]  # ... and called
    assert [t.values for _, t in split._out_local[next(iter(split._out_local))]] == [("hello",)]

    class SetsItsOwn(Bolt):
        outputs = ["word"]

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.emit = lambda *a, **k: calls.append("own")  # type: ignore[method-assign]

    own = SetsItsOwn(collector=collector, name="split_bolt", task=task)
    collector.bind(own)
    own.emit(["x"])
    assert calls[-1] == "own"  # an emit the bolt set on itself is not replaced


def test_the_bound_emit_takes_pystorms_names_and_the_default_stream_spellings() -> None:
    state, executors = one_worker(acking=False)
    split, count = executors["split_bolt"], executors["count_bolt"]
    (component,) = split.components.values()
    assert component.emit(tup=["a"]) is None
    assert component.emit(["b"], stream="default", need_task_ids=True) == list(count.assignment.tasks)
    component.emit(["c"], stream="")  # as in the test harness: "" is the default stream
    split.flush()
    assert [t.values.word for _, t in taken(state, count.index)] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="'nope'"):
        component.emit(["d"], stream="nope")
    component.emit(component._storm_zmq_collector._default_route.values_cls("e"))  # a namedtuple is a tuple
    with pytest.raises(TypeError, match="component 'split_bolt' emitted a str: a tuple's values"):
        component.emit("f")
    with pytest.raises(ValueError, match="component 'split_bolt' emitted 2 values on stream "
                                         "'default', which has 1 fields \\['word'\\]"):
        component.emit(["g", "h"])


def test_an_emit_on_the_default_stream_a_component_does_not_declare_names_it() -> None:
    _, executors = one_worker(acking=False)
    (count,) = executors["count_bolt"].components.values()
    count._storm_zmq_collector._default_route = None  # as for a component whose outputs have no default
    with pytest.raises(ValueError, match="emitted on stream 'default', which it does not declare"):
        count.emit(["w", 1])


def test_a_component_that_declares_no_streams_has_its_emits_dropped_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state, executors = one_worker(acking=True)
    (spout_assignment,) = [ex for ex in state.assignment.executors
                           if ex.component == "sentence_spout"]
    spout_executor = SpoutExecutor(state, spout_assignment)
    spout_executor.build_components()
    (spout,) = spout_executor.components.values()
    (count,) = executors["count_bolt"].components.values()
    for component in (spout, count):  # as for a component without `outputs`
        component._storm_zmq_collector._routes, component._storm_zmq_collector._default_route = {}, None
    with caplog.at_level(logging.WARNING):
        assert count.emit(["w", 1]) is None
        assert count.emit(["w", 2], stream="other", need_task_ids=True) == []
        assert spout.emit(["a sentence"], tup_id="s1") is None
    said = [r.getMessage() for r in caplog.records if "declares no streams" in r.getMessage()]
    assert said == [
        f"component 'count_bolt' task {count.task_id} emitted on stream 'default', but it declares no streams "
        "(no `outputs`), so nothing can subscribe: dropped, as Storm 1.x dropped it",
        f"component 'sentence_spout' task {spout.task_id} emitted on stream 'default', but it declares no "
        "streams (no `outputs`), so nothing can subscribe: dropped, as Storm 1.x dropped it",
    ]
    assert spout_executor._deferred_acks == [(spout.task_id, "s1")]  # acked at once: nobody subscribes
    assert executors["count_bolt"].emitted == 0 and not executors["count_bolt"]._buffered
    with pytest.raises(TypeError, match="a bolt's emit\\(\\) takes no tup_id"):
        count._storm_zmq_collector.emit(["w"], tup_id=1)


def test_a_bolt_emit_with_a_tup_id_is_refused_as_bolt_emit_would() -> None:
    _, executors = one_worker(acking=False)
    (component,) = executors["split_bolt"].components.values()
    with pytest.raises(TypeError, match="takes no tup_id"):
        component.emit(["word"], tup_id=7)


@pytest.mark.parametrize("checks", [False, True], ids=["copied", "try.serialize"])
def test_an_emit_refused_for_a_value_no_worker_could_carry_is_not_counted_as_emitted(
        checks: bool) -> None:
    # (the spout: its stream is shuffled, so no fields grouping hashes the value first)
    state, _ = one_worker(acking=False)
    (assigned,) = [ex for ex in state.assignment.executors if ex.component == "sentence_spout"]
    spout = SpoutExecutor(state, assigned)
    spout.build_components()
    spout.checks_emits = checks  # topology.testing.always.try.serialize
    (component,) = spout.components.values()
    with pytest.raises(TypeError, match="sentence_spout"):
        component.emit([object()])
    component.emit(["fine"])
    assert spout.emitted == 1 and spout._buffered == 1


@pytest.mark.parametrize("by_id", [False, True], ids=["ack(tup)", "ack(tup.id)"])
def test_a_bolts_own_ack_of_what_auto_ack_acks_is_made_once_with_a_warning(
        by_id: bool, caplog: pytest.LogCaptureFixture) -> None:
    """Acked twice, the two XORs would cancel and the tree time out."""
    state, executors = one_worker(acking=True)
    count = executors["count_bolt"]
    (bolt,) = count.components.values()
    counted = bolt.process

    def process(tup: Tuple) -> None:
        counted(tup)
        bolt.ack(tup.id if by_id else tup)  # as if auto_ack were off

    bolt.process = process  # type: ignore[method-assign]
    assert bolt.auto_ack and count._acks_inline()
    with caplog.at_level("WARNING"):
        count._run_batch(word_tuples(state, count, ["a", "b"]))
    count.flush()
    acker = next(e.index for e in state.local_executors if e.component == ACKER)
    # one ack of each word's edge (root i + 1, edge 0x100 + i); twice, the XOR is 0
    assert sorted(t.values for _, t in taken(state, acker)) == [(1, 0x100), (2, 0x101)]
    assert count.acked == 2
    assert [r.getMessage() for r in caplog.records] == [
        f"task {bolt.task_id} acked its input in process() while auto_ack is on, which "
        "acks it afterwards: acked once, not twice (set auto_ack = False to ack yourself)"]


def test_a_second_ack_of_a_tuple_is_skipped_with_a_warning_and_a_non_id_is_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # auto_ack off: the second ack's XOR cancelled the first, and the tree timed out
    # in silence (pystorm's ShellBolt raised); ack("x") was counted and did nothing
    state, executors = whole_word_count({})
    spout, split = executors["sentence_spout"], executors["split_bolt"]
    split_component, sentence_tuple = a_sentence_at_the_split(state, executors)
    with caplog.at_level(logging.WARNING, logger="storm_zmq.runtime.executor"):
        split_component.ack(sentence_tuple)
        split_component.ack(sentence_tuple.id)
        split_component.ack(sentence_tuple)
    split.flush()
    ((_, completion),) = taken(state, spout.index)  # the tree completed: acked once
    assert completion.stream == ACKER_ACK_STREAM_ID and split.acked == 1
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "acked" in warning and "a second time: the second ack is skipped" in warning
    with pytest.raises(TypeError, match="ack of 'x', which is not an input Tuple or a tuple's id"):
        split_component.ack("x")
    with pytest.raises(TypeError, match="fail of 'x', which is not an input Tuple or a tuple's id"):
        split_component.fail("x")


@pytest.mark.parametrize("acking", [True, False], ids=["acking on", "acking off"])
def test_ack_fail_and_anchors_take_a_tuples_id_as_pystorms_do(acking: bool) -> None:
    """``self.emit(..., anchors=[tup.id])`` and ``self.ack(tup.id)``: the same tree
    as with the Tuple itself (an untracked input's id is None: nothing to track)."""
    state, executors = one_worker(acking=acking)
    split, count = executors["split_bolt"], executors["count_bolt"]
    (component,) = split.components.values()
    ids = [TupleId({7: 0x70}), TupleId({8: 0x80})] if acking else [None, None]
    by_tuple, by_id = (sentence(state, "x", tuple_id) for tuple_id in ids)
    component.emit(["a"], anchors=[by_tuple])
    component.emit(["a"], anchors=[by_id.id])
    component.emit(["b"], anchors=[by_tuple, by_id.id])  # anchors of both kinds
    component.ack(by_tuple)
    component.fail(by_id.id)
    split.flush()
    trees = [t.id and set(t.id.roots) for _, t in taken(state, count.index)]
    assert trees == ([{7}, {8}, {7, 8}] if acking else [None, None, None])
    assert (split.acked, split.failed) == (1, 1)
    if acking:
        acker = next(e.index for e in state.local_executors if e.component == ACKER)
        sent = sorted((t.stream, t.values[0]) for _, t in taken(state, acker))
        assert sent == sorted([(ACKER_ACK_STREAM_ID, 7), (ACKER_FAIL_STREAM_ID, 8)])


def test_a_direct_emit_to_a_task_that_does_not_subscribe_is_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Storm drops it (Task.getOutgoingTasks finds no grouping for that task) and goes
    # on; raising here stopped the worker. A tracked emit is acked at once, as with
    # no subscriber at all.
    state = word_count_state({"topology.acker.executors": None, "test.count": 10}, topology=GROUPINGS)
    executors = built_executors(state)
    spout = executors["direct"]
    (component,) = spout.components.values()
    chosen = state.assignment.component_tasks["chosen"]
    everyone = state.assignment.component_tasks["everyone"][0]
    acked: list[Any] = []
    component.ack = acked.append  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="storm_zmq.runtime.executor"):
        assert component.emit([1, "x"], direct_task=everyone, tup_id="a", need_task_ids=True) == []
        assert component.emit([2, "x"], direct_task=999, need_task_ids=True) == []
        assert component.emit([3, "x"], direct_task=chosen[0], need_task_ids=True) == [chosen[0]]
    spout.flush()
    delivered = [tup.values.id for ex in state.local_executors if ex.component == "chosen"
                 for _, tup in taken(state, ex.index)]
    assert delivered == [3]
    spout._round(may_emit=False)  # deferred acks run
    assert acked == ["a"]
    (warning,) = [r.getMessage() for r in caplog.records if "direct emit" in r.getMessage()]
    assert f"to task {everyone}, which does not subscribe to it (subscribed: {sorted(chosen)})" in warning
    for wrong in (str(chosen[0]), True, 3.0):
        with pytest.raises(TypeError, match="direct_task must be a task id"):
            component.emit([4, "x"], direct_task=wrong)

    class NumpyLikeInt:  # an integer of another type (numpy's int64) names a task too
        def __index__(self) -> int:
            return chosen[1]

    assert component.emit([5, "x"], direct_task=NumpyLikeInt(), need_task_ids=True) == [chosen[1]]


@pytest.mark.parametrize("conf_has_the_keys", [True, False], ids=["conf", "older record"])
def test_reported_errors_past_the_throttle_are_counted_not_written(
    conf_has_the_keys: bool, caplog: pytest.LogCaptureFixture,
) -> None:
    """Storm's error throttle in the collector: 5 (the default) written an interval,
    the rest counted and said once; a conf without the keys (a topology submitted by
    an older storm-zmq) gets the defaults."""
    state, executors = one_worker(acking=False)
    if not conf_has_the_keys:
        for key in ("topology.max.error.report.per.interval", "topology.error.throttle.interval.secs"):
            del state.conf[key]
    count = executors["count_bolt"]
    (task, bolt) = next(iter(count.components.items()))
    with caplog.at_level("ERROR"):
        for n in range(12):
            bolt.raise_exception(RuntimeError(f"boom{n}"))
    assert count.errors_reported == 12
    assert len(state.errors) == 5  # kept for stats and the UI
    messages = [r.getMessage() for r in caplog.records]
    assert sum("reported an error" in m for m in messages) == 5
    assert sum("more than 5 errors in 10 s" in m for m in messages) == 1
    assert "RuntimeError: boom4" in messages[4] and "boom5" not in "".join(messages)


def test_what_a_component_emits_after_it_stopped_is_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a component's own thread emitting after cleanup() returned: its tuples were
    # counted as emitted and dropped in silence (nothing flushes them any more)
    state, executors = whole_word_count({})
    split = executors["split_bolt"]
    (component,) = split.components.values()
    split.finish()
    with caplog.at_level(logging.WARNING, logger="storm_zmq.runtime.executor"):
        assert component.emit(["late"]) is None
        assert component.emit(["later"], need_task_ids=True) == []
        component.ack(sentence(state, "x"))
    assert split.emitted == 0 and split._buffered == 0
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning == (f"component 'split_bolt' task {split.assignment.tasks[0]}: an emit after "
                       "the component stopped (its cleanup() had returned): dropped; further "
                       "ones are not logged")


def test_a_components_own_config_turns_its_debug_logging_on_as_in_storm() -> None:
    """Storm reads topology.debug from a component's config on top of the topology's;
    the executor used to read the topology's alone."""
    state = word_count_state()
    count = state.definition.components["count_bolt"]
    count.config["topology.debug"] = True  # a private copy (definition.py)
    debug = {ex.component: new_executor(state, ex).debug for ex in state.local_executors}
    assert debug["count_bolt"] is True
    assert debug["split_bolt"] is False


def test_the_copy_at_the_emit_is_not_held_to_the_transports_frame_size() -> None:
    # A review: a list larger than a frame, for local targets only, failed at the
    # copy with "more than the transport carries to another worker"
    state, executors = one_worker(acking=False)
    split, count = executors["split_bolt"], executors["count_bolt"]
    split._max_payload = 64  # as if frames were tiny: every target here is local
    (component,) = split.components.values()
    big = ["w" * 10] * 50
    component.emit([big])
    big.clear()  # the emitter reuses its buffer
    split.flush()
    assert [t.values.word for _, t in taken(state, count.index)] == [["w" * 10] * 50]
