"""One thread for all of a worker's executors (`worker.shared.executor.thread`).

Why. Storm gives each executor a thread, and so does a worker here with the option
off. But a worker runs Python one thread at a time: its executor threads do not run in
parallel, they take turns, and every turn is a hand-off, a queue's wake-up and the
interpreter's lock passed on through the kernel (about 24,000 context switches a
second per worker at a moderate load, docs/benchmarks.md, session 13). In one thread
the executors take the same turns without any of that: a batch a producer flushes is
in its consumer's queue when the consumer's turn comes.

How. The thread runs rounds; in each, every executor takes one `step()`: what its own
thread's loop does once, except that it never waits. A round in which no executor
took input or emitted ends in a wait for the next put into one of their queues (from
the receive thread) or the send thread's next take from the transfer queue, at most
the spouts' wait when the worker has spouts (Storm's sleep spout wait strategy,
`topology.sleep.spout.wait.strategy.time.ms`: a spout whose `next_tuple` emitted
nothing is called again after that long), 1 ms when an executor holds output, else
50 ms (ticks and timeouts keep their clocks). A busy thread lets the
other threads that need the interpreter run at least every `YIELD_INTERVAL`
(`time.sleep(0)`), when there are any: the receive and send threads of a worker with
peers, and executors that left for threads of their own (below). Otherwise they
would get it only every switch interval (5 ms): the transfer queue would fill and
stop every executor (two workers with acking counted fewer words a second than with
a thread per executor; docs/benchmarks.md, "Session 13"), and a bolt that sleeps
1 ms a tuple in a thread of its own ran 1,200 tuples in 6 s, and 5,400 with the yield.

Backpressure without waiting. Where an executor's own thread would wait on a full
queue, a shared thread's executor must not: the consumer it waited for runs in the
same thread. So:

* a batch for a full local queue, or the part of a remote batch for a task its
  worker throttles, stays in its executor (`storm_zmq.runtime.held`), and so does
  what the executor flushes after it for the same tasks; the rest goes. This is
  where its own thread would wait, and only there: a producer whose load-aware
  shuffle chooses around a full queue or a throttled task goes on, as with threads.
  One that must send there stops taking input and emitting once what it holds
  carries `Executor._hold_limit` tuples (`topology.transfer.batch.size`), while the
  others go on (a spout keeps taking its acks and fails). A queue's bound holds;
* with peers, a full transfer queue stops every executor of the thread until the
  send thread takes from it (a put that had to find room would go to whoever came
  first after each take: a second spout once got 1 tuple in 12 s);
* a bolt's turn lasts about `STEP_SLICE` (the interpreter's switch interval), in
  chunks of input sized by its pace, and ends early at its hold limit; what it
  took but did not run is run before it takes from its queue again, so the queue
  fills behind a slow bolt and throttles;
* edges on a cycle of the topology go past the bound rather than stop, as they do
  with threads (`storm_zmq.runtime.backpressure`).

A component that waits. A bolt that calls a database, or a spout that polls a socket,
would hold up every executor of its worker while it waits, where a thread of its own
lets the others run meanwhile. So the thread watches for it (`BlockingWatch`): an
executor whose turns spend at least `IDLE_SHARE` of their time idle, over at least
`WATCH_WINDOW` of turns, gets a thread of its own from then on, as every executor has
with the option off. It hands over what it kept back (held output, input left for
later) and goes on where it was; the log says which component and why. The option is
the default because of it.

Idle is what `BusyClock` does not count: time in which no thread of the worker ran
on a CPU and this thread did not wait in a run queue for one. So neither waiting for
the interpreter's lock while another thread of the worker runs Python, nor being
preempted by another process, counts. Both happen to a bolt that computes: beside a
`SparkSpout` (its JVM busy on every CPU, the spout's own thread unpickling rows), the
split and count bolts were 51-72 % off their thread's CPU clock and left the shared
thread, which by this clock they do not. An executor's turns are timed on it (a read
costs about 2 µs and keeps the interpreter's lock: one that let go of it took 50 µs
on average in a busy worker) only from a turn of `WATCH_AFTER` or longer on, until
`WATCH_WINDOW` of them is judged.

A component that emits without end in one call. A spout whose one `next_tuple()`
emits a whole file cannot be stopped halfway by holding: what it holds grew without
bound (a spout of 3 million tuples in one call took 817 MB, with a thread of its own
40 MB). Once what an executor holds reaches `Executor._hand_over_at` tuples in one
call, the thread hands its other executors to a new shared thread and from then on
runs that executor alone, as its own thread (`hand_over`): the emit waits for room as
with the option off, and its consumers, in the new thread, make it.

A call that never ends (a `process` blocked on a connection) is never judged by
`BlockingWatch`, whose judgement comes at the end of a step. The worker's main thread
watches the step in progress instead, and past `HAND_OFF_SECS` (1 s) it moves the
thread's other executors to a new shared thread (`move_others_off`, the same
hand-over), naming the component: they go on without it.

A component that raises kills the worker as with threads: the thread reports it with
its traceback and stops. Stopping: the thread ends when every executor still in it
was told to stop, then flushes each and runs its `cleanup()`; an executor that left
for its own thread does so in that thread.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING

from storm_zmq.runtime.executor import Executor
from storm_zmq.runtime.queues import QueueClosed
from storm_zmq.runtime.spout_executor import IDLE_SPOUT_WAIT, SpoutExecutor
from storm_zmq.topology.loader import user_code_line

if TYPE_CHECKING:
    from storm_zmq.runtime.worker import WorkerState

#: How long an idle round waits without spouts and without held output.
IDLE_WAIT = 0.05

#: A busy thread lets the worker's other threads that need the interpreter (the
#: receive and send threads, executors that left) run at least this often.
YIELD_INTERVAL = 0.001

#: An executor whose turns are idle (`BusyClock`) this share of their time waits in
#: its own code (a sleep, I/O): it gets a thread of its own.
IDLE_SHARE = 0.5

#: Turns timed on the busy clock are judged once they add up to this long.
WATCH_WINDOW = 0.1

#: A turn this long makes the executor's next turns timed on the busy clock too.
WATCH_AFTER = 0.001

#: Where Linux keeps the calling thread's scheduling times: on-CPU and run-queue
#: nanoseconds, then time slices.
SCHEDSTAT = "/proc/thread-self/schedstat"

log = logging.getLogger(__name__)


class BlockingWatch:
    """Whether an executor's turns wait in its own code rather than compute.

    Fed each turn's wall time and, while `watching`, its busy time (`BusyClock`).
    Watching starts with a turn of `WATCH_AFTER` or longer; the timed turns are
    judged when they add up to `WATCH_WINDOW`: blocking if they were idle
    `IDLE_SHARE` of it. A window that was not stops watching until the next long
    turn. Pure logic: the shared thread reads the clocks."""

    def __init__(self) -> None:
        self.watching = False
        self.wall = 0.0  # of the timed turns of the window so far
        self.idle = 0.0  # of those
        self.judged_share = 0.0  # idle share of the last window judged

    def forget(self) -> None:
        """Drop the window so far, unjudged: its turns spanned a stop of the whole
        process (`WorkerState.stalled_since`), idle but for no fault of the code."""
        self.watching = False
        self.wall = self.idle = 0.0

    def record(self, wall: float, busy: float | None) -> bool:
        """One turn: its wall time, and its busy time if it was `watching`; True
        when the executor waits in its own code (judged over the window just ended)."""
        if busy is None:
            if wall >= WATCH_AFTER:
                self.watching = True
            return False
        self.wall += wall
        self.idle += max(0.0, wall - busy)
        if self.wall < WATCH_WINDOW:
            return False
        self.judged_share = self.idle / self.wall
        self.watching = False
        self.wall = self.idle = 0.0
        return self.judged_share >= IDLE_SHARE


class BusyClock:
    """Seconds in which the worker ran (its process's CPU time, every thread) plus
    seconds in which the thread that made the clock waited in a run queue for a CPU
    (`SCHEDSTAT`): what a turn of an executor that computes is made of, even when it
    waits for the interpreter's lock or is preempted. Where Linux does not keep the
    run-queue time, CPU time only. Open it in the thread it is for."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._read: Callable[[], bytes] | None = None
        try:
            self._fd = os.open(SCHEDSTAT, os.O_RDONLY)
            self._read = _pread_holding_the_lock(self._fd) or functools.partial(os.pread, self._fd, 128, 0)
            self._queued_ns()
        except (OSError, ValueError, IndexError):
            self.close()

    def __call__(self) -> float:
        if self._read is None:  # no run-queue time here (or no longer)
            return time.process_time()
        try:
            return time.process_time() + self._queued_ns() / 1e9
        except (OSError, ValueError, IndexError):
            self.close()
            return time.process_time()

    def _queued_ns(self) -> int:
        assert self._read is not None
        return int(self._read().split()[1])

    def close(self) -> None:
        fd, self._fd, self._read = self._fd, None, None
        if fd is not None:
            os.close(fd)


def _pread_holding_the_lock(fd: int) -> Callable[[], bytes] | None:
    """A read of `fd` from its start that keeps the interpreter's lock, or None
    where the C library's `pread` cannot be called so. Why: `os.pread` lets go of
    the lock, so each read handed the receive or send thread a turn. In a busy
    2-worker word count the clock's read before a timed turn then took 50 us on
    average (2 us with no other thread wanting the lock), 2.5 % of the shared
    thread's time in worker 0, and the read after it as much again; holding the
    lock, 10 us. A read of a /proc file does not wait for anything, so holding the
    lock through it keeps no other thread waiting long."""
    try:
        pread = ctypes.PyDLL(None).pread
    except (OSError, AttributeError):
        return None
    pread.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long)
    pread.restype = ctypes.c_ssize_t
    buffer = ctypes.create_string_buffer(128)

    def read() -> bytes:
        size = pread(fd, buffer, 128, 0)
        if size < 0:
            raise OSError(f"pread of {SCHEDSTAT} failed")
        return buffer.raw[:size]

    return read


