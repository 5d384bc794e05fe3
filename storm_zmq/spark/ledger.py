"""Pure bookkeeping of the Spark spout: which partitions a task owns, and per
partition which rows are in flight, acked, or waiting to be replayed.

No Spark, no threads: the spout drives a `PartitionLedger` from its executor thread
(`next_tuple`, `ack`, `fail` are all called there), and the tests drive it directly.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["PartitionLedger", "describe_partitions", "partitions_for_task", "task_index"]


def task_index(context: Mapping[str, Any]) -> tuple[int, int]:
    """``(index, count)``: the position of this task among its component's tasks
    (ordered by task id) and how many tasks the component has, from pystorm's
    context dict (``taskid``, ``componentid``, ``task->component``)."""
    component = context["componentid"]
    task = int(context["taskid"])
    tasks = sorted(int(t) for t, c in context["task->component"].items() if c == component)
    if task not in tasks:  # a context that lists only other components' tasks
        tasks = sorted({*tasks, task})
    return tasks.index(task), len(tasks)


def partitions_for_task(num_partitions: int, index: int, count: int) -> list[int]:
    """The partitions task `index` of `count` streams: p with p mod count == index."""
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"task index {index} out of range for {count} task(s)")
    return list(range(index, max(0, num_partitions), count))


class _Partition:
    __slots__ = ("rows", "cursor", "pending", "queued", "fails")

    def __init__(self, rows: int) -> None:
        self.rows = rows  # rows in the partition
        self.cursor = 0  # next row never emitted
        self.pending: set[int] = set()  # emitted, neither acked nor failed yet
        self.queued = 0  # failed rows waiting in the replay queue
        self.fails: dict[int, int] = {}  # row -> failures so far (only with max_fails)


class PartitionLedger:
    """Acks, fails and replays of the rows of one task's partitions.

    A row is identified by ``(partition, row)``, which is also its spout `tup_id`.
    A partition is *opened* once its rows are known (fetched); rows are handed out
    for emission with `take_new` (new rows, in order) and `take_replay` (failed
    rows, first in first out, before new ones); `ack` and `fail` settle what was
    handed out. A partition is done when every row was handed out and acked (or
    given up when it fails more than `max_fails` times); the ledger is done when every partition
    of the task is. Acks and fails of rows that are not in flight (duplicates, a
    partition already done) are ignored.
    """

    def __init__(self, partitions: Iterable[int], max_fails: int | None = None) -> None:
        self.partitions: tuple[int, ...] = tuple(partitions)
        if len(set(self.partitions)) != len(self.partitions):
            raise ValueError(f"duplicate partitions in {self.partitions}")
        self.max_fails = max_fails
        self._open: dict[int, _Partition] = {}
        self._done: set[int] = set()
        self._replay: deque[tuple[int, int]] = deque()
        self.in_flight = 0  # rows handed out and not yet acked or failed
        self.rows_acked = 0
        self.rows_known = 0  # rows of the partitions opened so far
        self.replayed = 0  # rows handed out again after a failure
        self.failures = 0
        self.given_up = 0

    # -- state ----------------------------------------------------------------------

    @property
    def partitions_total(self) -> int:
        return len(self.partitions)

    @property
    def partitions_done(self) -> int:
        return len(self._done)

    @property
    def partitions_opened(self) -> int:
        return len(self._open) + len(self._done)

    @property
    def all_done(self) -> bool:
        return len(self._done) == len(self.partitions)

    def is_done(self, partition: int) -> bool:
        return partition in self._done

    def fully_emitted(self, partition: int) -> bool:
        """Every row of the (opened) partition was handed out at least once."""
        if partition in self._done:
            return True
        state = self._open[partition]
        return state.cursor >= state.rows

    def outstanding(self, partition: int) -> set[int]:
        """Rows of an open partition still in flight or waiting for replay: what the
        spout must keep the values of."""
        state = self._open.get(partition)
        if state is None:
            return set()
        rows = set(state.pending)
        if state.queued:
            rows.update(r for p, r in self._replay if p == partition)
        return rows

    def rows_estimate(self) -> int | None:
        """Rows of all partitions: exact once every partition was opened, else
        extrapolated from the opened ones; None before any."""
        opened = self.partitions_opened
        if not opened:
            return None
        if opened == len(self.partitions):
            return self.rows_known
        return round(self.rows_known / opened * len(self.partitions))

    # -- opening and handing out -----------------------------------------------------

    def open(self, partition: int, rows: int) -> bool:
        """Partition `partition` has `rows` rows; True when that makes it done at
        once (an empty partition)."""
        if partition not in self.partitions:
            raise ValueError(f"partition {partition} is not one of this task's {self.partitions}")
        if partition in self._open or partition in self._done:
            raise ValueError(f"partition {partition} opened twice")
        if rows < 0:
            raise ValueError(f"partition {partition}: negative row count {rows}")
        self.rows_known += rows
        self._open[partition] = _Partition(rows)
        return self._check_done(partition)

    def take_new(self, partition: int, limit: int, track: bool = True) -> range:
        """Up to `limit` rows of `partition` never handed out before, now in flight;
        with ``track=False`` (unreliable emission) they count as acked at once."""
        state = self._open[partition]
        start = state.cursor
        stop = min(state.rows, start + max(0, limit))
        if stop > start:
            state.cursor = stop
            if track:
                state.pending.update(range(start, stop))
                self.in_flight += stop - start
            else:
                self.rows_acked += stop - start
                self._check_done(partition)
        return range(start, stop)

    def take_replay(self) -> tuple[int, int] | None:
        """The oldest failed row, now in flight again, or None."""
        if not self._replay:
            return None
        partition, row = item = self._replay.popleft()
        state = self._open[partition]
        state.queued -= 1
        state.pending.add(row)
        self.in_flight += 1
        self.replayed += 1
        return item

    @property
    def replays_waiting(self) -> int:
        return len(self._replay)

    # -- settling ----------------------------------------------------------------------

    def ack(self, partition: int, row: int) -> bool:
        """Row acked; True when that completed its partition."""
        state = self._open.get(partition)
        if state is None or row not in state.pending:
            return False
        state.pending.remove(row)
        self.in_flight -= 1
        self.rows_acked += 1
        state.fails.pop(row, None)
        return self._check_done(partition)

    def fail(self, partition: int, row: int) -> bool:
        """Row failed (or timed out); True when it was queued for replay, False when
        ignored or given up (failed more than `max_fails` times, it counts as settled)."""
        state = self._open.get(partition)
        if state is None or row not in state.pending:
            return False
        state.pending.remove(row)
        self.in_flight -= 1
        self.failures += 1
        if self.max_fails is not None:
            fails = state.fails[row] = state.fails.get(row, 0) + 1
            if fails > self.max_fails:
                del state.fails[row]
                self.given_up += 1
                self._check_done(partition)
                return False
        state.queued += 1
        self._replay.append((partition, row))
        return True

    def _check_done(self, partition: int) -> bool:
        state = self._open[partition]
        if state.cursor >= state.rows and not state.pending and not state.queued:
            del self._open[partition]
            self._done.add(partition)
            return True
        return False


def describe_partitions(partitions: Sequence[int], limit: int = 8) -> str:
    """``0, 2, 4 … (12 in all)`` for log lines."""
    shown = ", ".join(str(p) for p in partitions[:limit])
    return shown + (f" … ({len(partitions)} in all)" if len(partitions) > limit else "")
