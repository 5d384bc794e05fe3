"""The behaviour every transport must show: one suite, run against each.

Network transports run over real loopback sockets; the many-clients case uses
real sender processes. Waiting is always a poll against a deadline.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import socket
import struct
import threading
import time
from typing import Any

import msgpack
import pytest
import zmq

from storm_zmq.messaging import Connection, SendTimeout, TaskMessage, load_context
from tests.messaging.conftest import (
    NETWORK_TRANSPORTS,
    free_port,
    transport_conf,
)

STORM_ID = "conformance-1"
SEQ = struct.Struct("!II")  # (client, sequence number) at the start of a payload


def receive_until(server: Connection, count: int, deadline_s: float = 20.0) -> list[TaskMessage]:
    """Receive until `count` messages arrived; fail the test at the deadline."""
    deadline = time.monotonic() + deadline_s
    received: list[TaskMessage] = []
    while len(received) < count:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"received {len(received)} of {count} messages before the deadline"
        received += server.recv(timeout=min(remaining, 0.5))
    return received


def numbered(client: int, start: int, count: int, task: int = 7, pad: int = 0) -> list[TaskMessage]:
    return [
        TaskMessage(task, SEQ.pack(client, seq) + b"p" * pad) for seq in range(start, start + count)
    ]


# --- delivery ---------------------------------------------------------------------


def test_one_connection_delivers_in_order(make_context: Any) -> None:
    context = make_context()
    port = free_port()
    server = context.bind(STORM_ID, port)
    client = context.connect(STORM_ID, "127.0.0.1", port)
    for batch_start in range(0, 5000, 50):
        client.send(numbered(0, batch_start, 50))
    received = receive_until(server, 5000)
    assert [SEQ.unpack_from(m.message)[1] for m in received] == list(range(5000))
    assert all(isinstance(m, TaskMessage) and m.task == 7 for m in received)


@pytest.mark.parametrize(
    ("count", "size"),
    [(1, 0), (1, 1), (10_000, 0), (10_000, 100), (1, 1 << 20), (12, 1 << 20)],
    ids=["1x0B", "1x1B", "10000x0B", "10000x100B", "1x1MiB", "12x1MiB"],
)
def test_batches_and_payload_sizes_arrive_intact(
    make_context: Any, count: int, size: int
) -> None:
    context = make_context()
    port = free_port()
    server = context.bind(STORM_ID, port)
    client = context.connect(STORM_ID, "127.0.0.1", port)
    sent = [TaskMessage(i % 1000 - 500, os.urandom(size)) for i in range(count)]
    # From another thread: 12 MiB is more than the kernel buffers hold unread.
    sender = threading.Thread(target=client.send, args=(sent,))
    sender.start()
    assert receive_until(server, count) == sent
    sender.join(10)
    assert not sender.is_alive()


def test_task_ids_cover_int32_and_negative_control_range(make_context: Any) -> None:
    context = make_context()
    port = free_port()
    server = context.bind(STORM_ID, port)
    client = context.connect(STORM_ID, "127.0.0.1", port)
    sent = [TaskMessage(t, b"x") for t in (-(2**31), -1, 0, 1, 2**31 - 1)]
    client.send(sent)
    assert receive_until(server, len(sent)) == sent


def test_recv_returns_empty_list_when_timeout_passes(make_context: Any) -> None:
    server = make_context().bind(STORM_ID, free_port())
    started = time.monotonic()
    assert server.recv(timeout=0.2) == []
    assert 0.15 <= time.monotonic() - started < 2.0


def _sender_process(name: str, port: int, client_id: int, batches: int, ready: Any) -> None:
    from storm_zmq.messaging import load_context

    context = load_context(transport_conf(name))
    client = context.connect(STORM_ID, "127.0.0.1", port)
    ready.wait(30)
    for batch in range(batches):
        client.send(numbered(client_id, batch * 100, 100))
    client.close()
    context.term()


@pytest.mark.parametrize("transport", NETWORK_TRANSPORTS)
def test_many_client_processes_feed_one_server(make_context: Any, transport: str) -> None:
    context = make_context()
    port = free_port()
    server = context.bind(STORM_ID, port)
    spawn = multiprocessing.get_context("spawn")
    ready = spawn.Event()
    senders = [
        spawn.Process(target=_sender_process, args=(transport, port, cid, 50, ready))
        for cid in range(3)
    ]
    for process in senders:
        process.start()
    ready.set()
    received = receive_until(server, 3 * 50 * 100, deadline_s=60)
    for process in senders:
        process.join(30)
        assert process.exitcode == 0
    by_client: dict[int, list[int]] = {}
    for message in received:
        client_id, seq = SEQ.unpack_from(message.message)
        by_client.setdefault(client_id, []).append(seq)
    assert {cid: seqs for cid, seqs in by_client.items()} == {
        cid: list(range(5000)) for cid in range(3)
    }


# --- recovery -----------------------------------------------------------------------


def test_client_recovers_when_server_restarts_on_same_port(make_context: Any) -> None:
    context = make_context({"send.timeout.ms": 200, "min_wait_ms": 10, "max_wait_ms": 100})
    port = free_port()
    server = context.bind(STORM_ID, port)
    client = context.connect(STORM_ID, "127.0.0.1", port)
    client.send(numbered(0, 0, 1))
    assert len(receive_until(server, 1)) == 1
    server.close()

    replacement = context.bind(STORM_ID, port)
    deadline = time.monotonic() + 20
    seq = 1
    received: list[TaskMessage] = []
    while not received:
        assert time.monotonic() < deadline, "client never reached the restarted server"
        try:
            client.send(numbered(0, seq, 1))
            seq += 1
        except SendTimeout:
            pass
        received = replacement.recv(timeout=0.1)
    # Frames sent after the restart arrive in order, without gaps once through.
    client.send(numbered(0, seq, 1))
    received += receive_until(replacement, 1)
    seqs = [SEQ.unpack_from(m.message)[1] for m in received]
    assert seqs == sorted(seqs) and seqs[-1] == seq


def test_client_created_before_server_exists_delivers_once_it_binds(make_context: Any) -> None:
    context = make_context({"min_wait_ms": 10, "max_wait_ms": 100})
    port = free_port()
    client = context.connect(STORM_ID, "127.0.0.1", port)
    server = context.bind(STORM_ID, port)
    client.send(numbered(0, 0, 3))
    assert len(receive_until(server, 3)) == 3


# --- backpressure ----------------------------------------------------------------


def test_reader_that_stops_makes_sender_block_with_bounded_memory(make_context: Any) -> None:
    """A server that does not read: sends time out after a bounded amount was
    accepted, the timed-out batch is handed back, and everything accepted arrives."""
    context = make_context(
        {"send.timeout.ms": 200, "hwm": 4, "buffer_size": 65536, "transfer.batch.size": 65536}
    )
    port = free_port()
    server = context.bind(STORM_ID, port)
    client = context.connect(STORM_ID, "127.0.0.1", port)
    batch_bytes = 64 * 1000
    accepted = 0
    refused: list[TaskMessage] = []
    for batch in range(2000):  # at most 128 MB offered
        messages = numbered(0, batch * 64, 64, pad=1000 - SEQ.size)
        try:
            client.send(messages)
        except SendTimeout as exc:
            refused = exc.unsent
            break
        accepted += 1
    assert refused, "the sender was never told that the receiver stopped reading"
    assert refused == messages
    # Everything accepted is held in a bounded space: queues plus kernel buffers.
    assert accepted * batch_bytes < 48 * (1 << 20), f"{accepted} batches accepted"
    received = receive_until(server, accepted * 64, deadline_s=30)
    seqs = [SEQ.unpack_from(m.message)[1] for m in received]
    assert seqs == list(range(accepted * 64)), "an accepted message was lost or reordered"
    assert server.recv(timeout=0.3) == []


@pytest.mark.parametrize("size", [1000, 8000])  # packed frames, and (tcp) scattered ones
def test_a_sender_retrying_what_was_handed_back_keeps_its_connection_and_order(
    make_context: Any, size: int,
) -> None:
    """The worker's way of waiting for a slow peer: retry the unsent messages of each
    SendTimeout. A frame half written when the timeout came must be finished by the
    retry, not thrown away with its connection (tcp did: a reconnect per timeout,
    and a kernel buffer full of frames parked on each abandoned connection)."""
    context = make_context(
        {"send.timeout.ms": 100, "hwm": 4, "buffer_size": 65536, "transfer.batch.size": 65536}
    )
    port = free_port()
    server = context.bind(STORM_ID, port)
    client = context.connect(STORM_ID, "127.0.0.1", port)
    produced, timeouts = 0, 0
    to_send: list[TaskMessage] = []
    deadline = time.monotonic() + 30
    while timeouts < 5:  # the server reads nothing yet
        assert time.monotonic() < deadline, "the sender never timed out"
        if not to_send:
            to_send = numbered(0, produced, 64, pad=size - SEQ.size)
            produced += 64
        try:
            client.send(to_send)
            to_send = []
        except SendTimeout as exc:
            to_send = exc.unsent
            timeouts += 1
    received: list[TaskMessage] = []
    while to_send or len(received) < produced:  # now it reads, and the sender retries
        assert time.monotonic() < deadline, f"{len(received)} of {produced} received"
        received += server.recv(timeout=0.01)
        if to_send:
            try:
                client.send(to_send)
                to_send = []
            except SendTimeout as exc:
                to_send = exc.unsent
    seqs = [SEQ.unpack_from(m.message)[1] for m in received]
    assert seqs == list(range(produced)), "a message was lost, repeated or reordered"
    assert client.stats().get("reconnects", 0) == 0
    assert server.stats().get("refused_truncated", 0) == 0


def test_a_retry_with_a_bad_message_sends_nothing_and_a_good_retry_everything_once(
    make_context: Any,
) -> None:
    """A batch with an invalid message is refused before anything is sent, also when
    it retries messages a SendTimeout handed back (for tcp: the half-written frame
    is not finished for a batch that is then refused)."""
    context = make_context(
        {"send.timeout.ms": 100, "hwm": 4, "buffer_size": 65536, "transfer.batch.size": 65536}
    )
    port = free_port()
    server = context.bind(STORM_ID, port)
    client = context.connect(STORM_ID, "127.0.0.1", port)
    produced = 0
    for _ in range(2000):
        messages = numbered(0, produced, 64, pad=1000 - SEQ.size)
        produced += 64
        try:
            client.send(messages)
        except SendTimeout as exc:
            unsent = exc.unsent
            break
    else:
        pytest.fail("the sender was never told that the receiver stopped reading")
    with pytest.raises(TypeError, match="must be bytes"):
        client.send(unsent + [TaskMessage(7, "not bytes")])  # type: ignore[arg-type]
    accepted = produced - len(unsent)
    received = receive_until(server, accepted, deadline_s=30)
    assert server.recv(timeout=0.3) == [], "a message of the refused batch was sent"
    client.send(unsent)
    received += receive_until(server, len(unsent), deadline_s=30)
    seqs = [SEQ.unpack_from(m.message)[1] for m in received]
    assert seqs == list(range(produced))


def test_a_zero_send_timeout_sends_what_the_peer_has_room_for(make_context: Any) -> None:
    """send.timeout.ms 0: never wait, but do send when nothing needs waiting for."""
    context = make_context({"send.timeout.ms": 0, "min_wait_ms": 10, "max_wait_ms": 50})
    port = free_port()
    server = context.bind(STORM_ID, port)
    client = context.connect(STORM_ID, "127.0.0.1", port)
    deadline = time.monotonic() + 10
    while True:  # until connected: a send to a peer not connected yet times out at once
        assert time.monotonic() < deadline, "a send with timeout 0 never went through"
        try:
            client.send(numbered(0, 0, 3))
            break
        except SendTimeout:
            server.recv(timeout=0.01)
    seqs = [SEQ.unpack_from(m.message)[1] for m in receive_until(server, 3)]
    assert seqs == [0, 1, 2]


# --- close and term ----------------------------------------------------------------


def test_close_and_term_are_prompt_with_unreachable_peer(make_context: Any) -> None:
    context = make_context({"send.timeout.ms": 100})
    client = context.connect(STORM_ID, "127.0.0.1", free_port())
    with pytest.raises(SendTimeout):
        client.send(numbered(0, 0, 10))
    started = time.monotonic()
    client.close()
    context.term()
    assert time.monotonic() - started < 2.0


def test_close_and_term_are_prompt_with_peer_not_reading(make_context: Any) -> None:
    context = make_context({"send.timeout.ms": 100, "hwm": 4})
    port = free_port()
    server = context.bind(STORM_ID, port)
    client = context.connect(STORM_ID, "127.0.0.1", port)
    for batch in range(200):
        try:
            client.send(numbered(0, batch * 64, 64, pad=1000))
        except SendTimeout:
            break
    started = time.monotonic()
    client.close()
    server.close()
    context.term()
    assert time.monotonic() - started < 2.0


# --- hostile input (network transports) -----------------------------------------


def _raw_tcp(port: int, data: bytes, close: bool = True) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(data)
    if close:
        sock.close()
    return sock


def _frame(body: Any, version: int = 1) -> bytes:
    return bytes([version]) + msgpack.packb(body)


def _bad_frames() -> dict[str, bytes]:
    good_body = (struct.pack("<i", 1), (b"x",))
    return {
        "version": _frame(good_body, version=9),
        "malformed": b"\x01\xc1garbage",  # 0xc1 is never valid msgpack
        "arity": _frame((struct.pack("<ii", 1, 2), (b"x",))),
        "not-bin": _frame((struct.pack("<i", 1), ("text",))),
        "empty": b"",
    }


def _send_garbage_zmq(port: int, max_frame_size: int) -> None:
    """Hostile zmq peers: a non-ZMTP connection, bad frames, one oversized frame."""
    # Fixed random bytes: some random starts make libzmq wait for the rest of a
    # frame until its 30 s handshake timeout, longer than the test polls.
    _raw_tcp(port, random.Random(20261122).randbytes(4096))
    _raw_tcp(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    ctx = zmq.Context.instance()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 2000)
    push.connect(f"tcp://127.0.0.1:{port}")
    for frame in _bad_frames().values():
        push.send(frame)
    push.send(b"\x01" + b"x" * (max_frame_size + 10))
    push.close()


def _send_garbage_tcp(port: int, max_frame_size: int) -> None:
    _raw_tcp(port, os.urandom(4096))  # almost surely an oversized length prefix
    for frame in _bad_frames().values():
        _raw_tcp(port, struct.pack("!I", len(frame)) + frame)
    _raw_tcp(port, struct.pack("!I", 100) + b"\x01" * 50)  # truncated
    _raw_tcp(port, struct.pack("!I", max_frame_size + 1) + b"\x01" * 100)  # oversized


@pytest.mark.parametrize("transport", NETWORK_TRANSPORTS)
def test_garbage_is_counted_and_dropped_while_good_clients_are_served(
    make_context: Any, transport: str
) -> None:
    max_frame_size = 1 << 16
    context = make_context({"max.frame.size": max_frame_size, "transfer.batch.size": 1 << 15})
    port = free_port()
    server = context.bind(STORM_ID, port)
    good = context.connect(STORM_ID, "127.0.0.1", port)
    good.send(numbered(0, 0, 10))
    assert len(receive_until(server, 10)) == 10

    (_send_garbage_zmq if transport == "zmq" else _send_garbage_tcp)(port, max_frame_size)
    good.send(numbered(0, 10, 10))
    received = receive_until(server, 10)
    # version, malformed/arity/not-bin/empty, and the connection-level refusals:
    # each counted (events arrive asynchronously: poll until all are in)
    minimums = {"refused_version": 1, "refused_malformed": 4}
    minimums.update(
        # HTTP fails the ZMTP handshake; the oversized frame cuts its sender off
        {"refused_handshake": 1, "disconnects": 1}
        if transport == "zmq"
        else {"refused_truncated": 1, "refused_oversized": 2}
    )

    def counted() -> bool:
        stats = server.stats()
        if transport == "zmq":
            # Random bytes either fail the handshake or, through libzmq's ZMTP 1.0
            # fallback, arrive as frames that fail our version check: counted either way.
            random_peer = stats.get("refused_handshake", 0) >= 2 or stats.get("refused_version", 0) >= 2
            if not random_peer:
                return False
        return all(stats.get(kind, 0) >= n for kind, n in minimums.items())

    deadline = time.monotonic() + 10
    while not counted():
        assert time.monotonic() < deadline, f"refusals not counted: {server.stats()}"
        received += server.recv(timeout=0.1)
    good.send(numbered(0, 20, 10))
    received += receive_until(server, 10 - (len(received) - 10))
    assert [SEQ.unpack_from(m.message)[1] for m in received] == list(range(10, 30))


def test_bind_on_busy_port_is_a_clear_error(make_context: Any) -> None:
    from storm_zmq.messaging import TransportError

    context = make_context()
    port = free_port()
    context.bind(STORM_ID, port)
    with pytest.raises(TransportError, match=f"port {port}"):
        context.bind(STORM_ID, port)


@pytest.mark.parametrize("transport", ["zmq", "tcp"])
def test_stats_may_be_read_while_another_thread_closes_the_client(transport: str) -> None:
    # A worker's main thread reads its clients' stats while the send thread closes
    # one whose peer moved; a zmq client's monitor socket was read unlocked.
    context = load_context(transport_conf(transport))
    port = free_port()
    server = context.bind("t", port)
    errors: list[BaseException] = []
    try:
        for _ in range(30):
            client = context.connect("t", "127.0.0.1", port)
            closed = threading.Event()

            def read_stats(client: Any = client, closed: threading.Event = closed) -> None:
                try:
                    while not closed.is_set():
                        client.stats()
                    client.stats()  # and once after
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)

            reader = threading.Thread(target=read_stats)
            reader.start()
            client.close()
            closed.set()
            reader.join(10)
    finally:
        server.close()
        context.term()
    assert errors == []