#: Component methods the runtime calls: what the hand-over names when no frame of
#: the user's own code emits (a `ReliableSpout.fail` replaying, say).
_HOOKS = frozenset({"next_tuple", "process", "process_tick", "process_batch", "fail", "ack",
                    "activate", "deactivate", "initialize", "cleanup"})
_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _emitting_call() -> str:
    """Where the emits that fill the held output come from, called in the emitting
    thread: the innermost frame of the user's code, else the component method the
    runtime called. It used to say "a next_tuple() or process()" always, where a
    soak audit saw replays in fail() and a thread of the component's own."""
    where = user_code_line(sys._getframe(1))
    if where:
        return f"at {where}"
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:  # the runtime's own ack()s and fail()s are no hooks
        code = frame.f_code
        if code.co_name in _HOOKS and not code.co_filename.startswith(_RUNTIME_DIR):
            return f"in {code.co_name}()"
        frame = frame.f_back
    return "outside any call of the runtime's: a thread of the component's own?"


class SharedExecutorThread(threading.Thread):
    def __init__(self, state: WorkerState, executors: Sequence[Executor],
                 on_successor: Callable[[SharedExecutorThread], None] | None = None) -> None:
        super().__init__(name="executors", daemon=True)
        self.state = state
        self.executors = list(executors)
        #: Told of the thread that takes this one's executors over (`hand_over`): the
        #: worker joins it when it stops.
        self._on_successor = on_successor
        #: The executor this thread runs alone since `hand_over`, if one.
        self.handed_over: Executor | None = None
        #: Held while `stepping` changes and while another thread hands over
        #: (`move_others_off`): a step cannot end, and the next begin, meanwhile.
        self._turn_lock = threading.Lock()
        #: Executors that left for a thread of their own (`BlockingWatch`); the
        #: worker joins them when it stops.
        self.own_threads: list[Executor] = []
        self._watches = {executor: BlockingWatch() for executor in executors}
        self._wake = threading.Event()
        #: The executor whose step (or finish: cleanup) runs now, and since when
        #: (time.monotonic): the worker names a component that holds the thread
        #: (`Worker._say_who_holds_the_thread`). Written here only.
        self.stepping: Executor | None = None
        self.step_started = 0.0
        #: The executor whose components are being built and initialized now.
        self._starting: Executor | None = None
        for executor in self.executors:
            executor.shared = True
            executor.shared_thread = self
            executor.incoming.on_put = self._wake.set
        state.transfer.on_take = self._wake.set  # room for the executors it stopped

    def storm_zmq_log_context(self) -> str | None:
        """Which executor's code this thread runs now, if one's: the worker's log
        lines written meanwhile name it (storm_zmq.logs.ExecutorContext). Read from
        what the loop records anyway, so the steps pay nothing for it."""
        executor = self.stepping or self.handed_over or self._starting
        return None if executor is None else executor.log_label

    def run(self) -> None:
        for executor in self.executors:
            executor.owner = threading.get_ident()  # taken over too: calls come here now
        for executor in self.executors:
            if executor.started_up:  # taken over from another thread (hand_over)
                continue
            self._starting = executor
            try:
                executor.start_up()
            except BaseException as exc:
                executor.report_failure(exc)
                return
            finally:
                self._starting = None
        if not self._rounds():
            return
        if self.handed_over is not None:
            self.handed_over.run()  # its loop goes on here, as in a thread of its own
            return
        for executor in self.executors:
            with self._turn_lock:
                self.step_started = time.monotonic()  # first: the worker reads stepping, then this
                self.stepping = executor
            try:
                executor.finish()
            except BaseException as exc:
                executor.report_failure(exc)
        self.stepping = None

    def _rounds(self) -> bool:
        """Run rounds until every executor is told to stop: True; False when a
        component raised (reported; the worker dies of it)."""
        wake = self._wake
        stepping: Executor | None = None  # the executor whose step is running, if one is
        first = 0
        has_peers = len(self.state.assignment.workers) > 1
        next_yield = 0.0
        watches = self._watches
        perf_counter = time.perf_counter
        turn_lock = self._turn_lock
        busy_clock = BusyClock()
        try:
            while True:
                running = [e for e in self.executors if not e.stop_requested.is_set()]
                if not running:
                    return True
                wake.clear()  # a put from now on ends the wait below at once
                worked = False
                # each round starts one executor later: whoever comes first after a
                # full queue was taken from is not always the same one
                first = first + 1 if first + 1 < len(running) else 0
                for executor in running[first:] + running[:first]:
                    watch = watches[executor]
                    timed = watch.watching
                    started = perf_counter()
                    busy = busy_clock() if timed else 0.0
                    with turn_lock:
                        self.step_started = time.monotonic()  # first: see finish's loop in run
                        stepping = self.stepping = executor
                    if executor.step():
                        worked = True
                    with turn_lock:
                        stepping = self.stepping = None
                        if self.handed_over is not None:
                            return True
                    wall = perf_counter() - started
                    if self.state.stalled_since(self.step_started):
                        watch.forget()  # the process was stopped: nobody's waiting
                    elif watch.record(wall, busy_clock() - busy if timed else None):
                        self._give_own_thread(executor, watch)
                if not worked:
                    wake.wait(self._idle_wait(running))
                elif (has_peers or self.own_threads) and time.monotonic() >= next_yield:
                    time.sleep(0)  # the other threads' turn, see above
                    next_yield = time.monotonic() + YIELD_INTERVAL
        except QueueClosed:  # stopping while a queue closed under us
            return True
        except BaseException as exc:
            if stepping is None:  # the thread's own code: the worker dies of it too
                self.state.thread_failed(self.name, exc)
            else:
                stepping.report_failure(exc)
            return False
        finally:
            busy_clock.close()

    def hand_over(self, executor: Executor) -> None:
        """Called by `executor`, in this thread, in the middle of its step: it holds
        too much output from one call of its component. Its fellow executors go to
        a new shared thread; this one goes on with `executor` alone, which from now
        on waits for room where it held output (its caller puts what it holds
        first). Its consumers are in the new thread, so the wait ends."""
        with self._turn_lock:
            if self.handed_over is None:
                log.warning(
                    "component %r (executor %d) emitted more in one call of its code (%s) than "
                    "its consumers could take: it runs in a thread of its own from now on, "
                    "where an emit waits for room, so that memory stays bounded",
                    executor.component, executor.index, _emitting_call())
                self._hand_over(executor)

    def move_others_off(self, executor: Executor) -> bool:
        """Called from another thread (the worker's main thread): `executor` has
        been in one step, in its component's code, for long (a call that blocks).
        A step never ends there, so `BlockingWatch` never judges it; meanwhile the
        thread's other executors waited for it. They go on in a new shared thread,
        as in `hand_over`; False if `executor`'s step ended meanwhile (nothing to do)."""
        with self._turn_lock:  # the step cannot end (and another begin) while held
            if (self.stepping is not executor or self.handed_over is not None
                    or len(self.executors) < 2 or executor.stop_requested.is_set()):
                return False
            self._hand_over(executor)
            return True

    def _hand_over(self, executor: Executor) -> None:
        """Under `_turn_lock`: this thread keeps `executor` alone, a successor takes
        the others. What `executor` holds is put before its next output (`_publish`)."""
        others = [e for e in self.executors if e is not executor]
        self.executors = [executor]
        self._watches = {}
        self.handed_over = executor
        self.stepping = None  # no longer holds anyone up (`Worker._say_who_holds_the_thread`)
        executor.shared = False
        executor.shared_thread = None
        executor.incoming.on_put = None
        if not others:
            return
        successor = SharedExecutorThread(self.state, others, self._on_successor)
        executor.incoming.on_take = successor._wake.set  # its producers hold for it there
        # the executors that left this thread are the successor's to wake and yield to
        # (the worker joins them through either list)
        successor.own_threads.extend(self.own_threads)
        for own in self.own_threads:
            own.incoming.on_take = successor._wake.set
        successor.start()
        if self._on_successor is not None:  # listed once started: joining needs it started
            self._on_successor(successor)

    def _give_own_thread(self, executor: Executor, watch: BlockingWatch) -> None:
        """`executor` waits in its own code: from now on it runs in a thread of its
        own, as with the option off, and this thread's other executors go on. Its
        queue then wakes this thread when it is taken from (producers here hold
        batches for it while it is full), no longer when it is put into."""
        if executor.stop_requested.is_set():
            return  # stopping anyway; finish() runs here
        self.executors.remove(executor)
        del self._watches[executor]
        executor.shared = False
        executor.shared_thread = None
        executor.incoming.on_put = None
        executor.incoming.on_take = self._wake.set
        log.info(
            "component %r (executor %d) spent %.0f%% of its turns' time idle, waiting "
            "in its own code: it runs in a thread of its own from now on, so that it does "
            "not hold up the worker's other executors", executor.component, executor.index,
            100 * watch.judged_share,
        )
        executor.start()
        # listed once started: the worker joins what is listed, and a thread not
        # yet started cannot be joined
        self.own_threads.append(executor)

    def _idle_wait(self, running: Sequence[Executor]) -> float:
        """The spouts' wait (`SpoutExecutor.idle_wait`), the shortest, or 1 ms when
        an executor holds output, else IDLE_WAIT: a put into a queue ends it sooner."""
        waits = [IDLE_SPOUT_WAIT if executor.holding else IDLE_WAIT for executor in running]
        waits += [executor.idle_wait for executor in running if isinstance(executor, SpoutExecutor)]
        return min(waits, default=IDLE_WAIT)
