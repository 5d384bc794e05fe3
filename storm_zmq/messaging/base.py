"""The transport plug-in contract: Storm's IContext / IConnection / TaskMessage in Python.

Any importable class with this shape is a valid `storm.messaging.transport`; the
runtime never looks past it. The abstract classes exist so that a user's transport
can inherit the documentation and the `stats()` default, not because the runtime
checks `isinstance`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import Any, NamedTuple


class TaskMessage(NamedTuple):
    """One message for one task. A tuple subclass, so msgpack packs it directly and
    building one costs as little as any Python object can (see docs/benchmarks.md).
    Negative task ids are reserved for control messages."""

    task: int
    message: bytes


class TransportError(Exception):
    """Base of every error a transport raises on purpose."""


class SendTimeout(TransportError):
    """The batch could not be handed to the transport within the configured send
    timeout: the peer is down or not reading. `unsent` holds the messages that were
    not sent (all of them unless the batch needed several frames), so the caller
    still owns them and decides whether to retry or fail them."""

    def __init__(self, message: str, unsent: list[TaskMessage]) -> None:
        super().__init__(message)
        self.unsent = unsent


class MessageTooLarge(TransportError):
    """A single message does not fit in one frame of the configured maximum size.
    Raised before anything of the batch is sent."""


class Connection(abc.ABC):
    """One end of a transport link. A server connection (from `Context.bind`)
    receives from any number of clients; a client connection (from
    `Context.connect`) sends to one server. Use each connection from one thread."""

    def send(self, messages: Iterable[TaskMessage]) -> None:
        """Send a batch, blocking while the peer applies backpressure (bounded by
        the transport's send timeout, after which `SendTimeout` is raised)."""
        raise NotImplementedError(f"{type(self).__name__} is a receiving connection")

    def recv(self, timeout: float | None = None) -> list[TaskMessage]:
        """Return the next batch of received messages, or an empty list when
        `timeout` seconds pass first (`None` waits forever)."""
        raise NotImplementedError(f"{type(self).__name__} is a sending connection")

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection promptly (bounded by the configured linger)."""

    def stats(self) -> dict[str, int]:
        """Counters for observability: frames, messages, bytes, bad input, reconnects."""
        return {}


class Context(abc.ABC):
    """A transport instance for one process. `prepare` is called once, after the
    process has started (never share a context across fork)."""

    #: After `prepare`: the config key that switched this transport's authentication
    #: on (e.g. ``storm.messaging.zmq.curve``), else None. `load_context` names it
    #: when no secrets were given, rather than letting bind/connect fail later.
    auth_setting: str | None = None
    #: After `prepare`: the largest payload one TaskMessage may carry (a frame's
    #: limit less its framing), and the config key that sets it; None when the
    #: transport has no limit. The runtime refuses a larger tuple when it is
    #: emitted, naming the component and the key, rather than when it is sent.
    max_message_size: int | None = None
    max_message_setting: str | None = None

    def prepare(self, conf: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Read this transport's settings from the merged Storm config."""

    def use_secrets(self, secrets: Any) -> None:  # noqa: B027 - optional hook
        """Receive the topology's `storm_zmq.messaging.auth.TopologySecrets`, after
        `prepare` and before any bind/connect. Transports without authentication
        ignore them."""

    @abc.abstractmethod
    def bind(self, storm_id: str, port: int) -> Connection:
        """Start receiving on `port` (all interfaces) for topology `storm_id`."""

    @abc.abstractmethod
    def connect(self, storm_id: str, host: str, port: int) -> Connection:
        """Return a connection that sends to the worker bound at host:port. Never
        blocks on the peer being up: connecting happens in the background."""

    @abc.abstractmethod
    def term(self) -> None:
        """Close every connection this context made and release its resources."""
