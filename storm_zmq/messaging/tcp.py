"""The plain TCP transport: the same batch frames as `zmq`, length-prefixed on a
stream socket. The honest baseline the zmq transport is measured against, in the
style of Storm's Netty transport.

The server reads in the thread that calls `recv()` (a selector over the listening
socket and every client), so no Python thread competes for the GIL; the kernel's
socket buffers are the pipeline between the two processes. A client connects
lazily and reconnects with bounded exponential backoff
(`storm.messaging.tcp.min_wait_ms` .. `max_wait_ms`).

With `storm.messaging.tcp.authentication`, a connection carries frames only after a
mutual HMAC-SHA256 challenge-response over the topology's secret
(`storm_zmq.messaging.auth`). An authenticating server accepts in a thread of its
own that runs the handshakes (so a client's handshake does not wait for the owner
to call recv(), and the data path stays in the receiving thread): it reads exactly
the handshake's bytes, bounded in time by `auth.HANDSHAKE_TIMEOUT`, hands
authenticated sockets over, and counts a peer that fails as ``refused_auth``. The
traffic itself is not encrypted (zmq with CURVE is).
"""

from __future__ import annotations

import errno
import logging
import queue
import selectors
import socket
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from storm_zmq.messaging.auth import (
    ACCEPT,
    CHALLENGE_SIZE,
    HANDSHAKE_TIMEOUT,
    AuthError,
    ClientHandshake,
    ServerHandshake,
)
from storm_zmq.messaging.base import Connection, SendTimeout, TaskMessage, TransportError
from storm_zmq.messaging.base import Context as _Context
from storm_zmq.messaging.counters import RefusalLog, ServerCounters
from storm_zmq.messaging.settings import LinkSettings
from storm_zmq.messaging.stream import FrameReader, length_prefix
from storm_zmq.messaging.wire import (
    BatchEncoder,
    Frame,
    FrameError,
    FrameParts,
    check_messages,
    decode_frame,
    max_payload_size,
)

log = logging.getLogger(__name__)

PREFIX = "storm.messaging.tcp."
#: How long a failed accept (out of descriptors, say) holds the accepting thread.
ACCEPT_RETRY_PAUSE = 0.05
#: Connections a peer closes in a row while one frame is written before the sender
#: says so and backs off between attempts (`_Client._frame_refused`).
FRAME_REFUSED_AFTER = 3
#: The least time a client's handshake gets, whatever is left of its send's deadline.
MIN_HANDSHAKE_SECONDS = 0.5
#: A connection idle this long is checked for a peer that went away before the
#: next write, so a restarted server does not swallow the first frame.
IDLE_CHECK_SECONDS = 0.05


class Context(_Context):
    """`storm.messaging.transport: storm_zmq.messaging.tcp.Context`."""

    def __init__(self) -> None:
        self._connections: set[Connection] = set()
        self.authentication = False
        self._secrets: Any = None

    def prepare(self, conf: dict[str, Any]) -> None:
        from storm_zmq.config import DEFAULTS

        def get(key: str) -> Any:
            return conf.get(PREFIX + key, DEFAULTS[PREFIX + key])

        self.link = LinkSettings.from_conf(conf, PREFIX)
        self.max_message_size = max_payload_size(self.link.max_frame_size)
        self.max_message_setting = PREFIX + "max.frame.size"
        self.buffer_size = get("buffer_size")
        self.connect_timeout = get("connect.timeout.ms") / 1000
        self.authentication = bool(get("authentication"))
        self.auth_setting = PREFIX + "authentication" if self.authentication else None

    def use_secrets(self, secrets: Any) -> None:
        self._secrets = secrets

    def _hmac_key(self) -> bytes | None:
        """The key to authenticate with, None when authentication is off."""
        if not self.authentication:
            return None
        if self._secrets is None:
            raise TransportError(f"{PREFIX}authentication is on but the context has no "
                                 "topology secrets (give them to load_context)")
        return self._secrets.hmac_key

    def bind(self, storm_id: str, port: int) -> Connection:
        key = self._hmac_key()
        try:
            listener = socket.create_server(("", port), backlog=128)
        except OSError as exc:
            raise TransportError(f"cannot bind port {port}: {exc.strerror}") from None
        server = _Server(self, listener, port, storm_id, key)
        self._connections.add(server)
        return server

    def connect(self, storm_id: str, host: str, port: int) -> Connection:
        client = _Client(self, host, port, storm_id, self._hmac_key())
        self._connections.add(client)
        return client

    def term(self) -> None:
        for connection in list(self._connections):
            connection.close()

    def _forget(self, connection: Connection) -> None:
        self._connections.discard(connection)

    def _tune(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.buffer_size:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.buffer_size)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.buffer_size)
        probes = self.link.keepalive_probes()
        if probes is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if hasattr(socket, "TCP_KEEPIDLE"):  # Linux; elsewhere the OS's timing
                idle, interval, count = probes
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, idle)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, interval)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, count)
            unacked = self.link.unacked_timeout_ms()
            if unacked is not None and hasattr(socket, "TCP_USER_TIMEOUT"):  # Linux
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, unacked)


