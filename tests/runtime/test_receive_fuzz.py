"""Hostile input on a worker's receive path.

The path: transport frame -> `decode_frame` (refused frames counted by the
transport, by kind) -> `Worker._receive_loop` routes each message by task (unknown
and negative tasks counted as ``unknown_task``) -> the executor decodes the payload
(`decode_tuples`) and checks it against the topology (`WorkerState.make_tuples`;
refused tuples counted as ``tuple`` and as the component's ``malformed``).

Three layers of tests:

* hypothesis properties over the pure pieces with the fixture project's real
  topology and assignment: any payload either becomes a `Tuple` that fits the
  topology or raises `MalformedTuple`, never anything else; `check_system_tuple`
  accepts only values the acker and spout bookkeeping can take;
* executors fed hostile system-stream tuples in-process (real executor threads):
  the executor must count and drop them, not die;
* a real local run (2 worker processes) while a hostile client writes a mix of
  garbage, truncated, oversized, wrong-version, unknown-task, negative-task,
  wrong-arity and non-msgpack input straight to a worker's port, for the zmq and
  the tcp transport: every good tuple still arrives, no worker dies, every kind is
  counted exactly in the worker's stats and the run summary, and the log says each
  kind once per interval, not once per message.
"""

from __future__ import annotations

import ast
import io
import re
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storm_zmq.component import Tuple
from storm_zmq.config import DEFAULTS
from storm_zmq.messaging.base import TaskMessage
from storm_zmq.messaging.wire import VERSION, FrameError, decode_frame, encode_batch
from storm_zmq.runtime.acking import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    AckerState,
    SpoutPending,
)
from storm_zmq.runtime.assignment import Assignment, WorkerSlot, acker_executors, assign
from storm_zmq.runtime.backpressure import BACKPRESSURE_TASK
from storm_zmq.runtime.executor import new_executor
from storm_zmq.runtime.local import RunOptions, run_local
from storm_zmq.runtime.serialization import (
    MalformedTuple,
    check_system_tuple,
    check_system_tuples,
    decode_tuples,
    encode_tuple,
)
from storm_zmq.runtime.worker import WorkerState
from storm_zmq.topology import load_topology
from tests.cluster.test_cluster import sink_ids
from tests.messaging.conftest import free_port

PROJECT = Path(__file__).parent / "project"
TOPOLOGY = PROJECT / "topologies" / "cluster_ids.py"
U64 = 2**64 - 1
SYSTEM_STREAMS = [ACKER_INIT_STREAM_ID, ACKER_ACK_STREAM_ID, ACKER_FAIL_STREAM_ID]


def topology_assignment(
    ports: list[int], output_dir: str = "/nonexistent"
) -> tuple[Any, Assignment, dict[str, Any]]:
    """cluster_ids.py (numbers -> relay -> sink, par 2 each, acking on) assigned to
    len(ports) workers exactly as `run_local` assigns it."""
    definition = load_topology(TOPOLOGY).definition()
    conf = {**DEFAULTS, "test.count": 10, "test.output_dir": output_dir}
    parallelism = {name: (c.par, c.num_tasks) for name, c in definition.components.items()}
    slots = [WorkerSlot("127.0.0.1", p) for p in ports]
    assignment = assign("fuzz-1", parallelism, slots, acker_executors(conf, len(ports)))
    return definition, assignment, conf


@pytest.fixture(scope="module")
def state() -> WorkerState:
    definition, assignment, conf = topology_assignment([1, 2])
    return WorkerState(conf, definition, assignment, 0)


# -- pure: decode_tuples + make_tuples ----------------------------------------------------

values_strategy = st.lists(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), U64), st.floats(allow_nan=False),
              st.text(max_size=8), st.binary(max_size=8), st.lists(st.integers(-(2**63), U64), max_size=3)),
    max_size=5,
)
payload_fields = st.tuples(
    st.one_of(st.integers(-3, 12), st.integers(-(2**63), U64)),  # source task: valid ones are 1..8
    st.one_of(st.sampled_from(["default", "nope", "", "__x", "__tick", *SYSTEM_STREAMS]),
              st.text(max_size=10)),
    st.one_of(st.none(), st.dictionaries(st.integers(1, U64), st.integers(0, U64), max_size=3)),
    values_strategy,
)
root_pairs = st.lists(st.one_of(st.integers(-(2**63), U64), st.none(), st.text(max_size=2)),
                      min_size=1, max_size=6)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload_fields, st.integers(1, 8))
