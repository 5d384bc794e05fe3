"""Executors driven by hand, in one thread: the per-tuple path (emit, grouping,
anchoring, acking) through the real collectors and queues of one worker."""

from __future__ import annotations

import logging
import math
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from storm_zmq import BatchingBolt, TicklessBatchingBolt
from storm_zmq.component import Tuple
from storm_zmq.runtime.acking import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    acker_index,
)
from storm_zmq.runtime.assignment import ACKER
from storm_zmq.runtime.bolt_executor import BoltExecutor
from storm_zmq.runtime.executor import OutputRefused, executor_label, new_executor
from storm_zmq.runtime.queues import QueueClosed
from storm_zmq.runtime.serialization import TupleId, decode_tuples
from storm_zmq.runtime.spout_executor import SpoutExecutor
from storm_zmq.runtime.worker import WorkerState
from tests.runtime.wordcount_state import word_count_state

ONE_EACH = {"sentence_spout": (1, 1), "split_bolt": (1, 1), "count_bolt": (1, 1)}


def one_worker(acking: bool) -> tuple[WorkerState, dict[str, BoltExecutor]]:
    """The word count assigned to one worker; its split and count bolts' executors,
    with their components built (one executor each)."""
    state = word_count_state({"topology.acker.executors": None if acking else 0}, ONE_EACH)
    executors = {}
    for ex in state.assignment.executors:
        if ex.component in ("split_bolt", "count_bolt"):
            executors[ex.component] = BoltExecutor(state, ex)
            executors[ex.component].build_components()
    return state, executors


def sentence(state: WorkerState, text: str, tuple_id: Any = None) -> Tuple:
    spout_task = state.assignment.component_tasks["sentence_spout"][0]
    values = state.values_class("sentence_spout", "default")(text)
    return Tuple(tuple_id, "sentence_spout", "default", spout_task, values)


def taken(state: WorkerState, executor: int) -> list[tuple[int, Any]]:
    """Everything queued for executor index `executor`, as (task, tuple) pairs."""
    return [item for batch in state.queues[executor].get_all(timeout=0) for item in batch]


def test_words_reach_the_count_task_of_their_field_and_are_acked() -> None:
    state, executors = one_worker(acking=False)
    split, count = executors["split_bolt"], executors["count_bolt"]
    split._run_batch([(split.assignment.tasks[0], sentence(state, "the cow jumped over the moon"))])
    split.flush()
    words = taken(state, count.index)
    assert [(task, tup.values.word) for task, tup in words] == [
        (count.assignment.tasks[0], w) for w in ["the", "cow", "jumped", "over", "the", "moon"]]
    assert all(tup.id is None and tup.component == "split_bolt" for _, tup in words)
    count._run_batch(words)
    (counter,) = [c.counts for c in count.components.values()]
    assert counter["the"] == 2
    assert (split.emitted, split.executed, split.acked) == (6, 1, 1)
    assert (count.emitted, count.executed, count.acked, count.transferred) == (6, 6, 6, 0)


def test_a_components_own_thread_emits_through_the_executors_queue_in_its_thread(
        caplog: pytest.LogCaptureFixture) -> None:
    """An emit from another thread touches none of the executor's buffers (a flush
    swapping them lost such emits): it is queued on the executor's own input and
    made there, in order. A mistake in it is the task's reported error (the thread
    has nobody to tell); an emit that wants task ids waits for them."""
    state, executors = one_worker(acking=False)
    split, count = executors["split_bolt"], executors["count_bolt"]
    (bolt,) = split.components.values()

    def from_thread() -> None:
        bolt.emit(["dog"])
        bolt.emit(["too", "many"])  # reported, not raised in this thread
        bolt.emit(["cat"])

    thread = threading.Thread(target=from_thread, name="own-thread")
    thread.start()
    thread.join()
    assert split.unflushed == 0 and split.emitted == 0 and len(split.incoming) == 3
    split._run_input(split.incoming.get_all(timeout=0))
    assert [tup.values.word for _, tup in taken(state, count.index)] == ["dog", "cat"]
    assert split.errors_reported == 1
    assert "in a call from thread 'own-thread'" in caplog.text and "emitted 2 values" in caplog.text

    answer: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: answer.update(ids=bolt.emit(["owl"], need_task_ids=True)))
    thread.start()
    deadline = time.monotonic() + 10
    while not len(split.incoming) and time.monotonic() < deadline:
        time.sleep(0.01)  # the other thread's put: nothing to wait on from here
    assert thread.is_alive(), "it waits for the executor to make the emit"
    split._run_input(split.incoming.get_all(timeout=0))
    thread.join(10)
    assert answer["ids"] == list(count.assignment.tasks)