class _Handshaking:
    """An accepted connection that has not authenticated yet."""

    def __init__(self, handshake: ServerHandshake, deadline: float) -> None:
        self.handshake = handshake
        self.deadline = deadline
        self.buffer = b""


#: Selector data of the wake-up socket an authenticator pokes.
_WAKE = object()


class _Authenticator(threading.Thread):
    """Accepts and authenticates connections for an authenticating server, so that a
    client's handshake completes whether or not the server's owner is in recv() at
    that moment (as libzmq's I/O thread does it for zmq). Mostly blocked in select:
    it costs the data path nothing. Authenticated sockets go to `ready`, and a byte
    on `wake` tells the receiving thread to take them."""

    def __init__(self, server: _Server, listener: socket.socket, key: bytes, storm_id: str,
                 port: int) -> None:
        super().__init__(name=f"tcp-auth-{port}", daemon=True)
        self._server = server
        self._listener = listener
        self._key = key
        self._storm_id = storm_id
        self._pending: dict[socket.socket, _Handshaking] = {}
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ, None)
        self._stop_r, self._stop_w = socket.socketpair()
        self._selector.register(self._stop_r, selectors.EVENT_READ, _WAKE)
        self.ready: queue.SimpleQueue[socket.socket] = queue.SimpleQueue()
        self.wake_r, self._wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    def run(self) -> None:
        try:
            while True:
                timeout = HANDSHAKE_TIMEOUT / 4 if self._pending else None
                for key, _ in self._selector.select(timeout):
                    if key.data is _WAKE:
                        return
                    if key.data is None:
                        self._accept()
                    else:
                        self._step(key.fileobj, key.data)  # type: ignore[arg-type]
                if self._pending:
                    self._expire()
        finally:
            for sock in self._pending:
                sock.close()
            self._selector.close()

    def stop(self) -> None:
        try:
            self._stop_w.send(b"x")
        except OSError:
            pass
        self.join(timeout=5)
        for sock in (self._stop_r, self._stop_w, self._wake_w):
            sock.close()
        while not self.ready.empty():
            self.ready.get().close()

    def _accept(self) -> None:
        sock = self._server._accept_one()
        if sock is None:
            if self._server.accept_failed:
                # The connection stays in the backlog and the listener readable:
                # without a pause this loop would spin on it at full CPU until a
                # descriptor frees up (this thread carries no data: it may sleep).
                time.sleep(ACCEPT_RETRY_PAUSE)
            return
        pending = _Handshaking(ServerHandshake(self._key, self._storm_id),
                               time.monotonic() + HANDSHAKE_TIMEOUT)
        self._pending[sock] = pending
        self._selector.register(sock, selectors.EVENT_READ, pending)

    def _step(self, sock: socket.socket, pending: _Handshaking) -> None:
        """Read at most what the handshake's current step needs (frame bytes stay in
        the socket), answer, and hand the socket over once the peer proved the key."""
        handshake = pending.handshake
        try:
            data = sock.recv(handshake.need - len(pending.buffer))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._refuse(sock, "its connection: closed during the authentication handshake")
            return
        pending.buffer += data
        if len(pending.buffer) < handshake.need:
            return
        try:
            reply = handshake.feed(pending.buffer)
            pending.buffer = b""
            if sock.send(reply) != len(reply):
                raise AuthError("could not send the handshake reply at once")
        except AuthError as exc:
            self._refuse(sock, f"a peer that failed authentication: {exc}")
            return
        except OSError as exc:
            self._refuse(sock, f"a peer that left during authentication: {exc}")
            return
        if handshake.done:
            del self._pending[sock]
            self._selector.unregister(sock)
            self.ready.put(sock)
            try:
                self._wake_w.send(b"x")
            except BlockingIOError:
                pass  # the receiver has wake-ups pending already

    def _expire(self) -> None:
        now = time.monotonic()
        for sock, pending in list(self._pending.items()):
            if now >= pending.deadline:
                self._refuse(sock, f"a peer that did not authenticate within "
                                   f"{HANDSHAKE_TIMEOUT:g} s")

    def _refuse(self, sock: socket.socket, detail: str) -> None:
        self._server.refused.record("auth", detail)
        self._server.counters.disconnects += 1
        self._pending.pop(sock, None)
        self._selector.unregister(sock)
        sock.close()


