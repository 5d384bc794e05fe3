"""The brokerless ZeroMQ transport: one PULL bound per worker on its slot port,
one PUSH per peer worker, one ZeroMQ message per batch frame.

Bounded by design: high-water marks count frames (`storm.messaging.zmq.hwm`),
`IMMEDIATE` keeps frames out of the queue of a peer that is not connected (so a
send blocks instead of filling a dead pipe), `MAXMSGSIZE` refuses oversized frames
before they are allocated, and a finite `LINGER` keeps close and term prompt.

With `storm.messaging.zmq.curve` every socket speaks CURVE with the topology's one
key pair (`storm_zmq.messaging.auth.TopologySecrets`): servers use its secret key,
clients its key pair and the same public key as the server key, and a ZAP handler
(`_ZapHandler`, a thread per context) admits only clients whose public key is the
topology's, and servers enforce ZAP (no handler: no connection). The handshake happens inside libzmq, so a refused peer is
seen through the server's socket monitor and counted as ``refused_auth``.
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import zmq
from zmq.utils.monitor import parse_monitor_message

from storm_zmq.messaging.base import Connection, SendTimeout, TaskMessage, TransportError
from storm_zmq.messaging.base import Context as _Context
from storm_zmq.messaging.counters import RefusalLog, ServerCounters
from storm_zmq.messaging.settings import LinkSettings
from storm_zmq.messaging.wire import BatchEncoder, FrameError, decode_frame, max_payload_size

log = logging.getLogger(__name__)

PREFIX = "storm.messaging.zmq."
#: What one recv() call drains at most: enough frames to amortize the call over
#: small frames, few enough messages that a batch dies young (a long-lived batch of
#: TaskMessages makes the garbage collector's passes long; docs/benchmarks.md).
MAX_FRAMES_PER_RECV = 64
MAX_MESSAGES_PER_RECV = 2048
#: How long bind() waits for a port that a socket closed a moment ago still holds.
BIND_RETRY_SECONDS = 1.0
_HANDSHAKE_FAILURES = (
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)
_MONITORED = _HANDSHAKE_FAILURES | zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED
_CLIENT_MONITORED = _HANDSHAKE_FAILURES | zmq.EVENT_HANDSHAKE_SUCCEEDED


ZAP_ENDPOINT = "inproc://zeromq.zap.01"  # RFC 27: where libzmq asks
ZAP_DOMAIN = b"storm-zmq"


class _ZapHandler(threading.Thread):
    """The context's ZAP handler (RFC 27): admits a CURVE client only if its public
    key is the topology's, refuses everything else.

    Written here rather than using pyzmq's `ThreadAuthenticator`, whose asyncio loop
    over a plain socket handled one request per wake-up and left concurrent
    handshakes waiting (seen as stalled connections under load). This one polls
    level-triggered and answers every queued request each time.
    """

    def __init__(self, context: zmq.Context, public_key_z85: bytes) -> None:
        super().__init__(name="zmq-zap", daemon=True)
        from zmq.utils import z85

        self._public_key = z85.decode(public_key_z85)
        # Bound here, before any server socket exists, so no handshake finds no handler.
        self._sock = context.socket(zmq.ROUTER)
        self._sock.linger = 0
        self._sock.bind(ZAP_ENDPOINT)
        endpoint = f"inproc://storm-zap-stop-{id(self)}"
        self._stop_in = context.socket(zmq.PAIR)
        self._stop_in.linger = 0
        self._stop_in.bind(endpoint)
        self._stop_out = context.socket(zmq.PAIR)
        self._stop_out.linger = 0
        self._stop_out.connect(endpoint)
        self.admitted = self.denied = 0

    def run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        poller.register(self._stop_in, zmq.POLLIN)
        try:
            while True:
                events = dict(poller.poll())
                if self._stop_in in events:
                    return
                while True:
                    try:
                        request = self._sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self._answer(request)
        finally:
            self._sock.close()
            self._stop_in.close()

    def _answer(self, request: list[bytes]) -> None:
        # [routing id, b"", version, request id, domain, address, identity, mechanism, *credentials]
        if len(request) < 8 or request[1] != b"":
            return  # not a ZAP request: nothing sensible to answer
        routing, _, version, request_id, _domain, _address, _identity, mechanism = request[:8]
        credentials = request[8:]
        admit = (version == b"1.0" and mechanism == b"CURVE" and len(credentials) == 1
                 and hmac.compare_digest(credentials[0], self._public_key))
        if admit:
            self.admitted += 1
            status, text = b"200", b"OK"
        else:
            self.denied += 1
            status, text = b"400", b"not the topology's key"
        self._sock.send_multipart([routing, b"", b"1.0", request_id, status, text, b"", b""])

    def stop(self) -> None:
        self._stop_out.send(b"")
        self.join(timeout=5)
        self._stop_out.close()


class Context(_Context):
    """`storm.messaging.transport: storm_zmq.messaging.zmq.Context`."""

    def __init__(self) -> None:
        self._zmq: zmq.Context | None = None
        self._pid = os.getpid()
        self._connections: set[_ZmqConnection] = set()
        self.curve = False
        self._secrets: Any = None
        self._authenticator: Any = None

    def prepare(self, conf: dict[str, Any]) -> None:
        from storm_zmq.config import DEFAULTS

        def get(key: str) -> Any:
            return conf.get(PREFIX + key, DEFAULTS[PREFIX + key])

        self.link = LinkSettings.from_conf(conf, PREFIX)
        self.max_message_size = max_payload_size(self.link.max_frame_size)
        self.max_message_setting = PREFIX + "max.frame.size"
        self.hwm = get("hwm")
        self.linger_ms = get("linger.millis")
        self.heartbeat_ivl_ms = get("heartbeat.ivl.ms")
        self.heartbeat_timeout_ms = get("heartbeat.timeout.ms")
        self.curve = bool(get("curve"))
        self.auth_setting = PREFIX + "curve" if self.curve else None
        # Created here, after the process started: a zmq context must not cross fork.
        self._pid = os.getpid()
        self._zmq = zmq.Context(io_threads=get("threads"))

    def use_secrets(self, secrets: Any) -> None:
        """Keep the topology's key pair; with CURVE on, start the ZAP handler that
        admits only the topology's public key (before any socket binds: libzmq
        consults ZAP for every CURVE handshake once a handler is there)."""
        self._secrets = secrets
        if self.curve and self._authenticator is None and self._zmq is not None:
            self._authenticator = _ZapHandler(self._zmq, secrets.curve_public)
            self._authenticator.start()

    def _curve_keys(self) -> Any:
        if not self.curve:
            return None
        if self._secrets is None or self._authenticator is None:
            raise TransportError(f"{PREFIX}curve is on but the context has no topology "
                                 "secrets (give them to load_context)")
        return self._secrets

    def bind(self, storm_id: str, port: int) -> Connection:
        keys = self._curve_keys()
        sock = self._socket(zmq.PULL)
        if keys is not None:
            sock.curve_secretkey = keys.curve_secret
            sock.curve_publickey = keys.curve_public
            sock.curve_server = True
            sock.zap_domain = ZAP_DOMAIN
            sock.setsockopt(zmq.ZAP_ENFORCE_DOMAIN, 1)  # no ZAP handler: refuse, not admit
        sock.setsockopt(zmq.RCVHWM, self.hwm)
        # One byte of slack: libzmq refuses messages strictly larger than this.
        sock.setsockopt(zmq.MAXMSGSIZE, self.link.max_frame_size)
        # libzmq releases a closed socket's port in its I/O thread, a moment after
        # close() returns: a server rebinding its port waits that moment out.
        deadline = time.monotonic() + BIND_RETRY_SECONDS
        while True:
            try:
                sock.bind(f"tcp://*:{port}")
                break
            except zmq.ZMQError as exc:
                if exc.errno == zmq.EADDRINUSE and time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
                sock.close(linger=0)
                raise TransportError(f"cannot bind port {port}: {exc.strerror}") from None
        return self._track(_Server(self, sock, port))

    def connect(self, storm_id: str, host: str, port: int) -> Connection:
        keys = self._curve_keys()
        sock = self._socket(zmq.PUSH)
        if keys is not None:
            # Every worker of the topology holds the one key pair: the server's key
            # is ours, and ours is the only client key the peer's ZAP handler admits.
            sock.curve_secretkey = keys.curve_secret
            sock.curve_publickey = keys.curve_public
            sock.curve_serverkey = keys.curve_public
        sock.setsockopt(zmq.SNDHWM, self.hwm)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.setsockopt(zmq.RECONNECT_IVL, int(self.link.min_wait * 1000))
        sock.setsockopt(zmq.RECONNECT_IVL_MAX, int(self.link.max_wait * 1000))
        timeout = self.link.send_timeout
        sock.setsockopt(zmq.SNDTIMEO, -1 if timeout is None else int(timeout * 1000))
        sock.connect(f"tcp://{host}:{port}")
        return self._track(_Client(self, sock, f"{host}:{port}"))

    def term(self) -> None:
        for connection in list(self._connections):
            connection.close()
        if self._authenticator is not None:
            self._authenticator.stop()
            self._authenticator = None
        if self._zmq is not None:
            self._zmq.term()
            self._zmq = None

    def _socket(self, kind: int) -> zmq.Socket:
        if self._zmq is None:
            raise TransportError("zmq transport used before prepare() or after term()")
        if os.getpid() != self._pid:
            raise TransportError("zmq transport context was created in another process")
        sock = self._zmq.socket(kind)
        sock.setsockopt(zmq.LINGER, self.linger_ms)
        if self.heartbeat_ivl_ms:  # off by default: see storm.messaging.zmq.heartbeat.ivl.ms
            sock.setsockopt(zmq.HEARTBEAT_IVL, self.heartbeat_ivl_ms)
            sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, self.heartbeat_timeout_ms)
            sock.setsockopt(zmq.HEARTBEAT_TTL, self.heartbeat_timeout_ms)
        probes = self.link.keepalive_probes()
        if probes is not None:  # for the connections it makes and accepts from now on
            idle, interval, count = probes
            sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
            sock.setsockopt(zmq.TCP_KEEPALIVE_IDLE, idle)
            sock.setsockopt(zmq.TCP_KEEPALIVE_INTVL, interval)
            sock.setsockopt(zmq.TCP_KEEPALIVE_CNT, count)
            unacked = self.link.unacked_timeout_ms()
            if unacked is not None:  # TCP_USER_TIMEOUT (see LinkSettings.unacked_timeout_ms)
                sock.setsockopt(zmq.TCP_MAXRT, unacked)
        return sock

    def _track(self, connection: _ZmqConnection) -> _ZmqConnection:
        self._connections.add(connection)
        return connection

    def _forget(self, connection: _ZmqConnection) -> None:
        self._connections.discard(connection)


class _ZmqConnection(Connection):
    def __init__(self, context: Context, sock: zmq.Socket) -> None:
        self._context = context
        self._sock = sock
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._sock.close()  # bounded by LINGER
        self._context._forget(self)


class _Server(_ZmqConnection):
    def __init__(self, context: Context, sock: zmq.Socket, port: int) -> None:
        super().__init__(context, sock)
        self._max_frame_size = context.link.max_frame_size
        self._monitor = sock.get_monitor_socket(_MONITORED)
        # read by the receive thread (recv) and by whoever asks for stats(): a zmq
        # socket may change threads only with a lock's memory barrier in between
        self._monitor_lock = threading.Lock()
        self._curve = context.curve
        self._poller = zmq.Poller()
        self._poller.register(sock, zmq.POLLIN)
        self._poller.register(self._monitor, zmq.POLLIN)
        self.refused = RefusalLog(log, f"zmq server on port {port}")
        self.counters = ServerCounters(self.refused)

    def recv(self, timeout: float | None = None) -> list[TaskMessage]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._read_monitor()
            messages = self._drain()
            if messages:
                return messages
            if deadline is None:
                self._poller.poll()
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            self._poller.poll(remaining * 1000)

    def _drain(self) -> list[TaskMessage]:
        messages: list[TaskMessage] = []
        recv = self._sock.recv
        for _ in range(MAX_FRAMES_PER_RECV):
            if len(messages) >= MAX_MESSAGES_PER_RECV:
                break
            try:
                frame = recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            self.counters.frames += 1
            self.counters.bytes += len(frame)
            try:
                messages += decode_frame(frame, self._max_frame_size)
            except FrameError as exc:
                self.refused.record(exc.kind, str(exc))
        self.counters.messages += len(messages)
        return messages

    def _read_monitor(self) -> None:
        with self._monitor_lock:
            if self._monitor.closed or not self._monitor.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                return
            events = list(_monitor_events(self._monitor))
        for event in events:
            kind = event["event"]
            if kind & _HANDSHAKE_FAILURES:
                if self._curve:
                    # On a CURVE server every failed handshake is a peer that did not
                    # prove it holds the topology's key; which side notices a NULL
                    # peer's mechanism first is a race (EPIPE here when it was them).
                    self.refused.record(
                        "auth", f"a peer without the topology's CURVE key ({_reason(event)})")
                else:
                    self.refused.record("handshake", f"a connection that does not speak ZMTP "
                                                     f"({_reason(event)})")
            elif kind == zmq.EVENT_ACCEPTED:
                self.counters.accepted += 1
            elif kind == zmq.EVENT_DISCONNECTED:
                # Peers that go away, and peers libzmq cut off for a frame above
                # MAXMSGSIZE (it cannot tell us which).
                self.counters.disconnects += 1

    def stats(self) -> dict[str, int]:
        self._read_monitor()
        return self.counters.snapshot()

    def close(self) -> None:
        with self._monitor_lock:
            if not self._closed:
                self._sock.disable_monitor()
                self._monitor.close(linger=0)
        super().close()


class _Client(_ZmqConnection):
    def __init__(self, context: Context, sock: zmq.Socket, peer: str) -> None:
        super().__init__(context, sock)
        # Connections (ZMTP handshakes) established and refused, for `reconnects`
        # and `auth_failures`: libzmq reconnects on its own, only the monitor sees it.
        self._monitor = sock.get_monitor_socket(_CLIENT_MONITORED)
        # read by whoever asks for stats() (a worker's main thread) while the
        # sending thread may close the connection (a peer moved): one at a time
        self._monitor_lock = threading.Lock()
        self._handshakes = self._auth_failures = 0
        self._refused = RefusalLog(log, f"zmq client to {peer}")
        self._curve = context.curve
        self._link = context.link
        self._encoder = BatchEncoder(context.link.batch_size, context.link.max_frame_size)
        self._peer = peer
        self._frames = self._messages = self._bytes = self._timeouts = 0

    def send(self, messages: Iterable[TaskMessage]) -> None:
        msgs = messages if isinstance(messages, list) else list(messages)
        frames = self._encoder.encode(msgs)
        send = self._sock.send
        link = self._link
        deadline = link.send_deadline()
        bounded = False  # SNDTIMEO lowered to the time left of `deadline`
        sent_messages = 0
        try:
            for frame, count in frames:
                if sent_messages:
                    remaining = link.shortened_timeout(deadline)
                    if remaining is not None:
                        self._sock.setsockopt(zmq.SNDTIMEO, max(0, int(remaining * 1000)))
                        bounded = True
                try:
                    send(frame, copy=True)  # copied: the encoder reuses its buffer
                except zmq.Again:
                    self._timeouts += 1
                    raise SendTimeout(
                        f"peer {self._peer} took no frame within {self._link.send_timeout} s",
                        unsent=msgs[sent_messages:],
                    ) from None
                sent_messages += count
                self._frames += 1
                self._bytes += len(frame)
        finally:
            frames.close()  # type: ignore[attr-defined]
            self._messages += sent_messages
            if bounded:
                self._sock.setsockopt(zmq.SNDTIMEO, int(link.send_timeout * 1000))  # type: ignore[operator]

    def _read_monitor(self) -> None:
        with self._monitor_lock:
            if self._monitor.closed:
                return
            events = list(_monitor_events(self._monitor))
        for event in events:
            if event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self._handshakes += 1
            elif event["event"] & _HANDSHAKE_FAILURES:
                self._auth_failures += 1
                if self._curve or event["event"] != zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
                    why = f"handshake failed ({_reason(event)}); is curve on at both ends?"
                else:  # no mechanism to disagree on: the peer went away mid-handshake
                    why = (f"the peer closed it during the handshake ({_reason(event)}): "
                           "stopped, or restarting?")
                self._refused.record("handshake", f"its connection: {why}")

    def stats(self) -> dict[str, int]:
        self._read_monitor()
        return {
            "frames_sent": self._frames,
            "messages_sent": self._messages,
            "bytes_sent": self._bytes,
            "send_timeouts": self._timeouts,
            "reconnects": max(0, self._handshakes - 1),
            "handshake_failures": self._auth_failures,
        }

    def close(self) -> None:
        with self._monitor_lock:
            if not self._closed:
                self._sock.disable_monitor()
                self._monitor.close(linger=0)
        super().close()


def _monitor_events(monitor: zmq.Socket) -> Iterator[dict[str, Any]]:
    """The events waiting on a monitor socket, without blocking."""
    while True:
        try:
            yield parse_monitor_message(monitor.recv_multipart(zmq.NOBLOCK))
        except zmq.Again:
            return


def _reason(event: dict[str, Any]) -> str:
    """A monitor event's failure in words (libzmq's ZAP status or protocol error)."""
    if event["event"] == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
        return f"ZAP status {event['value']}"
    if event["event"] == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        return f"errno {event['value']}"
    names = {getattr(zmq, n): n for n in dir(zmq) if n.startswith("PROTOCOL_ERROR_")}
    return names.get(event["value"], f"error {event['value']}").removeprefix("PROTOCOL_ERROR_")