def test_well_formed_payloads_become_tuples_of_the_topology_or_malformed(
    state: WorkerState, fields: tuple[int, str, dict[int, int] | None, list[Any]], target: int
) -> None:
    source, stream, roots, values = fields
    payload = msgpack.packb([[values, values], source, stream, None if roots is None else [roots, None]])
    try:
        tups = state.make_tuples(*decode_tuples(payload), target)
    except MalformedTuple:
        return
    assert len(tups) == 2 and all(isinstance(tup, Tuple) for tup in tups)
    component = state.assignment.task_component[source]
    for tup in tups:
        assert tup.component == component and tup.task == source and tup.stream == stream
        if not stream.startswith("__"):
            assert len(tup.values) == len(state.definition.components[component].outputs[stream].fields)
    assert tups[1].id is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload_fields, root_pairs, st.integers(1, 8))
def test_root_pairs_become_one_tree_ids_or_malformed(
    state: WorkerState, fields: tuple[int, str, Any, list[Any]], pairs: list[Any], target: int
) -> None:
    """The pairs form ([root, edge, ...], two ids a tuple), on any stream, system
    ones included: one-tree ids in the tuples, or MalformedTuple."""
    source, stream, _, values = fields
    payload = msgpack.packb([[values, values], source, stream, pairs])
    try:
        tups = state.make_tuples(*decode_tuples(payload), target)
    except MalformedTuple:
        return
    assert len(pairs) == 4 and all(type(i) is int for i in pairs)
    assert [(tup.id.root, tup.id.edge) for tup in tups] == [(pairs[0], pairs[1]), (pairs[2], pairs[3])]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=80), st.integers(1, 8))
def test_any_bytes_become_tuples_or_malformed(state: WorkerState, payload: bytes, target: int) -> None:
    try:
        state.make_tuples(*decode_tuples(payload), target)
    except MalformedTuple:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(1, 1 << 20))
def test_any_frame_decodes_or_raises_frame_error_of_a_documented_kind(
    frame: bytes, limit: int
) -> None:
    try:
        messages = decode_frame(frame, limit)
    except FrameError as exc:
        assert exc.kind in {"oversized", "version", "malformed"}
        return
    assert all(type(m.task) is int and type(m.message) is bytes for m in messages)


# -- pure: the system streams ------------------------------------------------------------


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from([*SYSTEM_STREAMS, "__ack_reset_timeout", "__tick", "__x"]),
    st.integers(1, 8),
    st.lists(st.one_of(st.integers(-5, 5), st.integers(-(2**64), 2**65), st.text(max_size=2),
                       st.lists(st.integers(), max_size=2), st.none(), st.floats()), max_size=4),
    st.booleans(), st.booleans(),
)
def test_system_tuples_that_pass_the_check_are_safe_for_acker_and_spout(
    stream: str, source: int, values: list[Any], from_acker: bool, to_acker: bool
) -> None:
    try:
        check_system_tuple(stream, source, values, from_acker=from_acker, to_acker=to_acker)
    except MalformedTuple:
        return
    # What the acker and spout executors do with such a tuple must not raise.
    if to_acker:
        acker = AckerState(30)
        if stream == ACKER_INIT_STREAM_ID:
            outcome = acker.init(values[0], values[1], values[2])
            assert outcome is None or outcome.spout_task == source
        elif stream == ACKER_ACK_STREAM_ID:
            acker.ack(values[0], values[1])
        else:
            acker.fail(values[0])
    else:
        pending = SpoutPending(30)
        assert (pending.ack if stream == ACKER_ACK_STREAM_ID else pending.fail)(values[0]) is None


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from([*SYSTEM_STREAMS, "__tick"]),
    st.lists(st.one_of(
        st.lists(st.one_of(st.integers(-5, 5), st.integers(-(2**64), 2**65), st.booleans(),
                           st.sampled_from([3, 4]), st.text(max_size=2), st.none(), st.floats()),
                 max_size=4),
        st.tuples(st.integers(0, 2**64), st.integers(-1, 2**64)).map(list),
        st.tuples(st.integers(1, 9), st.integers(0, 9), st.sampled_from([3, 4])).map(list)),
        min_size=1, max_size=5),
    st.booleans(), st.booleans(),
)
def test_the_batch_check_admits_only_what_the_check_of_each_tuple_admits(
    stream: str, batch: list[Any], from_acker: bool, to_acker: bool,
) -> None:
    """`check_system_tuples` (make_tuples' check of a system batch, each field for
    the whole batch at once) passes exactly the batches every tuple of which
    check_system_tuple admits, and otherwise raises what it raises for the first
    tuple it refuses."""
    def outcome(check: Any) -> str | None:
        try:
            check()
        except MalformedTuple as exc:
            return str(exc)
        return None

    def each() -> None:
        for values in batch:
            check_system_tuple(stream, 3, values, from_acker=from_acker, to_acker=to_acker)

    assert outcome(lambda: check_system_tuples(
        stream, 3, batch, from_acker=from_acker, to_acker=to_acker)) == outcome(each)


