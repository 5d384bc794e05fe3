"""WorkerState's pure parts, built from a real assignment (no threads, no sockets)."""

from __future__ import annotations

import logging
import math
import os
import threading
import time

import pytest

from storm_zmq.messaging import TaskMessage
from storm_zmq.messaging.base import SendTimeout
from storm_zmq.runtime import worker as worker_module
from storm_zmq.runtime.backpressure import ThrottleTable
from storm_zmq.runtime.serialization import MalformedTuple
from storm_zmq.runtime.worker import Worker, WorkerState
from tests.runtime.wordcount_state import word_count_state


def word_count_worker(**conf_overrides: object) -> WorkerState:
    """Worker 0 of the word count on two workers; the count bolt has 4 tasks in 2
    executors, so an executor's load covers two tasks."""
    return word_count_state(dict(conf_overrides), {"count_bolt": (2, 4)}, workers=2)


def local_executor(state: WorkerState, component: str):
    (executor,) = [e for e in state.local_executors if e.component == component]
    return executor


def test_task_loads_are_empty_while_every_queue_is_at_most_half_full() -> None:
    state = word_count_worker(**{"topology.executor.receive.buffer.size": 100})
    count = local_executor(state, "count_bolt")
    state.queues[count.index].put([(count.tasks[0], None)] * 50)
    assert state.task_loads() == {}


def test_a_queue_over_half_full_loads_every_task_of_its_executor() -> None:
    state = word_count_worker(**{"topology.executor.receive.buffer.size": 100})
    count = local_executor(state, "count_bolt")
    assert len(count.tasks) == 2
    state.queues[count.index].put([(count.tasks[0], None)] * 51)
    assert state.task_loads() == dict.fromkeys(count.tasks, 0.51)


def test_what_the_consumer_took_counts_until_it_asks_again() -> None:
    state = word_count_worker(**{"topology.executor.receive.buffer.size": 100})
    count = local_executor(state, "count_bolt")
    queue = state.queues[count.index]
    queue.put([(count.tasks[0], None)] * 80)
    queue.get_all(timeout=0)  # taken, being worked on
    assert state.task_loads() == dict.fromkeys(count.tasks, 0.8)
    queue.get_all(timeout=0)  # done with it
    assert state.task_loads() == {}


def test_tasks_a_peer_throttles_have_infinite_load() -> None:
    state = word_count_worker()
    remote = [task for task, where in state.task_location.items() if where < 0]
    state.throttle.update(1, frozenset(remote[:2]), 0.0)
    assert state.task_loads() == dict.fromkeys(remote[:2], math.inf)


def test_a_remote_tuple_is_checked_by_its_stream_once_and_by_its_arity_always() -> None:
    state = word_count_worker()
    split = state.assignment.component_tasks["split_bolt"][0]
    count, other_count = state.assignment.component_tasks["count_bolt"][:2]
    spout = state.assignment.component_tasks["sentence_spout"][0]
    for _ in range(2):  # the second time from the memo
        dog, cat = state.make_tuples(split, "default", None, [["dog"], ["cat"]], count)
        assert (dog.component, dog.stream, dog.task, dog.values.word) == ("split_bolt", "default", split, "dog")
        assert cat.values.word == "cat" and dog.id is None
        with pytest.raises(MalformedTuple, match="2 values on stream 'default' of 'split_bolt', which has 1"):
            state.make_tuples(split, "default", None, [["cat"], ["dog", 1]], count)
    tracked, untracked = state.make_tuples(split, "default", [{7: 9}, None], [["cat"], ["dog"]], other_count)
    assert tracked.id.roots == {7: 9} and untracked.id is None
    # each in one tree, in the pairs form: one-tree ids, their ack_val 0
    first, second = state.make_tuples(split, "default", [7, 9, 8, 0], [["cat"], ["dog"]], other_count)
    assert (first.id.root, first.id.edge, first.id.many, first.id.ack_val) == (7, 9, None, 0)
    assert second.id.roots == {8: 0} and second.values.word == "dog"
    with pytest.raises(MalformedTuple, match="does not subscribe"):
        state.make_tuples(split, "default", None, [["dog"]], spout)  # the spout takes no words
    with pytest.raises(MalformedTuple, match="has no stream"):
        state.make_tuples(split, "nope", None, [["dog"]], count)
    with pytest.raises(MalformedTuple, match="has no stream 'nnn") as caught:  # quoted short
        state.make_tuples(split, "n" * 4_000_000, None, [["dog"]], count)
    assert len(str(caught.value)) < 200


