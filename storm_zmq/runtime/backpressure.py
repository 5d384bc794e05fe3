"""Per-task backpressure between workers (Storm 2's design, STORM-2306), pure parts.

Without it, one slow bolt stalls a whole worker: its receive thread blocks on the
slow executor's full queue, stops reading the transport, and every sender to that
worker waits, whatever task its tuples were for. With it:

* The receiving worker never blocks its receive thread on one executor. A batch for
  an executor whose queue is full waits in that executor's *overflow* (bounded), and
  the worker tells every peer that the executor's tasks are *throttled*
  (`StatusMessage` on the reverse channel: a control message with the reserved task
  id `BACKPRESSURE_TASK` to each peer's ordinary port, sent by the worker's
  "backpressure" thread over connections of its own). Once the
  overflow has drained and the queue is below half full, it says so again.
* A sending executor holds a remote batch while one of its target tasks is
  throttled (`ThrottleTable`): the executor (and so, upstream, the spout) waits;
  other executors of the same worker, sending to other tasks, do not.
* Statuses carry the whole set of throttled tasks of the sender, are repeated while
  non-empty and expire when not repeated: a worker that dies while throttling does
  not stop its peers for ever.
* Cycles. In a cyclic topology, A waiting for B while B waits for A would be a
  deadlock. An edge between two components of the same cycle (`cyclic_edges`) never
  waits for ever: a producer whose own input is full goes past the bound of its
  consumer by one batch (a local queue's `put(force=True)`, or a remote batch sent
  despite the throttle, which the consumer's overflow takes), so the cycle keeps
  turning. Memory stays bounded by one batch per waiting executor.

If the overflow bound itself is reached (in-flight data larger than expected), the
receive thread falls back to waiting on that queue: the old whole-worker
backpressure, bounded memory first.
"""

from __future__ import annotations

import reprlib
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgpack

#: Task id of backpressure status messages (negative ids are reserved for control).
BACKPRESSURE_TASK = -1

#: A throttle status not repeated within this many seconds is forgotten.
STATUS_EXPIRY_SECS = 3.0

#: A worker with throttled tasks repeats its status this often.
STATUS_REPEAT_SECS = 1.0


class MalformedStatus(ValueError):
    """A backpressure control message that does not decode."""


def encode_status(worker: int, throttled: Iterable[int], busy: float | None = None) -> bytes:
    """The payload of a status message: who says it, its throttled tasks, and how
    short of CPU it is (`storm_zmq.runtime.balance.short_of_cpu`), if measured."""
    if busy is None:
        return msgpack.packb([worker, sorted(throttled)])
    return msgpack.packb([worker, sorted(throttled), round(busy, 3)])


def decode_status(payload: bytes) -> tuple[int, frozenset[int], float | None]:
    """(worker, throttled tasks, busy or None)."""
    try:
        status = msgpack.unpackb(payload, use_list=True)
    except Exception as exc:
        raise MalformedStatus(f"backpressure status does not decode: {exc!r}") from None
    if type(status) is not list or len(status) < 2:
        raise MalformedStatus(f"backpressure status is not [worker, [tasks], busy]: {reprlib.repr(status)}")
    # Fields after these are for later versions: a peer running one keeps its throttles.
    worker, tasks = status[0], status[1]
    busy = status[2] if len(status) > 2 else None
    if (
        type(worker) is not int or type(tasks) is not list
        or not all(type(t) is int for t in tasks)
        or not (busy is None or (type(busy) in (int, float) and 0 <= busy <= 1))
    ):
        raise MalformedStatus(f"backpressure status is not [worker, [tasks], busy]: {reprlib.repr(status)}")
    return worker, frozenset(tasks), None if busy is None else float(busy)


class ThrottleTable:
    """Sender side: which remote tasks are throttled now, by what each peer said.

    Updated by the receive thread and expired by whoever waits (an executor), so
    that a stale throttle clears even while the receive thread itself waits."""

    def __init__(self, expiry_secs: float = STATUS_EXPIRY_SECS) -> None:
        self._expiry = expiry_secs
        self._lock = threading.Lock()
        self._by_worker: dict[int, tuple[frozenset[int], float]] = {}
        #: The union of every peer's throttled tasks; replaced, never mutated, so that
        #: executors read it without a lock.
        self.throttled: frozenset[int] = frozenset()

    def update(self, worker: int, tasks: frozenset[int], now: float) -> bool:
        """Record a peer's status; True if the union changed."""
        with self._lock:
            if tasks:
                self._by_worker[worker] = (tasks, now + self._expiry)
            else:
                self._by_worker.pop(worker, None)
            return self._recompute()

    def expire(self, now: float) -> bool:
        """Forget statuses not repeated in time; True if the union changed."""
        with self._lock:
            stale = [w for w, (_, until) in self._by_worker.items() if until <= now]
            for worker in stale:
                del self._by_worker[worker]
            return self._recompute() if stale else False

    def forget(self, worker: int) -> bool:
        """A peer moved or restarted: what it said no longer holds."""
        with self._lock:
            if self._by_worker.pop(worker, None) is None:
                return False
            return self._recompute()

    def _recompute(self) -> bool:
        union = frozenset().union(*(tasks for tasks, _ in self._by_worker.values()))
        changed = union != self.throttled
        self.throttled = union
        return changed