def test_a_components_thread_waits_for_room_in_a_full_queue_and_says_so(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The calls queue on the executor's bounded input: a thread waits while it is
    full (memory stays bounded), and says so after a while, since an executor that
    waits in its own code for that thread would wait for ever."""
    import storm_zmq.runtime.executor as executor_module

    monkeypatch.setattr(executor_module, "THREAD_CALL_PATIENCE", 0.05)
    state, executors = one_worker(acking=False)
    split = executors["split_bolt"]
    (bolt,) = split.components.values()
    filler = sentence(state, "the cow")
    split.incoming.put([(split.assignment.tasks[0], filler)] * split.incoming.capacity)
    thread = threading.Thread(target=lambda: bolt.emit(["dog"]), name="own-thread")
    thread.start()
    deadline = time.monotonic() + 10
    while "has waited 0 s for room" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.01)  # the thread's warning: nothing to wait on from here
    assert "thread 'own-thread' has waited 0 s for room" in caplog.text
    assert thread.is_alive() and len(split.incoming) == split.incoming.capacity
    assert len(split.incoming.get_all(timeout=0)) == 1  # taken: room, and the call goes in
    thread.join(10)
    assert not thread.is_alive() and len(split.incoming) == 1


def test_with_acking_the_bound_emit_anchors_to_the_input_and_acks_fold_per_root() -> None:
    state, executors = one_worker(acking=True)
    split, count = executors["split_bolt"], executors["count_bolt"]
    root, edge = 0x1234, 0x5678
    source = TupleId({root: edge})
    split._run_batch([(split.assignment.tasks[0], sentence(state, "a b c", source))])
    split.flush()
    words = taken(state, count.index)
    assert len(words) == 3
    word_edges = [tup.id.roots[root] for _, tup in words]
    assert all(type(tup.id) is TupleId and set(tup.id.roots) == {root} for _, tup in words)
    # the split's ack of its input carries the three new edges: edge ^ e1 ^ e2 ^ e3
    acker = next(e.index for e in state.local_executors if e.component == ACKER)
    assert [(t.stream, t.values) for _, t in taken(state, acker)] == [
        (ACKER_ACK_STREAM_ID, (root, edge ^ word_edges[0] ^ word_edges[1] ^ word_edges[2]))]
    count._run_batch(words)
    count.flush()
    # the count bolt's three acks fold into one message for the root
    assert [(t.stream, t.values) for _, t in taken(state, acker)] == [
        (ACKER_ACK_STREAM_ID, (root, word_edges[0] ^ word_edges[1] ^ word_edges[2]))]


def word_tuples(state: WorkerState, count: BoltExecutor, words: list[str]) -> list[tuple[int, Tuple]]:
    """One input pair for the count bolt per word, each the only tuple of its own
    tree (root i + 1, edge 0x100 + i)."""
    values = state.values_class("split_bolt", "default")
    return [(count.assignment.tasks[0],
             Tuple(TupleId({i + 1: 0x100 + i}), "split_bolt", "default", 99, values(word)))
            for i, word in enumerate(words)]


@pytest.mark.parametrize("inline", [True, False], ids=["acks inline", "run_process each"])
@pytest.mark.parametrize("acking", [False, True], ids=["acking off", "acking on"])
def test_a_raising_process_fails_its_input_and_acks_only_what_ran_either_way(
    acking: bool, inline: bool,
) -> None:
    """`_run_batch`'s inline loop against `Bolt._run_process` one tuple at a time:
    the same counts, acks, fail and blame when `process` raises mid-batch."""
    state, executors = one_worker(acking=acking)
    count = executors["count_bolt"]
    (task, bolt) = next(iter(count.components.items()))
    assert count._acks_inline()  # the word count's bolt keeps pystorm's defaults
    if not inline:
        count._acks_inline = lambda: False  # type: ignore[method-assign]
    word_count = bolt.process

    def process(tup: Tuple) -> None:
        if acking:  # with acking off, no emit reads the auto-anchor
            assert bolt._current_tups == [tup]
        if tup.values.word == "boom":
            raise RuntimeError("boom")
        word_count(tup)

    bolt.process = process  # type: ignore[method-assign]
    with pytest.raises(RuntimeError) as raised:
        count._run_batch(word_tuples(state, count, ["a", "boom", "c"]))
    assert raised.value._storm_task == task  # type: ignore[attr-defined]
    assert (count.executed, count.acked, count.failed) == (1, 1, 1)
    assert bolt._current_tups is None and bolt.counts == Counter({"a": 1})
    count.flush()
    if acking:
        acker = next(e.index for e in state.local_executors if e.component == ACKER)
        assert sorted((t.stream, tuple(t.values)) for _, t in taken(state, acker)) == [
            (ACKER_ACK_STREAM_ID, (1, 0x100)), (ACKER_FAIL_STREAM_ID, (2,))]


@pytest.mark.parametrize("inline", [True, False], ids=["acks inline", "run_process each"])
@pytest.mark.parametrize("acking", [False, True], ids=["acking off", "acking on"])
def test_a_bolt_with_exit_on_exception_off_reports_fails_and_runs_the_rest_of_the_batch(
    acking: bool, inline: bool, caplog: pytest.LogCaptureFixture,
) -> None:
    """pystorm's exit_on_exception = False, on both paths: each raise is reported
    (logged with component, task and traceback; counted in errors_reported and the
    worker's errors), its input failed, and the batch goes on."""
    state, executors = one_worker(acking=acking)
    count = executors["count_bolt"]
    (task, bolt) = next(iter(count.components.items()))
    bolt.exit_on_exception = False
    assert count._acks_inline()  # the setting leaves the inline path alone
    if not inline:
        count._acks_inline = lambda: False  # type: ignore[method-assign]
    word_count = bolt.process

    def process(tup: Tuple) -> None:
        if tup.values.word.startswith("boom"):
            raise RuntimeError(tup.values.word)
        word_count(tup)

    bolt.process = process  # type: ignore[method-assign]
    with caplog.at_level("ERROR"):
        count._run_batch(word_tuples(state, count, ["a", "boom1", "c", "boom2", "a"]))
    assert (count.executed, count.acked, count.failed) == (5, 3, 2)
    assert bolt._current_tups is None and bolt.counts == Counter({"a": 2, "c": 1})
    assert count.errors_reported == 2
    assert [(e["component"], e["task"]) for e in state.errors] == [("count_bolt", task)] * 2
    assert "RuntimeError: boom2" in state.errors[1]["text"] and "Traceback" in state.errors[1]["text"]
    reports = [r.getMessage() for r in caplog.records if "reported an error" in r.getMessage()]
    assert len(reports) == 2 and f"'count_bolt' task {task}" in reports[0]
    assert "RuntimeError: boom1" in reports[0]
    count.flush()
    if acking:
        acker = next(e.index for e in state.local_executors if e.component == ACKER)
        assert sorted((t.stream, tuple(t.values)) for _, t in taken(state, acker)) == [
            (ACKER_ACK_STREAM_ID, (1, 0x100)), (ACKER_ACK_STREAM_ID, (3, 0x102)),
            (ACKER_ACK_STREAM_ID, (5, 0x104)),
            (ACKER_FAIL_STREAM_ID, (2,)), (ACKER_FAIL_STREAM_ID, (4,))]


@pytest.mark.parametrize("inline", [True, False], ids=["acks inline", "run_process each"])
def test_exit_on_exception_off_does_not_swallow_a_base_exception_or_a_closed_queue(
    inline: bool,
) -> None:
    state, executors = one_worker(acking=False)
    count = executors["count_bolt"]
    (task, bolt) = next(iter(count.components.items()))
    bolt.exit_on_exception = False
    if not inline:
        count._acks_inline = lambda: False  # type: ignore[method-assign]

    class Interrupt(BaseException):
        pass

    for exc in (Interrupt(), QueueClosed()):
        def process(tup: Tuple, exc: BaseException = exc) -> None:
            raise exc

        bolt.process = process  # type: ignore[method-assign]
        with pytest.raises(type(exc)) as raised:
            count._run_batch(word_tuples(state, count, ["a", "b"]))
        assert raised.value._storm_task == task  # type: ignore[attr-defined]
    assert count.errors_reported == 0 and count.failed == 2


class Batches(BatchingBolt):
    outputs = ["word", "count"]  # the count bolt's, whose collector it gets
    exit_on_exception = False

    def group_key(self, tup: Tuple) -> Any:
        return tup.values.word

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        if key == "boom":
            raise RuntimeError("batch")
        self.emit([key, len(tups)])


class TicklessBatches(TicklessBatchingBolt, Batches):
    secs_between_batches = 0.0


@pytest.mark.parametrize("bolt_cls", [Batches, TicklessBatches])
def test_a_batching_bolt_with_exit_on_exception_off_goes_on_after_a_batch_raised(
    bolt_cls: type[BatchingBolt],
) -> None:
    """A batch that raises on a tick (or a tickless bolt's timer) in the executor:
    reported, its tuples failed; the batch before it was acked, the one after it
    goes next time, and the executor goes on."""
    state, executors = one_worker(acking=False)
    count = executors["count_bolt"]
    (task, old) = next(iter(count.components.items()))
    bolt = bolt_cls(collector=old._storm_zmq_collector, name="count_bolt", task=task)
    old._storm_zmq_collector.bind(bolt)
    count.components[task] = bolt
    count._tickless = [(task, bolt)] if bolt_cls is TicklessBatches else []
    count._tick_secs = 1
    emitted_after = []
    inputs = [word_tuples(state, count, ["a", "boom", "c"])]
    # a BatchingBolt's first batches go on its second tick (pystorm), a tickless
    # bolt's (secs_between_batches = 0) on every round
    for _ in range(3 if bolt_cls is Batches else 2):
        count._next_tick = 0.0
        count._run_input(inputs)
        inputs = []
        emitted_after.append(count.emitted)
    assert emitted_after[-2:] == [1, 2]  # "a", then "c" the round after "boom" raised
    assert (count.executed, count.acked, count.failed, count.errors_reported) == (3, 2, 1, 1)
    assert "batch of key 'boom' (1 tuples)" in state.errors[0]["text"]


@pytest.mark.parametrize("bolt_cls", [Batches, TicklessBatches])
def test_the_time_of_a_batching_bolts_batches_counts_as_busy(bolt_cls: type[BatchingBolt]) -> None:
    """Capacity and execute latency come from busy_secs: a BatchingBolt at 60 % read
    0.001 and 0.01 ms, its process_batch (on ticks, or between inputs) not counted."""
    state, executors = one_worker(acking=False)
    count = executors["count_bolt"]
    (task, old) = next(iter(count.components.items()))

    class Slow(bolt_cls):  # type: ignore[valid-type,misc]
        def process_batch(self, key: Any, tups: list[Tuple]) -> None:
            time.sleep(0.05)  # the work whose time is measured, not a synchronisation

    bolt = Slow(collector=old._storm_zmq_collector, name="count_bolt", task=task)
    old._storm_zmq_collector.bind(bolt)
    count.components[task] = bolt
    count._tickless = [(task, bolt)] if bolt_cls is TicklessBatches else []
    count._tick_secs = 1
    inputs = [word_tuples(state, count, ["a", "b"])]
    for _ in range(3 if bolt_cls is Batches else 2):
        count._next_tick = 0.0
        count._run_input(inputs)
        inputs = []
    assert count.executed == 2
    assert count.busy_secs >= 0.1, count.busy_secs  # two batches of 50 ms


def test_a_bolt_that_acks_its_own_way_runs_each_tuple_through_run_process() -> None:
    """What `_run_batch` checks, every batch, before doing the ack inline."""
    state, executors = one_worker(acking=False)
    count = executors["count_bolt"]
    (bolt,) = count.components.values()
    bolt.auto_ack = False  # set by the bolt at any time: the next batch sees it
    count._run_batch(word_tuples(state, count, ["a", "b"]))
    assert (count.executed, count.acked) == (2, 0)
    assert not count._acks_inline()
    bolt.auto_ack = True
    count._run_batch(word_tuples(state, count, ["c"]))
    assert (count.executed, count.acked) == (3, 1)

    acks = []

    class AcksLoudly(type(bolt)):  # type: ignore[misc]
        def ack(self, tup: Tuple) -> None:
            acks.append(tup.values.word)
            super().ack(tup)

    loud = AcksLoudly(collector=bolt._storm_zmq_collector, name="count_bolt", task=bolt.task_id)
    bolt._storm_zmq_collector.bind(loud)
    loud.initialize({}, None)
    count.components[bolt.task_id] = loud
    assert not count._acks_inline()
    count._run_batch(word_tuples(state, count, ["d", "e"]))
    assert acks == ["d", "e"] and count.acked == 1 + 2


@pytest.mark.parametrize("inline", [True, False], ids=["acks inline", "acks itself"])
def test_process_latency_takes_every_tuple_of_a_bolt_acked_inline_and_samples_the_rest(
    inline: bool,
) -> None:
    """A bolt acked as `process` returns is timed per batch, every tuple in the mean;
    one that acks itself has one tuple in `_sample_every` followed to its ack."""
    state, executors = one_worker(acking=False)
    count = executors["count_bolt"]
    (bolt,) = count.components.values()
    if not inline:
        bolt.auto_ack = False
        word_count = bolt.process
        bolt.process = lambda tup: (word_count(tup), bolt.ack(tup))  # type: ignore[method-assign]
    count._sample_every = 20
    count._run_input([word_tuples(state, count, [f"w{i}" for i in range(200)])])
    assert count.executed == count.acked == 200
    assert count.process_samples == (200 if inline else 200 // 20)
    assert count.process_ms_total > 0 and not count._process_samples  # none left open


def test_acks_inline_survive_a_flush_that_an_emit_makes_mid_batch() -> None:
    """An emit that fills the output flushes and renews the folded acks: the inline
    ack of each input must land in the renewed ones, or its tree never completes."""
    state, executors = one_worker(acking=True)
    split = executors["split_bolt"]
    split._max_buffered = 2  # every second word flushes
    roots = {1: 0x11, 2: 0x22, 3: 0x33}
    split._run_batch([(split.assignment.tasks[0], sentence(state, "a b c", TupleId({root: edge})))
                      for root, edge in roots.items()])
    split.flush()
    acker = next(e.index for e in state.local_executors if e.component == ACKER)
    acked: dict[int, int] = {}
    for _, t in taken(state, acker):
        assert t.stream == ACKER_ACK_STREAM_ID
        acked[t.values[0]] = acked.get(t.values[0], 0) ^ t.values[1]
    words = taken(state, executors["count_bolt"].index)
    # each root's acks XOR to its edge and its three words' edges: the input's ack
    # reached the acker for every sentence
    for root, edge in roots.items():
        word_edges = [tup.id.roots[root] for _, tup in words if root in tup.id.roots]
        assert len(word_edges) == 3
        assert acked[root] == edge ^ word_edges[0] ^ word_edges[1] ^ word_edges[2]


def test_anchors_given_as_any_iterable_anchor_with_acking() -> None:
    state, executors = one_worker(acking=True)
    split, count = executors["split_bolt"], executors["count_bolt"]
    (component,) = split.components.values()
    source = sentence(state, "x", TupleId({7: 9}))
    for anchors in ([source], (source,), iter([source]), {source}):
        component.emit(["w"], anchors=anchors)
    split.flush()
    assert [set(t.id.roots) for _, t in taken(state, count.index)] == [{7}] * 4


@pytest.mark.parametrize("anchors", [
    lambda tup: [tup.values], lambda tup: [tup, 5], lambda tup: "abc"], ids=["values", "an int", "a str"])
def test_an_emit_anchored_to_what_is_no_tuple_is_refused(anchors: Any) -> None:
    # it went untracked in silence: a tuple failed downstream was never replayed
    state, executors = one_worker(acking=True)
    split, count = executors["split_bolt"], executors["count_bolt"]
    (component,) = split.components.values()
    source = sentence(state, "x", TupleId({7: 9}))
    with pytest.raises(TypeError, match="component 'split_bolt': emit anchored to .*, which is "
                                        "not an input Tuple or a tuple's id"):
        component.emit(["w"], anchors=anchors(source))
    untracked = sentence(state, "y")  # an untracked input's id is None: anchors to nothing
    component.emit(["w"], anchors=[untracked])
    component.emit(["w"], anchors=[untracked.id, source])
    split.flush()
    assert [t.id and set(t.id.roots) for _, t in taken(state, count.index)] == [None, {7}]


def test_a_tuple_auto_acked_inline_and_acked_again_later_is_acked_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a bolt that keeps its input and acks it after process() returned, with
    # auto_ack on: the second XOR cancelled the inline ack and the tree timed out
    state, executors = whole_word_count({})
    spout, split, count = (executors[c] for c in ("sentence_spout", "split_bolt", "count_bolt"))
    (spout_component,) = spout.components.values()
    (count_component,) = count.components.values()
    kept = []
    counted = count_component.process
    count_component.process = lambda tup: (kept.append(tup), counted(tup))  # type: ignore[method-assign]
    assert count._acks_inline()
    spout_component.emit(["a"], tup_id="s1")
    spout.flush()
    split._run_batch(taken(state, split.index))
    split.flush()
    count._run_batch(taken(state, count.index))
    with caplog.at_level(logging.WARNING, logger="storm_zmq.runtime.executor"):
        count_component.ack(kept[0])
    count.flush()
    ((_, completion),) = taken(state, spout.index)
    assert completion.stream == ACKER_ACK_STREAM_ID, "the tree completed"
    assert any("a second time" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("load_aware", [True, False])
def test_after_a_flush_the_spouts_shuffle_goes_around_a_busy_split_task(load_aware: bool) -> None:
    """Two split tasks in one worker; one has a full queue, then one is throttled by
    (what its worker would say for) another worker. Load-aware, the spout's next
    sentences go to the other task only; with topology.disable.loadaware.messaging,
    round-robin over both as before."""
    state = word_count_state(
        {"topology.acker.executors": 0, "topology.disable.loadaware.messaging": not load_aware},
        {**ONE_EACH, "split_bolt": (2, 2)},
    )
    assignment = state.assignment
    (spout_assignment,) = [ex for ex in assignment.executors if ex.component == "sentence_spout"]
    spout = SpoutExecutor(state, spout_assignment)
    spout.build_components()
    (component,) = spout.components.values()
    split_executors = [ex for ex in assignment.executors if ex.component == "split_bolt"]
    busy, idle = split_executors

    capacity = state.queues[busy.index].capacity
    state.queues[busy.index].put([(busy.tasks[0], None)] * (capacity - 1))  # room for one put
    spout.flush()  # nothing buffered: still the loads are looked at
    for _ in range(10):
        component.next_tuple()
    spout.flush()
    queued = {ex.index: [task for batch in state.queues[ex.index].get_all(timeout=0)
                         for task, tup in batch if tup is not None] for ex in split_executors}
    if load_aware:
        assert queued == {busy.index: [], idle.index: [idle.tasks[0]] * 10}
    else:
        assert sorted(map(len, queued.values())) == [5, 5]

    for ex in split_executors:  # their consumers finished what they took
        assert state.queues[ex.index].get_all(timeout=0) == []
    state.throttle.update(1, frozenset(idle.tasks), 0.0)  # as if another worker said so
    spout.flush()
    for _ in range(10):
        component.next_tuple()
    spout.flush()
    queued = {ex.index: [task for batch in state.queues[ex.index].get_all(timeout=0)
                         for task, tup in batch] for ex in split_executors}
    if load_aware:
        assert queued == {busy.index: [busy.tasks[0]] * 10, idle.index: []}
    else:
        assert sorted(map(len, queued.values())) == [5, 5]


# -- tuples for another worker ------------------------------------------------------------

SENTENCE = "the cow jumped over the moon and the dish ran away with the spoon"


def two_workers(
    max_payload: int | None = None, split_tasks: int = 1,
) -> tuple[WorkerState, BoltExecutor, WorkerState, BoltExecutor]:
    """A split executor and the count executor of the other worker, of the word
    count on two workers (acking off, two count tasks), with a transport that
    carries payloads of at most `max_payload` bytes: what crosses between them is
    a transfer queue's TaskMessages. The split executor runs `split_tasks` tasks."""
    par = {"sentence_spout": (1, 1), "split_bolt": (1, split_tasks), "count_bolt": (2, 2)}
    first = word_count_state({"topology.acker.executors": 0}, par, workers=2)
    states = [first, WorkerState(first.conf, first.definition, first.assignment, 1)]
    for state in states:
        state.max_payload, state.max_payload_setting = max_payload, "the.test.limit"
    (split_ex,) = [e for e in first.assignment.executors if e.component == "split_bolt"]
    (count_ex,) = [e for e in first.assignment.executors
                   if e.component == "count_bolt" and e.worker != split_ex.worker]
    split = BoltExecutor(states[split_ex.worker], split_ex)
    count = BoltExecutor(states[count_ex.worker], count_ex)
    split.build_components()
    count.build_components()
    return states[split_ex.worker], split, states[count_ex.worker], count


def split_and_flush(state: WorkerState, split: BoltExecutor, text: str = SENTENCE) -> list[Any]:
    split._run_batch([(split.assignment.tasks[0], sentence(state, text))])
    split.flush()
    return state.transfer.get_all(timeout=0)


def local_words(state: WorkerState) -> list[str]:
    """The words queued for the count executor of `state`'s own worker."""
    (local_count,) = [e.index for e in state.local_executors if e.component == "count_bolt"]
    return [tup.values.word for _, tup in taken(state, local_count)]


def test_a_remote_tasks_tuples_travel_as_one_payload_counted_as_its_tuples() -> None:
    state, split, _, count = two_workers()
    split._run_batch([(split.assignment.tasks[0], sentence(state, SENTENCE))])
    split.flush()
    local = local_words(state)
    remote = [w for w in SENTENCE.split() if w not in local]
    assert remote, "some words go to the other worker's count task"
    assert len(state.transfer) == len(remote), "the transfer queue counts tuples, not messages"
    (batch,) = state.transfer.get_all(timeout=0)
    (message,) = batch
    assert message.task == count.assignment.tasks[0] and batch.tuples == len(remote)
    source, stream, roots, values = decode_tuples(message.message)
    assert (source, stream, roots) == (split.assignment.tasks[0], "default", None)
    assert [v[0] for v in values] == remote, "in emit order"


def test_remote_payloads_reach_the_other_workers_bolt() -> None:
    state, split, _, count = two_workers()
    (batch,) = split_and_flush(state, split)
    local = local_words(state)
    remote = [w for w in SENTENCE.split() if w not in local]
    count._run_batch(count._tuples_of([(message.task, message.message) for message in batch]))
    (counter,) = [c.counts for c in count.components.values()]
    assert counter == Counter(remote)
    assert (count.executed, count.malformed) == (len(remote), 0)


def test_a_batch_larger_than_the_transport_carries_is_split_in_order() -> None:
    state, split, _, _ = two_workers(max_payload=40)
    (batch,) = split_and_flush(state, split)
    local = local_words(state)
    remote = [w for w in SENTENCE.split() if w not in local]
    assert len(batch) > 1 and all(len(m.message) <= 40 for m in batch)
    assert batch.tuples == len(remote)
    assert [v[0] for m in batch for v in decode_tuples(m.message)[3]] == remote


@pytest.mark.parametrize("kind", ["one tree each", "mixed"])
def test_a_tracked_run_larger_than_the_transport_carries_is_split_with_its_roots(kind: str) -> None:
    """Halving a payload cuts its roots where it cuts its values, in the pairs form
    (two ids a tuple) as in the map form: every tuple arrives in order, with its own
    ids."""
    state, split, _, count = two_workers(max_payload=60)
    (split_task,) = split.assignment.tasks
    remote = count.assignment.tasks[0]
    route = split.components[split_task]._storm_zmq_collector._default_route
    ids: list[Any] = [TupleId({100 + i: 5}) for i in range(30)]
    if kind == "mixed":  # untracked, one tree, two trees
        ids = [None if i % 3 == 0 else TupleId({100 + i: 5}) if i % 3 == 1
               else TupleId({100 + i: 5, 900 + i: 6}) for i in range(30)]
    for i, tuple_id in enumerate(ids):
        if tuple_id is None:
            split._deliver_untracked(split_task, route, (f"w{i:02d}",), [remote])
        else:
            split._deliver_anchored(split_task, route, (f"w{i:02d}",), [sentence(state, "x", tuple_id)],
                                    [remote])
    split.flush()
    messages = [m for batch in state.transfer.get_all(timeout=0) for m in batch]
    assert len(messages) > 2 and all(len(m.message) <= 60 for m in messages)
    tuples = count._tuples_of([(m.task, m.message) for m in messages])
    assert count.malformed == 0
    assert [tup.values.word for _, tup in tuples] == [f"w{i:02d}" for i in range(30)]
    for i, (_, tup) in enumerate(tuples):
        expected = ids[i]
        if expected is None:
            assert tup.id is None
        else:
            assert set(tup.id.roots) == set(expected.roots)


def test_an_anchored_emit_to_both_workers_loses_no_copy_when_the_buffer_fills_midway() -> None:
    """The auto-anchored per-word path buffers every target's copy before it checks
    the bound: a flush between two targets would renew the output it writes to."""
    state, split, _, count = two_workers()
    (split_task,) = split.assignment.tasks
    remote = count.assignment.tasks[0]
    (local,) = [t for t in state.assignment.component_tasks["count_bolt"] if t != remote]
    route = split.components[split_task]._storm_zmq_collector._default_route
    anchor = sentence(state, "a b", TupleId({7: 0x70}))
    split._max_buffered = 1  # the first copy fills the output
    split._deliver_anchored(split_task, route, ("w",), [anchor], [remote, local])
    assert split._buffered == 0  # flushed once, after both copies
    (local_count,) = [e.index for e in state.local_executors if e.component == "count_bolt"]
    ((_, queued),) = taken(state, local_count)
    ((message,),) = state.transfer.get_all(timeout=0)
    _, _, sent_roots, values = decode_tuples(message.message)
    assert (queued.values.word, values) == ("w", [["w"]])
    # the remote copy travels in the pairs form: its root, its edge
    sent_root, remote_edge = sent_roots
    local_edge = queued.id.roots[7]
    assert sent_root == 7
    assert anchor.id.ack_val == local_edge ^ remote_edge != 0


def test_one_tuple_larger_than_the_transport_carries_is_refused_by_its_executor() -> None:
    state, split, _, _ = two_workers(max_payload=10)
    split._run_batch([(split.assignment.tasks[0], sentence(state, "antidisestablishmentarianism"))])
    with pytest.raises(OutputRefused, match=r"TupleTooLarge: component 'split_bolt', stream 'default': a tuple of "
                       r"\d+ bytes serialized, .* \(10 bytes; raise the\.test\.limit"):
        split.flush()


def test_output_that_cannot_be_sent_kills_the_executor_blaming_its_task_after_the_rest_is_sent() -> None:
    """Found at a flush that runs inside another task's emit (a full buffer), the
    error names the task that emitted the bad tuple, gets past a component's
    `except Exception`, and what else was buffered still goes out."""
    state, split, _, count = two_workers(split_tasks=2)
    bad_task, good_task = split.assignment.tasks
    remote = count.assignment.tasks[0]
    split._remote(remote, bad_task, "default", None, (2**64,))  # msgpack carries < 2**64
    split._remote(remote, good_task, "default", None, ("fine",))
    split._max_buffered = 3  # the next emit flushes

    def swallowing_process(tup: Tuple) -> None:
        try:
            split.components[good_task].emit(["x"])
        except Exception:  # what a careless component does
            pass

    split.components[good_task].process = swallowing_process
    with pytest.raises(OutputRefused, match=r"SerializationError: component 'split_bolt', stream "
                       r"'default': value 0 of the tuple is the int 18446744073709551616, outside") as refused:
        split._run_batch([(good_task, sentence(state, "x"))])
    assert refused.value._storm_task == bad_task
    assert "topology.testing.always.try.serialize: true raises it at the emit" in str(refused.value)
    (batch,) = state.transfer.get_all(timeout=0)
    sent = [(decode_tuples(m.message)[0], decode_tuples(m.message)[3]) for m in batch]
    assert (good_task, [["fine"]]) in sent
    assert all(source != bad_task for source, _ in sent)


# -- acker messages applied by their sender's thread --------------------------------------


def built_executors(state: WorkerState) -> dict[str, Any]:
    """Every executor of `state`'s worker by component (one each here), made as the
    worker makes them (all before any is built) and with components initialized."""
    executors = {ex.component: new_executor(state, ex) for ex in state.local_executors}
    for executor in executors.values():
        executor.build_components()
    return executors


def whole_word_count(conf: dict[str, Any]) -> tuple[WorkerState, dict[str, Any]]:
    """The word count in one worker (one executor of each component, acking on)."""
    state = word_count_state({"topology.acker.executors": None, **conf}, ONE_EACH)
    return state, built_executors(state)


def a_sentence_at_the_split(state: WorkerState, executors: dict[str, Any]) -> tuple[Any, Tuple]:
    """The spout's tracked emit of "a b" (tup_id "s1"), flushed: the split bolt's
    component and the sentence tuple it got, to ack or fail by hand."""
    spout, split = executors["sentence_spout"], executors["split_bolt"]
    (spout_component,) = spout.components.values()
    (split_component,) = split.components.values()
    spout_component.emit(["a b"], tup_id="s1")
    spout.flush()
    ((_, sentence_tuple),) = taken(state, split.index)
    return split_component, sentence_tuple


def test_a_tree_is_acked_through_a_local_acker_without_its_queue_or_thread() -> None:
    state, executors = whole_word_count({})
    spout, split, count, acker = (executors[c] for c in ("sentence_spout", "split_bolt", "count_bolt", ACKER))
    (spout_task,) = spout.assignment.tasks
    (acker_task,) = acker.assignment.tasks
    (spout_component,) = spout.components.values()
    spout_component.emit(["a b c"], tup_id="s1")
    spout.flush()
    assert len(spout.pending) == 1
    split._run_batch(taken(state, split.index))
    split.flush()
    count._run_batch(taken(state, count.index))
    count.flush()
    # init, the split's ack, the count's three acks folded into one: three messages,
    # none of them through the acker's queue
    assert acker.executed == 3 and taken(state, acker.index) == []
    (completion,) = taken(state, spout.index)
    task, tup = completion
    assert (task, tup.component, tup.stream, tup.task) == (spout_task, ACKER, ACKER_ACK_STREAM_ID, acker_task)
    acked = []  # the completion names the tree's root: the spout acks the tuple of that root
    spout_component.ack = acked.append  # type: ignore[method-assign]
    spout._handle_batch([completion])
    assert acked == ["s1"] and len(spout.pending) == 0


def test_a_spout_with_exit_on_exception_off_goes_on_after_next_tuple_or_ack_raised() -> None:
    state, executors = whole_word_count({})
    spout, split, count = (executors[c] for c in ("sentence_spout", "split_bolt", "count_bolt"))
    (task, component) = next(iter(spout.components.items()))
    component.exit_on_exception = False
    emit = component.next_tuple

    def next_tuple() -> None:
        emit()
        raise RuntimeError("next")

    def ack(tup_id: Any) -> None:
        raise RuntimeError("ack")

    component.next_tuple = next_tuple  # type: ignore[method-assign]
    component.ack = ack  # type: ignore[method-assign]
    spout.active = True
    spout.batch_size = 1
    spout._round(may_emit=True)  # reported, not raised
    assert spout.emitted == 1 and len(spout.pending) == 1
    split._run_batch(taken(state, split.index))
    split.flush()
    count._run_batch(taken(state, count.index))
    count.flush()
    spout._handle_batch(taken(state, spout.index))  # the completion: ack raises
    assert len(spout.pending) == 0 and spout.acked == 1
    assert spout.errors_reported == 2
    assert [e["text"].splitlines()[-1] for e in state.errors] == [
        "RuntimeError: next", "RuntimeError: ack"]
    component.exit_on_exception = True  # pystorm's default: the worker dies of it
    with pytest.raises(RuntimeError, match="next") as raised:
        spout._round(may_emit=True)
    assert raised.value._storm_task == task  # type: ignore[attr-defined]


def test_a_failed_tuple_fails_its_tree_through_a_local_acker() -> None:
    state, executors = whole_word_count({})
    spout, split = executors["sentence_spout"], executors["split_bolt"]
    (spout_component,) = spout.components.values()
    split_component, sentence_tuple = a_sentence_at_the_split(state, executors)
    split_component.fail(sentence_tuple)
    split.flush()
    ((_, completion),) = taken(state, spout.index)
    assert (completion.component, completion.stream) == (ACKER, ACKER_FAIL_STREAM_ID)
    failed = []
    spout_component.fail = failed.append  # type: ignore[method-assign]
    spout._handle_batch([(spout.assignment.tasks[0], completion)])
    assert failed == ["s1"] and len(spout.pending) == 0


def test_a_tuple_acked_then_failed_by_hand_completes_its_tree_as_in_storm() -> None:
    # Storm's acker sees the ack, then a fail for a tree it no longer knows. The
    # folded acks left at the flush, after the fail, which then won.
    state, executors = whole_word_count({})
    spout, split = executors["sentence_spout"], executors["split_bolt"]
    split_component, sentence_tuple = a_sentence_at_the_split(state, executors)
    split_component.ack(sentence_tuple)
    split_component.fail(sentence_tuple)
    split.flush()
    ((_, completion),) = taken(state, spout.index)
    assert (completion.component, completion.stream) == (ACKER, ACKER_ACK_STREAM_ID)


def test_an_ack_then_a_fail_from_an_executors_second_task_reach_a_remote_acker_in_that_order() -> None:
    # Storm sends a task's acker messages in the order it makes them. Here the acks
    # of a flush leave under the executor's first task; a fail under the failing
    # task's own id went into a batch of its own, which left first when that task
    # had already failed something in the flush: the acker saw FAIL(t) before
    # ACK(t), and the spout was told t failed.
    par = {"sentence_spout": (1, 1), "split_bolt": (1, 2), "count_bolt": (1, 1)}
    first = word_count_state({"topology.acker.executors": 1}, par, workers=2)
    (acker_task,) = first.assignment.ackers
    state = next(s for s in (first, WorkerState(first.conf, first.definition, first.assignment, 1))
                 if s.task_location[acker_task] < 0)  # the worker without the acker
    assert any(ex.component == "split_bolt" for ex in state.local_executors)
    split = next(ex for ex in built_executors(state).values() if ex.component == "split_bolt")
    second = split.components[split.assignment.tasks[1]]
    (spout_task,) = state.assignment.component_tasks["sentence_spout"]
    values = state.values_class("sentence_spout", "default")

    def tracked(root: int, text: str) -> Tuple:
        return Tuple(TupleId({root: 0x5A5A}), "sentence_spout", "default", spout_task, values(text))

    earlier, later = tracked(11, "earlier"), tracked(22, "later")
    second.fail(earlier)
    second.ack(later)
    second.fail(later)
    split.flush()
    to_acker = [decode_tuples(message.message)
                for batch in state.transfer.get_all(timeout=0) for message in batch
                if message.task == acker_task]
    order = [(stream, tuple(values)[0]) for _, stream, _, rows in to_acker for values in rows]
    assert order == [(ACKER_FAIL_STREAM_ID, 11), (ACKER_ACK_STREAM_ID, 22), (ACKER_FAIL_STREAM_ID, 22)]


GROUPINGS = Path(__file__).parent / "project" / "topologies" / "groupings.py"


def test_a_completion_for_a_spout_of_another_worker_leaves_as_the_ackers_tuple() -> None:
    """Worker 1's acker, applied by worker 1's count executor, tells worker 0's spout:
    the payload's source is the acker task, which the receiving worker checks."""
    par = {"sentence_spout": (1, 1), "split_bolt": (1, 1), "count_bolt": (2, 2)}
    first = word_count_state({"topology.acker.executors": None}, par, workers=2)
    second = WorkerState(first.conf, first.definition, first.assignment, 1)
    states = [first, second]
    (spout_task,) = first.assignment.component_tasks["sentence_spout"]
    spout_worker = first.task_location[spout_task]
    other = 1 if spout_worker >= 0 else 0  # a worker without the spout
    built = built_executors(states[other])
    count, acker = built["count_bolt"], built[ACKER]
    (acker_task,) = acker.assignment.tasks
    # a root this acker owns, initialized as the spout would, and one word anchored to it
    root = next(r for r in range(1, 1000)
                if first.assignment.ackers[acker_index(r, len(first.assignment.ackers))] == acker_task)
    edge = 0x5A5A
    acker.apply(ACKER_INIT_STREAM_ID, (root, edge, spout_task))
    values = states[other].values_class("split_bolt", "default")("moon")
    count._run_batch([(count.assignment.tasks[0],
                       Tuple(TupleId({root: edge}), "split_bolt", "default", 99, values))])
    count.flush()
    (batch,) = states[other].transfer.get_all(timeout=0)
    (message,) = batch
    assert message.task == spout_task
    (tup,) = states[1 - other].make_tuples(*decode_tuples(message.message), spout_task)
    assert (tup.component, tup.stream, tup.task, list(tup.values)) == (ACKER, ACKER_ACK_STREAM_ID, acker_task, [root])


@pytest.mark.parametrize("flushes", [False, True], ids=["one message at a time", "acks by flush"])
def test_threads_applying_to_one_acker_settle_every_tree_exactly_once(flushes: bool) -> None:
    """The lock. Each of 20,000 trees has an init and three acks, and four threads
    apply one of them each, all at once, switching as often as the interpreter
    can: as the spout's and the bolts' executors do. With `flushes`, each thread
    applies its acks 50 at a time (`apply_acks`, as a bolt's flush does), and the
    inits one at a time (as a spout's emits do)."""
    state, executors = whole_word_count({})
    acker, spout = executors[ACKER], executors["sentence_spout"]
    (spout_task,) = spout.assignment.tasks
    trees = 20_000
    rng = random.Random(7)
    per_thread: list[list[tuple[str, tuple[int, ...]]]] = [[], [], [], []]
    for root in range(1, trees + 1):
        edges = [rng.getrandbits(64) | 1 for _ in range(3)]
        messages = [(ACKER_INIT_STREAM_ID, (root, edges[0] ^ edges[1] ^ edges[2], spout_task))]
        messages += [(ACKER_ACK_STREAM_ID, (root, edge)) for edge in edges]
        rng.shuffle(messages)  # which thread sends the init differs from tree to tree
        for thread_messages, message in zip(per_thread, messages, strict=True):
            thread_messages.append(message)
    outcomes: list[Any] = []

    def apply_all(messages: list[tuple[str, tuple[int, ...]]]) -> None:
        acks: list[tuple[int, int]] = []
        for stream, values in messages:
            if flushes and stream == ACKER_ACK_STREAM_ID:
                acks.append((values[0], values[1]))
                if len(acks) == 50:
                    outcomes.extend(acker.apply_acks(acks))
                    acks = []
                continue
            outcome = acker.apply(stream, values)
            if outcome is not None:
                outcomes.append(outcome)
        outcomes.extend(acker.apply_acks(acks))

    threads = [threading.Thread(target=apply_all, args=(m,)) for m in per_thread]
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switching)
    assert sorted(o.root_id for o in outcomes) == list(range(1, trees + 1))
    assert {o.kind for o in outcomes} == {"ack"}
    assert acker.executed == 4 * trees


class CountingLock:
    """A lock that counts how often it was taken."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.taken = 0

    def __enter__(self) -> None:
        self._lock.acquire()
        self.taken += 1

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_a_flush_applies_its_acks_to_a_local_acker_under_one_taking_of_its_lock() -> None:
    """Every thread that acks takes the acker's lock, so a count executor's flush
    of 40 trees' words takes it once, not once per tree."""
    state, executors = whole_word_count({})
    spout, split, count, acker = (executors[c] for c in ("sentence_spout", "split_bolt", "count_bolt", ACKER))
    (spout_component,) = spout.components.values()
    for i in range(40):
        spout_component.emit([f"w{i} x y"], tup_id=i)
    spout.flush()
    split._run_batch(taken(state, split.index))
    split.flush()
    acker.lock = CountingLock()  # type: ignore[assignment]
    count._run_batch(taken(state, count.index))
    count.flush()
    assert acker.lock.taken == 1
    assert len(taken(state, spout.index)) == 40, "every tree completed"


def test_a_flush_sends_the_acks_for_another_workers_acker_and_applies_the_rest() -> None:
    """Two workers, an acker in each: a count executor's flush applies the acks of
    its own worker's acker there, under one taking of its lock, and sends the
    others to the other worker as ACKER_ACK tuples, one per root."""
    first = word_count_state({"topology.acker.executors": None}, ONE_EACH, workers=2)
    (count_ex,) = [e for e in first.assignment.executors if e.component == "count_bolt"]
    state = WorkerState(first.conf, first.definition, first.assignment, count_ex.worker)
    built = built_executors(state)
    count, acker = built["count_bolt"], built[ACKER]
    (own_acker,) = acker.assignment.tasks
    ackers = state.assignment.ackers
    (other_acker,) = [task for task in ackers if task != own_acker]
    (spout_task,) = state.assignment.component_tasks["sentence_spout"]
    rng = random.Random(3)
    edges: dict[int, dict[int, int]] = {own_acker: {}, other_acker: {}}  # acker -> root -> edge
    while min(map(len, edges.values())) < 5:
        root = rng.getrandbits(64) or 1
        edges[ackers[acker_index(root, len(ackers))]][root] = rng.getrandbits(64) or 1
    for root, edge in edges[own_acker].items():
        acker.apply(ACKER_INIT_STREAM_ID, (root, edge, spout_task))
    values = state.values_class("split_bolt", "default")("moon")
    words = [(count.assignment.tasks[0], Tuple(TupleId({root: edge}), "split_bolt", "default", 99, values))
             for by_root in edges.values() for root, edge in by_root.items()]
    acker.lock = CountingLock()  # type: ignore[assignment]
    count._run_batch(words)
    count.flush()
    assert acker.lock.taken == 1
    remote = [(message.task, *decode_tuples(message.message))
              for batch in state.transfer.get_all(timeout=0) for message in batch]
    acks_sent = [tuple(v) for task, _, stream, _, vals in remote if task == other_acker for v in vals]
    assert {stream for task, _, stream, _, _ in remote if task == other_acker} == {ACKER_ACK_STREAM_ID}
    assert sorted(acks_sent) == sorted(edges[other_acker].items())
    # the own acker's trees are complete; their completions go to the spout, which
    # the assignment puts in the other worker
    assert state.task_location[spout_task] < 0
    completions = [v[0] for task, _, _, _, vals in remote if task == spout_task for v in vals]
    assert sorted(completions) == sorted(edges[own_acker])


def test_the_acker_applies_runs_of_received_acks_at_once_and_keeps_their_order() -> None:
    """Acker messages from other workers reach the acker's own thread in batches:
    each run of acks takes the lock once, and an ack and a fail of one tree keep
    the order they came in (U fails first, T completes first)."""
    state, executors = whole_word_count({})
    acker, spout = executors[ACKER], executors["sentence_spout"]
    (acker_task,) = acker.assignment.tasks
    (spout_task,) = spout.assignment.tasks
    edge = {name: index + 0x100 for index, name in enumerate("ABCDTU")}
    root = {name: index + 1 for index, name in enumerate("ABCDTU")}
    for name in "ABCDTU":
        acker.apply(ACKER_INIT_STREAM_ID, (root[name], edge[name], spout_task))

    def received(stream: str, name: str) -> tuple[int, Tuple]:
        values = (root[name], edge[name]) if stream == ACKER_ACK_STREAM_ID else (root[name],)
        return acker_task, Tuple(None, "count_bolt", stream, 99, values)

    ack, fail = ACKER_ACK_STREAM_ID, ACKER_FAIL_STREAM_ID
    batch = [received(ack, "A"), received(ack, "B"), received(ack, "C"), received(fail, "U"),
             received(ack, "U"), received(ack, "T"), received(fail, "T"), received(ack, "D")]
    acker.lock = CountingLock()  # type: ignore[assignment]
    acker._apply_received(batch)
    acker.flush()
    assert acker.lock.taken == 5  # A-C, fail U, U and T, fail T, D
    outcomes = [(tup.stream, tup.values[0]) for _, tup in taken(state, spout.index)]
    assert outcomes == [(ack, root["A"]), (ack, root["B"]), (ack, root["C"]), (fail, root["U"]),
                        (ack, root["T"]), (ack, root["D"])]


def test_a_spout_draws_its_roots_for_an_acker_of_its_own_worker() -> None:
    """Two workers, an acker in each: every tree of the spout belongs to the acker
    of the spout's own worker, so its init is applied there (and its completion
    comes from there); bolts find that acker from the root as always."""
    first = word_count_state({"topology.acker.executors": None}, ONE_EACH, workers=2)
    (spout_ex,) = [e for e in first.assignment.executors if e.component == "sentence_spout"]
    state = WorkerState(first.conf, first.definition, first.assignment, spout_ex.worker)
    built = built_executors(state)
    spout, acker = built["sentence_spout"], built[ACKER]
    ackers = state.assignment.ackers
    assert len(ackers) == 2 and acker.assignment.tasks[0] in ackers
    (component,) = spout.components.values()
    for i in range(50):
        component.emit(["a b"], tup_id=i)
    assert acker.executed == 50, "every init applied by the spout's thread to its worker's acker"
    remote_streams = {run.stream for runs in spout._out_remote.values() for run in runs}
    assert ACKER_INIT_STREAM_ID not in remote_streams
    roots = {root for batch in spout._out_local.values() for _, tup in batch for root in tup.id.roots}
    roots |= {root for runs in spout._out_remote.values() for run in runs
              for tuple_roots in run.roots for root in tuple_roots}
    assert len(roots) == 50
    assert {ackers[acker_index(root, len(ackers))] for root in roots} == set(acker.assignment.tasks)


@pytest.mark.parametrize("max_pending", [None, 0, 10])  # 0: Storm's unbounded, as None
def test_trees_timing_out_are_said_once_with_the_remedy_when_nothing_bounds_what_is_in_flight(
        max_pending: int | None, caplog: pytest.LogCaptureFixture) -> None:
    # replays wait behind what timed out and can time out again, for ever: a slow
    # sink with a short message timeout never finished (a chaos run, session 20)
    state, executors = whole_word_count({"topology.max.spout.pending": max_pending})
    spout = executors["sentence_spout"]
    (spout_component,) = spout.components.values()
    spout_component.fail = lambda tup_id: None  # type: ignore[method-assign]
    caplog.set_level(logging.WARNING, logger="storm_zmq.runtime.executor")
    for round_ in range(2):
        spout_component.emit(["a b c"], tup_id=f"s{round_}")
        spout.flush()
        for _ in range(5):  # rotations until the tree has timed out
            spout._next_rotation = 0.0
            spout._round(may_emit=False)
        assert spout.failed == round_ + 1
    said = [r.getMessage() for r in caplog.records if "timed out" in r.getMessage()]
    assert len(said) == 1, said  # the first time only
    assert said[0].startswith("spout 'sentence_spout': 1 tuple tree(s) timed out (topology."
                              "message.timeout.secs 30)")
    assert ("max.spout.pending is not set" in said[0]) == (not max_pending)
    assert ("A bolt that never acks or fails its input" in said[0]) == bool(max_pending)
    assert spout.max_pending == (max_pending or None)


def test_with_message_timeouts_disabled_neither_spout_nor_acker_ever_rotates() -> None:
    # Storm's topology.enable.message.timeouts: false (it was ignored: trees timed out)
    state, executors = whole_word_count({"topology.enable.message.timeouts": False,
                                         "topology.message.timeout.secs": 1})
    spout, acker = executors["sentence_spout"], executors[ACKER]
    assert spout._next_rotation == acker._next_rotation == math.inf
    (spout_component,) = spout.components.values()
    spout_component.emit(["a b c"], tup_id="s")
    spout.flush()
    spout._round(may_emit=False)
    assert len(spout.pending) == 1 and spout.failed == 0
    state, executors = whole_word_count({"topology.message.timeout.secs": 1})
    assert executors["sentence_spout"]._next_rotation < math.inf > executors[ACKER]._next_rotation



def test_an_executor_is_named_in_the_log_by_component_and_tasks() -> None:
    assert executor_label("count", (3,)) == "count:3"
    assert executor_label("count", (3, 4, 5)) == "count:3-5"
    assert executor_label("count", (5, 3)) == "count:3,5"


def test_an_inactive_spout_in_a_thread_of_its_own_waits_between_rounds() -> None:
    """Not yet activated (or deactivated), a spout's thread waits for acks or
    (de)activation 50 ms at a time, as Storm's sleeps 100 ms: it ran a round a
    millisecond, and 130,000 a second while the long spout wait was first made."""
    state = word_count_state({"topology.acker.executors": 0})
    (spout,) = [new_executor(state, e) for e in state.local_executors if e.component == "sentence_spout"]
    spout.start_up()
    rounds: list[float] = []
    run_round = spout._round

    def counted(may_emit: bool) -> tuple[int, bool]:
        rounds.append(time.monotonic())
        return run_round(may_emit)

    spout._round = counted  # type: ignore[method-assign]
    thread = threading.Thread(target=spout.loop)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while len(rounds) < 6 and time.monotonic() < deadline:
            time.sleep(0.01)  # polling the count the thread appends to
    finally:
        spout.stop_requested.set()
        thread.join(5)
    assert len(rounds) >= 6 and rounds[5] - rounds[0] >= 5 * 0.04, rounds[:6]
    assert spout.emitted == 0
