"""All of a worker's executors in one thread (storm_zmq/runtime/shared.py): the
turns each executor takes, in-process with the word count's real executors and
queues (no sockets); tests/runtime/test_local_mode.py runs whole topologies so."""

from __future__ import annotations

import ctypes
import functools
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.runtime.executor import Executor, new_executor
from storm_zmq.runtime.queues import BatchQueue
from storm_zmq.runtime.shared import (
    IDLE_SHARE,
    SCHEDSTAT,
    WATCH_AFTER,
    WATCH_WINDOW,
    BlockingWatch,
    BusyClock,
    SharedExecutorThread,
    _pread_holding_the_lock,
)
from storm_zmq.runtime.worker import STALL_SECS, WorkerState
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


def start_shared(state: WorkerState, executors: list[Executor]) -> SharedExecutorThread:
    """A shared thread running `executors`, started, once every one is up."""
    thread = SharedExecutorThread(state, executors)
    thread.start()
    for _ in executors:
        assert state._ready.acquire(timeout=10)
    return thread


def drain_and_stop(spout: Executor, executors: list[Executor], thread: SharedExecutorThread) -> None:
    """Deactivate `spout`, wait until every tree settled and every queue is empty,
    then stop every executor and the thread."""
    spout.request_deactivate()
    wait_for(lambda: spout.pending_count == 0 and all(e.queued == 0 for e in executors), "the drain")
    for executor in executors:
        executor.stop_requested.set()
    thread.join(10)
    assert not thread.is_alive()


def take_all(queue: BatchQueue[Any]) -> list[Any]:
    return [item for batch in queue.get_all(timeout=0) for item in batch]


def test_one_thread_runs_the_word_count_and_settles_every_tree() -> None:
    state = word_count_state({"topology.max.spout.pending": 200})
    executors = [new_executor(state, e) for e in state.local_executors]
    (spout,) = [e for e in executors if e.is_spout]
    thread = start_shared(state, executors)
    spout.request_activate()
    wait_for(lambda: spout.acked >= 2000, "2,000 trees acked")
    drain_and_stop(spout, executors, thread)
    assert all(e.ident is None for e in executors), "no executor had a thread of its own"
    assert spout.failed == 0 and spout.acked == spout.emitted
    words = sum(e.emitted for e in executors if e.component == "split_bolt")
    assert sum(e.executed for e in executors if e.component == "count_bolt") == words > 0
    assert all(e.failure is None for e in executors)


def test_a_batch_for_a_full_queue_waits_in_its_producer_which_stops_at_its_bound() -> None:
    """Where its own thread would wait in a put, a shared thread's executor holds the
    batch: the queue's bound holds. A producer that has only that queue to send to
    holds what it emits until that reaches `_hold_limit` tuples, then stops; what
    it held goes first once the queue has room."""
    executors = shared_executors({"topology.acker.executors": 0, "topology.transfer.batch.size": 100},
                                 parallelism=ONE_EACH)
    spout, split, count = (executors[c] for c in ("sentence_spout", "split_bolt", "count_bolt"))
    spout.request_activate()
    # sentences for the bolt's part below: a step emits until the flush interval
    # ends, which on a busy machine can be after one sentence (seen in a suite run)
    sentences: list[Any] = []
    while sum(len(batch) for batch in sentences) < 3:
        assert spout.step() and spout.emitted > 0
        sentences += split.incoming.get_all(timeout=0)
    filler = [(0, None)]
    split.incoming.put(filler, weight=split.incoming.capacity)  # full
    while spout.step():
        assert len(split.incoming) == split.incoming.capacity, "nothing went past the bound"
    assert spout.holding and 100 <= spout._held.tuples < 100 + spout.batch_size
    first = spout._held.first()
    emitted = spout.emitted
    assert not spout.step() and spout.emitted == emitted, "no next_tuple() at the bound"
    assert split.incoming.get_all(timeout=0) == [filler]
    assert spout.step() and spout.emitted > emitted
    assert split.incoming.get_all(timeout=0)[0] is first.batch, "the held batch went first"

    # a bolt whose consumer is full holds its output and, at the bound, takes no more
    # a batch per sentence: the bound is looked at between input batches, and how
    # many batches the spout's sentences came in depends on timing (one batch of
    # them all, on a busy machine, ran whole before the first look: 1 run in ~40)
    for batch in sentences:
        for sentence in batch:
            split.incoming.put([sentence])
    queued = len(split.incoming)
    count.incoming.put(filler, weight=count.incoming.capacity)
    while split.step():
        pass
    ran = split.executed
    assert 0 < ran < queued and split._held.tuples >= 100
    assert split.queued == queued - ran + split._held.tuples
    count.incoming.get_all(timeout=0)
    while split.step():
        count.incoming.get_all(timeout=0)  # the count bolt's turn, by hand
    assert split.executed == queued and not split.holding