class Inbound:
    """Receiver side: per executor, the batches its full queue could not take yet.

    `offer` never blocks (unless the overflow bound is reached, when it calls
    `wait_put`); `drain` moves waiting batches on as queues make room. Both return
    whether the set of throttled tasks changed, which the worker then announces.
    A batch weighs the tuples it carries (`weight`), as in its queue.
    """

    def __init__(
        self,
        queues: Mapping[int, Any],
        executor_tasks: Mapping[int, Iterable[int]],
        overflow_limit: int,
        wait_put: Callable[[Any, list[Any], int], None],
    ) -> None:
        self._queues = queues
        self._tasks = {e: tuple(tasks) for e, tasks in executor_tasks.items()}
        self._limit = overflow_limit
        self._wait_put = wait_put
        self._overflow: dict[int, deque[tuple[list[Any], int]]] = {}
        self._overflow_items: dict[int, int] = {}
        self._throttled_executors: set[int] = set()
        #: Times an executor became throttled (what the metrics call events).
        self.events = 0

    @property
    def throttled_tasks(self) -> frozenset[int]:
        """Read by the main thread (stats) while the receive thread changes the set:
        copied in one step first, since a set that changes size under a running
        iteration raises."""
        executors = tuple(self._throttled_executors)
        return frozenset(t for e in executors for t in self._tasks[e])

    def overflowing(self, executor: int) -> bool:
        return executor in self._overflow

    @property
    def holding(self) -> bool:
        """Batches wait, or tasks are throttled: `drain` has work to do."""
        return bool(self._overflow or self._throttled_executors)

    def overflow_items(self) -> int:
        return sum(self._overflow_items.values())

    def offer(self, executor: int, batch: list[Any], weight: int | None = None) -> bool:
        if weight is None:
            weight = len(batch)
        queue = self._queues[executor]
        waiting = self._overflow.get(executor)
        if waiting is None and queue.put(batch, timeout=0, weight=weight):
            return False
        if waiting is None:
            waiting = self._overflow[executor] = deque()
            self._overflow_items[executor] = 0
        if self._overflow_items[executor] >= self._limit:
            # The bound is reached: move the oldest on, waiting for room (the old
            # whole-worker backpressure, so that memory stays bounded).
            oldest, oldest_weight = waiting.popleft()
            self._overflow_items[executor] -= oldest_weight
            self._wait_put(queue, oldest, oldest_weight)
        waiting.append((batch, weight))
        self._overflow_items[executor] += weight
        if executor not in self._throttled_executors:
            self._throttled_executors.add(executor)
            self.events += 1
            return True
        return False

    def drain(self) -> bool:
        """Move overflowed batches into queues with room; lift throttles of queues
        that are empty of overflow and at most half full."""
        changed = False
        for executor in list(self._overflow):
            queue = self._queues[executor]
            waiting = self._overflow[executor]
            while waiting and queue.put(waiting[0][0], timeout=0, weight=waiting[0][1]):
                self._overflow_items[executor] -= waiting.popleft()[1]
            if not waiting:
                del self._overflow[executor]
                del self._overflow_items[executor]
        for executor in list(self._throttled_executors):
            if executor not in self._overflow:
                queue = self._queues[executor]
                if len(queue) * 2 <= queue.capacity:
                    self._throttled_executors.discard(executor)
                    changed = True
        return changed


def cyclic_edges(consumers: Mapping[str, Iterable[str]]) -> frozenset[tuple[str, str]]:
    """Edges (producer, consumer) whose two ends lie on one cycle of the component
    graph (the same strongly connected component; a self-loop counts)."""
    graph = {node: set(targets) for node, targets in consumers.items()}
    for targets in list(graph.values()):
        for target in targets:
            graph.setdefault(target, set())
    component_of = _strongly_connected(graph)
    return frozenset(
        (producer, consumer)
        for producer, targets in graph.items()
        for consumer in targets
        if component_of[producer] == component_of[consumer]
        and (producer != consumer or producer in graph[producer])
    )


def _strongly_connected(graph: Mapping[str, set[str]]) -> dict[str, int]:
    """Tarjan's algorithm, iterative: node -> index of its strongly connected set."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: dict[str, int] = {}
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                scc = len(set(result.values()))
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    result[member] = scc
                    if member == node:
                        break
    return result
