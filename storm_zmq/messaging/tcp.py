"""The plain TCP transport: the same batch frames as `zmq`, length-prefixed on a
stream socket. The honest baseline the zmq transport is measured against, in the
style of Storm's Netty transport.

The server reads in the thread that calls `recv()` (a selector over the listening
socket and every client), so no Python thread competes for the GIL; the kernel's
socket buffers are the pipeline between the two processes. A client connects
lazily and reconnects with bounded exponential backoff
(`storm.messaging.tcp.min_wait_ms` .. `max_wait_ms`).
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import time
from collections.abc import Iterable
from typing import Any

from storm_zmq.messaging.base import Connection, SendTimeout, TaskMessage, TransportError
from storm_zmq.messaging.base import Context as _Context
from storm_zmq.messaging.counters import RefusalLog, ServerCounters
from storm_zmq.messaging.settings import LinkSettings
from storm_zmq.messaging.stream import FrameReader, length_prefix
from storm_zmq.messaging.wire import BatchEncoder, FrameError, decode_frame

log = logging.getLogger(__name__)

PREFIX = "storm.messaging.tcp."
#: A connection idle this long is checked for a peer that went away before the
#: next write, so a restarted server does not swallow the first frame.
IDLE_CHECK_SECONDS = 0.05


class Context(_Context):
    """`storm.messaging.transport: storm_zmq.messaging.tcp.Context`."""

    def __init__(self) -> None:
        self._connections: set[Connection] = set()

    def prepare(self, conf: dict[str, Any]) -> None:
        from storm_zmq.config import DEFAULTS

        def get(key: str) -> Any:
            return conf.get(PREFIX + key, DEFAULTS[PREFIX + key])

        self.link = LinkSettings.from_conf(conf, PREFIX)
        self.buffer_size = get("buffer_size")
        self.connect_timeout = get("connect.timeout.ms") / 1000

    def bind(self, storm_id: str, port: int) -> Connection:
        try:
            listener = socket.create_server(("", port), backlog=128)
        except OSError as exc:
            raise TransportError(f"cannot bind port {port}: {exc.strerror}") from None
        server = _Server(self, listener, port)
        self._connections.add(server)
        return server

    def connect(self, storm_id: str, host: str, port: int) -> Connection:
        client = _Client(self, host, port)
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


class _Server(Connection):
    def __init__(self, context: Context, listener: socket.socket, port: int) -> None:
        self._context = context
        self._listener = listener
        self._max_frame_size = context.link.max_frame_size
        listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ, None)
        self.refused = RefusalLog(log, f"tcp server on port {port}")
        self.counters = ServerCounters(self.refused)
        self._closed = False

    def recv(self, timeout: float | None = None) -> list[TaskMessage]:
        deadline = None if timeout is None else time.monotonic() + timeout
        messages: list[TaskMessage] = []
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            for key, _ in self._selector.select(remaining):
                if key.data is None:
                    self._accept()
                else:
                    self._read(key.fileobj, key.data, messages)  # type: ignore[arg-type]
            if messages:
                self.counters.messages += len(messages)
                return messages
            if deadline is not None and time.monotonic() >= deadline:
                return messages

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # e.g. EMFILE: keep serving the peers we have
            self.refused.record("accept", f"connection not accepted: {exc.strerror}")
            return
        sock.setblocking(False)
        self._context._tune(sock)
        self.counters.accepted += 1
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
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()
        self._context._forget(self)


class _WriteTimeout(Exception):
    def __init__(self, written: int) -> None:
        self.written = written


class _Client(Connection):
    def __init__(self, context: Context, host: str, port: int) -> None:
        self._context = context
        self._link = context.link
        self._encoder = BatchEncoder(context.link.batch_size, context.link.max_frame_size)
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

    def send(self, messages: Iterable[TaskMessage]) -> None:
        if self._closed:
            raise TransportError(f"send on a closed connection to {self._peer}")
        msgs = messages if isinstance(messages, list) else list(messages)
        frames = self._encoder.encode(msgs)
        timeout = self._link.send_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        sent_messages = 0
        try:
            for frame, count in frames:
                prefix = length_prefix(len(frame))
                while True:
                    try:
                        self._write(self._connected(deadline), prefix, frame, deadline)
                        break
                    except _WriteTimeout as exc:
                        if exc.written:  # half a frame is on the wire: the stream is spoilt
                            self._disconnect()
                        self._timeouts += 1
                        raise SendTimeout(
                            f"peer {self._peer} took no frame within {timeout} s",
                            unsent=msgs[sent_messages:],
                        ) from None
                    except OSError:
                        # The peer went away; the frame was not completely written, so
                        # the peer dropped it as truncated: send it whole on a new
                        # connection.
                        self._disconnect()
                sent_messages += count
                self._frames += 1
                self._bytes += len(frame) + len(prefix)
        finally:
            frames.close()  # type: ignore[attr-defined]
            self._messages += sent_messages
        self._last_write_at = time.monotonic()

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
            if deadline is not None and now + max(wait, 0.0) >= deadline:
                if wait > 0:
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
            self._context._tune(sock)
            sock.settimeout(self._link.send_timeout)
            self._attempt = 0
            if self._ever_connected:
                self._reconnects += 1
            self._ever_connected = True
            self._sock = sock
            return sock

    def _write(
        self, sock: socket.socket, prefix: bytes, frame: memoryview, deadline: float | None
    ) -> None:
        total = len(prefix) + len(frame)
        try:
            written = sock.sendmsg((prefix, frame))
        except TimeoutError:
            raise _WriteTimeout(0) from None
        while written < total:  # a partial write: the kernel buffer is full
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _WriteTimeout(written)
                sock.settimeout(remaining)
            try:
                if written < len(prefix):
                    written += sock.send(prefix[written:])
                else:
                    written += sock.send(frame[written - len(prefix) :])
            except TimeoutError:
                raise _WriteTimeout(written) from None
        if deadline is not None:
            sock.settimeout(self._link.send_timeout)

    def _disconnect(self) -> None:
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
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._disconnect()
        self._context._forget(self)


def _peer_closed(sock: socket.socket) -> bool:
    """Whether the peer closed or reset the connection. The server never writes,
    so anything readable on a client socket means end of stream."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError as exc:
        return exc.errno != errno.EAGAIN