def test_a_load_aware_shuffle_goes_around_a_full_queue_without_stopping() -> None:
    """A full split queue does not stop the spout: its load-aware shuffle sends to
    the other split task, as it would with a thread per executor."""
    state = word_count_state({"topology.acker.executors": 0},
                             {"split_bolt": (2, 2), "count_bolt": (1, 1)})
    executors = [new_executor(state, e) for e in state.local_executors]
    for executor in executors:
        executor.shared = True
        executor.start_up()
    (spout,) = [e for e in executors if e.is_spout]
    full, other = [e for e in executors if e.component == "split_bolt"]
    full.incoming.put([(0, None)], weight=full.incoming.capacity)
    spout.flush()  # the shuffle learns its targets' loads at every flush
    spout.request_activate()
    for _ in range(20):
        assert spout.step() and not spout.holding
        other.incoming.get_all(timeout=0)  # the other split's turn, by hand
    assert len(full.incoming) == full.incoming.capacity, "the full queue got nothing"
    assert spout.emitted >= 20


def test_tuples_for_a_throttled_remote_task_wait_and_leave_first_while_the_rest_go() -> None:
    """A remote batch is split by task: what goes to the throttled task waits in its
    executor, the rest goes now. The load-aware shuffle then sends around the
    throttled task, so the spout keeps emitting; once the throttle lifts, the held
    tuples leave before anything new for that task."""
    executors = shared_executors({"topology.acker.executors": 0}, workers=2,
                                 parallelism={"split_bolt": (2, 2), "count_bolt": (2, 2)})
    spout = executors["sentence_spout"]
    state = spout.worker
    remote = frozenset(t for t, where in state.task_location.items() if where < 0)
    assert remote, "the other worker has split tasks"
    state.throttle.update(1, remote, now=time.monotonic())
    spout.request_activate()
    assert spout.step() and spout.holding, "the split task of worker 1 is throttled"
    held = list(spout._held)
    assert all(h.tasks <= remote for h in held), "only what goes to throttled tasks waits"
    assert spout.queued >= spout._held.tuples > 0
    sent = [m.task for batch in state.transfer.get_all(timeout=0) for m in batch]
    assert not set(sent) & remote
    emitted = spout.emitted
    for _ in range(5):
        assert spout.step(), "the shuffle goes around the throttled task"
    assert spout.emitted > emitted and list(spout._held) == held, "and nothing more waits"
    state.throttle.update(1, frozenset(), now=time.monotonic())
    assert spout.step() and not spout.holding
    batches = state.transfer.get_all(timeout=0)
    assert [b for b in batches[:len(held)]] == [h.batch for h in held], "the held batches left first"


def test_a_held_batch_passes_a_throttle_while_the_receive_thread_waits_behind_it() -> None:
    """While the receive thread waits on a full queue it reads no status, so a
    throttle a peer lifted may still be in force: an executor whose own input is
    full (what the receive thread may wait on) sends past it, one batch. Two
    workers took turns in 3 s stalls without that (a chaos run, session 20)."""
    executors = shared_executors(
        {"topology.acker.executors": 0, "topology.executor.receive.buffer.size": 10}, workers=2,
        parallelism={"split_bolt": (2, 2), "count_bolt": (2, 2)})
    split = executors["split_bolt"]
    state = split.worker
    remote = frozenset(t for t, where in state.task_location.items() if where < 0)
    state.throttle.update(1, remote, now=time.monotonic())
    spout_task = state.assignment.component_tasks["sentence_spout"][0]
    (split_task,) = split.assignment.tasks

    def sentences(n: int) -> list[Any]:
        tuples = state.make_tuples(spout_task, "default", None,
                                   [["the quick brown fox jumps over the lazy dog"]] * n, split_task)
        return [(split_task, tup) for tup in tuples]

    split.incoming.put(sentences(2))
    assert split.step() and split.holding, "words for the throttled count task wait"
    split.incoming.put(sentences(10))  # its input full: the receive thread may wait on it
    assert not split.send_held(), "the throttle holds while the receive thread reads statuses"
    state.receive_waiting = True
    assert split.send_held() and not split.holding, "past the throttle, one batch"
    sent = [m.task for batch in state.transfer.get_all(timeout=0) for m in batch]
    assert set(sent) <= remote and sent
    split.incoming.get_all(timeout=0)  # room again: the throttle holds once more
    split.incoming.put(sentences(2))
    assert split.step() and split.holding


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


