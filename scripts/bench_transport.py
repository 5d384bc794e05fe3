#!/usr/bin/env python
"""Transport benchmark: the real transports against the raw limit of the same bytes.

For every link (``zmq`` and ``tcp``, the real transports, and ``raw-zmq`` and
``raw-socket``, their bare baselines) one receiver process and one sender process
are started and kept for the whole run; each case (payload size x batch size) is
measured on every link in turn, never two at once:

* throughput: the sender sends one batch after another for ``--duration`` seconds
  (after a warm-up); the receiver times the first to the last message. Each link
  is measured ``--repeats`` times, the links taking turns, and its best run is
  kept: on a small machine a run is sometimes slowed by something else, never
  sped up;
* latency: the sender offers a fixed rate below saturation (half the slowest link's
  throughput in that case, capped) for twice ``--duration``; each message's
  latency is the time from the sender calling send() to the receiver's recv()
  returning it.

Two more links measure what authentication costs (docs/security.md): ``zmq-curve``
is the zmq transport with `storm.messaging.zmq.curve` (every frame encrypted and
authenticated by libzmq) and ``tcp-auth`` the tcp transport with
`storm.messaging.tcp.authentication` (a handshake per connection, frames as
plain); their ratios to the same transport without are reported per case
(``zmq-curve/zmq``, ``tcp-auth/tcp``). Both ends use one fixed benchmark key set.

The baselines move the same bytes as the transports: their sender encodes its
batches once, before timing, with the transports' own codec
(`storm_zmq.messaging.wire.encode_batch`) and sends the frames again and again;
their receiver decodes each frame to (task, bytes) pairs in the cheapest honest way
and builds no TaskMessage. So a transport's ratio to its baseline is exactly what
the transport's Python code costs: encoding per send, validation, TaskMessage
objects, its receive loop. A micro-benchmark (in-process, no sockets) splits out
that per-message cost.

Run from the repository root: ``python scripts/bench_transport.py [--quick]
[--json FILE]``. Exits 1 only when a message is lost or a process fails; a missed
performance target is reported, not a failure.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import multiprocessing
import platform
import random
import socket
import statistics
import sys
import time
import traceback
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import product, repeat
from multiprocessing.connection import Connection as Pipe
from multiprocessing.synchronize import Event
from typing import Any, Protocol

import msgpack
import zmq
from zmq.utils import z85

from storm_zmq.config import DEFAULTS
from storm_zmq.messaging import TRANSPORT_ALIASES, TaskMessage, load_context
from storm_zmq.messaging.auth import TopologySecrets
from storm_zmq.messaging.stream import FrameReader, length_prefix
from storm_zmq.messaging.wire import decode_frame, encode_batch
from storm_zmq.portable import get_affinity
from storm_zmq.runtime.local import free_ports
from storm_zmq.runtime.tuning import tune_gc

LINKS = ("zmq", "raw-zmq", "tcp", "raw-socket", "zmq-curve", "tcp-auth")
#: Each real transport and the raw link it is measured against.
BASELINES = {"zmq": "raw-zmq", "tcp": "raw-socket"}
#: The transport whose settings (frame size, HWM, socket buffers) a link uses.
SETTINGS_OF = {"zmq": "zmq", "raw-zmq": "zmq", "tcp": "tcp", "raw-socket": "tcp",
               "zmq-curve": "zmq", "tcp-auth": "tcp"}
#: Authenticated links: the setting they switch on, and the link they cost against.
AUTHENTICATED = {"zmq-curve": ("storm.messaging.zmq.curve", "zmq"),
                 "tcp-auth": ("storm.messaging.tcp.authentication", "tcp")}

DEFAULT_PAYLOADS = (100, 1024, 16384)
DEFAULT_BATCHES = (1, 100, 1000)
QUICK_CASES = ((100, 1000), (16384, 100), (100, 1))
DEFAULT_DURATION = 0.5
QUICK_DURATION = 0.25
DEFAULT_REPEATS = 3

#: Latency runs offer this fraction of the slowest link's throughput in the case,
#: so that every link is below saturation at the same offered rate...
LATENCY_LOAD = 0.5
#: ...but never more than this many messages per second.
LATENCY_RATE_CAP = 200_000
#: A latency run sends at least this many batches, however slow the rate.
LATENCY_MIN_BATCHES = 20
#: Fraction of a latency run's batches (at least one) left out of the percentiles.
LATENCY_WARMUP = 0.1

#: Task ids: data, and control messages each sent as a batch of its own (negative,
#: as the runtime reserves negative ids for control messages).
DATA_TASK = 7
HELLO, MARK, END = -1, -2, -3
#: A receiver that gets nothing for this long reports lost messages.
RECV_TIMEOUT_S = 10.0
#: The parent gives up on a child this long after a run should have ended.
CHILD_GRACE_S = 60.0
STORM_ID = "bench"

#: The targets from the issue: (name, link metric, threshold, applies to case).
TARGETS: tuple[tuple[str, str, float, Callable[[int, int], bool]], ...] = (
    ("16 KiB payloads: MB/s >= 0.85 x raw", "mb_per_s", 0.85, lambda p, b: p == 16384),
    ("1000 x 100 B batches: msg/s >= 0.5 x raw", "msg_per_s", 0.5, lambda p, b: (p, b) == (100, 1000)),
    ("batch size 1: msg/s >= 0.5 x raw", "msg_per_s", 0.5, lambda p, b: b == 1),
)

Pair = tuple[int, Any]  # (task, payload): a TaskMessage or a raw decoded pair


class BenchError(Exception):
    """A correctness failure (lost message, child process failure): exit 1."""


# --- configuration shared by both ends ------------------------------------------------


def transport_conf(transport: str) -> dict[str, Any]:
    """The full default config with `storm.messaging.transport` set: what a worker
    hands `load_context`, and where the baselines read the same settings."""
    conf = dict(DEFAULTS)
    conf["storm.messaging.transport"] = TRANSPORT_ALIASES[transport]
    return conf


def link_conf(link: str) -> dict[str, Any]:
    """The config a real-transport link's ends load: its transport's, with the
    authentication setting of an authenticated link switched on."""
    conf = transport_conf(SETTINGS_OF[link])
    if link in AUTHENTICATED:
        conf[AUTHENTICATED[link][0]] = True
    return conf


def bench_secrets() -> TopologySecrets:
    """One fixed key set, so that both processes hold the same without passing it
    around (a benchmark's keys protect nothing)."""
    secret = z85.encode(hashlib.sha256(b"storm-zmq bench curve").digest())
    return TopologySecrets(zmq.curve_public(secret), secret,
                           hashlib.sha256(b"storm-zmq bench hmac").digest())


def link_setting(link: str, key: str) -> Any:
    """A transport setting for `link` (a raw link uses its transport's value)."""
    transport = SETTINGS_OF[link]
    return transport_conf(transport)[f"storm.messaging.{transport}.{key}"]


def encode(link: str, messages: list[TaskMessage]) -> list[bytes]:
    """The frames the transport behind `link` would send for `messages`."""
    frames = encode_batch(
        messages, link_setting(link, "transfer.batch.size"), link_setting(link, "max.frame.size")
    )
    return [frame for frame, _ in frames]


def raw_decode(frame: bytes | memoryview) -> list[Pair]:
    """The baseline receiver's decode: frame to (task, bytes) pairs and nothing
    else, no validation and no TaskMessage (the cheapest honest decode)."""
    blob, payloads = msgpack.unpackb(memoryview(frame)[1:], use_list=False)
    tasks = array("i")
    tasks.frombytes(blob)
    return list(zip(tasks, payloads, strict=False))


def tune_socket(sock: socket.socket) -> None:
    """The raw socket gets the tcp transport's socket options, so that the ratio
    measures Python code, not kernel settings."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    size = link_setting("raw-socket", "buffer_size")
    if size:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)


# --- receiving ends (run in the receiver process) --------------------------------------


class Receiver(Protocol):
    def start(self) -> None:
        """Finish connecting once the sender exists (accept, for a raw socket)."""
        ...

    def recv(self) -> Sequence[Pair]:
        """The next non-empty batch; BenchError when nothing comes (lost messages)."""
        ...

    def close(self) -> None: ...


class TransportReceiver:
    """A real transport's server connection, used exactly as a worker uses it."""

    def __init__(self, transport: str, port: int) -> None:
        self._context = load_context(link_conf(transport), bench_secrets())
        self._conn = self._context.bind(STORM_ID, port)

    def start(self) -> None:
        pass

    def recv(self) -> Sequence[Pair]:
        batch = self._conn.recv(RECV_TIMEOUT_S)
        if not batch:
            raise BenchError(f"nothing received for {RECV_TIMEOUT_S} s: messages lost")
        return batch

    def close(self) -> None:
        self._context.term()


class RawZmqReceiver:
    """Bare pyzmq PULL with the zmq transport's high-water mark: one blocking
    recv per frame (copying, like the transport: recv(copy=False) measured no
    faster for any case here), then `raw_decode`."""

    def __init__(self, port: int) -> None:
        self._zmq = zmq.Context()
        self._sock = self._zmq.socket(zmq.PULL)
        self._sock.setsockopt(zmq.RCVHWM, link_setting("raw-zmq", "hwm"))
        self._sock.setsockopt(zmq.RCVTIMEO, int(RECV_TIMEOUT_S * 1000))
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.bind(f"tcp://127.0.0.1:{port}")

    def start(self) -> None:
        pass

    def recv(self) -> Sequence[Pair]:
        try:
            frame = self._sock.recv()
        except zmq.Again:
            raise BenchError(f"nothing received for {RECV_TIMEOUT_S} s: messages lost") from None
        return raw_decode(frame)

    def close(self) -> None:
        self._sock.close()
        self._zmq.term()


class RawSocketReceiver:
    """A bare blocking TCP socket: recv_into a big buffer, split the length-prefixed
    frames without copying (`FrameReader`), then `raw_decode` each."""

    def __init__(self, port: int) -> None:
        self._listener = socket.create_server(("127.0.0.1", port))
        self._reader = FrameReader(link_setting("raw-socket", "max.frame.size"))
        self._sock: socket.socket | None = None

    def start(self) -> None:
        self._sock, _ = self._listener.accept()
        tune_socket(self._sock)

    def recv(self) -> Sequence[Pair]:
        reader, recv_into = self._reader, self._sock.recv_into  # type: ignore[union-attr]
        pairs: list[Pair] = []
        while not pairs:
            count = recv_into(reader.writable())
            if not count:
                raise BenchError("the sender closed the socket: messages lost")
            reader.wrote(count)
            for frame in reader.frames():
                pairs += raw_decode(frame)
        return pairs

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._listener.close()


def open_receiver(link: str, port: int) -> Receiver:
    if link == "raw-zmq":
        return RawZmqReceiver(port)
    if link == "raw-socket":
        return RawSocketReceiver(port)
    return TransportReceiver(link, port)


# --- sending ends (run in the sender process) -------------------------------------------


class Sender(Protocol):
    def prepare(self, messages: list[TaskMessage]) -> Any:
        """Turn a batch into what `send` takes, outside any timed section."""
        ...

    def send(self, item: Any) -> None: ...

    def close(self) -> None: ...


class TransportSender:
    """A real transport's client connection: `send` gets the TaskMessage list, so
    encoding is part of what is timed, as it is in a worker."""

    def __init__(self, transport: str, port: int) -> None:
        self._context = load_context(link_conf(transport), bench_secrets())
        self._conn = self._context.connect(STORM_ID, "127.0.0.1", port)
        self.send = self._conn.send  # no wrapper call per batch

    def prepare(self, messages: list[TaskMessage]) -> Any:
        return messages

    def close(self) -> None:
        self._context.term()


class RawZmqSender:
    """Bare pyzmq PUSH with the zmq transport's high-water mark, sending frames
    encoded before timing, with the same copy flag as the transport."""

    def __init__(self, port: int) -> None:
        self._zmq = zmq.Context()
        self._sock = self._zmq.socket(zmq.PUSH)
        self._sock.setsockopt(zmq.SNDHWM, link_setting("raw-zmq", "hwm"))
        self._sock.setsockopt(zmq.LINGER, int(link_setting("raw-zmq", "linger.millis")))
        self._sock.connect(f"tcp://127.0.0.1:{port}")

    def prepare(self, messages: list[TaskMessage]) -> Any:
        return encode("raw-zmq", messages)

    def send(self, item: Any) -> None:
        send = self._sock.send
        for frame in item:
            send(frame, copy=False)

    def close(self) -> None:
        self._sock.close()
        self._zmq.term()


class RawSocketSender:
    """A bare blocking TCP socket: one sendall per batch of the frames, each
    behind its 4-byte length prefix, concatenated before timing."""

    def __init__(self, port: int) -> None:
        self._sock = socket.create_connection(("127.0.0.1", port))
        tune_socket(self._sock)
        self.send = self._sock.sendall

    def prepare(self, messages: list[TaskMessage]) -> Any:
        return b"".join(length_prefix(len(f)) + bytes(f) for f in encode("raw-socket", messages))

    def close(self) -> None:
        self._sock.close()


def open_sender(link: str, port: int) -> Sender:
    if link == "raw-zmq":
        return RawZmqSender(port)
    if link == "raw-socket":
        return RawSocketSender(port)
    return TransportSender(link, port)


# --- the measurements, one function per end ---------------------------------------------


def distinct_payloads(size: int, count: int, seed: int = 1) -> list[bytes]:
    """`count` different payloads, so that a batch touches as much memory as a real
    one does (the same object repeated would sit in the cache)."""
    rng = random.Random(seed)
    return [rng.randbytes(size) for _ in range(count)]


def send_throughput(sender: Sender, go: Event, params: dict[str, Any]) -> dict[str, Any]:
    """Warm up, send MARK and wait until the receiver has drained everything, then
    send as fast as possible for `duration` seconds and finish with END."""
    batch = params["batch"]
    messages = [TaskMessage(DATA_TASK, p) for p in distinct_payloads(params["payload"], batch)]
    item = sender.prepare(messages)
    mark = sender.prepare([TaskMessage(MARK, b"")])
    end = sender.prepare([TaskMessage(END, b"")])
    send, clock = sender.send, time.monotonic_ns
    per_clock_read = max(1, 1000 // batch)  # batches between two reads of the clock
    batches = 0
    deadline = clock() + int(params["warmup"] * 1e9)
    while clock() < deadline:
        for _ in range(per_clock_read):
            send(item)
        batches += per_clock_read
    send(mark)
    if not go.wait(RECV_TIMEOUT_S):
        raise BenchError("the receiver never saw the end of the warm-up")
    go.clear()  # only this process clears it, after waking: no race with the next run
    start = clock()
    deadline = start + int(params["duration"] * 1e9)
    while True:
        for _ in range(per_clock_read):
            send(item)
        batches += per_clock_read
        if clock() >= deadline:
            break
    elapsed = clock() - start
    send(end)
    return {"sent": batches * batch, "sender_seconds": elapsed / 1e9}


def receive_throughput(recv: Callable[[], Sequence[Pair]], go: Event) -> dict[str, Any]:
    """Count the warm-up up to MARK, let the sender go, then time from the first
    to the last measured message; the first measured recv() only starts the clock
    (its messages arrived before it), END is the last message of the last one."""
    received = 0
    while True:
        batch = recv()
        received += len(batch)
        if batch[-1][0] == MARK:
            break
    received -= 1
    go.set()
    batch = recv()
    start = time.monotonic_ns()
    first, last_task, measured = len(batch), batch[-1][0], 0
    while last_task != END:
        batch = recv()
        measured += len(batch)
        last_task = batch[-1][0]
    elapsed = time.monotonic_ns() - start
    if measured:
        measured -= 1  # END
    else:
        first -= 1
    return {"received": received + first + measured, "measured": measured, "seconds": elapsed / 1e9}


def send_latency(sender: Sender, params: dict[str, Any]) -> dict[str, Any]:
    """Offer `rate` messages/s: batch `seq` is due at start + seq x interval. Each
    payload starts with its batch's sequence number; the sender records the clock
    just before each send() call, so pacing error (a sleep waking late) is never
    counted as transport latency. Batches are prepared while waiting: a late
    sender catches up by sending the batches that are due back to back."""
    batch, rate = params["batch"], params["rate"]
    count = max(LATENCY_MIN_BATCHES, round(rate * params["duration"] / batch))
    interval = batch * 1e9 / rate
    tail = distinct_payloads(params["payload"] - 8, 1)[0]
    end = sender.prepare([TaskMessage(END, b"")])
    send, clock, sleep = sender.send, time.monotonic_ns, time.sleep
    sent_at = array("q", bytes(8 * count))
    start = clock() + 1_000_000
    for seq in range(count):
        payload = seq.to_bytes(8, "little") + tail
        item = sender.prepare([TaskMessage(DATA_TASK, payload)] * batch)
        delay = start + int(seq * interval) - clock()
        if delay > 0:
            sleep(delay / 1e9)
        sent_at[seq] = clock()
        send(item)
    send(end)
    return {"sent": count * batch, "batches": count, "sent_at": sent_at.tobytes()}


def receive_latency(recv: Callable[[], Sequence[Pair]]) -> dict[str, Any]:
    """Record, per message, its batch's sequence number and when recv() returned
    it; the parent joins them with the sender's send times."""
    seqs, times = array("q"), array("q")
    from_bytes, clock = int.from_bytes, time.monotonic_ns
    while True:
        batch = recv()
        now = clock()
        done = batch[-1][0] == END
        if done:
            batch = batch[:-1]
        seqs.extend([from_bytes(p[:8], "little") for _, p in batch])
        times.extend(repeat(now, len(batch)))
        if done:
            break
    return {"received": len(seqs), "seqs": seqs.tobytes(), "received_at": times.tobytes()}


# --- child processes ---------------------------------------------------------------------


def _serve(pipe: Pipe, handle: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
    """Answer the parent's commands until it sends None."""
    while True:
        command = pipe.recv()
        if command is None:
            return
        kind, params = command
        pipe.send(("ok", handle(kind, params)))


def receiver_main(link: str, port: int, pipe: Pipe, go: Event) -> None:
    """The receiver process: bind, wait for the sender's HELLO, then serve runs."""
    receiver: Receiver | None = None
    tune_gc()  # every link runs as a worker would, raw baselines included
    try:
        receiver = open_receiver(link, port)
        pipe.send(("bound", None))
        receiver.start()
        if receiver.recv()[-1][0] != HELLO:
            raise BenchError("the first message was not HELLO")
        pipe.send(("ready", None))

        def handle(kind: str, params: dict[str, Any]) -> dict[str, Any]:
            if kind == "throughput":
                return receive_throughput(receiver.recv, go)
            return receive_latency(receiver.recv)

        _serve(pipe, handle)
    except BaseException:
        pipe.send(("error", f"{link} receiver:\n{traceback.format_exc()}"))
    finally:
        if receiver is not None:
            receiver.close()


def sender_main(link: str, port: int, pipe: Pipe, go: Event) -> None:
    """The sender process: connect, send HELLO, then serve runs."""
    sender: Sender | None = None
    tune_gc()
    try:
        sender = open_sender(link, port)
        sender.send(sender.prepare([TaskMessage(HELLO, b"")]))
        pipe.send(("ready", None))

        def handle(kind: str, params: dict[str, Any]) -> dict[str, Any]:
            if kind == "throughput":
                return send_throughput(sender, go, params)
            return send_latency(sender, params)

        _serve(pipe, handle)
    except BaseException:
        pipe.send(("error", f"{link} sender:\n{traceback.format_exc()}"))
    finally:
        if sender is not None:
            sender.close()


# --- the parent: one process pair per link -------------------------------------------------


def free_port() -> int:
    return free_ports(1)[0]  # below the ephemeral range: see storm_zmq.runtime.local


def _answer(pipe: Pipe, timeout: float, who: str) -> Any:
    """The child's next answer, or BenchError if it failed or stays silent."""
    try:
        if not pipe.poll(timeout):
            raise BenchError(f"{who} did not answer within {timeout:.0f} s")
        status, value = pipe.recv()
    except (EOFError, OSError):
        raise BenchError(f"{who} exited unexpectedly") from None
    if status == "error":
        raise BenchError(value)
    return value


class LinkPair:
    """The receiver and sender process of one link, started once (with "spawn":
    a zmq context must never cross a fork) and reused by every run."""

    def __init__(self, mp: Any, link: str) -> None:
        self.link = link
        port = free_port()
        # Kept here: Process.start() drops its args, and a spawned child must still
        # find the event's semaphore when it unpickles it.
        self._go = go = mp.Event()
        self._rx, rx_child = mp.Pipe()
        self._tx, tx_child = mp.Pipe()
        self._procs = [
            mp.Process(target=receiver_main, args=(link, port, rx_child, go), daemon=True),
            mp.Process(target=sender_main, args=(link, port, tx_child, go), daemon=True),
        ]

    def start(self) -> None:
        self._procs[0].start()
        _answer(self._rx, CHILD_GRACE_S, f"{self.link} receiver")  # bound
        self._procs[1].start()
        _answer(self._tx, CHILD_GRACE_S, f"{self.link} sender")  # HELLO sent
        _answer(self._rx, CHILD_GRACE_S, f"{self.link} receiver")  # HELLO received

    def run(self, kind: str, params: dict[str, Any], seconds: float) -> tuple[dict, dict]:
        """One measurement; returns (sender result, receiver result)."""
        self._rx.send((kind, params))
        self._tx.send((kind, params))
        timeout = seconds + CHILD_GRACE_S
        sent = _answer(self._tx, timeout, f"{self.link} sender")
        received = _answer(self._rx, timeout, f"{self.link} receiver")
        return sent, received

    def stop(self) -> None:
        for pipe in (self._tx, self._rx):
            try:
                pipe.send(None)
            except OSError:
                pass
        for proc in self._procs:
            if proc.pid is None:
                continue
            proc.join(5)
            if proc.is_alive():
                proc.terminate()
                proc.join(5)


# --- measurement orchestration ---------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    payload: int
    batch: int

    @property
    def label(self) -> str:
        return f"{size_text(self.payload)} x {self.batch}"


def size_text(size: int) -> str:
    return f"{size // 1024} KiB" if size % 1024 == 0 else f"{size} B"


def measure_throughput(pair: LinkPair, case: Case, duration: float) -> dict[str, Any]:
    params = {"payload": case.payload, "batch": case.batch, "duration": duration,
              "warmup": max(0.05, duration / 5)}
    sent, received = pair.run("throughput", params, duration * 2)
    rate = received["measured"] / received["seconds"]
    return {
        "msg_per_s": rate,
        "mb_per_s": rate * case.payload / 1e6,
        "seconds": received["seconds"],
        "measured_messages": received["measured"],
        "sent": sent["sent"],
        "received": received["received"],
        "delivered": sent["sent"] == received["received"],
    }


def measure_latency(pair: LinkPair, case: Case, rate: float, duration: float) -> dict[str, Any]:
    params = {"payload": case.payload, "batch": case.batch, "duration": duration, "rate": rate}
    sent, received = pair.run("latency", params, duration * 3)
    sent_at, seqs, received_at = array("q"), array("q"), array("q")
    sent_at.frombytes(sent["sent_at"])
    seqs.frombytes(received["seqs"])
    received_at.frombytes(received["received_at"])
    skip = max(1, int(sent["batches"] * LATENCY_WARMUP))
    latencies = sorted(r - sent_at[s] for s, r in zip(seqs, received_at, strict=True) if s >= skip)
    span = (sent_at[-1] - sent_at[0]) / 1e9
    return {
        "offered_msg_per_s": rate,
        "achieved_msg_per_s": (sent["batches"] - 1) * case.batch / span if span else None,
        "p50_us": percentile(latencies, 0.50) / 1e3,
        "p99_us": percentile(latencies, 0.99) / 1e3,
        "max_us": latencies[-1] / 1e3,
        "samples": len(latencies),
        "sent": sent["sent"],
        "received": received["received"],
        "delivered": sent["sent"] == received["received"],
    }


def percentile(ordered: Sequence[int], fraction: float) -> float:
    """Nearest-rank percentile of an ascending sequence."""
    return float(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))])


