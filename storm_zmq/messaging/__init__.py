"""Worker-to-worker messaging: the pluggable `storm.messaging.transport`.

Built-in transports: `storm_zmq.messaging.zmq.Context` (brokerless ZeroMQ, the
default), `storm_zmq.messaging.tcp.Context` (length-prefixed frames over plain
sockets) and `storm_zmq.messaging.local.Context` (in-process).
"""

from __future__ import annotations

import importlib
from typing import Any

from storm_zmq.messaging.base import (
    Connection,
    Context,
    MessageTooLarge,
    SendTimeout,
    TaskMessage,
    TransportError,
)

__all__ = [
    "Connection",
    "Context",
    "MessageTooLarge",
    "SendTimeout",
    "TaskMessage",
    "TransportError",
    "TRANSPORT_ALIASES",
    "load_context",
    "transport_class",
]

#: Short names accepted wherever a transport is chosen on the command line.
TRANSPORT_ALIASES = {
    "zmq": "storm_zmq.messaging.zmq.Context",
    "tcp": "storm_zmq.messaging.tcp.Context",
    "local": "storm_zmq.messaging.local.Context",
}

_REQUIRED_METHODS = ("prepare", "bind", "connect", "term")


def transport_class(dotted_path: str) -> type:
    """Import the transport class named by `dotted_path` (or a short alias).

    Raises `TransportError` with a message that says what is wrong: not a dotted
    path, module not importable, attribute missing, or not transport-shaped.
    """
    path = TRANSPORT_ALIASES.get(dotted_path, dotted_path)
    module_name, _, attr = path.rpartition(".")
    if not isinstance(path, str) or not module_name or not attr:
        raise TransportError(
            f"{dotted_path!r} is not a dotted path to a class "
            f"(for example 'storm_zmq.messaging.zmq.Context'; short names: "
            f"{', '.join(TRANSPORT_ALIASES)})"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # not found, a relative name, a syntax error in it, ...
        raise TransportError(f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}") from exc
    cls = getattr(module, attr, None)
    if cls is None:
        raise TransportError(f"module {module_name!r} has no attribute {attr!r}")
    missing = [m for m in _REQUIRED_METHODS if not callable(getattr(cls, m, None))]
    if not isinstance(cls, type) or missing:
        raise TransportError(
            f"{path!r} is not a transport class (needs methods "
            f"{', '.join(_REQUIRED_METHODS)}; missing {', '.join(missing) or 'class'})"
        )
    return cls


def load_context(conf: dict[str, Any], secrets: Any = None) -> Context:
    """Instantiate the transport named by `storm.messaging.transport`, prepare it and
    hand it the topology's secrets (a `storm_zmq.messaging.auth.TopologySecrets` or
    its `to_dict()` form; None when the topology has none).

    Raises `TransportError` naming the key when the transport's authentication is
    switched on (``storm.messaging.zmq.curve``, ``storm.messaging.tcp.authentication``)
    and no secrets were given: a worker must never fall back to unauthenticated.
    """
    from storm_zmq.messaging.auth import coerce_secrets

    cls = transport_class(conf["storm.messaging.transport"])
    context = cls()
    context.prepare(conf)
    secrets = coerce_secrets(secrets)
    required = getattr(context, "auth_setting", None)
    if required and secrets is None:
        context.term()
        raise TransportError(
            f"{required} is on but this process was given no topology secrets (they are "
            "made at submit, or per `storm-zmq run`, and reach workers through the "
            "supervisor's launch file)")
    if secrets is not None and callable(getattr(context, "use_secrets", None)):
        context.use_secrets(secrets)
    return context
