"""Fixtures shared by the transport tests: a context factory per transport and
free loopback ports."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from storm_zmq.config import DEFAULTS
from storm_zmq.messaging import TRANSPORT_ALIASES, Context, load_context
from storm_zmq.runtime.local import LOWEST_FREE_PORT, ephemeral_port_start

ALL_TRANSPORTS = ["zmq", "tcp", "local"]
NETWORK_TRANSPORTS = ["zmq", "tcp"]


_HANDED_OUT: set[int] = set()


def _port_range() -> range:
    """This test process's share of the ports below the kernel's ephemeral range.
    Ports the kernel picks (a bind to port 0, a connection's own end) come from that
    range, so a port probed free there could be taken by another test's connection
    or by the other pytest process before its test bound it: a run then found its
    port busy. Below it, and split between the pytest-xdist processes, nothing
    else hands them out."""
    ephemeral = ephemeral_port_start()
    processes = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    share = (ephemeral - LOWEST_FREE_PORT) // processes
    start = LOWEST_FREE_PORT + (index % processes) * share
    return range(start, start + share)


def free_port() -> int:
    """A port nothing listens on, on any address, from this process's own range
    (`_port_range`), and never one it handed out before (`[free_port(), free_port()]`
    once gave one port twice, and the run refused its ports as duplicates)."""
    ports = _port_range()
    for _ in range(10_000):
        port = random.choice(ports)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


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