# -- a component that waits leaves for a thread of its own ----------------------------


def test_short_turns_are_not_timed_on_the_cpu_clock() -> None:
    watch = BlockingWatch()
    for _ in range(10_000):
        assert not watch.record(WATCH_AFTER / 2, None)
    assert not watch.watching


def test_turns_that_compute_are_judged_not_blocking_and_the_watch_rests() -> None:
    watch = BlockingWatch()
    assert not watch.record(0.005, None) and watch.watching, "a long turn: timed from now on"
    turns = int(WATCH_WINDOW / 0.005)
    verdicts = [watch.record(0.005, 0.004) for _ in range(turns)]  # 20 % idle
    assert verdicts == [False] * turns
    assert watch.judged_share == pytest.approx(0.2) and not watch.watching


def test_turns_that_wait_half_their_time_are_judged_blocking_once_the_window_is_full() -> None:
    watch = BlockingWatch()
    watch.record(0.03, None)
    turns = int(WATCH_WINDOW / 0.03) + 1  # the window is full at the last turn, not before
    verdicts = [watch.record(0.03, 0.03 * (1 - IDLE_SHARE)) for _ in range(turns)]
    assert verdicts[-1] and not any(verdicts[:-1]), "judged when the window is full"
    assert watch.judged_share == pytest.approx(IDLE_SHARE)


@pytest.mark.serial  # another process on the CPUs makes the compute thread wait
def test_the_busy_clock_counts_another_threads_work_but_not_a_sleep() -> None:
    """Waiting for the interpreter while another thread of the worker computes is
    not idle; sleeping is. (Every CPU second of the other thread counts, not a share
    of the wait: on a loaded machine the other thread gets only part of a CPU, and
    its own run-queue time is not this thread's.)"""
    clock = BusyClock()
    try:
        started, busy = time.perf_counter(), clock()
        time.sleep(0.05)
        slept, busy = time.perf_counter() - started, clock() - busy
        assert busy < 0.5 * slept

        computed: list[float] = []

        def compute() -> None:
            cpu, until = time.thread_time(), time.perf_counter() + 0.05
            while time.perf_counter() < until:
                pass
            computed.append(time.thread_time() - cpu)

        other = threading.Thread(target=compute)
        started, busy = time.perf_counter(), clock()
        other.start()
        other.join()
        waited, busy = time.perf_counter() - started, clock() - busy
        assert computed[0] > 0.01, "the other thread ran"
        assert busy >= 0.99 * computed[0], f"{busy:.4f} s busy in {waited:.4f} s, the other thread computed {computed[0]:.4f}"
    finally:
        clock.close()