def test_acker_acks_from_another_worker_become_tuples_and_bad_ones_say_why(state: WorkerState) -> None:
    acker = min(t for t, c in state.assignment.task_component.items() if c == "__acker")
    relay = min(t for t, c in state.assignment.task_component.items() if c == "relay")
    good = state.make_tuples(relay, ACKER_ACK_STREAM_ID, None, [[5, 0], [U64, U64]], acker)
    assert [(tup.id, tup.component, tup.stream, tup.task, tup.values) for tup in good] == [
        (None, "relay", ACKER_ACK_STREAM_ID, relay, [5, 0]),
        (None, "relay", ACKER_ACK_STREAM_ID, relay, [U64, U64])]
    with pytest.raises(MalformedTuple, match="root id 0 is out of range"):
        state.make_tuples(relay, ACKER_ACK_STREAM_ID, None, [[5, 0], [0, 1]], acker)


@pytest.mark.parametrize(
    ("stream", "values", "from_acker", "to_acker"),
    [
        (ACKER_INIT_STREAM_ID, [5, 0, 3], False, True),
        (ACKER_ACK_STREAM_ID, [5, U64], False, True),
        (ACKER_FAIL_STREAM_ID, [5], False, True),
        (ACKER_ACK_STREAM_ID, [U64], True, False),
        (ACKER_FAIL_STREAM_ID, [1], True, False),
    ],
)
def test_what_the_runtime_sends_passes_the_system_check(
    stream: str, values: list[int], from_acker: bool, to_acker: bool
) -> None:
    check_system_tuple(stream, 3, values, from_acker=from_acker, to_acker=to_acker)


@pytest.mark.parametrize(
    ("stream", "values", "from_acker", "to_acker", "message"),
    [
        (ACKER_ACK_STREAM_ID, [], False, True, "0 values on system stream '__ack_ack'"),
        (ACKER_ACK_STREAM_ID, ["a", "b"], False, True, "root is not an integer"),
        (ACKER_ACK_STREAM_ID, [0, 1], False, True, "root id 0 is out of range"),
        (ACKER_ACK_STREAM_ID, [1, -1], False, True, "ack value -1 is out of range"),
        (ACKER_ACK_STREAM_ID, [True, 1], False, True, "root is not an integer"),
        (ACKER_INIT_STREAM_ID, [5, 0, 999], False, True, "names spout task 999 but comes from task 3"),
        (ACKER_ACK_STREAM_ID, [[1]], True, False, "root is not an integer"),
        (ACKER_INIT_STREAM_ID, [5], True, False, "is not sent from an acker"),
        ("__tick", [1], False, True, "is not sent to an acker"),
        (ACKER_ACK_STREAM_ID, [5, 0], False, False, "neither comes from nor goes to an acker"),
        (ACKER_ACK_STREAM_ID, [5, 0], True, True, "between two ackers"),
    ],
)
def test_wrong_system_tuples_are_malformed_and_say_why(
    stream: str, values: list[Any], from_acker: bool, to_acker: bool, message: str
) -> None:
    with pytest.raises(MalformedTuple, match=re.escape(message)):
        check_system_tuple(stream, 3, values, from_acker=from_acker, to_acker=to_acker)


