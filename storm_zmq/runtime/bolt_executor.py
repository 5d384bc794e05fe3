"""The executor of a bolt's tasks: it runs each input batch through `process` (or a
BatchingBolt's batches), acks inline where the bolt leaves acking to it, and sends
tick tuples (`topology.tick.tuple.freq.secs`)."""

from __future__ import annotations

import itertools
import logging
import time
from typing import Any

from storm_zmq.component import (
    SYSTEM_COMPONENT,
    TICK_STREAM,
    BatchingBolt,
    Bolt,
    TicklessBatchingBolt,
    Tuple,
)
from storm_zmq.runtime.collector import TaskCollector
from storm_zmq.runtime.executor import Executor
from storm_zmq.runtime.serialization import SETTLED, TupleId

log = logging.getLogger("storm_zmq.runtime.executor")

#: A bolt's turn, in a shared thread (storm_zmq.runtime.shared) or its own: the interpreter's
#: default switch interval, the most a thread of its own runs before others get a turn.
STEP_SLICE = 0.005
#: The largest chunk of input a bolt runs in one turn.
MAX_CHUNK = 1024
#: Its first, before the bolt's pace is known: one tuple, since a bolt that takes
#: 0.1 s a tuple held 64 of them, 6.4 s of output and acks, in a first chunk of 64
#: (a fast bolt's next chunk is MAX_CHUNK at once).
FIRST_CHUNK = 1

#: Process-latency samples waiting for their ack, at most (unacked ones are dropped).
MAX_OPEN_SAMPLES = 1000

#: A bolt whose `_run_process` and `ack` are still these has them done inline
#: (`BoltExecutor._acks_inline`).
_BOLT_RUN_PROCESS = Bolt._run_process
_COLLECTOR_ACK = TaskCollector.ack


