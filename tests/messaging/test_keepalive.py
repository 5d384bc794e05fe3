"""TCP keepalive on both network transports: the kernel's own view of real
connections (/proc/net/tcp), not the options the code meant to set."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.config import DEFAULTS, ConfigError, validate
from storm_zmq.messaging import SendTimeout, TaskMessage, load_context
from storm_zmq.messaging.settings import LinkSettings
from tests.netns import cannot_make_namespaces, fresh_subnet, run

from .conftest import NETWORK_TRANSPORTS, free_port, transport_conf
from .test_conformance import receive_until

ESTABLISHED = "01"
KEEPALIVE_TIMER = 2  # /proc/net/tcp's "tr" column (0: no timer)
USER_HZ = 100  # the unit of its "tm->when" column


@pytest.mark.parametrize(("secs", "probes"), [
    (60, (60, 15, 4)), (7, (7, 1, 4)), (1, (1, 1, 4)), (0, None),
])
def test_keepalive_probes_follow_the_idle_time(secs: int, probes: tuple[int, int, int] | None) -> None:
    link = LinkSettings.from_conf({"storm.messaging.zmq.keepalive.secs": secs}, "storm.messaging.zmq.")
    assert link.keepalive_probes() == probes


@pytest.mark.parametrize("transport", NETWORK_TRANSPORTS)
def test_an_idle_time_linux_refuses_is_a_config_error(transport: str) -> None:
    # TCP_KEEPIDLE above 32767 is EINVAL: tcp failed every connection, zmq silently
    key = f"storm.messaging.{transport}.keepalive.secs"
    with pytest.raises(ConfigError, match=key):
        validate({**DEFAULTS, key: 86400})


def test_keepalive_is_on_by_default_for_both_transports() -> None:
    for name in NETWORK_TRANSPORTS:
        assert LinkSettings.from_conf({}, f"storm.messaging.{name}.").keepalive_probes() == (60, 15, 4)


def _refusing_options(context: Any) -> Any:
    """Make `context` (tcp) fail to set socket options, as an OS that refuses one
    would; returns the working `_tune` to put back."""
    tune = context._tune

    def refuse(sock: Any) -> None:
        raise OSError(errno.EINVAL, "Invalid argument")

    context._tune = refuse
    return tune


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/fd")
def test_a_tcp_client_whose_socket_options_are_refused_backs_off_and_leaks_nothing() -> None:
    server_context = load_context(transport_conf("tcp"))
    client_context = load_context(transport_conf("tcp", {"send.timeout.ms": 300}))
    port = free_port()
    server = server_context.bind("topo", port)
    client = client_context.connect("topo", "127.0.0.1", port)
    try:
        tune = _refusing_options(client_context)
        before = _open_descriptors()
        with pytest.raises(SendTimeout):
            client.send([TaskMessage(1, b"x")])
        assert _open_descriptors() == before, "a socket per attempt was left open"
        # backed off: a few attempts in 0.3 s (100 ms doubling), not one per loop
        assert 1 <= client.stats()["connect_failures"] <= 4
        client_context._tune = tune  # the OS takes them again: the next attempt works
        client.send([TaskMessage(1, b"y")])
        assert [m.message for m in receive_until(server, 1)] == [b"y"]
    finally:
        client.close()
        server.close()
        client_context.term()
        server_context.term()


def test_a_tcp_server_whose_socket_options_are_refused_closes_that_connection_and_serves_on() -> None:
    context = load_context(transport_conf("tcp"))
    port = free_port()
    server = context.bind("topo", port)
    tune = _refusing_options(context)
    peer = socket.create_connection(("127.0.0.1", port))
    try:
        deadline = time.monotonic() + 10
        while not server.stats().get("refused_accept") and time.monotonic() < deadline:
            assert server.recv(0.05) == []  # no exception out of the receive loop
        assert server.stats()["refused_accept"] == 1
        assert peer.recv(1) == b""  # closed, not held
        context._tune = tune
        client_context = load_context(transport_conf("tcp"))
        client = client_context.connect("topo", "127.0.0.1", port)
        client.send([TaskMessage(1, b"after")])
        assert [m.message for m in receive_until(server, 1)] == [b"after"]
        client.close()
        client_context.term()
    finally:
        peer.close()
        server.close()
        context.term()


def _connections_on(port: int) -> list[tuple[str, int, float]]:
    """(local port, timer kind, seconds until it fires) of every established
    loopback TCP connection with `port` at one end, as the kernel sees it."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state, timer = fields[1], fields[2], fields[3], fields[5]
            local_port = int(local.rsplit(":", 1)[1], 16)
            remote_port = int(remote.rsplit(":", 1)[1], 16)
            loopback = local.endswith("0100007F:" + local.rsplit(":", 1)[1]) and \
                remote.endswith("0100007F:" + remote.rsplit(":", 1)[1])
            if state == ESTABLISHED and loopback and port in (local_port, remote_port):
                kind, when = timer.split(":")
                found.append((str(local_port), int(kind, 16), int(when, 16) / USER_HZ))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc/net/tcp")
