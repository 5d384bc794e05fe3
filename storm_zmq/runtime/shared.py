"""One thread for all of a worker's executors (`worker.shared.executor.thread`).

Why. Storm gives each executor a thread, and so does a worker here by default. But a
worker runs Python one thread at a time: its executor threads do not run in
parallel, they take turns, and every turn is a hand-off, a queue's wake-up and the
interpreter's lock passed on through the kernel (about 24,000 context switches a
second per worker at a moderate load, docs/benchmarks.md, session 13). In one thread
the executors take the same turns without any of that: a batch a producer flushes is
in its consumer's queue when the consumer's turn comes.

How. The thread runs rounds; in each, every executor takes one `step()`: what its own
thread's loop does once, except that it never waits. A round in which no executor
took input or emitted ends in a wait for the next put into one of their queues (from
the receive thread) or the send thread's next take from the transfer queue, at most
`IDLE_SPOUT_WAIT` when the worker has spouts (Storm's spout wait: a spout whose
`next_tuple` emitted nothing is called again after that long) or an executor holds
output, else 50 ms (ticks and timeouts keep their clocks). A busy thread of a worker
with peers lets the receive and send threads run at least every `YIELD_INTERVAL`
(`time.sleep(0)`): otherwise they would get the interpreter only every switch
interval (5 ms), by which time the transfer queue has filled and stopped every
executor (without it, two workers with acking counted fewer words a second than with
a thread per executor; docs/benchmarks.md, "Session 13").

Backpressure without waiting. Where an executor's own thread would wait on a full
queue, a shared thread's executor must not: the consumer it waited for runs in the
same thread. So:

* a full queue stops its producers: an executor whose local consumers' queues
  (`WorkerState.consumer_queues`) or, with peers, the transfer queue hold their
  capacity takes no turn, and a bolt stops between chunks of input once one does. A
  put itself never waits (`force`), so a queue holds at most its capacity plus one
  turn's output of each producer;
* a bolt's turn lasts about `STEP_SLICE` (the interpreter's switch interval), in
  chunks of input sized by its pace; what it took but did not run is run before it
  takes from its queue again, so the queue fills behind a slow bolt and throttles;
* a remote batch for a task its worker throttles stays in its executor
  (`Executor._held`), in order; the executor takes no input until it is sent, while
  the others go on. A spout keeps taking its acks and fails;
* edges on a cycle of the topology go past the bound rather than stop, as they do
  with threads (`storm_zmq.runtime.backpressure`).

A component that raises kills the worker as with threads: the thread reports it with
its traceback and stops. Stopping: the thread ends when every executor was told to
stop, then flushes each and runs its `cleanup()`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from storm_zmq.runtime.executor import IDLE_SPOUT_WAIT, Executor
from storm_zmq.runtime.queues import QueueClosed

if TYPE_CHECKING:
    from storm_zmq.runtime.worker import WorkerState

#: How long an idle round waits without spouts and without held output.
IDLE_WAIT = 0.05

#: A busy thread lets the receive and send threads run at least this often.
YIELD_INTERVAL = 0.001


class SharedExecutorThread(threading.Thread):
    def __init__(self, state: WorkerState, executors: Sequence[Executor]) -> None:
        super().__init__(name="executors", daemon=True)
        self.state = state
        self.executors = list(executors)
        self._wake = threading.Event()
        for executor in self.executors:
            executor.shared = True
            executor.incoming.on_put = self._wake.set
        state.transfer.on_take = self._wake.set  # room for the executors it stopped
        self._has_spouts = any(executor.is_spout for executor in self.executors)

    def run(self) -> None:
        for executor in self.executors:
            try:
                executor.start_up()
            except BaseException as exc:
                executor.report_failure(exc)
                return
        if not self._rounds():
            return
        for executor in self.executors:
            try:
                executor.finish()
            except BaseException as exc:
                executor.report_failure(exc)

    def _rounds(self) -> bool:
        """Run rounds until every executor is told to stop: True; False when a
        component raised (reported; the worker dies of it)."""
        wake = self._wake
        executor = self.executors[0]
        first = 0
        has_peers = len(self.state.assignment.workers) > 1
        next_yield = 0.0
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
                    if executor.step():
                        worked = True
                if not worked:
                    wake.wait(self._idle_wait(running))
                elif has_peers and time.monotonic() >= next_yield:
                    time.sleep(0)  # the receive and send threads' turn, see above
                    next_yield = time.monotonic() + YIELD_INTERVAL
        except QueueClosed:  # stopping while a queue closed under us
            return True
        except BaseException as exc:
            executor.report_failure(exc)
            return False

    def _idle_wait(self, running: Sequence[Executor]) -> float:
        if self._has_spouts or any(executor.holding for executor in running):
            return IDLE_SPOUT_WAIT
        return IDLE_WAIT
