"""All of a worker's executors in one thread (storm_zmq/runtime/shared.py): the
turns each executor takes, in-process with the word count's real executors and
queues (no sockets); tests/runtime/test_local_mode.py runs whole topologies so."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from storm_zmq.runtime.executor import Executor, new_executor
from storm_zmq.runtime.queues import BatchQueue
from storm_zmq.runtime.shared import SharedExecutorThread
from tests.runtime.wordcount_state import word_count_state

ONE_EACH = {"split_bolt": (1, 1), "count_bolt": (1, 1)}


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def shared_executors(conf: dict[str, Any], workers: int = 1,
                     parallelism: dict[str, tuple[int, int]] | None = None) -> dict[str, Executor]:
    """The executors of worker 0, set up for a shared thread but stepped by hand."""
    state = word_count_state(conf, parallelism, workers=workers)
    executors = {e.component: new_executor(state, e) for e in state.local_executors}
    for executor in executors.values():
        executor.shared = True
        executor.start_up()
    return executors


def take_all(queue: BatchQueue[Any]) -> list[Any]:
    return [item for batch in queue.get_all(timeout=0) for item in batch]


def test_one_thread_runs_the_word_count_and_settles_every_tree() -> None:
    state = word_count_state({"topology.max.spout.pending": 200})
    executors = [new_executor(state, e) for e in state.local_executors]
    (spout,) = [e for e in executors if e.is_spout]
    thread = SharedExecutorThread(state, executors)
    thread.start()
    for _ in executors:
        assert state._ready.acquire(timeout=10)
    spout.request_activate()
    wait_for(lambda: spout.acked >= 2000, "2,000 trees acked")
    spout.request_deactivate()
    wait_for(lambda: spout.pending_count == 0 and all(e.queued == 0 for e in executors), "the drain")
    for executor in executors:
        executor.stop_requested.set()
    thread.join(10)
    assert not thread.is_alive()
    assert all(e.ident is None for e in executors), "no executor had a thread of its own"
    assert spout.failed == 0 and spout.acked == spout.emitted
    words = sum(e.emitted for e in executors if e.component == "split_bolt")
    assert sum(e.executed for e in executors if e.component == "count_bolt") == words > 0
    assert all(e.failure is None for e in executors)


def test_a_full_consumer_queue_stops_its_producer_until_it_is_taken_from() -> None:
    executors = shared_executors({"topology.acker.executors": 0}, parallelism=ONE_EACH)
    spout, split, count = (executors[c] for c in ("sentence_spout", "split_bolt", "count_bolt"))
    spout.request_activate()
    assert spout.step() and spout.emitted > 0
    sentences = split.incoming.get_all(timeout=0)
    emitted = spout.emitted
    split.incoming.put([(0, None)], weight=split.incoming.capacity)  # full
    assert spout.outputs_full()
    assert not spout.step() and spout.emitted == emitted, "no next_tuple() while split is full"
    split.incoming.get_all(timeout=0)
    assert spout.step() and spout.emitted > emitted

    # a bolt whose consumer is full takes no input
    split.incoming.get_all(timeout=0)
    for batch in sentences:
        split.incoming.put(batch)
    queued = len(split.incoming)
    count.incoming.put([(0, None)], weight=count.incoming.capacity)
    assert not split.step() and len(split.incoming) == queued and split.executed == 0
    count.incoming.get_all(timeout=0)
    while split.step():  # in chunks, the first of 64 sentences
        pass
    assert split.executed == queued
    assert len(count.incoming) == split.emitted > 0


def test_a_throttled_remote_batch_waits_in_its_executor_and_leaves_first() -> None:
    executors = shared_executors({"topology.acker.executors": 0}, workers=2,
                                 parallelism={"split_bolt": (2, 2), "count_bolt": (2, 2)})
    spout = executors["sentence_spout"]
    state = spout.worker
    remote = frozenset(t for t, where in state.task_location.items() if where < 0)
    assert remote, "the other worker has split tasks"
    state.throttle.update(1, remote, now=time.monotonic())
    spout.request_activate()
    assert spout.step() and spout.holding, "the split task of worker 1 is throttled"
    assert len(state.transfer) == 0 and spout.queued > 0
    (held,) = spout._held
    emitted = spout.emitted
    assert not spout.step() and spout.emitted == emitted, "nothing new while a batch waits"
    state.throttle.update(1, frozenset(), now=time.monotonic())
    assert spout.step() and not spout.holding and spout.emitted > emitted
    batches = state.transfer.get_all(timeout=0)
    assert batches[0] is held, "the held batch left before the new ones"


def test_a_slow_bolts_turn_is_short_and_its_queue_fills_behind_it() -> None:
    """A bolt of 1 ms a tuple gets turns of about STEP_SLICE (5 ms) once its pace is
    known, and takes no new input while what it took is unfinished."""
    executors = shared_executors({"topology.acker.executors": 0}, parallelism=ONE_EACH)
    count = executors["count_bolt"]
    (component,) = count.components.values()
    component.process = lambda tup: time.sleep(0.001)
    words = [(count.assignment.tasks[0], tup) for tup in make_word_tuples(count, 200)]
    count.incoming.put(words)
    assert count.step()
    first = count.executed
    assert 0 < first < 200
    count.incoming.put(words[:10])
    assert count.step()
    assert count.executed - first <= 12, "a turn of about 5 ms"
    assert len(count.incoming) == 10, "the queue waits while the bolt has input in hand"


def make_word_tuples(executor: Executor, n: int) -> list[Any]:
    """`n` words as the split bolt's Tuples to `executor`'s task."""
    state = executor.worker
    split_task = state.assignment.component_tasks["split_bolt"][0]
    task = executor.assignment.tasks[0]
    return list(state.make_tuples(split_task, "default", None, [[f"w{i}"] for i in range(n)], task))