class _Server(Connection):
    def __init__(self, context: Context, listener: socket.socket, port: int, storm_id: str,
                 key: bytes | None) -> None:
        self._context = context
        self._listener = listener
        self._max_frame_size = context.link.max_frame_size
        listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self.refused = RefusalLog(log, f"tcp server on port {port}")
        self.counters = ServerCounters(self.refused)
        self._closed = False
        self.accept_failed = False  # the last accept failed (out of descriptors, say)
        self._listener_back_at: float | None = None  # paused after one: `_accept`
        self._authenticator: _Authenticator | None = None
        if key is None:
            self._selector.register(listener, selectors.EVENT_READ, None)
        else:
            self._authenticator = _Authenticator(self, listener, key, storm_id, port)
            self._selector.register(self._authenticator.wake_r, selectors.EVENT_READ, _WAKE)
            self._authenticator.start()

    def recv(self, timeout: float | None = None) -> list[TaskMessage]:
        deadline = None if timeout is None else time.monotonic() + timeout
        messages: list[TaskMessage] = []
        while True:
            now = time.monotonic()
            remaining = None if deadline is None else max(0.0, deadline - now)
            paused = self._resume_accepting(now)
            if paused is not None:
                remaining = paused if remaining is None else min(remaining, paused)
            for key, _ in self._selector.select(remaining):
                if key.data is None:
                    self._accept()
                elif key.data is _WAKE:
                    self._take_authenticated()
                else:
                    self._read(key.fileobj, key.data, messages)  # type: ignore[arg-type]
            if messages:
                self.counters.messages += len(messages)
                return messages
            if deadline is not None and time.monotonic() >= deadline:
                return messages

    def _accept_one(self) -> socket.socket | None:
        try:
            sock, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:  # e.g. EMFILE: keep serving the peers we have
            self.refused.record("accept", f"connection not accepted: {exc.strerror}")
            self.accept_failed = True  # the caller pauses: the listener stays readable
            return None
        self.accept_failed = False
        sock.setblocking(False)
        try:
            self._context._tune(sock)
        except OSError as exc:  # an option this OS refuses: close it, keep serving
            sock.close()
            self.refused.record("accept", f"connection not accepted: socket options "
                                f"refused ({exc.strerror})")
            return None
        self.counters.accepted += 1
        return sock

    def _accept(self) -> None:
        sock = self._accept_one()
        if sock is not None:
            self._selector.register(sock, selectors.EVENT_READ, FrameReader(self._max_frame_size))
        elif self.accept_failed:
            # The connection stays in the backlog and the listener readable: the
            # listener leaves the selector for ACCEPT_RETRY_PAUSE rather than this
            # thread sleeping that long, which held every peer's frames (a data-plane
            # audit: p99 3 ms -> 99 ms while out of descriptors)
            self._selector.unregister(self._listener)
            self._listener_back_at = time.monotonic() + ACCEPT_RETRY_PAUSE

    def _resume_accepting(self, now: float) -> float | None:
        """Put a paused listener back once its pause is over; the seconds left of it
        otherwise (None: not paused)."""
        back_at = self._listener_back_at
        if back_at is None:
            return None
        if now < back_at:
            return back_at - now
        self._listener_back_at = None
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        return None

    def _take_authenticated(self) -> None:
        assert self._authenticator is not None
        try:
            while self._authenticator.wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        ready = self._authenticator.ready
        while not ready.empty():
            sock = ready.get()
            self._selector.register(sock, selectors.EVENT_READ, FrameReader(self._max_frame_size))

    def _read(self, sock: socket.socket, reader: FrameReader, out: list[TaskMessage]) -> None:
        try:
            count = sock.recv_into(reader.writable())
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            count = 0  # reset by peer: same as end of stream
        if count == 0:
            if reader.pending:
                self.refused.record("truncated", f"{reader.pending} bytes of an unfinished frame")
            self._drop(sock)
            return
        reader.wrote(count)
        self.counters.bytes += count
        try:
            for frame in reader.frames():
                self.counters.frames += 1
                try:
                    out += decode_frame(frame, self._max_frame_size)
                except FrameError as exc:
                    self.refused.record(exc.kind, str(exc))
        except FrameError as exc:  # a bad length prefix: the stream cannot be resynced
            self.refused.record(exc.kind, f"{exc}; connection closed")
            self._drop(sock)

    def _drop(self, sock: socket.socket) -> None:
        self.counters.disconnects += 1
        self._selector.unregister(sock)
        sock.close()

    def stats(self) -> dict[str, int]:
        return self.counters.snapshot()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._authenticator is not None:
            self._authenticator.stop()  # before the listener it selects on is closed
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._listener.close()
        self._selector.close()
        self._context._forget(self)


