"""storm_zmq.signals: a signal's action runs outside the handler, so it may take
locks the interrupted main thread holds."""

from __future__ import annotations

import signal
import threading

import pytest

from storm_zmq.signals import on_signals


def test_the_action_may_take_a_lock_the_interrupted_main_thread_holds() -> None:
    # What `logs -f` hit: Event.set() in a handler, run while the main thread held
    # the event's lock inside Event.wait(), waited for itself forever.
    lock = threading.Lock()
    done = threading.Event()

    def action() -> None:
        with lock:
            done.set()

    with on_signals([signal.SIGUSR1], action):
        with lock:
            signal.raise_signal(signal.SIGUSR1)  # returns once the handler has run
            assert not done.wait(0.2)  # the action waits for the lock, not the handler
        assert done.wait(10)


def test_each_signal_runs_the_action_and_a_failing_action_does_not_end_them(
        caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []
    ran = threading.Semaphore(0)

    def action() -> None:
        calls.append(len(calls))
        ran.release()
        if len(calls) == 1:
            raise RuntimeError("the first one fails")

    with on_signals([signal.SIGUSR1, signal.SIGUSR2], action):
        signal.raise_signal(signal.SIGUSR1)
        assert ran.acquire(timeout=10)
        signal.raise_signal(signal.SIGUSR2)
        assert ran.acquire(timeout=10)
    assert calls == [0, 1]
    assert "the action for a signal failed" in caplog.text
    assert "the first one fails" in caplog.text


def test_the_previous_handlers_come_back() -> None:
    seen: list[int] = []

    def mine(signum: int, frame: object) -> None:
        seen.append(signum)

    before = signal.signal(signal.SIGUSR1, mine)
    try:
        with on_signals([signal.SIGUSR1], lambda: None):
            assert signal.getsignal(signal.SIGUSR1) is not mine
        assert signal.getsignal(signal.SIGUSR1) is mine
        signal.raise_signal(signal.SIGUSR1)
        assert seen == [signal.SIGUSR1]
    finally:
        signal.signal(signal.SIGUSR1, before)


def test_outside_the_main_thread_it_refuses_and_leaves_nothing_behind() -> None:
    errors: list[BaseException] = []

    def elsewhere() -> None:
        try:
            with on_signals([signal.SIGUSR1], lambda: None):
                pass
        except ValueError as exc:
            errors.append(exc)

    before = {t.name for t in threading.enumerate()}
    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join(10)
    assert len(errors) == 1 and "main thread" in str(errors[0])
    assert "signal-actions" not in {t.name for t in threading.enumerate()} - before