def test_a_failed_worker_thread_makes_the_worker_die_with_its_traceback() -> None:
    state = word_count_worker()
    try:
        raise RuntimeError("the socket went away")
    except RuntimeError as exc:
        state.thread_failed("send", exc)
    assert state.failed.is_set()
    (failure,) = state.failures
    assert "the worker's send thread failed" in str(failure)
    assert "RuntimeError: the socket went away" in str(failure) and "Traceback" in str(failure)


def test_the_receive_thread_waiting_on_a_full_queue_keeps_telling_its_peers() -> None:
    # An overflow at its bound makes the receive thread wait on the slow queue; its
    # throttle status must still be repeated from there, or the peers forget the
    # throttle after STATUS_EXPIRY_SECS and flood the slow task (a pinned worker
    # waited 3.8 s behind a 3000-tuple batch; docs/benchmarks.md, "Session 12").
    state = word_count_worker(**{"topology.executor.receive.buffer.size": 10})
    count = local_executor(state, "count_bolt")
    queue = state.queues[count.index]
    queue.put([(count.tasks[0], None)] * 10)  # full
    calls = threading.Semaphore(0)
    state.while_receive_waits = calls.release
    waiting = threading.Thread(target=state._wait_put, args=(queue, [(count.tasks[0], None)], 1))
    waiting.start()
    try:
        for _ in range(3):  # one call per 0.1 s it waits
            assert calls.acquire(timeout=5), "no call while waiting"
        assert waiting.is_alive() and len(queue) == 10
    finally:
        queue.get_all(timeout=0)  # room: the wait ends
        waiting.join(timeout=5)
    assert not waiting.is_alive() and len(queue) == 1


def test_a_peers_throttle_expires_while_the_receive_thread_waits_on_a_full_queue() -> None:
    # The receive loop expires peers' throttles; while it waits on a full queue, the
    # wait must, or an executor holding a batch for a task a peer throttled once
    # (its newer status unread behind the wait) holds it for ever, and the full
    # queue it would drain keeps the receive thread waiting: two workers deadlocked
    # so after a peer's SIGSTOP (tests/runtime/test_faults.py).
    state = word_count_worker(**{"topology.executor.receive.buffer.size": 10})
    count = local_executor(state, "count_bolt")
    queue = state.queues[count.index]
    queue.put([(count.tasks[0], None)] * 10)  # full
    state.throttle = ThrottleTable(expiry_secs=0.3)
    state.throttle.update(1, frozenset({99}), time.monotonic())  # a peer's task, throttled once
    waiting = threading.Thread(target=state._wait_put, args=(queue, [(count.tasks[0], None)], 1))
    waiting.start()
    try:
        deadline = time.monotonic() + 5
        while state.throttle.throttled and time.monotonic() < deadline:
            time.sleep(0.05)  # the shared thread's held executors only read the table
        assert state.throttle.throttled == frozenset(), "the stale throttle never expired"
        assert waiting.is_alive() and len(queue) == 10  # the receive thread still waits
        assert state.receive_waiting  # executors with a full input pass throttles meanwhile
    finally:
        queue.get_all(timeout=0)
        waiting.join(timeout=5)
    assert not state.receive_waiting


class _TakesNothing:
    """A peer's connection that takes nothing: every send times out, a slice at a time."""

    def send(self, messages: list[TaskMessage]) -> None:
        time.sleep(0.02)
        raise SendTimeout("peer takes nothing", unsent=list(messages))