class _WriteTimeout(Exception):
    def __init__(self, written: int) -> None:
        self.written = written


@dataclass
class _PartialFrame:
    """A frame a send timed out in the middle of: its messages (handed back to the
    caller as unsent), the frame with its length prefix, and how much is written."""

    messages: tuple[TaskMessage, ...]
    data: bytes
    written: int


class _Client(Connection):
    def __init__(self, context: Context, host: str, port: int, storm_id: str,
                 key: bytes | None) -> None:
        self._context = context
        self._storm_id = storm_id
        self._key = key
        self._link = context.link
        # scattering: large payloads go to the kernel as they are (one vectored write)
        self._encoder = BatchEncoder(context.link.batch_size, context.link.max_frame_size,
                                     scatter=True)
        self._address = (host, port)
        self._peer = f"{host}:{port}"
        self._sock: socket.socket | None = None
        self._attempt = 0
        self._next_attempt_at = 0.0
        self._last_write_at = 0.0
        self._ever_connected = False
        self._closed = False
        self._frames = self._messages = self._bytes = 0
        self._timeouts = self._reconnects = self._connect_failures = 0
        self._auth_failures = 0
        self._refused = RefusalLog(log, f"tcp client to {self._peer}")
        self._partial: _PartialFrame | None = None
        self._said_frame_refused = False  # `_frame_refused`, said once

    def send(self, messages: Iterable[TaskMessage]) -> None:
        if self._closed:
            raise TransportError(f"send on a closed connection to {self._peer}")
        msgs = messages if isinstance(messages, list) else list(messages)
        deadline = self._link.send_deadline()
        done = 0  # leading messages of msgs that are on the wire
        if self._partial is not None:
            if self._retries_partial(msgs):
                check_messages(msgs)  # a batch refused for a bad message sends nothing
                done = self._finish_partial(msgs, deadline)
            else:
                self._disconnect()  # the peer discards the truncated frame
        frames = self._encoder.encode(msgs[done:] if done else msgs)
        try:
            for frame, count in frames:
                prefix = length_prefix(len(frame))
                closed_on_it = 0  # connections the peer closed while this frame was written
                while True:
                    try:
                        self._write(self._connected(deadline), prefix, frame, deadline)
                        break
                    except _WriteTimeout as exc:
                        if exc.written:
                            # Part of the frame is on the wire: keep it, so that the
                            # retry of what we hand back finishes this frame rather
                            # than spoiling the stream (and the connection) for it.
                            self._partial = _PartialFrame(
                                tuple(msgs[done : done + count]), prefix + bytes(frame),
                                exc.written)
                        raise self._timed_out(msgs[done:]) from None
                    except OSError:
                        # The peer went away; the frame was not completely written, so
                        # the peer dropped it as truncated: send it whole on a new
                        # connection.
                        self._disconnect()
                        closed_on_it += 1
                        if closed_on_it >= FRAME_REFUSED_AFTER:
                            self._frame_refused(len(frame), closed_on_it)
                self._sent(count, len(frame) + len(prefix))
                done += count
        finally:
            frames.close()  # type: ignore[attr-defined]

    def _frame_refused(self, size: int, times: int) -> None:
        """The peer closed the connection each time this frame was written: a peer
        whose max.frame.size is lower (another host's storm.yaml) refuses it for
        ever, and the frames behind it with it. Said once; the next attempt waits
        its backoff, as after a failed connect (a data-plane audit: 3,013 reconnects
        in 30 s, 1.3 GB written, and not a word)."""
        if not self._said_frame_refused:
            self._said_frame_refused = True
            log.warning(
                "tcp client to %s: the peer closed the connection %d times while a frame of "
                "%d bytes was written: if its storm.messaging.tcp.max.frame.size is lower "
                "than this worker's (%d), it refuses that frame for ever, and what follows "
                "it; every worker of a topology must have the same", self._peer, times,
                size, self._link.max_frame_size)
        self._next_attempt_at = time.monotonic() + self._link.backoff(times)

    def _retries_partial(self, msgs: list[TaskMessage]) -> bool:
        """Whether `msgs` starts with the messages of the frame a timed-out send left
        half written (the caller retries what it was handed back), on a connection
        whose peer is still there (a restarted peer would take the tail as a frame)."""
        partial = self._partial
        assert partial is not None and self._sock is not None
        count = len(partial.messages)
        starts_with_them = len(msgs) >= count and all(
            a is b for a, b in zip(msgs, partial.messages))  # msgs may go on
        return starts_with_them and not _peer_closed(self._sock)

    def _finish_partial(self, msgs: list[TaskMessage], deadline: float | None) -> int:
        """Write the rest of the half-written frame, whose messages start `msgs`;
        how many messages that delivered, or 0 when the connection broke meanwhile
        (the peer dropped the truncated frame: everything goes again, afresh)."""
        partial = self._partial
        assert partial is not None and self._sock is not None
        rest = memoryview(partial.data)[partial.written :]
        try:
            self._write(self._sock, b"", rest, deadline)
        except _WriteTimeout as exc:
            partial.written += exc.written
            raise self._timed_out(msgs) from None
        except OSError:
            self._disconnect()
            return 0
        self._partial = None
        self._sent(len(partial.messages), len(partial.data))
        return len(partial.messages)

    def _timed_out(self, unsent: list[TaskMessage]) -> SendTimeout:
        self._timeouts += 1
        return SendTimeout(f"peer {self._peer} took no frame within {self._link.send_timeout} s",
                           unsent=unsent)

    def _sent(self, messages: int, size: int) -> None:
        self._frames += 1
        self._messages += messages
        self._bytes += size
        self._last_write_at = time.monotonic()

    def _tuned(self, sock: socket.socket) -> bool:
        """Set the connection's options; False (said, rate-limited) if the OS refuses
        one. The attempt then counts as failed and backs off: a send that took the
        error for a lost peer retried at once, leaving a socket behind each time."""
        try:
            self._context._tune(sock)
        except OSError as exc:
            self._refused.record("tune", f"its connection: socket options refused ({exc.strerror})")
            return False
        return True

    def _connected(self, deadline: float | None) -> socket.socket:
        sock = self._sock
        if sock is not None:
            if time.monotonic() - self._last_write_at > IDLE_CHECK_SECONDS and _peer_closed(sock):
                self._disconnect()
            else:
                return sock
        while True:
            now = time.monotonic()
            wait = self._next_attempt_at - now
            # a wait for the next attempt that outlasts the send is not made (an
            # attempt that needs no wait is, even late: send.timeout.ms 0 must send)
            if deadline is not None and wait > 0 and now + wait >= deadline:
                time.sleep(max(0.0, deadline - now))
                raise _WriteTimeout(0)
            if wait > 0:
                time.sleep(wait)
            try:
                sock = socket.create_connection(self._address, timeout=self._context.connect_timeout)
            except OSError:
                self._connect_failures += 1
                self._next_attempt_at = time.monotonic() + self._link.backoff(self._attempt)
                self._attempt += 1
                continue
            if not self._tuned(sock) or (
                    self._key is not None and not self._authenticate(sock, deadline)):
                sock.close()
                self._connect_failures += 1
                self._next_attempt_at = time.monotonic() + self._link.backoff(self._attempt)
                self._attempt += 1
                continue
            # Blocking, with the kernel's SO_SNDTIMEO as the bound: a Python socket
            # timeout polls before every send, a second system call per frame.
            sock.settimeout(None)
            _set_send_timeout(sock, self._link.send_timeout)
            self._attempt = 0
            if self._ever_connected:
                self._reconnects += 1
            self._ever_connected = True
            self._sock = sock
            return sock

    def _authenticate(self, sock: socket.socket, deadline: float | None) -> bool:
        """Run the client side of the handshake, bounded by `HANDSHAKE_TIMEOUT` and
        the send's deadline, but given at least `MIN_HANDSHAKE_SECONDS`: cut to a
        deadline already passed (send.timeout.ms 0), it could never succeed; left
        unbounded by it, a peer that accepts and never answers would hold a sender
        that must not wait (the backpressure thread) for seconds. False (counted
        and logged) when it fails."""
        now = time.monotonic()
        limit = now + HANDSHAKE_TIMEOUT
        if deadline is not None:
            limit = min(limit, max(deadline, now + MIN_HANDSHAKE_SECONDS))
        handshake = ClientHandshake(self._key, self._storm_id)  # type: ignore[arg-type]
        try:
            sock.settimeout(max(0.001, limit - time.monotonic()))
            sock.sendall(handshake.hello())
            response = handshake.answer(_recv_exact(sock, CHALLENGE_SIZE, limit))
            sock.sendall(response)
            handshake.accepted(_recv_exact(sock, len(ACCEPT), limit))
            return True
        except (AuthError, OSError) as exc:
            self._auth_failures += 1
            self._refused.record("auth", f"its connection: authentication failed ({exc})")
            return False

    def _write(
        self, sock: socket.socket, prefix: bytes, frame: Frame, deadline: float | None
    ) -> None:
        total = len(prefix) + len(frame)
        bounded = False  # SO_SNDTIMEO lowered to the time left of `deadline`
        try:
            # earlier frames, a reconnect or a finished partial frame used some of
            # the send's time (a system call only then)
            remaining = self._link.shortened_timeout(deadline)
            if remaining is not None:
                if remaining <= 0:
                    raise _WriteTimeout(0)
                _set_send_timeout(sock, remaining)
                bounded = True
            try:
                if type(frame) is FrameParts:
                    written = sock.sendmsg([prefix, *frame.buffers])
                else:
                    written = sock.sendmsg((prefix, frame))
            except BlockingIOError:  # SO_SNDTIMEO passed with nothing written
                raise _WriteTimeout(0) from None
            if written < total:  # a partial write: go on from one buffer, without copies
                rest = memoryview(bytes(frame) if type(frame) is FrameParts else frame)
            while written < total:  # a partial write: the kernel buffer is full
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise _WriteTimeout(written)
                    _set_send_timeout(sock, remaining)
                    bounded = True
                try:
                    if written < len(prefix):
                        written += sock.send(prefix[written:])
                    else:
                        written += sock.send(rest[written - len(prefix) :])
                except BlockingIOError:
                    raise _WriteTimeout(written) from None
        finally:
            if bounded:
                _set_send_timeout(sock, self._link.send_timeout)

    def _disconnect(self) -> None:
        self._partial = None  # a half-written frame dies with its connection
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def stats(self) -> dict[str, int]:
        return {
            "frames_sent": self._frames,
            "messages_sent": self._messages,
            "bytes_sent": self._bytes,
            "send_timeouts": self._timeouts,
            "reconnects": self._reconnects,
            "connect_failures": self._connect_failures,
            "handshake_failures": self._auth_failures,
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._disconnect()
        self._context._forget(self)


def _recv_exact(sock: socket.socket, size: int, limit: float) -> bytes:
    """Exactly `size` bytes from a blocking socket before the monotonic `limit`."""
    data = b""
    while len(data) < size:
        remaining = limit - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the authentication handshake timed out")
        sock.settimeout(remaining)
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise AuthError("the server closed the connection during authentication")
        data += chunk
    return data


def _set_send_timeout(sock: socket.socket, seconds: float | None) -> None:
    """Bound a blocking socket's sends in the kernel (SO_SNDTIMEO; 0 = for ever):
    a send that passes it returns what it wrote, or fails with EAGAIN."""
    if seconds is None:
        seconds = 0.0
    else:
        seconds = max(seconds, 0.001)  # 0 would mean for ever
    whole = int(seconds)
    sock.setsockopt(
        socket.SOL_SOCKET, socket.SO_SNDTIMEO,
        struct.pack("@ll", whole, int((seconds - whole) * 1_000_000)))


def _peer_closed(sock: socket.socket) -> bool:
    """Whether the peer closed or reset the connection. The server never writes,
    so anything readable on a client socket means end of stream."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError as exc:
        return exc.errno != errno.EAGAIN
