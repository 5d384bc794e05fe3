"""What a shared thread's executor holds back, and what may overtake it
(storm_zmq/runtime/held.py): pure bookkeeping, with queues as lists."""

from __future__ import annotations

from typing import Any

from storm_zmq.messaging.base import TaskMessage
from storm_zmq.runtime.held import HeldBatch, HeldOutput
from storm_zmq.runtime.serialization import encode_tuples


def message(task: int, tuples: int = 1) -> TaskMessage:
    return TaskMessage(task, encode_tuples(1, "default", None, [[i] for i in range(tuples)], "spout"))


def remote(*tasks: int) -> HeldBatch:
    messages = [message(task, 2) for task in tasks]
    return HeldBatch("transfer", messages, 2 * len(messages), remote=True)


def local(queue: str, *tasks: int) -> HeldBatch:
    return HeldBatch(queue, [(task, f"tuple-{task}") for task in tasks], len(tasks), remote=False)


class Queues:
    """Queues by name that take batches unless full (`full`), and the throttled
    tasks; records what was put, in order."""

    def __init__(self) -> None:
        self.full: set[str] = set()
        self.throttled: set[int] = set()
        self.put: list[tuple[Any, list[int], int]] = []

    def try_put(self, batch: HeldBatch) -> bool:
        if batch.queue in self.full:
            return False
        tasks = [m.task for m in batch.batch] if batch.remote else [t for t, _ in batch.batch]
        self.put.append((batch.queue, tasks, batch.weight))
        return True

    def must_wait(self, task: int) -> bool:
        return task in self.throttled

    @staticmethod
    def part(batch: HeldBatch, messages: list[Any], weight: int) -> HeldBatch:
        return HeldBatch(batch.queue, messages, weight, remote=True)

    def add(self, held: HeldOutput, batch: HeldBatch) -> None:
        held.add(batch, self.try_put, self.must_wait, self.part)

    def release(self, held: HeldOutput) -> bool:
        return held.release(self.try_put, self.must_wait, self.part)


def test_a_batch_nothing_blocks_goes_at_once() -> None:
    queues, held = Queues(), HeldOutput()
    queues.add(held, local("a", 1, 1))
    queues.add(held, remote(5, 6))
    assert not held and held.tuples == 0
    assert queues.put == [("a", [1, 1], 2), ("transfer", [5, 6], 4)]


def test_a_full_local_queue_holds_its_batch_and_later_ones_for_the_same_tasks() -> None:
    queues, held = Queues(), HeldOutput()
    queues.full.add("a")
    queues.add(held, local("a", 1))
    queues.add(held, local("b", 2))  # another queue with room: goes
    queues.full.discard("a")
    queues.add(held, local("a", 1, 1))  # room now, but behind the held batch for task 1
    assert queues.put == [("b", [2], 1)]
    assert len(held) == 2 and held.tuples == 3
    assert queues.release(held) and held.tuples == 0
    assert queues.put[1:] == [("a", [1], 1), ("a", [1, 1], 2)], "in the order they were flushed"


def test_a_remote_batch_is_split_by_throttled_task() -> None:
    queues, held = Queues(), HeldOutput()
    queues.throttled.add(5)
    queues.add(held, remote(5, 6, 5, 7))
    assert queues.put == [("transfer", [6, 7], 4)]
    assert [b.tasks for b in held] == [frozenset({5})] and held.tuples == 4
    queues.add(held, remote(6))  # nothing for task 5 in it: goes
    queues.throttled.clear()
    queues.add(held, remote(5, 6))  # task 5 has held tuples before these
    assert queues.put[1:] == [("transfer", [6], 2), ("transfer", [6], 2)]
    assert held.tuples == 6
    assert queues.release(held)
    assert queues.put[3:] == [("transfer", [5, 5], 4), ("transfer", [5], 2)]


def test_release_keeps_what_still_cannot_go_and_what_is_behind_it() -> None:
    queues, held = Queues(), HeldOutput()
    queues.full.add("a")
    queues.throttled.add(5)
    queues.add(held, local("a", 1))
    queues.add(held, remote(5))
    queues.add(held, local("a", 1))
    queues.throttled.clear()
    assert not queues.release(held)
    assert queues.put == [("transfer", [5], 2)], "the remote batch overtakes the full queue's"
    assert len(held) == 2 and held.tuples == 2
    queues.full.clear()
    assert queues.release(held)
    assert queues.put[1:] == [("a", [1], 1), ("a", [1], 1)]


def test_a_batch_whose_tasks_all_wait_is_held_whole() -> None:
    queues, held = Queues(), HeldOutput()
    queues.throttled.update({5, 6})
    batch = remote(5, 6)
    queues.add(held, batch)
    assert queues.put == [] and list(held) == [batch]
    assert held.first() is batch and held.pop() is batch and held.tuples == 0


def test_while_releasing_the_count_never_drops_below_what_is_still_held() -> None:
    """Stats read `tuples` from another thread to decide when a drain is done: during
    a release it may count what already went, never miss what is still held."""
    queues, held = Queues(), HeldOutput()
    queues.full.add("a")
    for _ in range(3):
        queues.add(held, local("a", 1, 2))
    queues.full.clear()
    seen: list[int] = []

    def try_put(batch: HeldBatch) -> bool:
        seen.append(held.tuples)
        return queues.try_put(batch)

    assert held.release(try_put, queues.must_wait, queues.part)
    assert seen == [6, 6, 6] and held.tuples == 0