def test_the_busy_clock_reads_the_run_queue_time_holding_the_lock_or_else_with_os_pread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The read through the C library gives what `os.pread` gives; where it cannot
    be had, the clock reads with `os.pread` and still counts the run queue."""
    fd = os.open(SCHEDSTAT, os.O_RDONLY)
    try:
        read = _pread_holding_the_lock(fd)
        assert read is not None, "glibc's pread through ctypes.PyDLL"
        first, plain, second = read().split(), os.pread(fd, 128, 0).split(), read().split()
        assert len(first) == len(plain) == 3
        assert int(first[1]) <= int(plain[1]) <= int(second[1])  # run-queue ns only grow
    finally:
        os.close(fd)

    def no_library(name: object) -> None:
        raise OSError("no C library here")

    monkeypatch.setattr(ctypes, "PyDLL", no_library)
    assert _pread_holding_the_lock(0) is None
    clock = BusyClock()
    try:
        assert isinstance(clock._read, functools.partial)  # os.pread's
        assert clock._queued_ns() >= 0
        assert clock() >= time.process_time() - 0.01
    finally:
        clock.close()


def test_a_window_over_a_stop_of_the_whole_process_is_forgotten_not_judged() -> None:
    # (a data-plane audit: a SIGSTOP of 20 s made the components caught mid-turn
    # look as if they waited in their code, and they were moved to threads of their own)
    watch = BlockingWatch()
    watch.record(0.03, None)
    watch.record(20.0, 0.0)  # the turn the stop fell in
    watch.forget()
    assert not watch.watching
    watch.record(0.03, None)
    turns = int(WATCH_WINDOW / 0.03) + 1
    verdicts = [watch.record(0.03, 0.025) for _ in range(turns)]  # computing again
    assert not any(verdicts) and watch.judged_share < IDLE_SHARE


def test_a_worker_knows_it_was_stopped_by_the_gaps_in_its_main_loop() -> None:
    state = word_count_state({}, ONE_EACH)
    assert not state.stalled_since(0.0), "before its main loop runs: never"
    state.main_loop_at = time.monotonic()
    assert not state.stalled_since(0.0)
    state.main_loop_at -= 2 * STALL_SECS  # its main loop has not run since: stopped now
    assert state.stalled_since(time.monotonic())
    state.main_loop_at, state.stalled_until = time.monotonic(), 50.0  # a stop that ended at 50
    assert state.stalled_since(49.0) and not state.stalled_since(51.0)


def test_an_executor_that_waits_leaves_for_a_thread_of_its_own_and_the_rest_go_on() -> None:
    """The count bolt sleeps 2 ms a word. The shared thread moves it to a thread of
    its own; the spout and split bolt then run while it sleeps (every sentence is
    split while words still wait for the count bolt), and every tree settles."""
    state = word_count_state({"topology.max.spout.pending": 100}, ONE_EACH)
    executors = [new_executor(state, e) for e in state.local_executors]
    (spout,) = [e for e in executors if e.is_spout]
    (split,) = [e for e in executors if e.component == "split_bolt"]
    (count,) = [e for e in executors if e.component == "count_bolt"]
    thread = start_shared(state, executors)
    contexts: set[str | None] = set()  # what the log names, in the shared thread and then its own
    for component in count.components.values():
        process = component.process
        component.process = lambda tup, process=process: (
            contexts.add(threading.current_thread().storm_zmq_log_context()),  # type: ignore[attr-defined]
            time.sleep(0.002), process(tup))
    spout.request_activate()
    wait_for(lambda: thread.own_threads == [count], "the count bolt's own thread")
    assert count.is_alive() and not count.shared and count not in thread.executors
    wait_for(lambda: split.executed >= spout.emitted >= 100 and count.queued > 0,
             "every sentence split while the count bolt has words to go")
    drain_and_stop(spout, executors, thread)
    count.join(10)
    assert not count.is_alive()
    assert spout.failed == 0 and spout.acked == spout.emitted
    assert count.executed == split.emitted
    assert all(e.failure is None for e in executors)
    assert contexts == {count.log_label}


def test_the_thread_names_the_executor_whose_code_it_runs_for_the_log() -> None:
    """What the worker's log lines name (storm_zmq.logs.ExecutorContext): the
    executor being started, stepped or finished; nothing between them."""
    state = word_count_state({"topology.max.spout.pending": 100}, ONE_EACH)
    executors = [new_executor(state, e) for e in state.local_executors]
    (spout,) = [e for e in executors if e.is_spout]
    (count,) = [e for e in executors if e.component == "count_bolt"]
    seen: dict[str, list[str | None]] = {"initialize": [], "process": [], "cleanup": []}
    build = count.build_components

    def build_and_see() -> None:  # in the shared thread, starting the executor
        build()
        seen["initialize"].append(threading.current_thread().storm_zmq_log_context())  # type: ignore[attr-defined]

    count.build_components = build_and_see  # type: ignore[method-assign]
    thread = start_shared(state, executors)
    for component in count.components.values():
        process = component.process
        component.process = lambda tup, process=process: (
            seen["process"].append(thread.storm_zmq_log_context()), process(tup))
        component.cleanup = lambda: seen["cleanup"].append(thread.storm_zmq_log_context())
    spout.request_activate()
    wait_for(lambda: spout.acked >= 100, "100 trees acked")
    drain_and_stop(spout, executors, thread)
    (task,) = count.assignment.tasks
    label = f"count_bolt:{task}"
    assert seen["initialize"] == [label]
    assert seen["process"] and set(seen["process"]) == {label}
    assert seen["cleanup"] == [label]
    assert thread.storm_zmq_log_context() is None


def test_a_failure_in_the_threads_own_code_is_the_threads_not_the_last_executors() -> None:
    """What raises between steps (here the idle wait) kills the worker as the
    thread's failure; no component is blamed for it."""
    state = word_count_state({"topology.acker.executors": 0}, ONE_EACH)
    executors = [new_executor(state, e) for e in state.local_executors]
    thread = SharedExecutorThread(state, executors)

    def broken(running: Any) -> float:
        raise RuntimeError("the thread's own bug")

    thread._idle_wait = broken  # type: ignore[method-assign]
    thread.run()  # in this thread: no input, so the first round ends in the idle wait
    assert state.failed.is_set()
    (failure,) = state.failures
    assert "executors thread failed" in str(failure) and "the thread's own bug" in str(failure)
    assert all(e.failure is None for e in executors)