def test_a_stopping_worker_gives_up_on_a_peer_that_takes_nothing_once_for_every_send(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One grace for the whole stop, not one per batch: a send thread with several
    # batches for a dead peer outlived the worker's wait for it, and the transport
    # was closed under it (ContextTerminated, reported as the send thread failing).
    monkeypatch.setattr(worker_module, "SHUTDOWN_SEND_GRACE", 0.3)
    state = word_count_state(workers=2)
    worker = Worker({"conf": state.conf, "worker_index": 0,
                     "assignment": state.assignment.to_dict()}, control=None)  # type: ignore[arg-type]
    worker.state = state
    worker.clients = {1: _TakesNothing()}  # type: ignore[dict-item]
    state.stopping.set()
    started = time.monotonic()
    worker._send(1, [TaskMessage(5, b"a")])
    first = time.monotonic() - started
    worker._send(1, [TaskMessage(5, b"b")])
    second = time.monotonic() - started - first
    assert 0.3 <= first < 1.0
    assert second < 0.15, f"the second batch waited {second:.2f} s more"
    assert state.remote_sent == 0


def test_a_components_context_is_pystorms_with_storms_topology_keys() -> None:
    from tests.runtime.wordcount_state import word_count_state

    state = word_count_state()
    (task,) = state.assignment.component_tasks["count_bolt"][:1]
    context = state.context_for(task)
    assert (context["taskid"], context["componentid"]) == (task, "count_bolt")
    assert context["task->component"][str(task)] == "count_bolt"
    assert context["source->stream->grouping"] == {
        "split_bolt": {"default": {"type": "FIELDS", "fields": ["word"]}}}
    assert context["stream->outputfields"] == {"default": ["word", "count"]}
    assert context["worker.port"] == 6700
    # the conf carries the topology's id, as a Storm worker's topology conf does
    assert state.component_conf("count_bolt")["storm.id"] == context["stormid"] == state.assignment.storm_id


def test_contexts_and_cycles_of_many_tasks_grow_with_the_tasks_not_their_square() -> None:
    """Each context used to carry its own copy of Storm's task->component map, and
    each executor scanned every executor for cycles: 4,000 tasks took 770 MB, and
    30,000 took minutes to start."""
    import tracemalloc

    state = word_count_state(parallelism={"count_bolt": (1000, 1000)})
    tasks = state.assignment.component_tasks["count_bolt"]
    tracemalloc.start()
    try:
        contexts = [state.context_for(task) for task in tasks]
        used, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert all(c["task->component"][str(c["taskid"])] == "count_bolt" for c in contexts)
    assert len(contexts[0]["task->component"]) == len(state.assignment.task_component)
    # a map per context: about 100 MB; one shared: 2 MB (the contexts' own keys)
    assert used < 10 * 2**20, f"{len(tasks)} contexts took {used / 2**20:.0f} MiB"
    first = state.cyclic_executors("count_bolt")
    assert all(state.cyclic_executors("count_bolt") is first for _ in tasks)


def test_a_component_holding_the_shared_thread_is_named_with_where_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A process() that never returned showed only as 0 tuples a second, and at the
    # end as a thread that did not stop.
    import threading
    import types

    from storm_zmq.runtime.executor import new_executor
    from storm_zmq.runtime.shared import SharedExecutorThread
    from storm_zmq.runtime.worker import HOLD_NOTICE_REPEAT_SECS, HOLD_NOTICE_SECS, Worker
    from tests.runtime.wordcount_state import word_count_state

    state = word_count_state()
    runner = SharedExecutorThread(state, [new_executor(state, ex) for ex in state.local_executors])
    count = next(e for e in runner.executors if e.component == "count_bolt")
    release = threading.Event()

    def process_that_blocks() -> None:  # this file is the user's code here
        release.wait(30)

    blocked = threading.Thread(target=process_that_blocks)
    blocked.start()
    runner._ident = blocked.ident  # type: ignore[attr-defined]  # where it runs: that thread
    worker = types.SimpleNamespace(_runners=[runner], _hold_said={}, state=state)
    runner.move_others_off = lambda executor: False  # type: ignore[method-assign]  # as with one executor
    try:
        runner.stepping, runner.step_started = count, 100.0
        with caplog.at_level(logging.WARNING, logger="storm_zmq.runtime.worker"):
            Worker._say_who_holds_the_thread(worker, 100.0 + HOLD_NOTICE_SECS - 1)  # type: ignore[arg-type]
            assert not caplog.records
            Worker._say_who_holds_the_thread(worker, 100.0 + HOLD_NOTICE_SECS)  # type: ignore[arg-type]
            Worker._say_who_holds_the_thread(worker, 100.0 + HOLD_NOTICE_SECS + 1)  # type: ignore[arg-type]
            assert len(caplog.records) == 1, "said once, then again after a while"
            Worker._say_who_holds_the_thread(  # type: ignore[arg-type]
                worker, 100.0 + HOLD_NOTICE_SECS + HOLD_NOTICE_REPEAT_SECS)
        first, again = (r.getMessage() for r in caplog.records)
        caplog.clear()
        # a stop of the whole process (SIGSTOP) that ended at 105 is not its holding
        runner.step_started, worker._hold_said, state.stalled_until = 100.0, {}, 105.0
        with caplog.at_level(logging.WARNING, logger="storm_zmq.runtime.worker"):
            Worker._say_who_holds_the_thread(worker, 100.0 + HOLD_NOTICE_SECS + 1)  # type: ignore[arg-type]
        assert not caplog.records, "held 6 s since the stop, not 11"
        state.stalled_until = 0.0
        assert first.startswith("component 'count_bolt' (tasks ") and "own code for 10 s" in first
        assert "test_worker.py:" in first and "in process_that_blocks" in first
        assert "wait for it (__acker, sentence_spout, split_bolt)" in first
        assert "for 70 s" in again
    finally:
        release.set()
        blocked.join()


def test_what_is_left_in_stopped_executors_queues_and_buffers_is_counted() -> None:
    """Found by a soak audit: a thread of a component's own that emitted while the
    worker stopped lost its last tuples (8,200 of 15 million) in the queues of
    consumers that had stopped, and nothing said so. `left_behind` counts them for
    the stop's warning: what is queued, and what was emitted and never flushed."""
    from storm_zmq.runtime.executor import new_executor
    from storm_zmq.runtime.worker import left_behind

    state = word_count_state({"topology.acker.executors": 0},
                             {"split_bolt": (1, 1), "count_bolt": (1, 1)})
    executors = [new_executor(state, e) for e in state.local_executors]
    for executor in executors:
        executor.build_components()
    assert left_behind(state, executors) == (0, 0)
    (split,) = [e for e in executors if e.component == "split_bolt"]
    (component,) = split.components.values()
    component.emit(["late"])
    component.emit(["later"])
    assert left_behind(state, executors) == (0, 2)
    split.flush()
    assert left_behind(state, executors) == (2, 0)


def test_a_components_conf_keeps_storms_per_component_keys_and_the_users_only() -> None:
    """Storm drops from a component's config every Storm key but a few: the review of
    the warning about them found that `initialize()` still got them (a bolt read a
    timeout of 5 s where the run used 30), and so did SparkSpout's batch size."""
    state = word_count_state()
    state.definition.components["count_bolt"].config.update({
        "topology.message.timeout.secs": 5, "topology.producer.batch.size": 7,
        "topology.tick.tuple.freq.secs": 2, "my.key": "mine"})
    conf = state.component_conf("count_bolt")
    assert conf["topology.message.timeout.secs"] == state.conf["topology.message.timeout.secs"] == 30
    assert conf["topology.producer.batch.size"] == state.conf["topology.producer.batch.size"]
    assert (conf["topology.tick.tuple.freq.secs"], conf["my.key"]) == (2, "mine")
    assert state.component_conf("split_bolt") is state.conf


def test_the_stop_says_what_was_dropped_once(caplog: pytest.LogCaptureFixture) -> None:
    """Tuples emitted in cleanup() were warned about by their executor, then counted
    again by the stop's warning; a worker that failed said it after its traceback.
    Without a drain before the stop (another worker failed), the warning says so
    rather than suggest a drain that timed out or a thread of the user's."""
    import types

    from storm_zmq.runtime.worker import Worker

    state = word_count_state()
    executors = [types.SimpleNamespace(unflushed=0, emitted_in_cleanup=0) for _ in range(2)]
    worker = types.SimpleNamespace(state=state, executors=executors, index=0, _drained_before_stop=True)
    (queue, *_) = state.queues.values()
    queue.put([(0, None)] * 3)
    with caplog.at_level(logging.WARNING, logger="storm_zmq.runtime.worker"):
        executors[0].emitted_in_cleanup = 3  # said by its executor already
        Worker._say_left_behind(worker)  # type: ignore[arg-type]
        assert not caplog.records
        executors[1].unflushed = 2
        Worker._say_left_behind(worker)  # type: ignore[arg-type]
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith("worker 0: 2 tuple(s) were still queued for its executors, or emitted "
                           "and never flushed, when they stopped: dropped (left by a drain")
    caplog.clear()
    worker._drained_before_stop = False
    with caplog.at_level(logging.WARNING, logger="storm_zmq.runtime.worker"):
        Worker._say_left_behind(worker)  # type: ignore[arg-type]
    (said,) = [r.getMessage() for r in caplog.records]
    assert "dropped (the stop came without a deactivate and drain first: in local mode, another " \
           "worker failed" in said, said


def test_a_component_blocked_in_a_thread_of_its_own_is_named_and_a_poller_is_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """In a thread of its own, a component blocked for good in one call was named
    only at the stop. The same outermost frame of its code 10 s later is the same
    call; a spout that polls in short calls (a new frame each) is never named."""
    import collections
    import itertools
    import types

    from storm_zmq.runtime.executor import new_executor
    from storm_zmq.runtime.worker import HOLD_NOTICE_REPEAT_SECS, HOLD_NOTICE_SECS, Worker

    state = word_count_state()
    by_name = {ex.component: new_executor(state, ex) for ex in state.local_executors}
    release = threading.Event()

    def process_that_blocks() -> None:  # this file is the user's code here
        release.wait(30)

    polls = [0]

    def poll_once(_: object) -> None:  # called by C code (map): a new frame each call
        polls[0] += 1
        if release.wait(0.005):
            raise StopIteration

    threads = {"count_bolt": threading.Thread(target=process_that_blocks),
               "sentence_spout": threading.Thread(
                   target=collections.deque, args=(map(poll_once, itertools.repeat(None)), 0))}
    for name, thread in threads.items():
        thread.start()
        by_name[name]._ident = thread.ident  # type: ignore[attr-defined]  # where it runs
        by_name[name].is_alive = lambda: True  # type: ignore[method-assign]
    runners = [by_name[name] for name in threads]
    worker = types.SimpleNamespace(_executor_threads=lambda: runners, _own_calls={},
                                   _next_own_check=0.0, state=state)
    try:
        with caplog.at_level(logging.WARNING, logger="storm_zmq.runtime.worker"):
            for now in range(100, 100 + int(HOLD_NOTICE_SECS + HOLD_NOTICE_REPEAT_SECS) + 1):
                Worker._say_who_is_stuck_alone(worker, float(now))  # type: ignore[arg-type]
                made, deadline = polls[0], time.monotonic() + 10
                while polls[0] < made + 2 and time.monotonic() < deadline:
                    time.sleep(0.001)  # until the poller made a new call meanwhile
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 2, said
        first, again = said
        assert first.startswith("component 'count_bolt' (tasks ")
        assert "in one call of its own code for 10 s, at " in first
        assert "test_worker.py:" in first and "in process_that_blocks" in first
        assert "for 70 s" in again
    finally:
        release.set()
        for thread in threads.values():
            thread.join()


def test_a_workers_open_fds_leave_out_the_one_that_lists_them() -> None:
    # (a metrics audit: one more than `ls /proc/PID/fd` showed)
    from storm_zmq.runtime.worker import _process_usage

    before = _process_usage()["open_fds"]
    with open(__file__) as one_more:
        assert _process_usage()["open_fds"] == before + 1
        assert one_more.fileno() >= 0
    assert _process_usage()["open_fds"] == before
    assert before == len([fd for fd in os.listdir("/proc/self/fd")
                          if os.path.exists(f"/proc/self/fd/{fd}")])