@pytest.mark.parametrize("transport", NETWORK_TRANSPORTS)
@pytest.mark.parametrize("secs", [30, 0])
def test_both_ends_of_a_connection_arm_the_kernels_keepalive_timer(
    make_context: Any, transport: str, secs: int
) -> None:
    """Client and server side of a real connection that carried a batch: with
    keepalive.secs N each has the keepalive timer armed to fire within N seconds;
    with 0, neither has a timer at all (an idle connection without keepalive)."""
    server_context = make_context({"keepalive.secs": secs})
    client_context = make_context({"keepalive.secs": secs})
    port = free_port()
    server = server_context.bind("topo", port)
    client = client_context.connect("topo", "127.0.0.1", port)
    client.send([TaskMessage(1, b"hello")])
    assert [m.message for m in receive_until(server, 1)] == [b"hello"]

    deadline = time.monotonic() + 10
    while True:  # the ACK of the last segment may still be on its way
        connections = _connections_on(port)
        sides = {local_port == str(port) for local_port, _, _ in connections}
        timers = {kind for _, kind, _ in connections}
        settled = sides == {True, False} and timers == ({KEEPALIVE_TIMER} if secs else {0})
        if settled or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    assert sides == {True, False}, f"both ends of the connection, got {connections}"
    if secs:
        assert timers == {KEEPALIVE_TIMER}, f"keepalive timer on both ends, got {connections}"
        assert all(0 < when <= secs for _, _, when in connections), connections
    else:
        assert timers == {0}, f"no timer on an idle connection, got {connections}"
    client.close()
    server.close()


# A peer on another "host": connects to both transports' servers, sends one batch on
# each, says so, then idles until killed.
_PEER = """
import sys, time
from storm_zmq.config import DEFAULTS
from storm_zmq.messaging import TRANSPORT_ALIASES, TaskMessage, load_context
host, secs, ports = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
clients = []
for name, port in zip(("zmq", "tcp"), ports):
    conf = {**DEFAULTS, "storm.messaging.transport": TRANSPORT_ALIASES[name],
            f"storm.messaging.{name}.keepalive.secs": secs,
            f"storm.messaging.{name}.send.timeout.ms": 10000}  # no link: fail, not hang
    clients.append(load_context(conf).connect("topo", host, int(port)))
    clients[-1].send([TaskMessage(1, b"from afar")])
print("sent", flush=True)
time.sleep(600)
"""


@pytest.fixture
def far_host() -> Iterator[tuple[str, str, str]]:
    """A namespace behind a veth pair: (namespace, its end of the link, subnet);
    the host side is SUBNET.1, the namespace SUBNET.2. A subnet of its own each
    time, so that what a killed run left behind cannot answer for this one."""
    reason = cannot_make_namespaces()
    if reason:
        pytest.skip(reason)
    tag = uuid.uuid4().hex[:5]
    subnet = fresh_subnet()
    ns, outside, inside = f"szka{tag}", f"szka{tag}o", f"szka{tag}i"
    run("ip", "netns", "add", ns)
    try:
        run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        run("ip", "addr", "add", f"{subnet}.1/24", "dev", outside)
        run("ip", "link", "set", outside, "up")
        run("ip", "link", "set", inside, "netns", ns)
        run("ip", "netns", "exec", ns, "ip", "addr", "add", f"{subnet}.2/24", "dev", inside)
        run("ip", "netns", "exec", ns, "ip", "link", "set", inside, "up")
        yield ns, inside, subnet
    finally:
        subprocess.run(["ip", "link", "del", outside], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def test_a_server_drops_the_connection_of_a_peer_whose_host_vanished(
    far_host: tuple[str, str, str],
) -> None:
    """The peer's link goes down after it sent: no FIN, no RST, as when its machine
    loses power. With keepalive.secs 1 (probes 1 s apart, 4 of them) each server
    drops the connection within seconds; without keepalive it would hold it for
    ever (the receiving end never writes, so nothing else would notice)."""
    ns, link, subnet = far_host
    servers = {}
    ports = []
    for name in NETWORK_TRANSPORTS:
        context = load_context(transport_conf(name, {"keepalive.secs": 1}))
        ports.append(str(free_port()))
        servers[name] = (context, context.bind("topo", int(ports[-1])))
    peer = subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, "-c", _PEER, f"{subnet}.1", "1", *ports],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    try:
        assert peer.stdout is not None
        if peer.stdout.readline() != "sent\n":
            peer.kill()
            pytest.fail(f"the peer did not send: {peer.communicate(timeout=10)[1]}")
        for name, (_, server) in servers.items():
            assert [m.message for m in receive_until(server, 1)] == [b"from afar"], name
        run("ip", "netns", "exec", ns, "ip", "link", "set", link, "down")
        vanished = time.monotonic()
        dropped: dict[str, float] = {}
        while len(dropped) < len(servers) and time.monotonic() < vanished + 30:
            for name, (_, server) in servers.items():
                assert server.recv(0.05) == []
                if name not in dropped and server.stats()["disconnects"]:
                    dropped[name] = time.monotonic() - vanished
        print(f"dropped after (s): {dropped}")
        assert set(dropped) == set(servers), f"only {dropped} dropped the vanished peer"
        # 1 s idle, then 4 probes 1 s apart: about 5 s; well under the 30 s waited
        assert all(seconds < 15 for seconds in dropped.values()), dropped
    finally:
        peer.kill()
        peer.wait(10)
        for context, server in servers.values():
            server.close()
            context.term()


