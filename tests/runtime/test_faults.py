"""Faults at worker level, with real worker processes and real sockets.

* A peer worker SIGSTOPped for 12 s, then continued, over zmq and tcp: the other
  worker's senders block (its spout stops emitting) with memory bounded by the
  configured buffers, on the connection they had, and everything resumes: every id
  arrives.
* A worker that starts while its peer's port has nothing listening becomes ready,
  keeps reporting, and delivers once the peer appears (Storm's STORM-1394 hang).

The transport-level versions (a server restarted on its port, a client created
before its server) are in tests/messaging/test_conformance.py; SIGKILL with a
supervisor restarting the worker on its port is in tests/cluster/.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.assignment import WorkerSlot, acker_executors, assign
from storm_zmq.runtime.launch import LOCAL_WORKER_MODULE
from storm_zmq.runtime.local import RunOptions, prepare_run, run_local
from storm_zmq.runtime.reports import decode_report
from storm_zmq.runtime.worker import worker_main
from tests.cluster.test_cluster import sink_ids, wait_for
from tests.messaging.conftest import free_port
from tests.procs import processes

PROJECT = Path(__file__).parent / "project"
#: numbers (spout, par 2) -> relay (par 2, fields) -> sink (par 2, appends ids to files)
TOPOLOGY = PROJECT / "topologies" / "cluster_ids.py"
pytestmark = pytest.mark.slow


# -- /proc ----------------------------------------------------------------------------------


def child_workers() -> list[int]:
    """Worker processes of a run in this process: children that run a local-mode
    worker (runtime/launch.py), in start order (worker 0 first)."""
    return [p.pid for p in processes() if p.ppid == os.getpid() and LOCAL_WORKER_MODULE.encode() in p.command]


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


# -- SIGSTOP --------------------------------------------------------------------------------

#: Trees time out (5 s) and replay in it; longer than zmq's heartbeat.timeout.ms
#: (10 s), which with heartbeats on gave the peer up.
STOP_SECONDS = 12.0
#: Seconds into the stop in which the survivor's spout must emit nothing: from when
#: the buffers are full (under 6 s) to before the trees emitted just before that
#: time out (the message timeout, 5 s, later): what follows is their replays.
BLOCKED_FROM, BLOCKED_UNTIL = 6.0, 9.5
#: Small buffers, so that the bound below is tight enough to mean something.
BUFFERS = {
    "topology.executor.receive.buffer.size": 200,
    "topology.transfer.buffer.size": 200,
    "topology.transfer.batch.size": 50,
    "topology.producer.batch.size": 50,
    "storm.messaging.zmq.hwm": 8,
    # the kernel's buffers of a tcp connection (SO_SNDBUF/SO_RCVBUF, doubled by
    # Linux); the default 4 MiB each would hold every id this test sends
    "storm.messaging.tcp.buffer_size": 65536,
}
#: Characters of each id's text, so that the buffers between the workers (the
#: kernel's too, which this test cannot bound in tuples) fill within seconds.
TEXT_BYTES = 4096
#: Generous memory per tuple held anywhere in a worker (Tuple, values, payload
#: bytes, TaskMessage, TupleId and its roots dict, a SpoutPending entry): ~0.5 KiB
#: measured, doubled.
BYTES_PER_TUPLE = 1024
#: What a worker may grow besides held tuples: allocator arenas, thread stacks,
#: the garbage collector's late passes (tuning.py), log records.
SLACK_MB = 24


def held_tuples_bound(executors: int, transport: str) -> int:
    """The most tuples worker 0 can hold while its peer takes nothing:

    * its transfer queue: capacity + one batch (a put is admitted below capacity);
    * the send thread's hand: one get_all of the transfer queue, the same again;
    * the zmq PUSH pipe to the peer: hwm frames, each at most one send's messages
      (tcp: the kernel holds what is written; the client at most one half-written
      frame);
    * per executor: its receive queue (capacity + one batch, a batch from the
      receive thread being at most 2048 messages: zmq.MAX_MESSAGES_PER_RECV) and its
      output buffer (transfer.batch.size, then it publishes and blocks);
    * spout pending entries: one per tree in flight, i.e. at most one per held tuple.
    """
    transfer = BUFFERS["topology.transfer.buffer.size"] + BUFFERS["topology.transfer.batch.size"]
    per_executor = (BUFFERS["topology.executor.receive.buffer.size"] + 2048
                    + BUFFERS["topology.transfer.batch.size"])
    in_transport = BUFFERS["storm.messaging.zmq.hwm"] if transport == "zmq" else 1
    held = 2 * transfer + in_transport * transfer + executors * per_executor
    return 2 * held


@pytest.mark.serial  # its windows of seconds and memory bound
@pytest.mark.parametrize("transport", ["zmq", "tcp"])
def test_a_stopped_peer_blocks_senders_within_bounded_memory_and_everything_resumes(
    tmp_path: Path, transport: str,
) -> None:
    # ids, and per spout task per second: worker 0's spout has 6000 ids, more than it
    # emits before the buffers to its stopped peer are full, so that it still has ids
    # when the peer continues (checked below: a spout out of ids is silent too)
    count, rate = 12000, 1000
    ports = [free_port(), free_port()]
    emitted: list[tuple[float, int, int]] = []  # (time, worker 0's spout emitted, failed)
    spout_tasks: set[int] = set()  # worker 0's
    during: dict[str, Any] = {}
    errors: list[BaseException] = []

    reconnects: list[int] = []  # worker 0's client to its stopped peer

    def on_report(worker: int, report: dict[str, Any]) -> None:
        if worker == 0:
            spout = report["components"]["numbers"]
            spout_tasks.update(spout["tasks"])
            emitted.append((time.monotonic(), spout["emitted"], spout["failed"]))
            reconnects.append(report["peers"]["1"]["reconnects"])

    def fault() -> None:
        try:
            workers = child_workers()
            assert len(workers) == 2, workers
            survivor, victim = workers
            # well into the run, with full pipes between the workers: a stop then
            # is what made libzmq abort the stopped worker when it continued, with
            # ZMTP heartbeats on (storm.messaging.zmq.heartbeat.ivl.ms, now off)
            wait_for(lambda: len(sink_ids(tmp_path)) > 2000, "ids flowing", timeout=30)
            before = rss_kb(survivor)
            os.kill(victim, signal.SIGSTOP)
            stopped_at = time.monotonic()
            samples = []
            try:
                while time.monotonic() < stopped_at + STOP_SECONDS:
                    samples.append(rss_kb(survivor))
                    time.sleep(0.5)
            finally:
                os.kill(victim, signal.SIGCONT)
            during.update(before_kb=before, max_kb=max(samples), stopped_at=stopped_at,
                          continued_wall=time.time(),
                          seen=len(sink_ids(tmp_path)))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=fault, name="fault", daemon=True)
    out = io.StringIO()
    result = run_local(RunOptions(
        topology_file=str(TOPOLOGY), conf=dict(DEFAULTS), workers=2, progress=False,
        transport=transport, on_started=lambda _stats: thread.start(), on_report=on_report,
        overrides={"supervisor.slots.ports": ports, "test.output_dir": str(tmp_path),
                   "test.count": count, "test.rate": rate, "test.text.bytes": TEXT_BYTES,
                   "topology.message.timeout.secs": 5, **BUFFERS},
    ), out)
    thread.join(STOP_SECONDS + 30)
    assert not errors, errors
    assert result.exit_code == 0, out.getvalue()
    assert "every spout is exhausted" in out.getvalue()

    # everything resumed: every id arrived (replays are the duplicates)
    seen = sink_ids(tmp_path)
    assert set(seen) == set(range(count))
    replays = sum(n - 1 for n in seen.values())
    assert during["seen"] < count, "the run was not finished before the peer continued"

    # the survivor's senders blocked: once the buffers between it and its stopped peer
    # were full, its spout emitted nothing ...
    stopped_at = during["stopped_at"]
    late = [(n, failed) for t, n, failed in emitted
            if stopped_at + BLOCKED_FROM <= t <= stopped_at + BLOCKED_UNTIL]
    assert len(late) >= 5, "worker 0 kept reporting while its peer was stopped"
    print(f"{BLOCKED_FROM:g}-{BLOCKED_UNTIL:g} s into the stop: emitted {late[0][0]} -> "
          f"{late[-1][0]}, failed {late[0][1]} -> {late[-1][1]}")
    assert late[-1][0] - late[0][0] <= BUFFERS["topology.producer.batch.size"], late
    # ... though it had ids left to emit: it ran out of them only after the peer
    # continued (a spout with nothing left is silent without any blocking)
    (spout_task,) = spout_tasks
    spout = json.loads((tmp_path / f"spout-{spout_task}.json").read_text())
    assert spout["drained_at"] > during["continued_wall"], (
        f"worker 0's spout emitted its last id {during['continued_wall'] - spout['drained_at']:.1f} s "
        "before the peer continued: the test shows no blocking (larger test.count?)")

    # ... within bounded memory
    executors = 4  # worker 0: acker, numbers, relay, sink
    per_tuple = BYTES_PER_TUPLE + TEXT_BYTES  # a held payload carries its copy of the text
    bound_kb = held_tuples_bound(executors, transport) * per_tuple // 1024 + SLACK_MB * 1024
    growth_kb = during["max_kb"] - during["before_kb"]
    print(f"SIGSTOP {STOP_SECONDS:g} s: survivor RSS {during['before_kb'] / 1024:.1f} MB -> "
          f"max {during['max_kb'] / 1024:.1f} MB (growth {growth_kb / 1024:.1f} MB, bound "
          f"{bound_kb / 1024:.1f} MB); {count} ids delivered, {replays} duplicates "
          "(replays)")
    assert growth_kb <= bound_kb
    # ... on the connection it had: waiting for a stopped peer is not a reason to
    # reconnect (tcp did, once per send timeout, parking frames in dead connections;
    # zmq did once, when its heartbeat gave the silent peer up, losing what the
    # connection held)
    assert reconnects and max(reconnects) == 0, reconnects


# -- a peer that is not there yet --------------------------------------------------------------


class WorkerProcess:
    """One worker process started as the local runner starts it (worker_main over a
    pipe), so that a test can start workers one at a time."""

    def __init__(self, spec: dict[str, Any]) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.pipe, child = spawn.Pipe()
        self.process = spawn.Process(target=worker_main, args=(spec, child))
        self.process.start()
        child.close()
        self.reports: list[dict[str, Any]] = []

    def wait(self, kind: str, timeout: float = 60) -> tuple[Any, ...]:
        """Read messages until one of `kind` arrives (stats reports are kept)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {kind!r} from the worker within {timeout} s"
            if not self.pipe.poll(min(remaining, 0.5)):
                assert self.process.is_alive(), f"worker died (exit {self.process.exitcode})"
                continue
            message = decode_report(self.pipe.recv_bytes())
            assert message[0] != "error", message[2]
            if message[0] == "stats":
                self.reports.append(message[2])
            if message[0] == kind:
                return message

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.pipe.poll(0.05):
                message = decode_report(self.pipe.recv_bytes())
                assert message[0] != "error", message[2]
                if message[0] == "stats":
                    self.reports.append(message[2])

    def stop(self) -> None:
        self.pipe.send("stop")
        self.wait("stopped", timeout=30)
        self.process.join(15)

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("transport", ["zmq", "tcp"])
def test_a_worker_starts_while_its_peer_is_unreachable_and_delivers_once_it_appears(
    tmp_path: Path, transport: str
) -> None:
    count = 600
    ports = [free_port(), free_port()]
    options = RunOptions(
        topology_file=str(TOPOLOGY), conf=dict(DEFAULTS), workers=2, transport=transport,
        overrides={"supervisor.slots.ports": ports, "test.output_dir": str(tmp_path),
                   "test.count": count, "test.rate": 300,
                   "topology.message.timeout.secs": 5},
    )
    definition, conf, workers = prepare_run(options)
    parallelism = {name: (c.par, c.num_tasks) for name, c in definition.components.items()}
    assignment = assign("unreachable-1", parallelism, [WorkerSlot("127.0.0.1", p) for p in ports],
                        acker_executors(conf, workers))

    def spec(index: int) -> dict[str, Any]:
        return {"conf": conf, "worker_index": index, "assignment": assignment.to_dict(),
                "topology_file": str(TOPOLOGY), "topology_name": None}

    started: list[WorkerProcess] = []

    def start(index: int) -> WorkerProcess:
        started.append(WorkerProcess(spec(index)))
        return started[-1]

    try:
        assert not listening(ports[0])
        late_peer_missing = start(1)
        late_peer_missing.wait("ready")  # no hang on the missing peer
        late_peer_missing.pipe.send("activate")  # its spout emits to tasks of worker 0
        late_peer_missing.drain(1.5)
        assert not listening(ports[0])
        assert len(late_peer_missing.reports) >= 2, "the worker kept reporting"
        assert late_peer_missing.reports[-1]["components"]["numbers"]["emitted"] > 0
        assert set(sink_ids(tmp_path)) <= {i for i in range(count) if i % 2 == 1}, (
            "only worker 1's own sink task can have received anything yet")

        peer = start(0)
        peer.wait("ready")
        peer.pipe.send("activate")
        deadline = time.monotonic() + 60
        while not set(sink_ids(tmp_path)) >= set(range(count)):
            assert time.monotonic() < deadline, f"not all {count} ids at the sinks"
            for worker in started:  # keep reading the pipes while waiting
                worker.drain(0.2)
        seen = sink_ids(tmp_path)
        print(f"{transport}: {count} ids delivered, {sum(n - 1 for n in seen.values())} duplicates")
        for worker in started:
            worker.stop()
            assert worker.process.exitcode == 0
    finally:
        for worker in started:
            worker.kill()