# -- executors fed hostile system tuples (in-process threads) -------------------------------


def _run_executor(
    component: str, payloads: list[bytes], output_dir: Path
) -> tuple[Any, WorkerState]:
    """Start the real executor of `component` in worker 0 of a fresh WorkerState,
    feed it `payloads` (as remote tuples for its task) and a good one after them,
    and return it once it handled them all or failed."""
    definition, assignment, conf = topology_assignment([1, 2], str(output_dir))
    state = WorkerState(conf, definition, assignment, 0)
    ex = next(e for e in state.local_executors if e.component == component)
    executor = new_executor(state, ex)
    executor.start()
    task = ex.tasks[0]
    state.queues[ex.index].put([(task, p) for p in payloads])
    deadline = time.monotonic() + 5
    while (
        time.monotonic() < deadline and not state.failed.is_set()
        and executor.malformed + executor.executed < len(payloads)
    ):
        time.sleep(0.01)
    executor.stop_requested.set()
    state.stopping.set()
    executor.join(5)
    return executor, state


def _system(source: int, stream: str, values: list[Any]) -> bytes:
    return msgpack.packb([source, stream, None, values])


# Task ids of cluster_ids.py on two workers: ackers 1 (worker 0) and 2, numbers 3
# (worker 0) and 4, relay 5 (worker 0) and 6, sink 7 (worker 0) and 8.
HOSTILE_SYSTEM_TUPLES = {
    "__acker": [
        _system(5, ACKER_ACK_STREAM_ID, []),                 # IndexError in the acker
        _system(5, ACKER_ACK_STREAM_ID, ["a", "b"]),         # TypeError: int ^= str
        _system(3, ACKER_INIT_STREAM_ID, [7, 0, 999]),       # completes; reply to task 999: KeyError
        _system(5, ACKER_INIT_STREAM_ID, [7, 0, 5]),         # a bolt's init: the reply would reach its process()
        _system(5, ACKER_FAIL_STREAM_ID, [[1]]),             # unhashable root
    ],
    "numbers": [
        _system(2, ACKER_ACK_STREAM_ID, []),                 # IndexError in the spout
        _system(2, ACKER_FAIL_STREAM_ID, [[1]]),             # unhashable root
    ],
    "relay": [
        _system(3, ACKER_ACK_STREAM_ID, [1, 2]),             # a bolt's process() sees it
        _system(3, "__anything", [1]),
    ],
}


@pytest.mark.parametrize("component", sorted(HOSTILE_SYSTEM_TUPLES))
def test_hostile_system_tuples_are_counted_not_fatal(component: str, tmp_path: Path) -> None:
    """Bug (runtime/worker.py, then make_tuple): system-stream tuples skip every check, so
    these kill the executor, and with it the worker. See check_system_tuple."""
    payloads = HOSTILE_SYSTEM_TUPLES[component]
    executor, state = _run_executor(component, payloads, tmp_path)
    assert executor.failure is None, f"{component} executor died:\n{executor.failure}"
    assert executor.malformed == len(payloads)
    assert state.refused.counts["tuple"] == len(payloads)


# -- a real local run under attack ----------------------------------------------------------

COUNT = 3000
RATE = 500  # ids per second per spout task: the run lasts about 3 s
MAX_FRAME = 1 << 20