class BoltExecutor(Executor):
    def build_components(self) -> None:
        super().build_components()
        self._tickless = [(task, c) for task, c in self.components.items()
                          if isinstance(c, TicklessBatchingBolt)]
        self._batching = [(task, c) for task, c in self.components.items()
                          if isinstance(c, BatchingBolt)]
        self._deactivated = False  # set from the worker's main thread: a plain store
        # Tick tuples come from the executor's own clock, between batches, rather
        # than through the queue: they then never wait behind a full queue, and
        # never make a drained queue look busy.
        self._tick_secs = self.worker.component_conf(self.component).get("topology.tick.tuple.freq.secs")
        self._next_tick = time.monotonic() + self._tick_secs if self._tick_secs else None
        if not self._tick_secs and any(
            isinstance(c, BatchingBolt) and not isinstance(c, TicklessBatchingBolt)
            for c in self.components.values()
        ):
            log.warning(
                "component %r is a BatchingBolt, which processes its batches on tick tuples, "
                "but topology.tick.tuple.freq.secs is not set (topology or component config): "
                "its batches wait until the topology is deactivated or stopped (or use "
                "TicklessBatchingBolt)", self.component)
        self._until_sample = 0  # tuples to run before the next process-latency sample
        self._chunk_size = FIRST_CHUNK  # a turn's: input tuples of about STEP_SLICE

    def set_deactivated(self, deactivated: bool) -> None:
        """While the topology is deactivated its spouts emit no more, so a
        BatchingBolt's batches are processed after every input run, not at its next
        tick: what is still on its way (through the bolts before it) is not held
        either. A stop or a kill drains the tuples in flight, and a batch waiting for
        a tick kept that drain waiting until the message timeout, or for ever
        without ticks (a new user's audit: its 100 tuples never processed, a 4 s run
        stopping after 34)."""
        self._deactivated = deactivated and bool(self._batching)

    def loop(self) -> None:
        """A thread of its own runs turns as a shared thread's step does: about
        `STEP_SLICE` of input, then ticks and a flush. Taking everything queued in
        one go, a slow bolt (0.2 s a tuple, 100 queued) held its output and its acks
        for 20 s, past the message timeout, and a stop waited for the whole batch."""
        while not self.stop_requested.is_set():
            batches = self._next_input(timeout=0.05)
            self._run_input(batches, until=time.perf_counter() + STEP_SLICE)

    def _next_input(self, timeout: float) -> list[list[tuple[int, Any]]]:
        """What a shared thread's turn left for later, else what the queue holds."""
        if self._input_backlog:
            batches, self._input_backlog = self._input_backlog, []
            return batches
        return self.incoming.get_all(timeout=timeout)

    def step(self) -> bool:
        """A turn lasts about `STEP_SLICE`, in chunks of input sized by how long the
        last one took, and ends early when a consumer's queue fills: a slow bolt
        cannot keep the thread's other executors waiting (what a thread of its own
        would get from the interpreter's switch interval). Input left over is taken
        before the queue again, so the queue fills behind it and throttles."""
        if not self.room_to_produce():
            return False
        batches = self._next_input(timeout=0)
        self._run_input(batches, until=time.perf_counter() + STEP_SLICE)
        return bool(batches)

    def _run_input(self, batches: list[list[tuple[int, Any]]], until: float | None = None) -> None:
        """Run `batches` through the tasks, then ticks, then flush. With `until` (a
        shared thread's turn), batches after the first wait in `_input_backlog`
        once that time has passed or a consumer's queue is full."""
        sample_every = self._sample_every
        perf_counter = time.perf_counter
        for index, batch in enumerate(batches):
            if self.stop_requested.is_set():
                break  # stopping: what is left was not drained in time
            if until is not None and index and (
                self._held.tuples >= self._hold_limit or self.outputs_full()
                or perf_counter() >= until
            ):
                self._input_backlog = batches[index:]  # the others' turn first
                break
            started = perf_counter()
            batch = self._tuples_of(batch)
            last = False
            if until is not None and len(batch) > self._chunk_size:
                size = self._chunk_size  # a chunk now, the rest in a later turn
                self._input_backlog = [batch[size:], *batches[index + 1:]]
                batch, last = batch[:size], True
            self._in_hand = len(batch)
            if not sample_every:
                self._run_batch(batch)
            elif self._acks_inline():
                # acked as process() returns: each tuple's process latency is its
                # share of this loop's time, so every tuple is in the mean and none
                # is followed on its own (which cost one worker 4-16 % of its words/s)
                began = perf_counter()
                self._run_inline(batch)
                self.process_ms_total += (perf_counter() - began) * 1000.0
                self.process_samples += len(batch)
            else:
                # every `sample_every`-th tuple is followed from here to its ack;
                # the rest run in plain slices, so the per-tuple loop is unchanged
                until_sample = self._until_sample
                position, size = 0, len(batch)
                while position < size:
                    if until_sample >= size - position:
                        until_sample -= size - position
                        self._run_batch(itertools.islice(batch, position, None))
                        break
                    sampled = position + until_sample
                    if sampled > position:
                        self._run_batch(itertools.islice(batch, position, sampled))
                    self._run_one(*batch[sampled], sampled_at=perf_counter())
                    position = sampled + 1
                    until_sample = sample_every - 1
                self._until_sample = until_sample
            took = perf_counter() - started
            self.busy_secs += took
            if until is not None:
                self._chunk_size = max(1, min(MAX_CHUNK, int(STEP_SLICE * len(batch) / max(took, 1e-6))))
            if last:
                break
        now = time.monotonic()
        if self._next_tick is not None and now >= self._next_tick:
            self._next_tick = now + self._tick_secs
            tick = Tuple(None, SYSTEM_COMPONENT, TICK_STREAM, -1, (self._tick_secs,))
            started = perf_counter()
            for task, component in self.components.items():
                try:
                    component._run_tick(tick)
                except BaseException as exc:
                    if not self._carry_on(exc, task, tick):
                        raise
            # busy too: a BatchingBolt's process_batch runs here (capacity and
            # execute latency read 0.001 and 0.01 ms for one at 60 %)
            self.busy_secs += perf_counter() - started
        if self._deactivated:
            started = perf_counter()
            for task, component in self._batching:
                try:
                    if component._batches:
                        component.process_batches()
                except BaseException as exc:
                    if not self._carry_on(exc, task):
                        raise
            self.busy_secs += perf_counter() - started
        if self._tickless:
            started = perf_counter()
            for task, component in self._tickless:
                try:
                    component._maybe_flush(now)
                except BaseException as exc:
                    if not self._carry_on(exc, task):
                        raise
            self.busy_secs += perf_counter() - started
        self.flush()
        self._in_hand = 0

    def _run_batch(self, items: Any) -> None:
        """The per-tuple hot path: `items` of (task, tuple) through process().

        Bolts that keep pystorm's defaults (`auto_ack`, `Bolt._run_process`, the
        collector's own `ack`) have `_run_process` and the ack done inline
        (`_run_inline`): two Python calls a tuple fewer, 15 % of the word count's
        instructions a word without acking, 5.6 % with it. Every other bolt goes
        through `_run_each`, and so does a tuple sampled for its process latency
        (`_run_one`: its ack closes the sample; `_run_input` times inline bolts per
        batch instead). Checked every batch, since a bolt may change `auto_ack`."""
        if self._acks_inline():
            self._run_inline(items)
        else:
            self._run_each(items)

    def _acks_inline(self) -> bool:
        for bolt in self.components.values():
            if not (bolt.auto_ack and type(bolt)._run_process is _BOLT_RUN_PROCESS
                    and getattr(bolt.ack, "__func__", None) is _COLLECTOR_ACK):
                return False
        return True

    def _run_each(self, items: Any) -> None:
        components = self.components
        executed = 0
        task = self.assignment.tasks[0]
        tup = None
        items = iter(items)
        try:
            while True:  # once, unless a bolt that carries on raised: then the rest
                try:
                    for task, tup in items:
                        components[task]._run_process(tup)
                        executed += 1
                    break
                except BaseException as exc:
                    if not self._carry_on(exc, task, tup):
                        raise
                    executed += 1  # given to process(), and failed
        finally:
            self.executed += executed

    def _run_inline(self, items: Any) -> None:
        """`Bolt._run_process` and `TaskCollector.ack`, inline. With acking off the
        ack is only counted, and no emit reads the auto-anchor. With acking on the
        input is the auto-anchor while `process` runs, and its ack is folded into
        the flush's acks (`_acks_out`, read per tuple: an emit may flush and renew
        it)."""
        components = self.components
        acking = self.acking
        executed = 0
        task = self.assignment.tasks[0]
        tup = None
        items = iter(items)
        try:
            while True:  # once, unless a bolt that carries on raised: then the rest
                try:
                    for task, tup in items:
                        if acking:
                            bolt = components[task]
                            bolt._current_tups = [tup]
                            bolt.process(tup)
                            bolt._current_tups = None
                            tuple_id = tup.id
                            if type(tuple_id) is TupleId:
                                if tuple_id.many is None:  # TupleId.ack_into, inline
                                    folded = self._acks_out
                                    root = tuple_id.root
                                    folded[root] = (folded.get(root, 0) ^ tuple_id.edge
                                                    ^ tuple_id.ack_val)
                                else:
                                    tuple_id.ack_into(self._acks_out)
                                tuple_id.ack_val = SETTLED  # a later ack of it is told
                        else:
                            components[task].process(tup)
                        executed += 1
                    break
                except BaseException as exc:
                    components[task]._current_tups = None
                    if not self._process_raised(exc, task, tup):
                        raise
                    self.executed += 1  # given to process(), and failed (not acked)
        finally:
            self.executed += executed
            self.acked += executed

    def _process_raised(self, exc: BaseException, task: int, tup: Tuple | None) -> bool:
        """What `Bolt._run_process` does when `process` raises: fail the input if
        `auto_fail`; then the bolt carries on (True) or the task is named for the
        report (False; see `_carry_on`)."""
        bolt = self.components[task]
        if tup is not None and bolt.auto_fail:
            bolt.fail(tup)
        return self._carry_on(exc, task, tup)

    def _run_one(self, task: int, tup: Tuple, sampled_at: float) -> None:
        """A tuple followed from here to its ack (process latency)."""
        samples = self._process_samples
        if len(samples) >= MAX_OPEN_SAMPLES:
            samples.clear()  # never acked (or acked elsewhere): start over
        samples[id(tup)] = (tup, sampled_at)
        self._run_each(((task, tup),))
