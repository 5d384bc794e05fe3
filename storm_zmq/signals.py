"""Signal handling that cannot deadlock the process it is meant to stop.

Python runs a signal handler in the main thread, between two of its bytecodes,
wherever that thread happens to be: also while it holds a lock. A handler that
takes a lock the main thread may hold waits for itself forever, and the commonest
way to stop a command, ``threading.Event.set()``, takes the event's lock, which
the main thread holds for a few bytecodes in every ``event.wait(timeout)`` of its
poll loop (and ``queue.Queue.put`` takes the queue's). The suite saw it: `logs -f`
went on after Ctrl-C, its main thread blocked in its own handler.

`on_signals` runs the action in a thread of its own instead. The handler does one
``os.write`` to a pipe, which takes no Python lock, and that thread reads the pipe
and runs the action, which may then take any lock, set events, log or print.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

log = logging.getLogger(__name__)


@contextlib.contextmanager
def on_signals(signums: Iterable[int], action: Callable[[], None]) -> Iterator[None]:
    """While the block runs, each of `signums` runs `action()` in a thread of this
    context's own (each signal once; signals arriving together may run it once).
    The previous handlers come back when the block ends. Main thread only, as
    ``signal.signal``."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # a full pipe drops the byte, never blocks the handler

    def handler(signum: int, frame: Any) -> None:
        try:
            os.write(write_end, b"\0")
        except OSError:  # full: an action is pending already
            pass

    def run_actions() -> None:
        while os.read(read_end, 512):  # b"": the write end closed, the block is over
            try:
                action()
            except Exception:  # the next signal runs it again: this thread stays
                log.exception("the action for a signal failed")

    runner = threading.Thread(target=run_actions, name="signal-actions", daemon=True)
    runner.start()
    previous: dict[int, Any] = {}
    try:
        for signum in signums:  # (outside the main thread this raises: all is undone)
            previous[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
        os.close(write_end)
        # an action still running (a daemon's stop) finishes; the process does not
        # wait on a stuck one past this
        runner.join(timeout=10)
        if not runner.is_alive():
            os.close(read_end)
