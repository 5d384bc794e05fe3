"""Collector calls from a component's own threads, run in its executor's thread.

An executor's output buffers, its folded acks and its groupings' state belong to
the one thread that runs it: its emits buffer without a lock (the per-tuple hot
path), and a flush swaps the buffers out. pystorm let a component emit, ack and
fail from threads of its own (its writes to Storm took a lock), and streamparse
code does. Here such a call, made while the executor's thread flushed, appended to
a buffer already handed on: the tuple was lost, or its ack was, and the tree timed
out (an audit: 2 of 20,000 emits from a bolt's thread missing, in every run).

So a call from any other thread (`TaskCollector` tells by the thread's identity,
one comparison an emit) becomes a `ThreadCall` put on the executor's own input
queue, which its thread takes with its input and runs in order (`Executor.
_tuples_of`). The queue is bounded, so a thread that emits faster than the
executor runs waits for room, as an executor's emit does. The caller does not wait
for the call to run, except for task ids (`need_task_ids`), which it needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["THREAD_CALL_TASK", "ThreadCall"]

#: The task id of a `ThreadCall` in an input batch (no task has it)
THREAD_CALL_TASK = -2


class ThreadCall:
    """One collector call (`method(*args)`) for the executor's thread to make."""

    __slots__ = ("method", "args", "thread", "done", "result", "error")

    def __init__(self, method: Callable[..., Any], args: tuple[Any, ...], wait: bool) -> None:
        self.method = method
        self.args = args
        self.thread = threading.current_thread().name  # for an error's report
        self.done = threading.Event() if wait else None
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        """Make the call (in the executor's thread); what it raised is kept for the
        caller if it waits, else returned by `unclaimed_error` for a report."""
        try:
            self.result = self.method(*self.args)
        except BaseException as exc:  # noqa: BLE001  the caller's, or reported
            self.error = exc
        finally:
            if self.done is not None:
                self.done.set()

    def unclaimed_error(self) -> BaseException | None:
        """What the call raised when no caller waits to receive it."""
        return self.error if self.done is None else None

    def outcome(self) -> Any:
        """For a caller that waited: the call's result, or what it raised."""
        if self.error is not None:
            raise self.error
        return self.result
