"""End to end: `storm-zmq run` with transport authentication on, and an intruder.

Two real worker processes run the word count of tests/runtime/project with
`storm.messaging.zmq.curve` (or `storm.messaging.tcp.authentication`) on. While it
runs, an intruder that does not hold the run's key connects to every worker's port
and sends perfectly well-formed frames carrying well-formed tuples (the word
"INTRUDER" to every task id). The counts must come out exact, with no INTRUDER, and
each worker's transport must log the refusal.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import zmq

from storm_zmq.messaging import TaskMessage
from storm_zmq.messaging.stream import length_prefix
from storm_zmq.messaging.wire import encode_batch
from storm_zmq.runtime.serialization import encode_tuple
from tests.messaging.conftest import free_port
from tests.runtime.test_local_mode import PROJECT, expected_counts, outputs

pytestmark = pytest.mark.slow

SETTINGS = {"zmq": "storm.messaging.zmq.curve", "tcp": "storm.messaging.tcp.authentication"}


def intruder_frames() -> list[bytes]:
    """Tuples a split task would send to a count task, to every plausible task id."""
    messages = [TaskMessage(task, encode_tuple(2, "default", None, ["INTRUDER"], "split"))
                for task in range(1, 21)]
    return [frame for frame, _ in encode_batch(messages, 65536, 1 << 20)]


def intrude_zmq(ports: list[int], timeout: float = 60) -> None:
    """Connect to every worker (libzmq retries until it listens), queue the frames,
    and wait until each worker refused the handshake (seen on our own monitor)."""
    ctx = zmq.Context()
    try:
        socks = []
        for port in ports:
            sock = ctx.socket(zmq.PUSH)
            sock.linger = 0
            monitor = sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
                                              | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                                              | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
            sock.connect(f"tcp://127.0.0.1:{port}")
            for frame in intruder_frames():
                sock.send(frame, zmq.NOBLOCK)  # queued: no IMMEDIATE on this socket
            socks.append((sock, monitor))
        for sock, monitor in socks:
            assert monitor.poll(timeout * 1000), "the worker never answered the intruder"
            sock.disable_monitor()
            monitor.close()
            sock.close()
    finally:
        ctx.term()


def intrude_tcp(ports: list[int], timeout: float = 60) -> None:
    """Connect to every worker (retrying until it listens), send the frames, and
    wait until the worker hangs up."""
    for port in ports:
        deadline = time.monotonic() + timeout
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        with sock:
            try:
                for frame in intruder_frames():
                    sock.sendall(length_prefix(len(frame)) + frame)
                assert sock.recv(1) == b""  # the worker closed the connection
            except ConnectionResetError:
                pass  # cut off by the worker: the point


@pytest.mark.parametrize("transport", ["zmq", "tcp"])
def test_authenticated_run_delivers_everything_and_refuses_an_intruder(
        tmp_path: Path, transport: str) -> None:
    count = 600
    ports = [free_port(), free_port()]
    command = [
        sys.executable, "-m", "storm_zmq.cli.main", "run",
        str(PROJECT / "topologies" / "wordcount.py"), "-w", "2", "-q",
        "--transport", transport,
        "-o", f"supervisor.slots.ports={ports}",
        "-o", f"test.output_dir={tmp_path}",
        "-o", f"test.count={count}",
        "-o", "test.rate=300",  # about 2 s of running, for the intruder to act in
        "-o", f"{SETTINGS[transport]}=true",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=tmp_path)
    try:
        (intrude_zmq if transport == "zmq" else intrude_tcp)(ports)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert "every spout is exhausted" in stdout
    counted: Counter[str] = Counter()
    for task_counts in outputs(tmp_path, "count").values():
        counted.update(task_counts)
    assert "INTRUDER" not in counted
    assert counted == expected_counts(count)
    refusal = ("dropped a peer without the topology's CURVE key" if transport == "zmq"
               else "dropped a peer that failed authentication: the peer did not start "
                    "the authentication handshake")
    refused_on = {port for port in ports if f"server on port {port}: {refusal}" in stderr}
    assert refused_on == set(ports), stderr[-3000:]
