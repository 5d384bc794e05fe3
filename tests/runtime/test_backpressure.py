"""The pure parts of per-task backpressure (storm_zmq/runtime/backpressure.py)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import msgpack
import pytest

from storm_zmq.runtime.backpressure import (
    Inbound,
    MalformedStatus,
    ThrottleTable,
    cyclic_edges,
    decode_status,
    encode_status,
)
from storm_zmq.runtime.queues import BatchQueue


def test_status_round_trip_and_malformed_statuses() -> None:
    assert decode_status(encode_status(3, {9, 4})) == (3, frozenset({4, 9}), None)
    assert decode_status(encode_status(0, [])) == (0, frozenset(), None)
    assert decode_status(encode_status(1, [2], busy=0.87649)) == (1, frozenset({2}), 0.876)
    assert decode_status(msgpack.packb([1, [], 1])) == (1, frozenset(), 1.0)
    assert decode_status(msgpack.packb([1, [5], 0.5, "later"])) == (1, frozenset({5}), 0.5), \
        "fields a later version adds are ignored"
    for bad in (b"", b"\xc1", msgpack.packb([1]), msgpack.packb(["w", [1]]),
                msgpack.packb([1, [1, "x"]]), msgpack.packb([1, 2]), msgpack.packb({"a": 1}),
                msgpack.packb([1, [], 1.5]), msgpack.packb([1, [], "busy"])):
        with pytest.raises(MalformedStatus):
            decode_status(bad)


def test_throttle_table_unions_peers_and_forgets_them() -> None:
    table = ThrottleTable(expiry_secs=3)
    assert table.update(1, frozenset({5, 6}), now=0)
    assert table.update(2, frozenset({7}), now=0)
    assert table.throttled == {5, 6, 7}
    assert not table.update(2, frozenset({7}), now=1), "a repeat changes nothing"
    assert table.update(1, frozenset(), now=1)
    assert table.throttled == {7}
    assert not table.expire(now=3.5), "worker 2 repeated at 1 s: valid until 4 s"
    assert table.expire(now=4.0)
    assert table.throttled == frozenset()
    table.update(1, frozenset({5}), now=10)
    assert table.forget(1) and not table.forget(1)
    assert table.throttled == frozenset()


def make_inbound(capacity: int = 4, limit: int = 6) -> tuple[Inbound, dict[int, BatchQueue[Any]], list[Any]]:
    queues = {0: BatchQueue(capacity), 1: BatchQueue(capacity)}
    waited: list[Any] = []
    inbound = Inbound(queues, {0: (10, 11), 1: (12,)}, overflow_limit=limit,
                      wait_put=lambda queue, batch, weight: waited.append(batch))
    return inbound, queues, waited


def test_full_queue_overflows_and_throttles_only_its_tasks() -> None:
    inbound, queues, waited = make_inbound()
    assert not inbound.offer(0, ["a"] * 4), "room: straight in"
    assert inbound.offer(0, ["b"] * 2), "full: the first overflow throttles"
    assert inbound.throttled_tasks == {10, 11}
    assert not inbound.offer(0, ["c"]), "already throttled"
    assert not inbound.offer(1, ["x"]), "the other executor is not affected"
    assert inbound.overflow_items() == 3 and inbound.events == 1
    assert not inbound.drain(), "nothing moved: still full"
    queues[0].get_all(timeout=0)
    assert not inbound.drain(), "overflow moved in (3 of 4): over half full, still throttled"
    assert len(queues[0]) == 3 and inbound.overflow_items() == 0
    assert inbound.throttled_tasks == {10, 11}
    queues[0].get_all(timeout=0)
    assert inbound.drain(), "empty and no overflow: lifted"
    assert inbound.throttled_tasks == frozenset() and not inbound.holding
    assert waited == []


def test_order_is_kept_while_overflowing() -> None:
    inbound, queues, _ = make_inbound(capacity=2, limit=100)
    for i in range(6):
        inbound.offer(0, [i])
    got = []
    while inbound.holding:
        for batch in queues[0].get_all(timeout=0):
            got += batch
        inbound.drain()
    for batch in queues[0].get_all(timeout=0):
        got += batch
    assert got == list(range(6))


def test_overflow_and_throttles_count_the_tuples_a_batch_carries() -> None:
    """A batch of remote payloads weighs the tuples inside, in the queue and in the
    overflow, so that payloads of many tuples cannot stretch either bound."""
    weights: list[int] = []
    queues = {0: BatchQueue(4)}
    inbound = Inbound(queues, {0: (10,)}, overflow_limit=6,
                      wait_put=lambda queue, batch, weight: weights.append(weight))
    assert not inbound.offer(0, [b"p1"], weight=4), "room: straight in, and now full"
    assert inbound.offer(0, [b"p2"], weight=5), "full by weight, though it holds one message"
    assert inbound.overflow_items() == 5
    inbound.offer(0, [b"p3"], weight=2)
    assert inbound.overflow_items() == 7 and weights == []
    inbound.offer(0, [b"p4"], weight=1)  # past the bound of 6: the oldest is pushed in
    assert weights == [5] and inbound.overflow_items() == 3
    queues[0].get_all(timeout=0)
    inbound.drain()
    assert len(queues[0]) == 3 and inbound.overflow_items() == 0


def test_overflow_bound_falls_back_to_waiting() -> None:
    inbound, queues, waited = make_inbound(capacity=1, limit=2)
    inbound.offer(0, [1])
    inbound.offer(0, [2])
    inbound.offer(0, [3])
    assert waited == [], "at the bound, not past it"
    inbound.offer(0, [4])
    assert waited == [[2]], "the oldest waiting batch is pushed in, blocking"
    assert inbound.overflow_items() == 2


@pytest.mark.parametrize(("graph", "expected"), [
    ({"s": {"a"}, "a": {"b"}}, set()),
    ({"s": {"a"}, "a": {"a"}}, {("a", "a")}),
    ({"s": {"a"}, "a": {"b", "sink"}, "b": {"a"}}, {("a", "b"), ("b", "a")}),
    ({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"d"}},
     {("a", "b"), ("b", "c"), ("c", "a"), ("d", "d")}),
    ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c", "a"}},
     {("a", "b"), ("b", "a"), ("c", "d"), ("d", "c")}),
])
def test_cyclic_edges(graph: dict[str, set[str]], expected: set[tuple[str, str]]) -> None:
    assert cyclic_edges(graph) == expected


def test_throttled_tasks_can_be_read_while_the_receive_thread_changes_them() -> None:
    # Worker.stats() reads them on the main thread while the receive thread throttles
    # and lifts: a set changing size under a running iteration raised RuntimeError
    # there, and took the worker down. Thread switches are forced to be frequent.
    executors = range(64)
    queues = {e: BatchQueue(1) for e in executors}
    inbound = Inbound(queues, {e: (1000 + e,) for e in executors}, overflow_limit=100,
                      wait_put=lambda queue, batch, weight: None)
    stop = threading.Event()
    rounds = []

    def receive_thread() -> None:
        while not stop.is_set():
            rounds.append(1)
            for e in executors:
                inbound.offer(e, ["in"])
                inbound.offer(e, ["over"])  # the queue is full: throttled
            for _ in range(2):
                for queue in queues.values():
                    queue.get_all(timeout=0)
                inbound.drain()  # the second round lifts every throttle

    reads = 0
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    churn = threading.Thread(target=receive_thread)
    churn.start()
    try:
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline or len(rounds) < 3:
            inbound.throttled_tasks  # noqa: B018 - the read is the test
            reads += 1
    finally:
        stop.set()
        churn.join()
        sys.setswitchinterval(switch)
    assert reads > 0 and len(rounds) >= 3  # both sides ran, side by side
