"""Fixtures shared by the transport tests: a context factory per transport and
free loopback ports."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from storm_zmq.config import DEFAULTS
from storm_zmq.messaging import TRANSPORT_ALIASES, Context, load_context

ALL_TRANSPORTS = ["zmq", "tcp", "local"]
NETWORK_TRANSPORTS = ["zmq", "tcp"]


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on, and not one this process handed out
    before: the kernel may give a port just closed again, so `[free_port(),
    free_port()]` once made a run refuse its ports as duplicates."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def transport_conf(name: str, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """A full config for transport `name`; `settings` keys are the transport's own
    key suffixes (``{"hwm": 8}`` means ``storm.messaging.<name>.hwm: 8``)."""
    conf = dict(DEFAULTS)
    conf["storm.messaging.transport"] = TRANSPORT_ALIASES[name]
    for suffix, value in (settings or {}).items():
        conf[f"storm.messaging.{name}.{suffix}"] = value
    return conf


ContextFactory = Callable[..., Context]


@pytest.fixture(params=ALL_TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    """The transport under test: every one, unless a test parametrizes its own."""
    return request.param


@pytest.fixture
def make_context(transport: str) -> Iterator[ContextFactory]:
    """Build prepared contexts of the test's transport; all are terminated after."""
    name = transport
    made: list[Context] = []

    def factory(settings: dict[str, Any] | None = None) -> Context:
        context = load_context(transport_conf(name, settings))
        made.append(context)
        return context

    yield factory
    for context in made:
        context.term()
