"""Transport authentication: zmq with CURVE, tcp with the HMAC challenge-response.

The handshake logic is tested pure (storm_zmq.messaging.auth); the transports are
tested on real sockets against intruders that speak the wire format perfectly but
do not hold the topology's key: nothing they send may come out of recv(), and the
refusal must be counted in the server's stats() and logged.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import zmq

from storm_zmq.messaging import Context, SendTimeout, TaskMessage, TransportError, load_context
from storm_zmq.messaging import tcp as tcp_transport
from storm_zmq.messaging.auth import (
    ACCEPT,
    CHALLENGE_SIZE,
    HELLO_SIZE,
    MAGIC,
    RESPONSE_SIZE,
    AuthError,
    ClientHandshake,
    ServerHandshake,
    TopologySecrets,
)
from storm_zmq.messaging.stream import length_prefix
from storm_zmq.messaging.wire import encode_batch
from tests.messaging.conftest import free_port, transport_conf

STORM_ID = "auth-test-1"
KEY = b"k" * 32
SETTING = {"zmq": "curve", "tcp": "authentication"}
MAX_FRAME = 1 << 20


def evil_frames(count: int = 5) -> list[bytes]:
    """Well-formed frames an intruder sends: exactly what a real peer would."""
    return [f for f, _ in encode_batch(
        [TaskMessage(1, b"intruder-%d" % i) for i in range(count)], 65536, MAX_FRAME)]


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def drain(server: Any, seconds: float) -> list[TaskMessage]:
    """Everything recv() returns within `seconds`."""
    got: list[TaskMessage] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        got += server.recv(timeout=left)
    return got


# --------------------------------------------------------------------- secrets


def test_secrets_round_trip_through_their_dict_form_and_hide_in_repr() -> None:
    secrets = TopologySecrets.generate()
    assert TopologySecrets.from_dict(secrets.to_dict()) == secrets
    assert len(secrets.curve_public) == 40 and len(secrets.hmac_key) == 32
    assert secrets.curve_secret.decode() not in repr(secrets)
    assert secrets.hmac_key.hex() not in repr(secrets)
    assert TopologySecrets.generate() != secrets, "every topology gets its own"


@pytest.mark.parametrize("field", ["curve_public", "curve_secret", "hmac_key"])
def test_malformed_secrets_name_the_field(field: str) -> None:
    data = TopologySecrets.generate().to_dict()
    data[field] = data[field][:-1]
    with pytest.raises(AuthError, match=field):
        TopologySecrets.from_dict(data)
    del data[field]
    with pytest.raises(AuthError, match=field):
        TopologySecrets.from_dict(data)


# ------------------------------------------------------------ the tcp handshake


def handshake(client_key: bytes, server_key: bytes, *, client_id: str = STORM_ID,
              server_id: str = STORM_ID) -> bool:
    client = ClientHandshake(client_key, client_id)
    server = ServerHandshake(server_key, server_id)
    challenge = server.feed(client.hello())
    response = client.answer(challenge)
    client.accepted(server.feed(response))
    return server.done


def test_both_sides_holding_the_key_authenticate_each_other() -> None:
    assert handshake(KEY, KEY)


def test_a_client_without_the_key_is_refused_by_the_server() -> None:
    client = ClientHandshake(b"x" * 32, STORM_ID)
    server = ServerHandshake(KEY, STORM_ID)
    challenge = server.feed(client.hello())
    # The client notices the server is not "its" server; an intruder sends anyway.
    with pytest.raises(AuthError, match="server does not hold"):
        client.answer(challenge)
    with pytest.raises(AuthError, match="does not hold the topology's secret"):
        server.feed(b"\x00" * RESPONSE_SIZE)
    assert not server.done


def test_a_server_without_the_key_is_refused_by_the_client() -> None:
    with pytest.raises(AuthError, match="server does not hold"):
        handshake(KEY, b"y" * 32)


def test_the_proof_is_bound_to_the_topology_id() -> None:
    with pytest.raises(AuthError):
        handshake(KEY, KEY, client_id="other-topology")


def test_a_recorded_response_does_not_authenticate_a_new_connection() -> None:
    client = ClientHandshake(KEY, STORM_ID)
    hello = client.hello()
    first = ServerHandshake(KEY, STORM_ID)
    response = client.answer(first.feed(hello))
    assert first.feed(response) == ACCEPT
    # Replay the whole recorded conversation to a fresh server: new server nonce.
    second = ServerHandshake(KEY, STORM_ID)
    second.feed(hello)
    with pytest.raises(AuthError):
        second.feed(response)


def test_the_servers_proof_cannot_be_reflected_as_the_clients() -> None:
    server = ServerHandshake(KEY, STORM_ID)
    challenge = server.feed(MAGIC + b"n" * 32)
    with pytest.raises(AuthError):
        server.feed(challenge[32:])  # the server's own MAC, offered back


def test_a_reflected_nonce_is_refused() -> None:
    nonce = b"r" * 32
    server = ServerHandshake(KEY, STORM_ID, nonce=nonce)
    with pytest.raises(AuthError, match="reflection"):
        server.feed(MAGIC + nonce)
    client = ClientHandshake(KEY, STORM_ID, nonce=nonce)
    client.hello()
    with pytest.raises(AuthError, match="reflection"):
        client.answer(nonce + b"\x00" * 32)


@pytest.mark.parametrize("size", [0, HELLO_SIZE - 1, HELLO_SIZE + 1, 1 << 20])
def test_truncated_or_oversized_hello_is_refused(size: int) -> None:
    server = ServerHandshake(KEY, STORM_ID)
    assert server.need == HELLO_SIZE, "a reader never reads past the hello"
    with pytest.raises(AuthError, match="expected"):
        server.feed((MAGIC + b"z" * size)[:size])


@pytest.mark.parametrize("size", [0, CHALLENGE_SIZE - 1, CHALLENGE_SIZE + 1])
def test_truncated_or_oversized_challenge_is_refused(size: int) -> None:
    client = ClientHandshake(KEY, STORM_ID)
    client.hello()
    with pytest.raises(AuthError, match="expected"):
        client.answer(b"c" * size)


def test_a_peer_that_speaks_frames_instead_of_the_handshake_is_refused() -> None:
    frame = evil_frames(1)[0]
    data = (length_prefix(len(frame)) + frame + b"\x00" * HELLO_SIZE)[:HELLO_SIZE]
    with pytest.raises(AuthError, match="did not start"):
        ServerHandshake(KEY, STORM_ID).feed(data)


def test_handshake_steps_out_of_order_are_errors() -> None:
    client = ClientHandshake(KEY, STORM_ID)
    with pytest.raises(AuthError):
        client.answer(b"c" * CHALLENGE_SIZE)
    server = ServerHandshake(KEY, STORM_ID)
    assert handshake(KEY, KEY)
    with pytest.raises(AuthError):
        client.accepted(ACCEPT)
    server.feed(MAGIC + b"a" * 32)
    with pytest.raises(AuthError):
        server.feed(b"\x00" * RESPONSE_SIZE)
    with pytest.raises(AuthError, match="refused"):
        c = ClientHandshake(KEY, STORM_ID)
        s = ServerHandshake(KEY, STORM_ID)
        c.answer(s.feed(c.hello()))
        c.accepted(b"\x00")


# ------------------------------------------------------------ real transports


@pytest.fixture
def contexts() -> Iterator[Callable[..., Context]]:
    made: list[Context] = []

    def make(transport: str, secrets: TopologySecrets | None, on: bool = True,
             **settings: Any) -> Context:
        conf = transport_conf(transport, {SETTING[transport]: on, **settings})
        context = load_context(conf, secrets)
        made.append(context)
        return context

    yield make
    for context in made:
        context.term()


@pytest.mark.parametrize("transport", ["zmq", "tcp"])
def test_authentication_on_without_secrets_names_the_key(transport: str) -> None:
    conf = transport_conf(transport, {SETTING[transport]: True})
    with pytest.raises(TransportError, match=f"storm.messaging.{transport}.{SETTING[transport]}"):
        load_context(conf)


@pytest.mark.parametrize("transport", ["zmq", "tcp"])
def test_authenticated_peers_exchange_messages(
        transport: str, contexts: Callable[..., Context]) -> None:
    secrets = TopologySecrets.generate()
    port = free_port()
    server = contexts(transport, secrets).bind(STORM_ID, port)
    client = contexts(transport, secrets.to_dict()).connect(STORM_ID, "127.0.0.1", port)
    sent = [TaskMessage(i, b"m%d" % i) for i in range(200)]
    client.send(sent)
    got: list[TaskMessage] = []
    deadline = time.monotonic() + 10
    while len(got) < len(sent) and time.monotonic() < deadline:
        got += server.recv(timeout=1)
    assert got == sent
    stats = server.stats()
    assert stats["messages_received"] == 200 and "refused_auth" not in stats
    assert client.stats()["handshake_failures"] == 0


def test_tcp_authenticates_with_a_send_timeout_of_zero(contexts: Callable[..., Context]) -> None:
    # The handshake used to be cut to the send's deadline, already passed with
    # send.timeout.ms 0: every connect counted as a failed handshake, for ever.
    secrets = TopologySecrets.generate()
    port = free_port()
    server = contexts("tcp", secrets).bind(STORM_ID, port)
    client = contexts("tcp", secrets, **{"send.timeout.ms": 0}).connect(STORM_ID, "127.0.0.1", port)
    sent = [TaskMessage(1, b"hello")]
    got: list[TaskMessage] = []
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        try:
            client.send(sent)
        except SendTimeout:  # 0 means "do not wait": try again
            continue
        got += server.recv(timeout=1)
    assert got == sent
    assert client.stats()["handshake_failures"] == 0


def zmq_intruder(ctx: zmq.Context, port: int, setup: Callable[[zmq.Socket], None]) -> zmq.Socket:
    sock = ctx.socket(zmq.PUSH)
    sock.linger = 0
    setup(sock)
    sock.connect(f"tcp://127.0.0.1:{port}")
    for frame in evil_frames():
        try:
            sock.send(frame, zmq.NOBLOCK)  # queued until a handshake that never succeeds
        except zmq.Again:
            pass
    return sock


def _no_curve(sock: zmq.Socket) -> None:
    pass


def _own_key_pair_right_server_key(server_key: bytes) -> Callable[[zmq.Socket], None]:
    def setup(sock: zmq.Socket) -> None:
        public, secret = zmq.curve_keypair()
        sock.curve_publickey, sock.curve_secretkey = public, secret
        sock.curve_serverkey = server_key  # knows the public key, not the secret one
    return setup


def _wrong_server_key(sock: zmq.Socket) -> None:
    public, secret = zmq.curve_keypair()
    sock.curve_publickey, sock.curve_secretkey, sock.curve_serverkey = public, secret, public


@pytest.mark.parametrize("intruder", ["no-curve", "own-key-pair", "wrong-server-key"])
def test_zmq_peer_without_the_key_gets_nothing_through_and_is_counted(
        intruder: str, contexts: Callable[..., Context], caplog: pytest.LogCaptureFixture,
) -> None:
    secrets = TopologySecrets.generate()
    port = free_port()
    server = contexts("zmq", secrets).bind(STORM_ID, port)
    setup = {"no-curve": _no_curve, "wrong-server-key": _wrong_server_key,
             "own-key-pair": _own_key_pair_right_server_key(secrets.curve_public)}[intruder]
    ctx = zmq.Context()
    caplog.set_level(logging.WARNING, logger="storm_zmq.messaging.zmq")
    try:
        sock = zmq_intruder(ctx, port, setup)
        assert wait_for(lambda: server.stats().get("refused_auth", 0) >= 1), server.stats()
        assert drain(server, 0.5) == []
        sock.close()
    finally:
        ctx.term()
    # A real peer on the same server still gets through, and only its messages do.
    client = contexts("zmq", secrets).connect(STORM_ID, "127.0.0.1", port)
    client.send([TaskMessage(7, b"legit")])
    assert drain(server, 1.0) == [TaskMessage(7, b"legit")]
    stats = server.stats()
    assert stats["messages_received"] == 1 and stats["frames_received"] == 1
    assert "without the topology's CURVE key" in caplog.text


def test_zmq_client_with_the_wrong_key_counts_its_failed_handshakes(
        contexts: Callable[..., Context]) -> None:
    port = free_port()
    server = contexts("zmq", TopologySecrets.generate()).bind(STORM_ID, port)
    client = contexts("zmq", TopologySecrets.generate()).connect(STORM_ID, "127.0.0.1", port)
    assert wait_for(lambda: client.stats()["handshake_failures"] >= 1)
    assert wait_for(lambda: server.stats().get("refused_auth", 0) >= 1)
    assert drain(server, 0.3) == []


def test_zmq_curve_server_refuses_a_plain_worker(contexts: Callable[..., Context]) -> None:
    """A worker whose config lacks curve cannot feed a curve worker (and is told)."""
    port = free_port()
    server = contexts("zmq", TopologySecrets.generate()).bind(STORM_ID, port)
    client = contexts("zmq", None, on=False).connect(STORM_ID, "127.0.0.1", port)
    assert wait_for(lambda: server.stats().get("refused_auth", 0) >= 1)
    assert wait_for(lambda: client.stats()["handshake_failures"] >= 1)


def tcp_intruder_plain(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    for frame in evil_frames():
        sock.sendall(length_prefix(len(frame)) + frame)
    return sock


def tcp_intruder_wrong_key(port: int) -> socket.socket:
    """Runs the handshake with a wrong key, ignores that the server's proof does not
    check out, answers with garbage and then sends well-formed frames anyway."""
    sock = socket.create_connection(("127.0.0.1", port))
    handshake = ClientHandshake(b"w" * 32, STORM_ID)
    sock.sendall(handshake.hello())
    challenge = b""
    sock.settimeout(5)
    while len(challenge) < CHALLENGE_SIZE:
        challenge += sock.recv(CHALLENGE_SIZE - len(challenge))
    with pytest.raises(AuthError):
        handshake.answer(challenge)
    try:
        sock.sendall(b"\x00" * RESPONSE_SIZE)
        for frame in evil_frames():
            sock.sendall(length_prefix(len(frame)) + frame)
    except OSError:
        pass  # the server already hung up on us
    return sock


@pytest.mark.parametrize("intruder", [tcp_intruder_plain, tcp_intruder_wrong_key])
def test_tcp_peer_without_the_key_gets_nothing_through_and_is_counted(
        intruder: Callable[[int], socket.socket], contexts: Callable[..., Context],
        caplog: pytest.LogCaptureFixture) -> None:
    secrets = TopologySecrets.generate()
    port = free_port()
    server = contexts("tcp", secrets).bind(STORM_ID, port)
    caplog.set_level(logging.WARNING, logger="storm_zmq.messaging.tcp")
    sock = intruder(port)
    try:
        assert drain(server, 0.5) == []
        assert server.stats().get("refused_auth") == 1
        assert server.stats()["frames_received"] == 0
    finally:
        sock.close()
    client = contexts("tcp", secrets).connect(STORM_ID, "127.0.0.1", port)
    client.send([TaskMessage(7, b"legit")])
    assert drain(server, 0.5) == [TaskMessage(7, b"legit")]
    assert "tcp server on port" in caplog.text and "dropped a peer" in caplog.text


def test_tcp_stalled_handshake_is_cut_off_in_bounded_time(
        contexts: Callable[..., Context], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tcp_transport, "HANDSHAKE_TIMEOUT", 0.3)
    port = free_port()
    server = contexts("tcp", TopologySecrets.generate()).bind(STORM_ID, port)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(MAGIC)  # a third of a hello, then nothing
        assert drain(server, 1.0) == []
        assert server.stats().get("refused_auth") == 1
        sock.settimeout(2)
        assert sock.recv(1) == b"", "the server closed the connection"


def test_tcp_client_refuses_a_server_without_the_key(
        contexts: Callable[..., Context]) -> None:
    port = free_port()
    server = contexts("tcp", TopologySecrets.generate()).bind(STORM_ID, port)
    client = contexts("tcp", TopologySecrets.generate(), **{"send.timeout.ms": 500}).connect(
        STORM_ID, "127.0.0.1", port)
    with pytest.raises(TransportError):
        client.send([TaskMessage(1, b"secret data")])
    assert client.stats()["handshake_failures"] >= 1
    assert drain(server, 0.2) == []
    assert server.stats().get("refused_auth", 0) >= 1


# ---------------------------------------------------------------- reconnects


@pytest.mark.parametrize("transport", ["zmq", "tcp"])
@pytest.mark.parametrize("authenticated", [False, True])
def test_client_counts_reconnects(transport: str, authenticated: bool,
                                  contexts: Callable[..., Context]) -> None:
    secrets = TopologySecrets.generate()
    port = free_port()
    server_context = contexts(transport, secrets, on=authenticated)
    client = contexts(transport, secrets, on=authenticated,
                      min_wait_ms=20, max_wait_ms=50).connect(STORM_ID, "127.0.0.1", port)
    server = server_context.bind(STORM_ID, port)
    client.send([TaskMessage(1, b"first")])
    assert drain(server, 0.5) == [TaskMessage(1, b"first")]
    assert client.stats()["reconnects"] == 0
    server.close()
    server = server_context.bind(STORM_ID, port)
    got: list[TaskMessage] = []

    def resend() -> bool:
        # tcp reconnects on the next send; zmq on its own, but a frame sent before it
        # noticed the old connection's end is lost with it: send until one arrives.
        if not got:
            client.send([TaskMessage(2, b"again")])
        got.extend(server.recv(timeout=0.1))
        return bool(got) and client.stats()["reconnects"] >= 1

    assert wait_for(resend), client.stats()
    assert client.stats()["reconnects"] == 1


def test_zmq_client_without_curve_blames_a_peer_gone_mid_handshake_not_curve(
        contexts: Callable[..., Context], caplog: pytest.LogCaptureFixture) -> None:
    # A stopped or dying peer closing the connection during the handshake used to be
    # logged as "is curve on at both ends?" with curve off everywhere.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.settimeout(10)
    caplog.set_level(logging.WARNING, logger="storm_zmq.messaging.zmq")
    client = contexts("zmq", None, on=False).connect(STORM_ID, "127.0.0.1", port)
    try:
        peer, _ = listener.accept()
        peer.recv(10)  # the start of the client's greeting, then the peer goes away
        peer.close()
        assert wait_for(lambda: client.stats()["handshake_failures"] >= 1), client.stats()
    finally:
        listener.close()
    assert "the peer closed it during the handshake" in caplog.text
    assert "curve" not in caplog.text