def latency_rate(throughputs: Iterable[float]) -> float:
    """The offered rate for a case's latency runs: below every link's saturation."""
    return min(LATENCY_RATE_CAP, LATENCY_LOAD * min(throughputs))


def ratios_and_targets(case: Case, links: dict[str, dict[str, Any]]) -> tuple[dict, list]:
    """Each transport's throughput as a fraction of its baseline's, and the
    targets that apply to this case, met or missed."""
    ratios: dict[str, dict[str, float]] = {}
    targets: list[dict[str, Any]] = []
    for transport, baseline in BASELINES.items():
        if transport not in links or baseline not in links:
            continue
        ours, raw = links[transport]["throughput"], links[baseline]["throughput"]
        name = f"{transport}/{baseline}"
        ratios[name] = {m: ours[m] / raw[m] for m in ("msg_per_s", "mb_per_s")}
        for target, metric, threshold, applies in TARGETS:
            if applies(case.payload, case.batch):
                ratio = ratios[name][metric]
                targets.append({
                    "target": target, "case": case.label, "link": transport,
                    "baseline": baseline, "metric": metric, "threshold": threshold,
                    "ratio": ratio, "met": ratio >= threshold,
                })
    for link, (_, plain) in AUTHENTICATED.items():
        if link in links and plain in links:
            ours, raw = links[link]["throughput"], links[plain]["throughput"]
            ratios[f"{link}/{plain}"] = {m: ours[m] / raw[m] for m in ("msg_per_s", "mb_per_s")}
    if "zmq" in links and "tcp" in links:
        ratios["zmq/tcp"] = head_to_head(links["zmq"]["throughput"], links["tcp"]["throughput"])
    return ratios, targets