def test_a_worker_without_executors_has_a_thread_that_just_ends() -> None:
    """More workers than executors leave a worker with none (Storm's even split)."""
    state = word_count_state({"topology.acker.executors": 0})
    SharedExecutorThread(state, []).run()  # in this thread: what it raises fails the test
    assert not state.failed.is_set()


PRESSURE = Path(__file__).parent / "project" / "topologies" / "pressure.py"


def test_a_call_that_blocks_has_the_threads_other_executors_moved_to_a_new_one() -> None:
    """A step that never ends is never judged by BlockingWatch: the worker's main
    thread moves the other executors away (`move_others_off`), and the path that
    does not need the blocked sink goes on while it blocks."""
    state = word_count_state({"test.start_after": 0, "test.rate": 0, "test.sleep_ms": 0},
                             topology=PRESSURE)
    executors = [new_executor(state, e) for e in state.local_executors]
    by_name = {e.component: e for e in executors}
    successors: list[SharedExecutorThread] = []
    thread = SharedExecutorThread(state, executors, successors.append)
    release = threading.Event()
    thread.start()
    for _ in executors:
        assert state._ready.acquire(timeout=10)
    (slow_sink,) = by_name["slow_sink"].components.values()
    slow_sink.process = lambda tup: release.wait(30)  # type: ignore[method-assign]
    for name in ("fast_spout", "slow_spout"):
        by_name[name].request_activate()
    try:
        wait_for(lambda: thread.stepping is by_name["slow_sink"], "the slow sink blocked")
        fast = by_name["fast_sink"]
        before = fast.executed
        time.sleep(0.3)  # the thread held by the blocked step: nothing else runs
        assert fast.executed == before
        assert not thread.move_others_off(by_name["fast_sink"]), "not the executor in its step"
        assert thread.move_others_off(by_name["slow_sink"])
        assert thread.executors == [by_name["slow_sink"]] and len(successors) == 1
        wait_for(lambda: fast.executed >= before + 10_000, "the fast path going on without it")
        assert by_name["slow_sink"].executed <= 1
    finally:
        release.set()
        for executor in executors:
            executor.stop_requested.set()
        for runner in [thread, *successors]:
            runner.join(10)
    assert not thread.is_alive() and not any(r.is_alive() for r in successors)
    assert all(e.failure is None for e in executors)


def test_an_executor_handed_over_puts_what_may_go_before_waiting_on_a_full_queue() -> None:
    """Found by a soak audit: a spout that left the shared thread (a burst of
    replays) put what it held strictly in order, so the batches for a remote task,
    whose consumer sat idle, waited behind one for a full local queue. Only the order
    of what goes to the same task is Storm's to keep; the rest now goes at once."""
    from storm_zmq.messaging import TaskMessage
    from storm_zmq.runtime.executor import RemoteBatch
    from storm_zmq.runtime.held import HeldBatch

    executors = shared_executors({"topology.acker.executors": 0}, workers=2)
    split, count = executors["split_bolt"], executors["count_bolt"]
    (remote_task,) = [t for t, where in split.worker.task_location.items() if where < 0][:1]
    full = count.incoming
    full.put([(0, None)], weight=full.capacity)
    local = HeldBatch(full, [(count.assignment.tasks[0], None)], 1, remote=False)
    remote = RemoteBatch([TaskMessage(remote_task, b"payload")])
    remote.worker, remote.tuples = 1, 1
    for batch in (local, HeldBatch(split.worker.transfer, remote, 1, remote=True)):
        split._held.add(batch, lambda _batch: False, lambda _task: False, split._part_of)
    split.shared = False  # handed over: it puts what it held, waiting for room
    releasing = threading.Thread(target=split._release_held, daemon=True)
    releasing.start()
    wait_for(lambda: len(split.worker.transfer) == 1, "the remote batch put past the full queue", 5)
    assert releasing.is_alive() and len(full) == full.capacity, "the local batch waits for room"
    assert take_all(full) == [(0, None)]
    releasing.join(10)
    assert not releasing.is_alive() and not split.holding
    assert take_all(full) == local.batch
