"""`send.timeout.ms` bounds one `send()`, however many frames the batch needs.

A peer that drains slowly but steadily takes each frame within the timeout, so a
per-frame bound (ZeroMQ's SNDTIMEO, the kernel's SO_SNDTIMEO) alone would let a send
of n frames block n timeouts long; the worker relies on its sends returning within
their slice to notice a peer that moved or a stop. The peers here are raw sockets
that read one frame's worth every few milliseconds, so the test controls the pace.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import zmq

from storm_zmq.messaging import SendTimeout, TaskMessage, load_context
from tests.messaging.conftest import free_port, transport_conf

STORM_ID = "bounds-1"
TIMEOUT_S = 0.1
FRAME_BYTES = 60_000  # one message per frame (transfer.batch.size below)
READ_EVERY_S = 0.01
#: Generous for a loaded machine, and well below what an unbounded send takes (the
#: frames below at one per READ_EVERY_S: 3-4 s).
BOUND_S = 10 * TIMEOUT_S


def frames(count: int) -> list[TaskMessage]:
    return [TaskMessage(1, bytes(FRAME_BYTES)) for _ in range(count)]


def _read_slowly(read_one: object, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            read_one()  # type: ignore[operator]
        except (zmq.Again, BlockingIOError, OSError):
            pass
        stop.wait(READ_EVERY_S)


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_zmq_send_of_many_frames_to_a_slow_peer_is_bounded_by_the_timeout(
    stop: threading.Event,
) -> None:
    raw = zmq.Context()
    pull = raw.socket(zmq.PULL)
    pull.setsockopt(zmq.RCVHWM, 1)
    pull.setsockopt(zmq.RCVBUF, 65536)
    pull.setsockopt(zmq.LINGER, 0)
    port = free_port()
    pull.bind(f"tcp://127.0.0.1:{port}")
    reader = threading.Thread(target=_read_slowly, args=(lambda: pull.recv(zmq.NOBLOCK), stop),
                              daemon=True)
    reader.start()
    context = load_context(transport_conf("zmq", {
        "send.timeout.ms": int(TIMEOUT_S * 1000), "hwm": 1, "transfer.batch.size": 65536}))
    try:
        client = context.connect(STORM_ID, "127.0.0.1", port)
        client.send(frames(1))  # connected
        started = time.monotonic()
        with pytest.raises(SendTimeout):  # 400 frames at one per 10 ms: 4 s unbounded
            client.send(frames(400))
        assert time.monotonic() - started < BOUND_S
    finally:
        stop.set()
        reader.join()
        context.term()
        pull.close()
        raw.term()


def test_tcp_send_of_many_frames_to_a_slow_peer_is_bounded_by_the_timeout(
    stop: threading.Event,
) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    context = load_context(transport_conf("tcp", {
        "send.timeout.ms": int(TIMEOUT_S * 1000), "buffer_size": 65536,
        "transfer.batch.size": 65536}))
    try:
        client = context.connect(STORM_ID, "127.0.0.1", port)
        client.send(frames(1))  # connects; the listener's backlog holds it
        peer, _ = listener.accept()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        reader = threading.Thread(
            target=_read_slowly, args=(lambda: peer.recv(FRAME_BYTES, socket.MSG_DONTWAIT), stop),
            daemon=True)
        reader.start()
        started = time.monotonic()
        with pytest.raises(SendTimeout):  # 300 frames at one per 10 ms: 3 s unbounded
            client.send(frames(300))
        assert time.monotonic() - started < BOUND_S
        stop.set()
        reader.join()
        peer.close()
    finally:
        stop.set()
        context.term()
        listener.close()


class _ListenerOutOfDescriptors:
    """A listener whose accept fails as it does when the process has no descriptor
    left (the pending connection stays in the backlog, the listener readable)."""

    def __init__(self, listener: socket.socket) -> None:
        self._listener = listener

    def fileno(self) -> int:
        return self._listener.fileno()

    def accept(self) -> tuple[socket.socket, object]:
        raise OSError(errno.EMFILE, "Too many open files")

    def close(self) -> None:
        self._listener.close()


def test_a_tcp_server_out_of_descriptors_does_not_spin_and_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ... nor sleep: the receive thread slept 50 ms a refused accept, holding every
    # peer's frames (a data-plane audit: p99 3 ms -> 99 ms); the listener now leaves
    # its selector that long instead
    from storm_zmq.messaging import tcp

    slept: list[float] = []
    real_sleep, this_thread = time.sleep, threading.get_ident()

    def sleep(seconds: float) -> None:  # (time.sleep is every thread's: others sleep on)
        if threading.get_ident() == this_thread:
            slept.append(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr(tcp.time, "sleep", sleep)
    context = load_context(transport_conf("tcp"))
    port = free_port()
    server = context.bind("t", port)
    server._listener = _ListenerOutOfDescriptors(server._listener)  # type: ignore[attr-defined]
    peer = socket.create_connection(("127.0.0.1", port))
    sender = load_context(transport_conf("tcp"))
    try:
        cpu = time.process_time()
        assert server.recv(timeout=1.0) == []
        cpu = time.process_time() - cpu
        assert cpu < 0.5, f"{cpu:.2f} s of CPU in a 1 s recv: spinning on the listener"
        refused = server.stats()["refused_accept"]
        assert 1 <= refused <= 1.0 / tcp.ACCEPT_RETRY_PAUSE + 2, refused  # once a pause
        assert slept == []
        # the listener back, the connection waiting in its backlog is taken, and served
        server._listener = server._listener._listener  # type: ignore[attr-defined]
        monkeypatch.undo()  # (the client's reconnects may wait)
        client = sender.connect("t", "127.0.0.1", port)
        client.send([TaskMessage(7, b"first")])
        got: list[TaskMessage] = []
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            got = server.recv(timeout=0.5)
        assert [m.task for m in got] == [7]
    finally:
        sender.term()
        peer.close()
        server.close()
        context.term()


def test_a_tcp_peer_that_closes_on_a_frame_is_said_and_retried_with_backoff(
    stop: threading.Event, caplog: pytest.LogCaptureFixture,
) -> None:
    # A data-plane audit: a peer whose max.frame.size is lower closes the connection
    # on the frame's length prefix, and the sender wrote it again at once, for ever
    # (3,013 reconnects in 30 s) without a word
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[int] = []

    def refuse() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                peer, _ = listener.accept()
            except OSError:
                continue
            accepted.append(1)
            peer.recv(4)  # the length prefix: too large, so closed
            peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            peer.close()  # (a reset, as a refusing worker's close with data unread is)

    refuser = threading.Thread(target=refuse, daemon=True)
    refuser.start()
    context = load_context(transport_conf("tcp", {
        "send.timeout.ms": 3000, "buffer_size": 65536, "min_wait_ms": 100, "max_wait_ms": 1000,
        "transfer.batch.size": 4 << 20}))
    try:
        client = context.connect(STORM_ID, "127.0.0.1", port)
        with caplog.at_level("WARNING"), pytest.raises(SendTimeout):
            client.send([TaskMessage(1, bytes(4 << 20))])  # larger than the socket buffers
    finally:
        stop.set()
        refuser.join()
        context.term()
        listener.close()
    said = [r.getMessage() for r in caplog.records if "closed the connection" in r.getMessage()]
    assert len(said) == 1, said
    assert "while a frame of 4194" in said[0] and "max.frame.size is lower" in said[0]
    assert len(accepted) < 20, len(accepted)  # backed off: about 6 in 3 s, not hundreds