class Attack:
    """What the hostile client sends, and how each kind must be counted."""

    def __init__(self, assignment: Assignment) -> None:
        def tasks_of(component: str, worker: int) -> list[int]:
            return [t for e in assignment.executors if e.component == component
                    and e.worker == worker for t in e.tasks]

        relay = tasks_of("relay", 0)[0]
        numbers = tasks_of("numbers", 0)[0]
        other_worker = tasks_of("relay", 1)[0]
        good = [1, "text"]
        # (task, payload): tasks not in worker 0 -> unknown_task
        self.unknown = [TaskMessage(t, encode_tuple(numbers, "default", None, good, "x"))
                        for t in (9999, -7, 2**31 - 1, -(2**31), other_worker)]
        # -1 is the reserved task of control messages (backpressure statuses): one
        # that does not decode is refused as "control"
        self.control = [TaskMessage(BACKPRESSURE_TASK, p)
                        for p in (b"\xc1", msgpack.packb([1, 2, 3]), self.unknown[0].message)]
        # tuples for a task of worker 0 that the executor refuses -> tuple / malformed
        self.bad_tuples = [TaskMessage(relay, p) for p in (
            encode_tuple(numbers, "default", None, [1], "x"),            # arity 1, not 2
            encode_tuple(numbers, "default", None, [1, "a", 3], "x"),    # arity 3
            encode_tuple(numbers, "nope", None, good, "x"),              # undeclared stream
            encode_tuple(999, "default", None, good, "x"),               # unknown source task
            b"\xc1\xc1\xc1",                                             # not msgpack
            msgpack.packb({"not": "a tuple"}),
            b"",
        )]
        body = encode_batch(self.unknown, 1 << 18, MAX_FRAME)[0][0]
        self.version_frames = [bytes([VERSION + 1]) + body[1:], b"\x00", b"\xff" * 10]
        self.malformed_frames = [
            body[: len(body) // 2],                     # truncated inside the body
            bytes([VERSION]) + b"\xc1",                 # version then not msgpack
            bytes([VERSION]) + msgpack.packb([b"\x01\x00\x00\x00", []]),  # 1 task, 0 payloads
            bytes([VERSION]) + msgpack.packb("text"),
            b"",                                        # empty frame
        ]
        self.good_frames = [bytes(frame) for frame, _ in encode_batch(
            self.unknown + self.control + self.bad_tuples, 1 << 18, MAX_FRAME)]
        # an oversized frame: if it were delivered it would add to unknown_task
        self.oversized = encode_batch([TaskMessage(9999, b"x" * (MAX_FRAME + 10))], 1 << 18, 4 * MAX_FRAME)[0][0]

    #: Rounds of the mix, sent while the topology runs.
    rounds = 5

    def frames(self) -> Iterator[bytes]:
        """One round: garbage and good frames interleaved."""
        bad = self.version_frames + self.malformed_frames
        for index, frame in enumerate(bad):
            yield frame
            if index < len(self.good_frames):
                yield self.good_frames[index]

    def expected(self) -> dict[str, int]:
        return {
            "unknown_task": self.rounds * len(self.unknown),
            "control": self.rounds * len(self.control),
            "tuple": self.rounds * len(self.bad_tuples),
            "version": self.rounds * len(self.version_frames),
            "malformed": self.rounds * len(self.malformed_frames),
        }


def attack_zmq(port: int, attack: Attack) -> None:
    context = zmq.Context()
    try:
        push = context.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 5000)
        push.connect(f"tcp://127.0.0.1:{port}")
        for _ in range(attack.rounds):
            for frame in attack.frames():
                push.send(frame)
            time.sleep(0.1)
        # oversized: libzmq cuts this peer off (MAXMSGSIZE); a socket of its own
        big = context.socket(zmq.PUSH)
        big.setsockopt(zmq.LINGER, 5000)
        big.connect(f"tcp://127.0.0.1:{port}")
        big.send(attack.oversized)
        # a peer that does not speak ZMTP at all
        with socket.create_connection(("127.0.0.1", port)) as raw:
            raw.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)))
            time.sleep(0.2)
        push.close()
        big.close()
    finally:
        context.term()


