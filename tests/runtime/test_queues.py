"""Tests for BatchQueue (storm_zmq.runtime.queues): the bounded queue of batches
between the threads of a worker. Blocking is observed with threads and events, and
every wait has a deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from storm_zmq.runtime.queues import BatchQueue, QueueClosed

DEADLINE = 5.0  # generous: only reached when something is broken
BLOCKED = 0.1  # how long "still blocked" is observed


class Call:
    """Runs `fn` in a thread; `started` is set just before the call, `done` after it
    returned or raised."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.started = threading.Event()
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self._fn = fn
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.started.wait(DEADLINE)

    def _run(self) -> None:
        self.started.set()
        try:
            self.result = self._fn()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def finish(self) -> Any:
        assert self.done.wait(DEADLINE), "call did not return"
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
        return self.result


def full_queue(capacity: int = 3) -> BatchQueue[int]:
    q: BatchQueue[int] = BatchQueue(capacity)
    assert q.put(list(range(capacity)))
    assert len(q) == capacity
    return q


# -- construction and counting -----------------------------------------------------------


@pytest.mark.parametrize("capacity", [0, -1, -100])
def test_capacity_below_one_is_an_error(capacity: int) -> None:
    with pytest.raises(ValueError, match=str(capacity)):
        BatchQueue(capacity)


def test_capacity_one_is_allowed() -> None:
    q: BatchQueue[str] = BatchQueue(1)
    assert q.put(["a"])
    assert q.put(["b"], timeout=0) is False
    assert q.get_all(timeout=0) == [["a"]]


def test_len_counts_items_not_batches() -> None:
    q: BatchQueue[int] = BatchQueue(100)
    assert len(q) == 0
    q.put([1, 2, 3])
    q.put([4])
    assert len(q) == 4
    q.get_all(timeout=0)
    assert len(q) == 0


def test_capacity_counts_items() -> None:
    q: BatchQueue[int] = BatchQueue(5)
    assert q.put([1, 2])
    assert q.put([3, 4])
    assert q.put([5], timeout=0)  # 4 < 5: admitted
    assert len(q) == 5
    assert q.put([6], timeout=0) is False  # 5 items: full, though only 3 batches


def test_a_put_is_admitted_below_capacity_so_the_bound_is_capacity_plus_one_batch() -> None:
    q: BatchQueue[int] = BatchQueue(5)
    assert q.put([0, 1, 2, 3])  # 4 items
    assert q.put(list(range(10)), timeout=0)  # admitted whole: 4 < 5
    assert len(q) == 14
    assert q.put([99], timeout=0) is False


def test_a_weighed_batch_counts_its_weight_not_its_length() -> None:
    """A batch of remote payloads holds more tuples than messages: the bound and the
    backlog count the tuples."""
    q: BatchQueue[bytes] = BatchQueue(10)
    assert q.put([b"p1", b"p2"], weight=7)
    assert (len(q), q.backlog) == (7, 7)
    assert q.put([b"p3"], timeout=0, weight=3)  # 7 < 10: admitted
    assert q.put([b"p4"], timeout=0, weight=1) is False  # 3 messages, but 10 tuples: full
    assert (len(q), q.backlog) == (10, 10)
    q.get_all(timeout=0)
    assert (len(q), q.backlog) == (0, 10)
    assert q.put([b"p4"], timeout=0, weight=100)  # into an empty queue, like any batch


def test_a_batch_larger_than_capacity_is_admitted_into_an_empty_queue() -> None:
    q: BatchQueue[int] = BatchQueue(2)
    assert q.put(list(range(50)), timeout=0)
    assert len(q) == 50


# -- get_all -------------------------------------------------------------------------------


def test_get_all_returns_every_batch_in_order() -> None:
    q: BatchQueue[str] = BatchQueue(100)
    batches = [["a", "b"], ["c"], ["d", "e", "f"]]
    for b in batches:
        q.put(b)
    assert q.get_all(timeout=0) == batches
    assert q.get_all(timeout=0) == []


def test_backlog_counts_what_the_consumer_took_until_it_asks_again() -> None:
    """A queue looks empty right after a take; its backlog says its consumer is busy."""
    q: BatchQueue[str] = BatchQueue(100)
    assert q.backlog == 0
    q.put(["a", "b"])
    q.put(["c"])
    assert (len(q), q.backlog) == (3, 3)
    q.get_all(timeout=0)
    assert (len(q), q.backlog) == (0, 3)
    q.put(["d"])
    assert (len(q), q.backlog) == (1, 4)
    q.get_all(timeout=0)  # done with a, b, c; took d
    assert (len(q), q.backlog) == (0, 1)
    assert q.get_all(timeout=0) == [] and q.backlog == 0  # asking again: done with d


def test_get_all_returns_empty_list_on_timeout() -> None:
    q: BatchQueue[int] = BatchQueue(10)
    t0 = time.monotonic()
    assert q.get_all(timeout=0.05) == []
    assert time.monotonic() - t0 >= 0.04


def test_get_all_waits_for_a_put_from_another_thread() -> None:
    q: BatchQueue[int] = BatchQueue(10)
    consumer = Call(lambda: q.get_all(timeout=DEADLINE))
    assert not consumer.done.wait(BLOCKED)
    q.put([1, 2])
    assert consumer.finish() == [[1, 2]]


