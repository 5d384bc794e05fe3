"""The bounded queue between threads of a worker.

Elements are lists, never single items: batching is what makes Python fast enough,
and one lock round trip moves a whole batch. The bound counts tuples, as Storm's
`topology.executor.receive.buffer.size` does: a batch weighs its length, or what
its producer says (a batch of remote payloads weighs the tuples they carry). A put
that would pass the bound blocks its producer, so a slow consumer slows its
producers instead of growing memory. A put is admitted while the queue holds less
than `capacity`, so the most a queue ever holds is `capacity` plus one batch.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class QueueClosed(Exception):
    """The queue was closed while a producer or consumer waited on it."""


class BatchQueue(Generic[T]):
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"queue capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._batches: deque[list[T]] = deque()
        self._items = 0
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._not_full = threading.Condition(self._lock)
        self._closed = False
        #: Tuples queued plus those the consumer took with its last `get_all` and may
        #: still be working on (they count until it asks again): a queue looks empty
        #: right after a take, its consumer is not idle for that. One attribute,
        #: written under the lock, so that a reader without it never adds a batch
        #: twice (load-aware shuffles: WorkerState.task_loads).
        self.backlog = 0
        #: Called after every put, and after every take that found something,
        #: outside the lock: how a thread that runs the producers and consumers of
        #: several queues without waiting on any (`storm_zmq.runtime.shared`) learns
        #: that one has input, or room again.
        self.on_put: Callable[[], object] | None = None
        self.on_take: Callable[[], object] | None = None

    def __len__(self) -> int:
        """Tuples (not batches) queued now."""
        return self._items

    def put(
        self, batch: list[T], timeout: float | None = None, force: bool = False,
        weight: int | None = None,
    ) -> bool:
        """Queue `batch`, waiting while the queue is full; False if `timeout`
        seconds passed first. An empty batch is accepted and dropped. `weight` is
        the tuples the batch holds, when that is not its length. `force` admits the
        batch past the bound: for breaking a cycle of waiting producers (see
        `storm_zmq.runtime.backpressure`), and for a shared executor thread, which
        bounds its queues by not running producers of a full one
        (`storm_zmq.runtime.shared`)."""
        if not batch:
            return True
        if weight is None:
            weight = len(batch)
        with self._not_full:
            if self._items >= self.capacity and not force:
                deadline = None if timeout is None else time.monotonic() + timeout
                while self._items >= self.capacity:
                    if self._closed:
                        raise QueueClosed()
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self._not_full.wait(remaining)
            if self._closed:
                raise QueueClosed()
            self._batches.append(batch)
            self._items += weight
            self.backlog += weight
            self._not_empty.notify()
        if self.on_put is not None:
            self.on_put()
        return True

    def get_all(self, timeout: float | None = None) -> list[list[T]]:
        """Take every queued batch at once, waiting up to `timeout` for the first;
        an empty list when the timeout passes (or the queue is closed and empty)."""
        with self._not_empty:
            self.backlog = self._items  # done with what it took before
            if not self._batches:
                if self._closed:
                    return []
                self._not_empty.wait(timeout)
                if not self._batches:
                    return []
            batches = list(self._batches)
            self._batches.clear()
            self._items = 0  # all taken: the backlog stays until the next get_all
            self._not_full.notify_all()
        if self.on_take is not None:
            self.on_take()
        return batches

    def wait_for_room(self, timeout: float) -> bool:
        """Wait up to `timeout` while the queue is full: for a producer that has
        several queues to put into and polls them (`Executor._release_held`).
        True when it has room now; a closed queue raises QueueClosed, as a put."""
        with self._not_full:
            if self._items >= self.capacity and not self._closed:
                self._not_full.wait(timeout)
            if self._closed:
                raise QueueClosed()
            return self._items < self.capacity

    def close(self) -> None:
        """Wake every waiter; later puts raise QueueClosed, gets drain what is left."""
        with self._lock:
            self._closed = True
            self._not_empty.notify_all()
            self._not_full.notify_all()