def head_to_head(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """zmq over tcp: the median of the repeats' ratios, each repeat's zmq run over
    the tcp run next to it (the links take turns), and that spread: which won, by
    how much, and whether the repeats agree."""
    paired = [a / b for a, b in zip(ours.get("runs_msg_per_s", [ours["msg_per_s"]]),
                                    theirs.get("runs_msg_per_s", [theirs["msg_per_s"]]), strict=False)
              if b]
    return {"msg_per_s": statistics.median(paired), "repeats": paired}


def best_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest of a link's throughput runs, with every run's rate kept and
    delivery checked over all of them."""
    best = dict(max(runs, key=lambda run: run["msg_per_s"]))
    best["runs_msg_per_s"] = [run["msg_per_s"] for run in runs]
    best["delivered"] = all(run["delivered"] for run in runs)
    return best


def run_case(
    pairs: dict[str, LinkPair], case: Case, duration: float, repeats: int
) -> dict[str, Any]:
    """Throughput on every link (the links taking turns, best of `repeats`), then
    latency on every link at one offered rate."""
    runs: dict[str, list[dict[str, Any]]] = {link: [] for link in pairs}
    for _ in range(repeats):
        for link, pair in pairs.items():
            runs[link].append(tp := measure_throughput(pair, case, duration))
            progress(f"{case.label:>13} {link:>10} throughput {tp['msg_per_s']:>12,.0f} msg/s "
                     f"{tp['mb_per_s']:>8.1f} MB/s")
    links = {link: {"throughput": best_run(link_runs)} for link, link_runs in runs.items()}
    rate = latency_rate(v["throughput"]["msg_per_s"] for v in links.values())
    for link, pair in pairs.items():
        links[link]["latency"] = lat = measure_latency(pair, case, rate, 2 * duration)
        progress(f"{case.label:>13} {link:>10} latency at {rate:,.0f} msg/s: "
                 f"p50 {lat['p50_us']:.0f} us, p99 {lat['p99_us']:.0f} us")
    ratios, targets = ratios_and_targets(case, links)
    return {"payload": case.payload, "batch": case.batch, "latency_rate": rate,
            "links": links, "ratios": ratios, "targets": targets}


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# --- micro-benchmark: what the contract adds per message ------------------------------------


def ns_per_call(fn: Callable[[], object], budget: float = 0.15, rounds: int = 7) -> float:
    """Best-of-`rounds` time of one call (garbage collection left on, as in a worker)."""
    fn()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget / rounds:
        fn()
        calls += 1
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / calls)
    return best


def without_gc(fn: Callable[[], object]) -> Callable[[], object]:
    def call() -> object:
        gc.disable()
        try:
            return fn()
        finally:
            gc.enable()

    return call


#: Frames one zmq server recv() decodes into one list at most
#: (storm_zmq.messaging.zmq.MAX_FRAMES_PER_RECV), when the sender is ahead.
DRAINED_FRAMES = 64


def micro_benchmark(count: int = 1000, size: int = 100) -> list[dict[str, Any]]:
    """ns/message of the contract's codec against plain msgpack doing the same work,
    in-process. The difference is what TaskMessage and validation cost; the rows
    that decode many frames into one list show what the garbage collector adds
    when many TaskMessages are alive at once."""
    max_frame = link_setting("zmq", "max.frame.size")
    target = link_setting("zmq", "transfer.batch.size")
    payloads = distinct_payloads(size, count)
    pairs = [(DATA_TASK, p) for p in payloads]
    messages = [TaskMessage(DATA_TASK, p) for p in payloads]
    frame = bytes(encode_batch(messages, target, max_frame)[0][0])
    blob = array("i", [DATA_TASK] * count).tobytes()

    def bare_encode() -> bytes:  # the same frame body, without validation
        tasks, columns = zip(*messages, strict=True)
        return msgpack.packb((array("i", tasks).tobytes(), columns))

    def drain(decode: Callable[[bytes], list]) -> Callable[[], list]:
        def call() -> list:
            out: list = []
            for _ in range(DRAINED_FRAMES):
                out += decode(frame)
            return out

        return call

    def decode(data: bytes) -> list[TaskMessage]:
        return decode_frame(data, max_frame)

    drained = DRAINED_FRAMES * count

    one = count  # messages per call for the one-frame rows
    rows: list[tuple[str, str, Callable[[], object], int]] = [
        ("send", "encode_batch(list[TaskMessage]) -> frame",
         lambda: encode_batch(messages, target, max_frame), one),
        ("send", "bare: zip + array + msgpack.packb, same bytes", bare_encode, one),
        ("send", "bare: msgpack.packb of pre-split columns",
         lambda: msgpack.packb((blob, payloads)), one),
        ("send", "msgpack.packb(list[TaskMessage]) (array of pairs)",
         lambda: msgpack.packb(messages), one),
        ("send", "build list[TaskMessage] from (task, bytes) pairs",
         lambda: [TaskMessage(t, p) for t, p in pairs], one),
        ("recv", "wire.decode_frame -> list[TaskMessage]", lambda: decode(frame), one),
        ("recv", "raw decode -> (task, bytes) pairs", lambda: raw_decode(frame), one),
        ("recv", f"decode_frame, {DRAINED_FRAMES} frames into one list (one zmq recv())",
         drain(decode), drained),
        ("recv", "same, garbage collector disabled", without_gc(drain(decode)), drained),
        ("recv", f"raw decode, {DRAINED_FRAMES} frames into one list", drain(raw_decode), drained),
    ]
    return [{"side": side, "what": what, "ns_per_msg": ns_per_call(fn) / n,
             "messages_per_call": n, "payload": size} for side, what, fn, n in rows]


# --- output ------------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")), "")
    except OSError:
        pass
    return {
        "nproc": len(get_affinity()),
        "cpu": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pyzmq": zmq.pyzmq_version(),
        "libzmq": zmq.zmq_version(),
        "msgpack": ".".join(map(str, msgpack.version)),
    }


def _count(rate: float) -> str:
    if rate >= 1e6:
        return f"{rate / 1e6:.2f}M"
    if rate >= 1e3:
        return f"{rate / 1e3:.0f}k"
    return f"{rate:.0f}"


def _link_cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    tp, lat = result["throughput"], result["latency"]
    mb = tp["mb_per_s"]
    mb_text = f"{mb:.0f}" if mb >= 10 else f"{mb:.1f}"
    return f"{_count(tp['msg_per_s'])} · {mb_text} · {lat['p50_us']:.0f}/{lat['p99_us']:.0f}"


def _ratio_cell(case: dict[str, Any], transport: str) -> str:
    name = f"{transport}/{BASELINES[transport]}"
    if name not in case["ratios"]:
        return "-"
    verdicts = [f"{'met' if t['met'] else 'MISSED'} ≥{t['threshold']}"
                for t in case["targets"] if t["link"] == transport]
    ratio = f"{case['ratios'][name]['msg_per_s']:.2f}"
    return f"{ratio} ({', '.join(verdicts)})" if verdicts else ratio


def _head_to_head_cell(ratio: dict[str, Any] | None) -> str:
    if ratio is None:
        return "-"
    repeats = ratio["repeats"]
    spread = f" ({min(repeats):.2f}–{max(repeats):.2f})" if len(repeats) > 1 else " (1 repeat)"
    return f"{ratio['msg_per_s']:.2f}{spread}"


def results_table(cases: list[dict[str, Any]], links: Sequence[str]) -> str:
    """One row per (payload, batch): every link, then the two ratios (markdown)."""
    auth = [f"{link}/{plain}" for link, (_, plain) in AUTHENTICATED.items()
            if link in links and plain in links]
    head = ["zmq/tcp (repeats)"] if "zmq" in links and "tcp" in links else []
    header = ["payload", "batch", "latency at msg/s", *links, *head, "zmq/raw-zmq",
              "tcp/raw-socket", *auth]
    rows = [header, ["---:"] * len(header)]
    for case in cases:
        rows.append([size_text(case["payload"]), str(case["batch"]), _count(case["latency_rate"]),
                     *(_link_cell(case["links"].get(link)) for link in links),
                     *([_head_to_head_cell(case["ratios"].get("zmq/tcp"))] if head else []),
                     _ratio_cell(case, "zmq"), _ratio_cell(case, "tcp"),
                     *(f"{case['ratios'][name]['msg_per_s']:.2f}" if name in case["ratios"]
                       else "-" for name in auth)])
    return _markdown(rows) + (
        "\neach link: msg/s · MB/s (payload bytes, 1e6) · latency p50/p99 µs at the offered rate;"
        "\nzmq/tcp: the median of zmq's msg/s over tcp's, repeat by repeat, and their range"
        " (the ones with the best run are in each link's cell);"
        "\nratios: msg/s of the transport over its raw baseline (equal to the MB/s ratio),"
        "\nand of the authenticated transport over the same transport without")


def micro_table(rows: list[dict[str, Any]]) -> str:
    lines = [["side", "1000 × 100 B, in-process", "ns/msg"], ["---", "---", "---:"]]
    lines += [[r["side"], r["what"], f"{r['ns_per_msg']:.0f}"] for r in rows]
    return _markdown(lines)


def _markdown(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
                     for row in rows)


# --- main ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="3 cases (100 B x 1000, 16 KiB x 100, 100 B x 1), shorter runs")
    parser.add_argument("--links", default=",".join(LINKS),
                        help=f"comma-separated subset of {','.join(LINKS)}")
    parser.add_argument("--payloads", help="comma-separated payload sizes in bytes (>= 8)")
    parser.add_argument("--batches", help="comma-separated batch sizes")
    parser.add_argument("--duration", type=float,
                        help=f"seconds of each throughput run; latency runs last twice as "
                             f"long (default {DEFAULT_DURATION}, {QUICK_DURATION} with --quick)")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                        help=f"throughput runs per link and case, best kept (default {DEFAULT_REPEATS})")
    parser.add_argument("--no-micro", action="store_true", help="skip the micro-benchmark")
    parser.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    args = parser.parse_args(argv)
    args.links = [link.strip() for link in args.links.split(",") if link.strip()]
    unknown = set(args.links) - set(LINKS)
    if unknown or not args.links:
        parser.error(f"unknown links {sorted(unknown)}; choose from {', '.join(LINKS)}")
    args.cases = choose_cases(args, parser)
    if args.repeats < 1 or (args.duration is not None and args.duration <= 0):
        parser.error("--repeats and --duration must be positive")
    if args.duration is None:
        args.duration = QUICK_DURATION if args.quick else DEFAULT_DURATION
    return args


def choose_cases(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[Case]:
    """--payloads/--batches give a grid; otherwise --quick's subset or the full grid."""
    def ints(text: str | None, default: Sequence[int]) -> list[int]:
        try:
            return [int(x) for x in text.split(",")] if text else list(default)
        except ValueError:
            parser.error(f"not a list of integers: {text!r}")

    if args.quick and not (args.payloads or args.batches):
        return [Case(p, b) for p, b in QUICK_CASES]
    payloads, batches = ints(args.payloads, DEFAULT_PAYLOADS), ints(args.batches, DEFAULT_BATCHES)
    if min(payloads) < 8 or min(batches) < 1:
        parser.error("payloads need 8 bytes for the latency stamp; batches at least 1 message")
    return [Case(p, b) for p, b in product(payloads, batches)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole benchmark; returns the JSON document."""
    micro = [] if args.no_micro else micro_benchmark()
    mp = multiprocessing.get_context("spawn")
    pairs = {link: LinkPair(mp, link) for link in args.links}
    cases: list[dict[str, Any]] = []
    try:
        for pair in pairs.values():
            pair.start()
        gc.collect()
        for case in args.cases:
            cases.append(run_case(pairs, case, args.duration, args.repeats))
    finally:
        for pair in pairs.values():
            pair.stop()
    targets = [t for case in cases for t in case["targets"]]
    return {
        "machine": machine_info(),
        "command": " ".join(["python", "scripts/bench_transport.py", *sys.argv[1:]]),
        "settings": {"links": args.links, "duration": args.duration, "repeats": args.repeats,
                     "latency_load": LATENCY_LOAD, "latency_rate_cap": LATENCY_RATE_CAP},
        "cases": cases,
        "micro": micro,
        "all_delivered": all(r[k]["delivered"] for c in cases for r in c["links"].values()
                             for k in ("throughput", "latency")),
        "targets_met": all(t["met"] for t in targets),
        "targets": targets,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report = run(args)
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    print(results_table(report["cases"], args.links))
    if report["micro"]:
        print()
        print(micro_table(report["micro"]))
    for target in report["targets"]:
        verdict = "met" if target["met"] else "MISSED"
        print(f"{verdict:>6}: {target['target']}: {target['case']} {target['link']} "
              f"{target['ratio']:.2f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
    if not report["all_delivered"]:
        print("messages were lost: sent and received counts differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
