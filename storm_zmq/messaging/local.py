"""The in-process transport, for running and debugging a topology in one process.

Batches move as lists of TaskMessage objects through a bounded queue per bound
port (`storm.messaging.local.hwm` batches): nothing is serialized, and a full
queue blocks the sender exactly as a full socket would.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable
from typing import Any

from storm_zmq.messaging.base import Connection, SendTimeout, TaskMessage, TransportError
from storm_zmq.messaging.base import Context as _Context
from storm_zmq.messaging.wire import check_messages

PREFIX = "storm.messaging.local."
#: How often a blocked sender looks again for a server that was closed and bound anew.
_RESOLVE_INTERVAL = 0.05


class Context(_Context):
    """`storm.messaging.transport: storm_zmq.messaging.local.Context`.

    Servers are found by (storm_id, port) among the connections of this context,
    so every worker of a local topology must share one context.
    """

    def __init__(self) -> None:
        self._servers: dict[tuple[str, int], _Server] = {}
        self._connections: set[Connection] = set()
        self._lock = threading.Lock()

    def prepare(self, conf: dict[str, Any]) -> None:
        from storm_zmq.config import DEFAULTS

        def get(key: str) -> Any:
            return conf.get(PREFIX + key, DEFAULTS[PREFIX + key])

        self.hwm = get("hwm")
        timeout_ms = get("send.timeout.ms")
        self.send_timeout = None if timeout_ms < 0 else timeout_ms / 1000

    def bind(self, storm_id: str, port: int) -> Connection:
        key = (storm_id, port)
        with self._lock:
            if key in self._servers:
                raise TransportError(f"cannot bind port {port}: already bound in this process")
            server = _Server(self, key, self.hwm)
            self._servers[key] = server
            self._connections.add(server)
        return server

    def connect(self, storm_id: str, host: str, port: int) -> Connection:
        client = _Client(self, (storm_id, port))
        with self._lock:
            self._connections.add(client)
        return client

    def term(self) -> None:
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.close()

    def _server(self, key: tuple[str, int]) -> _Server | None:
        return self._servers.get(key)

    def _forget(self, connection: Connection) -> None:
        with self._lock:
            self._connections.discard(connection)
            if isinstance(connection, _Server) and self._servers.get(connection.key) is connection:
                del self._servers[connection.key]


class _Server(Connection):
    def __init__(self, context: Context, key: tuple[str, int], hwm: int) -> None:
        self._context = context
        self.key = key
        self.queue: queue.Queue[list[TaskMessage]] = queue.Queue(maxsize=hwm)
        self.closed = False
        self._frames = self._messages = 0

    def recv(self, timeout: float | None = None) -> list[TaskMessage]:
        try:
            batch = self.queue.get(timeout=timeout)
        except queue.Empty:
            return []
        self._frames += 1
        self._messages += len(batch)
        return batch

    def stats(self) -> dict[str, int]:
        return {"frames_received": self._frames, "messages_received": self._messages}

    def close(self) -> None:
        self.closed = True
        self._context._forget(self)


class _Client(Connection):
    def __init__(self, context: Context, key: tuple[str, int]) -> None:
        self._context = context
        self._key = key
        self._frames = self._messages = self._timeouts = 0
        self._closed = False

    def send(self, messages: Iterable[TaskMessage]) -> None:
        if self._closed:
            raise TransportError(f"send on a closed connection to port {self._key[1]}")
        batch = list(messages)
        if not batch:
            return
        check_messages(batch)  # what the network transports refuse, refused here too
        timeout = self._context.send_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = _RESOLVE_INTERVAL
            if deadline is not None:  # 0 left still tries once: timeout 0 means "do not wait"
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            server = self._context._server(self._key)
            try:
                if server is None or server.closed:  # not bound (yet, or again)
                    raise queue.Full
                server.queue.put(batch, timeout=wait)
            except queue.Full:
                if deadline is not None and time.monotonic() >= deadline:
                    self._timeouts += 1
                    raise SendTimeout(
                        f"port {self._key[1]} took no batch within {timeout} s", unsent=batch
                    ) from None
                if server is None or server.closed:
                    time.sleep(wait)  # wait like a reconnect
                continue
            self._frames += 1
            self._messages += len(batch)
            return

    def stats(self) -> dict[str, int]:
        return {
            "frames_sent": self._frames,
            "messages_sent": self._messages,
            "send_timeouts": self._timeouts,
        }

    def close(self) -> None:
        self._closed = True
        self._context._forget(self)