# A server on another "host": binds both transports' servers, says so, then reads
# (and drops) whatever comes until killed.
_FAR_SERVER = """
import sys
from storm_zmq.config import DEFAULTS
from storm_zmq.messaging import TRANSPORT_ALIASES, load_context
servers = []
for name, port in zip(("zmq", "tcp"), sys.argv[1:]):
    conf = {**DEFAULTS, "storm.messaging.transport": TRANSPORT_ALIASES[name]}
    servers.append(load_context(conf).bind("topo", int(port)))
print("bound", flush=True)
while True:
    for server in servers:
        server.recv(0.05)
"""


def _established_to(address: str, port: int) -> bool:
    """Whether this host has an established TCP connection to `address`:`port`."""
    remote = "".join(f"{int(part):02X}" for part in reversed(address.split("."))) + f":{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[2] == remote and fields[3] == ESTABLISHED:
            return True
    return False


def test_a_client_with_data_in_flight_to_a_vanished_host_gives_the_connection_up(
    far_host: tuple[str, str, str],
) -> None:
    """The server's link goes down while the client sends: its data is never
    acknowledged. Keepalive probes only idle connections, so without a limit on
    unacknowledged data the kernel would retransmit for about 15 minutes, holding
    the client's frames; with keepalive.secs 1 (TCP_USER_TIMEOUT, zmq's TCP_MAXRT,
    of 1 + 4 x 1 s) it gives the connection up within seconds."""
    ns, link, subnet = far_host
    far = f"{subnet}.2"
    ports = [free_port(), free_port()]
    server = subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, "-c", _FAR_SERVER, *map(str, ports)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    clients = {}
    try:
        assert server.stdout is not None
        if server.stdout.readline() != "bound\n":
            server.kill()
            pytest.fail(f"the far server did not bind: {server.communicate(timeout=10)[1]}")
        for name, port in zip(NETWORK_TRANSPORTS, ports, strict=True):
            context = load_context(transport_conf(name, {"keepalive.secs": 1,
                                                         "send.timeout.ms": 200}))
            clients[name] = (context, context.connect("topo", far, port), port)
        payload = [TaskMessage(1, b"x" * 65536)]

        def send_all() -> None:
            for _, client, _ in clients.values():
                try:
                    client.send(payload)
                except SendTimeout:
                    pass

        deadline = time.monotonic() + 15
        while not all(_established_to(far, port) for _, _, port in clients.values()):
            assert time.monotonic() < deadline, "no connection to the far server"
            send_all()
            time.sleep(0.05)
        run("ip", "netns", "exec", ns, "ip", "link", "set", link, "down")
        vanished = time.monotonic()
        given_up: dict[str, float] = {}
        while len(given_up) < len(clients) and time.monotonic() < vanished + 30:
            send_all()  # data in flight all along: keepalive never probes
            for name, (_, _, port) in clients.items():
                if name not in given_up and not _established_to(far, port):
                    given_up[name] = time.monotonic() - vanished
            time.sleep(0.1)
        print(f"given up after (s): {given_up}")
        assert set(given_up) == set(clients), f"only {given_up} gave the vanished host up"
    finally:
        server.kill()
        server.wait(10)
        for context, client, _ in clients.values():
            client.close()
            context.term()


@pytest.mark.parametrize(("secs", "unacked_ms"), [(60, 120_000), (7, 11_000), (1, 5_000), (0, None)])
def test_unacknowledged_data_is_given_the_keepalive_window(secs: int, unacked_ms: int | None) -> None:
    link = LinkSettings.from_conf({"storm.messaging.tcp.keepalive.secs": secs}, "storm.messaging.tcp.")
    assert link.unacked_timeout_ms() == unacked_ms
