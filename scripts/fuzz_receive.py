#!/usr/bin/env python
"""Coverage-guided fuzzing (atheris) of a worker's receive path, without sockets.

One input is a frame as a peer would send it. It goes through what a worker does
with it: `decode_frame` (refusals are `FrameError`), routing by task id as
`Worker._receive_loop` does (tasks not in this worker are refused), then per message
`decode_tuples` and `WorkerState.make_tuples` against the real topology and assignment
of tests/runtime/project/topologies/cluster_ids.py on two workers (refusals are
`MalformedTuple`), then for system streams `check_system_tuple` and the acker /
spout bookkeeping the executors would run. Anything else raised is a bug: atheris
stops and writes the input to ``crash-*``.

Half of the inputs are made valid frames around a fuzzed tuple payload, so that
the fuzzer spends its time past the frame decoder too.

Not part of the test suite (tests/runtime/test_receive_fuzz.py has the hypothesis
properties and the end-to-end attack). Needs atheris (``pip install atheris``; a
wheel exists for CPython 3.11 on x86-64 Linux):

    python scripts/fuzz_receive.py -max_total_time=60
    python scripts/fuzz_receive.py --seconds 60        # the same
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

try:
    import atheris
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("fuzz_receive.py needs atheris: pip install atheris")

with atheris.instrument_imports():
    import msgpack

    from storm_zmq.config import DEFAULTS
    from storm_zmq.messaging.base import TaskMessage
    from storm_zmq.messaging.wire import FrameError, decode_frame, encode_batch
    from storm_zmq.runtime.acking import ACKER_INIT_STREAM_ID, AckerState, SpoutPending
    from storm_zmq.runtime.assignment import ACKER, WorkerSlot, acker_executors, assign
    from storm_zmq.runtime.serialization import MalformedTuple, decode_tuples
    from storm_zmq.runtime.worker import WorkerState
    from storm_zmq.topology import load_topology

TOPOLOGY = REPO / "tests" / "runtime" / "project" / "topologies" / "cluster_ids.py"
MAX_FRAME = 1 << 20


def make_state() -> WorkerState:
    definition = load_topology(TOPOLOGY).definition()
    conf = {**DEFAULTS, "test.count": 10, "test.output_dir": "/nonexistent"}
    parallelism = definition.parallelism
    slots = [WorkerSlot("127.0.0.1", 1), WorkerSlot("127.0.0.1", 2)]
    return WorkerState(conf, definition, assign("fuzz", parallelism, slots,
                                                acker_executors(conf, 2)), 0)


STATE = make_state()
TASKS = sorted(STATE.assignment.task_component)


def receive(frame: bytes) -> None:
    """What a worker does with one frame; only the documented refusals may raise."""
    try:
        messages = decode_frame(frame, MAX_FRAME)
    except FrameError as exc:
        assert exc.kind in ("oversized", "version", "malformed"), exc.kind
        return
    for message in messages:
        if STATE.task_location.get(message.task, -1) < 0:
            continue  # refused as unknown_task (or a control message)
        target = STATE.assignment.task_component[message.task]
        try:
            source, stream, roots, batch = decode_tuples(message.message)
            STATE.make_tuples(source, stream, roots, batch, message.task)  # checks system tuples too
            if stream.startswith("__"):
                for values in batch:
                    if target == ACKER:
                        acker = AckerState(30)
                        if stream == ACKER_INIT_STREAM_ID:
                            acker.init(*values)
                        elif len(values) == 2:
                            acker.ack(*values)
                        else:
                            acker.fail(values[0])
                    else:
                        SpoutPending(30).ack(values[0])
        except MalformedTuple:
            continue


def one_input(data: bytes) -> None:
    provider = atheris.FuzzedDataProvider(data)
    if provider.ConsumeBool():
        receive(provider.ConsumeBytes(provider.remaining_bytes()))
        return
    # a valid frame carrying a fuzzed payload for a task of worker 0
    task = TASKS[provider.ConsumeIntInRange(0, len(TASKS) - 1)]
    if provider.ConsumeBool():
        payload = provider.ConsumeBytes(provider.remaining_bytes())
    else:  # a well-formed payload of one to three tuples with fuzzed fields
        source = provider.ConsumeIntInRange(-2, 12)
        stream = provider.PickValueInList(
            ["default", "nope", "__ack_init", "__ack_ack", "__ack_fail", "__tick", ""])
        batch, roots = [], []
        for _ in range(provider.ConsumeIntInRange(1, 3)):
            batch.append([provider.PickValueInList([0, 1, -1, 2**64 - 1, 2**64, "x", None, [1], {"a": 1}])
                          for _ in range(provider.ConsumeIntInRange(0, 4))])
            roots.append(None if provider.ConsumeBool() else {provider.ConsumeIntInRange(0, 2**64 - 1):
                                                              provider.ConsumeIntInRange(0, 2**64 - 1)})
        try:
            payload = msgpack.packb([batch, source, stream, roots if any(roots) else None])
        except (OverflowError, TypeError, ValueError):
            return
    frames = encode_batch([TaskMessage(task, payload)], 1 << 18, MAX_FRAME)
    receive(bytes(frames[0][0]))


def main() -> None:
    argv = list(sys.argv)
    if "--seconds" in argv:  # a friendlier spelling of -max_total_time
        at = argv.index("--seconds")
        argv[at:at + 2] = [f"-max_total_time={int(float(argv[at + 1]))}"]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