# -- put blocking ------------------------------------------------------------------------


def test_put_blocks_when_full_and_wakes_when_the_consumer_takes() -> None:
    q = full_queue(3)
    producer = Call(lambda: q.put([7, 8]))
    assert not producer.done.wait(BLOCKED), "put should block on a full queue"
    assert len(q) == 3
    assert q.get_all(timeout=0) == [[0, 1, 2]]
    assert producer.finish() is True
    assert q.get_all(timeout=0) == [[7, 8]]


def test_put_with_timeout_returns_false_when_still_full() -> None:
    q = full_queue(3)
    assert q.put([9], timeout=0) is False
    t0 = time.monotonic()
    assert q.put([9], timeout=0.05) is False
    assert time.monotonic() - t0 >= 0.04
    assert len(q) == 3
    assert q.get_all(timeout=0) == [[0, 1, 2]]  # nothing of the refused batch


def test_put_with_timeout_succeeds_when_space_frees_in_time() -> None:
    q = full_queue(2)
    producer = Call(lambda: q.put([5], timeout=DEADLINE))
    assert not producer.done.wait(BLOCKED)
    q.get_all(timeout=0)
    assert producer.finish() is True
    assert q.get_all(timeout=0) == [[5]]


def test_get_all_wakes_every_blocked_producer() -> None:
    q = full_queue(3)
    producers = [Call(lambda i=i: q.put([100 + i])) for i in range(2)]
    for p in producers:
        assert not p.done.wait(BLOCKED)
    q.get_all(timeout=0)
    assert [p.finish() for p in producers] == [True, True]
    assert sorted(b[0] for b in q.get_all(timeout=0)) == [100, 101]


# -- empty batches ---------------------------------------------------------------------


def test_empty_batch_is_a_no_op() -> None:
    q: BatchQueue[int] = BatchQueue(3)
    assert q.put([]) is True
    assert len(q) == 0
    assert q.get_all(timeout=0) == []


def test_empty_batch_does_not_block_on_a_full_queue() -> None:
    q = full_queue(3)
    assert q.put([], timeout=None) is True  # would hang forever if it waited
    assert q.get_all(timeout=0) == [[0, 1, 2]]


# -- close -------------------------------------------------------------------------------


def test_close_wakes_a_blocked_producer_with_queue_closed() -> None:
    q = full_queue(2)
    producer = Call(lambda: q.put([1]))
    assert not producer.done.wait(BLOCKED)
    q.close()
    with pytest.raises(QueueClosed):
        producer.finish()


def test_close_wakes_a_producer_blocked_with_a_timeout() -> None:
    q = full_queue(2)
    producer = Call(lambda: q.put([1], timeout=DEADLINE))
    assert not producer.done.wait(BLOCKED)
    t0 = time.monotonic()
    q.close()
    with pytest.raises(QueueClosed):
        producer.finish()
    assert time.monotonic() - t0 < DEADLINE / 2


def test_close_wakes_a_blocked_consumer() -> None:
    q: BatchQueue[int] = BatchQueue(2)
    consumer = Call(lambda: q.get_all())  # no timeout: only close can end it
    assert not consumer.done.wait(BLOCKED)
    q.close()
    assert consumer.finish() == []


def test_put_after_close_raises() -> None:
    q: BatchQueue[int] = BatchQueue(10)
    q.close()
    with pytest.raises(QueueClosed):
        q.put([1])
    with pytest.raises(QueueClosed):
        q.put([1], timeout=0)


def test_get_all_after_close_drains_what_is_left_then_returns_empty() -> None:
    q: BatchQueue[int] = BatchQueue(10)
    q.put([1])
    q.put([2, 3])
    q.close()
    assert q.get_all() == [[1], [2, 3]]
    t0 = time.monotonic()
    assert q.get_all() == []  # closed and empty: returns at once, even without timeout
    assert q.get_all(timeout=DEADLINE) == []
    assert time.monotonic() - t0 < DEADLINE / 2


# -- concurrent use ----------------------------------------------------------------------


def test_producers_and_a_consumer_lose_nothing_and_respect_the_bound() -> None:
    capacity, max_batch, producers, batches_each = 7, 5, 4, 200
    q: BatchQueue[tuple[int, int]] = BatchQueue(capacity)
    errors: list[BaseException] = []

    def produce(p: int) -> None:
        try:
            n = 0
            for i in range(batches_each):
                size = 1 + (i * 7 + p) % max_batch
                assert q.put([(p, n + k) for k in range(size)], timeout=DEADLINE)
                n += size
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=produce, args=(p,), daemon=True) for p in range(producers)]
    for t in threads:
        t.start()
    received: dict[int, list[int]] = {p: [] for p in range(producers)}
    largest = 0
    deadline = time.monotonic() + DEADLINE
    while any(t.is_alive() for t in threads) or len(q):
        assert time.monotonic() < deadline, "producers did not finish"
        batches = q.get_all(timeout=0.05)
        largest = max(largest, sum(len(b) for b in batches))
        for batch in batches:
            for p, n in batch:
                received[p].append(n)
    for t in threads:
        t.join(DEADLINE)
    assert not errors
    assert largest <= capacity - 1 + max_batch
    for p in range(producers):
        expected = sum(1 + (i * 7 + p) % max_batch for i in range(batches_each))
        assert received[p] == list(range(expected)), "per-producer order and completeness"
