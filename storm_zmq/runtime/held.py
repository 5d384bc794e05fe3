"""Output a shared thread's executor keeps back (`storm_zmq.runtime.shared`).

Why. An executor with a thread of its own waits in a put when its consumer's queue
is full, or while a remote task it sends to is throttled. In a shared thread it must
not wait (the consumer may run in the same thread), so it keeps the batch here and
goes on with what does not depend on it, as far as a bound allows.

What may overtake what. Storm keeps the order of the tuples one task sends to
another, and nothing more; so a batch waits only behind held batches for one of its
target tasks. A remote batch is split by task: what goes to a throttled task (or to
a task with held output before it) waits, the rest goes now. A local batch is one
queue's, and waits whole. A producer that chooses around a full queue or a
throttled task (a load-aware shuffle) thus keeps going; one that must send there
(a fields grouping) holds its output until `HeldOutput.tuples` reaches its bound,
and then stops, as its own thread would have.

Pure bookkeeping: whether a batch can go now, and putting it, are the executor's
(the callables given to `add` and `release`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from storm_zmq.runtime.serialization import payload_tuple_count


class HeldBatch:
    """A batch for one queue: local, a list of (task, Tuple) for one executor's
    queue; remote, a `RemoteBatch` of TaskMessages for the transfer queue."""

    __slots__ = ("queue", "batch", "weight", "tasks", "remote")

    def __init__(self, queue: Any, batch: list[Any], weight: int, remote: bool) -> None:
        self.queue = queue
        self.batch = batch
        self.weight = weight  # the tuples it carries (what its queue counts)
        self.remote = remote
        self.tasks = frozenset(message.task for message in batch) if remote \
            else frozenset(task for task, _ in batch)


#: Put a batch now if its queue may take it: True when it went.
TryPut = Callable[[HeldBatch], bool]
#: The tasks a remote message may not go to now (throttled).
MustWait = Callable[[int], bool]
#: A part of a remote batch, with the tuples it carries.
SplitBatch = Callable[[HeldBatch, list[Any], int], HeldBatch]


class HeldOutput:
    """Held batches in the order they were flushed, and the tuples they carry
    (`tuples`, read by the stats from another thread: an int, replaced whole)."""

    def __init__(self) -> None:
        self._batches: deque[HeldBatch] = deque()
        self.tuples = 0

    def __bool__(self) -> bool:
        return bool(self._batches)

    def __len__(self) -> int:
        return len(self._batches)

    def __iter__(self) -> Iterator[HeldBatch]:
        return iter(self._batches)

    def add(self, batch: HeldBatch, try_put: TryPut, must_wait: MustWait, split: SplitBatch) -> None:
        """A flushed batch: what may go now goes (`try_put`), the rest is held."""
        blocked = {task for held in self._batches for task in held.tasks}
        rest = _offer(batch, blocked, try_put, must_wait, split)
        if rest is not None:
            self._batches.append(rest)
            self.tuples += rest.weight

    def release(self, try_put: TryPut, must_wait: MustWait, split: SplitBatch) -> bool:
        """Put what may go now, in order; True when nothing is held any more. Until
        it returns, `tuples` counts what it put as well (a reader in another thread
        then sees too many for a moment, never too few)."""
        kept: deque[HeldBatch] = deque()
        kept_tuples = 0
        blocked: set[int] = set()
        for batch in self._batches:
            rest = _offer(batch, blocked, try_put, must_wait, split)
            if rest is not None:
                kept.append(rest)
                kept_tuples += rest.weight
        self._batches = kept
        self.tuples = kept_tuples
        return not kept

    def first(self) -> HeldBatch:
        """The oldest held batch (the executor puts it, waiting, then `pop`s it)."""
        return self._batches[0]

    def pop(self) -> HeldBatch:
        """Take the oldest held batch out."""
        batch = self._batches.popleft()
        self.tuples -= batch.weight
        return batch

    def clear(self) -> None:
        self._batches.clear()
        self.tuples = 0


def _offer(batch: HeldBatch, blocked: set[int], try_put: TryPut, must_wait: MustWait,
           split: SplitBatch) -> HeldBatch | None:
    """Put `batch`, or the part of it that may go; return what must be held (None:
    nothing), and add its tasks to `blocked` (tasks with held output before the
    batches still to come)."""
    if batch.remote:
        waiting = frozenset(task for task in batch.tasks if task in blocked or must_wait(task))
        if not waiting:
            if try_put(batch):
                return None
        elif waiting != batch.tasks:
            go = [message for message in batch.batch if message.task not in waiting]
            stay = [message for message in batch.batch if message.task in waiting]
            stay_weight = _weight(stay)
            if try_put(split(batch, go, batch.weight - stay_weight)):
                batch = split(batch, stay, stay_weight)
    elif not (batch.tasks & blocked) and try_put(batch):
        return None
    blocked.update(batch.tasks)
    return batch


def _weight(messages: Sequence[Any]) -> int:
    return sum(payload_tuple_count(message.message) for message in messages)