def attack_tcp(port: int, attack: Attack) -> None:
    def prefixed(frame: bytes) -> bytes:
        return struct.pack("!I", len(frame)) + frame

    with socket.create_connection(("127.0.0.1", port)) as conn:
        for _ in range(attack.rounds):
            conn.sendall(b"".join(prefixed(f) for f in attack.frames()))
            time.sleep(0.1)
    # oversized length prefix: refused before allocation, connection closed
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(prefixed(attack.oversized)[:4096])
        time.sleep(0.2)
    # random-looking garbage: "GET " read as a length prefix of 1.2 GB -> oversized
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\n\r\n")
        time.sleep(0.2)
    # truncated: the connection ends inside a frame
    with socket.create_connection(("127.0.0.1", port)) as conn:
        frame = attack.good_frames[0]
        conn.sendall(prefixed(frame)[: 4 + len(frame) // 2])
    time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["zmq", "tcp"])
def test_a_worker_under_hostile_input_keeps_delivering_and_counts_each_kind(
    tmp_path: Path, transport: str, capfd: pytest.CaptureFixture[str]
) -> None:
    ports = [free_port(), free_port()]
    _definition, assignment, _conf = topology_assignment(ports)
    attack = Attack(assignment)
    attacker: list[threading.Thread] = []
    errors: list[BaseException] = []

    attacked = tmp_path / "attacked"  # the spouts go on until the attack is counted
    expected = attack.expected()
    worker_kinds = {k: expected[k] for k in ("unknown_task", "control", "tuple")}

    def counted(report: dict[str, Any]) -> bool:
        stats = report.get("transport", {})
        return (report.get("refused") == worker_kinds
                and stats.get("refused_malformed") == expected["malformed"]
                and (stats.get("refused_truncated") == 1 if transport == "tcp"
                     else stats.get("disconnects", 0) >= 1))

    def on_started(stats: Any) -> None:
        def run() -> None:
            try:
                (attack_zmq if transport == "zmq" else attack_tcp)(ports[0], attack)
                deadline = time.monotonic() + 30
                while not counted(stats.latest.get(0, {})) and time.monotonic() < deadline:
                    time.sleep(0.05)  # poll the live reports, with a deadline
            except BaseException as exc:  # reported by the test, not lost in a thread
                errors.append(exc)
            finally:
                attacked.touch()

        thread = threading.Thread(target=run, name="attacker", daemon=True)
        attacker.append(thread)
        thread.start()

    out = io.StringIO()
    options = RunOptions(
        topology_file=str(TOPOLOGY), conf=dict(DEFAULTS), workers=2, transport=transport,
        progress=False, on_started=on_started,
        overrides={
            "supervisor.slots.ports": ports, "test.output_dir": str(tmp_path),
            "test.count": COUNT, "test.rate": RATE, "test.exhausted_after": str(attacked),
            f"storm.messaging.{transport}.max.frame.size": MAX_FRAME,
        },
    )
    result = run_local(options, out)
    attacker[0].join(10)
    assert not attacker[0].is_alive(), "the attack did not end"
    assert not errors, errors
    summary = out.getvalue()
    assert result.exit_code == 0, summary + capfd.readouterr().err
    assert "every spout is exhausted" in summary

    # every good tuple arrived
    assert set(sink_ids(tmp_path)) == set(range(COUNT))

    # every kind counted exactly, in worker 0's stats
    report = result.stats.latest[0]
    assert report["refused"] == worker_kinds
    assert report["components"]["relay"]["malformed"] == expected["tuple"]
    stats = report["transport"]
    assert stats["refused_malformed"] == expected["malformed"]
    if transport == "tcp":
        assert stats["refused_version"] == expected["version"]
        assert stats["refused_oversized"] == 2
        assert stats["refused_truncated"] == 1
    else:
        # HTTP either fails the ZMTP handshake or arrives as ZMTP 1.0 frames that
        # fail the version check (docs/wire-format.md)
        extra = stats.get("refused_handshake", 0) + stats["refused_version"] - expected["version"]
        assert extra >= 1
        assert stats["disconnects"] >= 1  # the oversized sender was cut off
    # worker 1 saw none of it
    assert not result.stats.latest[1]["refused"]

    # the run summary shows what was dropped
    dropped = re.search(r"dropped input: (\{.*?\}), malformed tuples: (\d+)", summary)
    assert dropped is not None, summary
    transport_kinds = {key[len("refused_"):]: n for key, n in stats.items()
                       if key.startswith("refused_") and n}
    assert ast.literal_eval(dropped[1]) == {**worker_kinds, **transport_kinds}
    assert int(dropped[2]) == expected["tuple"]

    # the log: one line per kind per interval (10 s), not one per message
    err = capfd.readouterr().err
    assert len(re.findall(r"worker 0: dropped message for task", err)) == 1
    assert len(re.findall(r"worker 0: dropped payload for task", err)) == 1
    assert len(re.findall(r"worker 0: dropped backpressure status", err)) == 1
    server = f"{transport} server on port {ports[0]}: dropped"
    for kind in ("version", "malformed"):
        assert len(re.findall(re.escape(server) + rf" {kind} frame", err)) == 1, err


@pytest.mark.slow
def test_hostile_system_stream_tuples_do_not_kill_a_running_worker(tmp_path: Path) -> None:
    """Bug, end to end: the tuples of test_hostile_system_tuples_are_counted_not_fatal
    sent to a running worker's port kill it, and the run fails."""
    ports = [free_port(), free_port()]
    _definition, assignment, _conf = topology_assignment(ports)
    task_of = {e.component: e.tasks[0] for e in assignment.executors if e.worker == 0}
    messages = [TaskMessage(task_of[component], payload)
                for component, payloads in HOSTILE_SYSTEM_TUPLES.items() for payload in payloads]
    errors: list[BaseException] = []
    attacked = tmp_path / "attacked"  # the spouts go on until the attack is counted

    def on_started(stats: Any) -> None:
        def run() -> None:
            try:
                context = zmq.Context()
                push = context.socket(zmq.PUSH)
                push.setsockopt(zmq.LINGER, 5000)
                push.connect(f"tcp://127.0.0.1:{ports[0]}")
                for frame, _ in encode_batch(messages, 1 << 18, 1 << 24):
                    push.send(bytes(frame))
                push.close()
                context.term()  # returns once the frames are sent (linger)
                deadline = time.monotonic() + 30
                while (stats.latest.get(0, {}).get("refused", {}).get("tuple") != len(messages)
                       and time.monotonic() < deadline):
                    time.sleep(0.05)  # poll the live reports, with a deadline
            except BaseException as exc:
                errors.append(exc)
            finally:
                attacked.touch()

        threading.Thread(target=run, name="attacker", daemon=True).start()

    out = io.StringIO()
    result = run_local(RunOptions(
        topology_file=str(TOPOLOGY), conf=dict(DEFAULTS), workers=2, progress=False,
        on_started=on_started,
        overrides={"supervisor.slots.ports": ports, "test.output_dir": str(tmp_path),
                   "test.count": COUNT, "test.rate": RATE, "test.exhausted_after": str(attacked)},
    ), out)
    assert not errors, errors
    assert result.exit_code == 0, f"{result.reason}\n{out.getvalue()}"
    assert set(sink_ids(tmp_path)) == set(range(COUNT))
    assert result.stats.latest[0]["refused"].get("tuple") == len(messages)


def test_a_tuple_for_a_task_that_does_not_subscribe_to_its_stream_is_refused(
    state: WorkerState,
) -> None:
    """Well formed, declared stream, right arity, but sent to the wrong bolt: the
    spout's tuples go to relay, never straight to sink."""
    tasks = state.assignment.component_tasks
    numbers, relay, sink = tasks["numbers"][0], tasks["relay"][0], tasks["sink"][0]
    good = msgpack.packb([[[1, "one"]], numbers, "default", None])
    assert state.make_tuples(*decode_tuples(good), relay)[0].values == (1, "one")
    with pytest.raises(MalformedTuple, match="'sink' does not subscribe to stream 'default' of 'numbers'"):
        state.make_tuples(*decode_tuples(good), sink)


def test_one_bad_tuple_refuses_its_whole_payload(state: WorkerState) -> None:
    """A payload comes from one task on one stream: a tuple of the wrong arity among
    good ones means a sender that does not run this topology, and none is taken."""
    tasks = state.assignment.component_tasks
    numbers, relay = tasks["numbers"][0], tasks["relay"][0]
    payload = msgpack.packb([[[1, "one"], [2], [3, "three"]], numbers, "default", None])
    with pytest.raises(MalformedTuple, match="1 values on stream 'default' of 'numbers'"):
        state.make_tuples(*decode_tuples(payload), relay)
