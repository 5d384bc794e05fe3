"""The batch frame codec: exact format, splitting, and that no input crashes decode."""

from __future__ import annotations

import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_zmq.messaging import MessageTooLarge, TaskMessage
from storm_zmq.messaging.wire import (
    VERSION,
    BatchEncoder,
    FrameError,
    FrameParts,
    check_messages,
    decode_frame,
    encode_batch,
    max_payload_size,
)

BIG = 1 << 24

task_ids = st.integers(min_value=-(2**31), max_value=2**31 - 1)
messages = st.lists(st.builds(TaskMessage, task_ids, st.binary(max_size=300)), max_size=50)


def roundtrip(batch: list[TaskMessage], target: int = BIG, limit: int = BIG) -> list[TaskMessage]:
    out: list[TaskMessage] = []
    for frame, count in encode_batch(batch, target, limit):
        decoded = decode_frame(bytes(frame), limit)
        assert len(decoded) == count
        out += decoded
    return out


def test_frame_layout_is_version_byte_then_tasks_blob_and_payloads() -> None:
    [(frame, count)] = encode_batch([TaskMessage(1, b"a"), TaskMessage(-2, b"")], BIG, BIG)
    data = bytes(frame)
    assert count == 2
    assert data[0] == VERSION == 1
    blob, payloads = msgpack.unpackb(data[1:])
    assert blob == struct.pack("<ii", 1, -2)
    assert payloads == [b"a", b""]


@given(messages)
def test_roundtrip_preserves_every_message(batch: list[TaskMessage]) -> None:
    decoded = roundtrip(batch)
    assert decoded == batch
    assert all(type(m) is TaskMessage for m in decoded)


@given(messages, st.integers(min_value=64, max_value=2000))
def test_split_frames_respect_target_and_keep_order(batch: list[TaskMessage], target: int) -> None:
    frames = encode_batch(batch, target, BIG)
    for frame, count in frames:
        assert len(frame) <= target or count == 1
    assert roundtrip(batch, target) == batch


def test_a_single_message_larger_than_target_travels_alone() -> None:
    batch = [TaskMessage(1, b"s"), TaskMessage(2, b"L" * 5000), TaskMessage(3, b"s")]
    frames = encode_batch(batch, 1000, BIG)
    assert [count for _, count in frames] == [1, 1, 1]
    assert roundtrip(batch, 1000) == batch


def test_message_above_max_frame_size_is_refused_before_anything_is_encoded() -> None:
    batch = [TaskMessage(1, b"ok"), TaskMessage(2, b"x" * 2000)]
    with pytest.raises(MessageTooLarge, match="message 1 of the batch is 2000 bytes"):
        encode_batch(batch, 500, 1000)


@pytest.mark.parametrize("batch_of", [1, 2])  # a single message has its own fast path
def test_max_payload_size_is_the_largest_payload_a_frame_carries(batch_of: int) -> None:
    limit = max_payload_size(1000)
    fits = [TaskMessage(1, b"x" * limit)] + [TaskMessage(2, b"")] * (batch_of - 1)
    assert roundtrip(fits, 500) == fits  # the runtime's check (Context.max_message_size)
    with pytest.raises(MessageTooLarge):
        encode_batch([TaskMessage(1, b"x" * (limit + 1))] * batch_of, 500, 1000)


def test_iterables_and_empty_batches_are_accepted() -> None:
    assert encode_batch([], BIG, BIG) == []
    assert roundtrip(iter([TaskMessage(5, b"g")])) == [TaskMessage(5, b"g")]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("batch", "error"),
    [
        ([TaskMessage(2**31, b"x")], "task id must be an int32 integer, got 2147483648"),
        ([TaskMessage("1", b"x")], "task id must be an int32 integer, got '1'"),  # type: ignore[arg-type]
        ([TaskMessage(1, "text")], "must be bytes, got str"),  # type: ignore[arg-type]
        ([(1, b"x", 3)], "every message must be a TaskMessage"),
        ([5], "every message must be a TaskMessage"),
        # the same mistakes inside a batch (another code path than a single message)
        ([TaskMessage(1, b"ok"), TaskMessage(-(2**31) - 1, b"x")], "task id must be an int32"),
        ([TaskMessage(1, b"ok"), TaskMessage(1.5, b"x")], "task id must be an int32 integer, got 1.5"),  # type: ignore[arg-type]
        ([TaskMessage(1, b"ok"), TaskMessage(1, bytearray(b"x"))], "must be bytes, got bytearray"),  # type: ignore[arg-type]
        ([TaskMessage(1, b"ok"), (1, b"x", 3)], "every message must be a TaskMessage"),
        ([TaskMessage(1, b"ok"), (1,)], "every message must be a TaskMessage"),
        ([TaskMessage(1, b"ok"), 5], "every message must be a TaskMessage"),
    ],
)
def test_invalid_messages_raise_type_error_naming_the_problem(batch: list, error: str) -> None:
    with pytest.raises(TypeError, match=error):
        encode_batch(batch, BIG, BIG)
    with pytest.raises(TypeError, match=error):  # the same checks without encoding (local)
        check_messages(batch)


@pytest.mark.parametrize(
    ("frame", "kind"),
    [
        (b"", "malformed"),
        (b"\x02" + msgpack.packb([b"", []]), "version"),
        (b"\x01", "malformed"),
        (b"\x01\xc1", "malformed"),
        (b"\x01" + msgpack.packb([b"", []]) + b"extra", "malformed"),
        (b"\x01" + msgpack.packb([b"\x00" * 8, [b"a"]]), "malformed"),
        (b"\x01" + msgpack.packb([b"\x00" * 4, ["str"]]), "malformed"),
        (b"\x01" + msgpack.packb([[1], [b"a"]]), "malformed"),
        (b"\x01" + msgpack.packb({"a": 1}), "malformed"),
        (b"\x01" + msgpack.packb([b"\x00" * 4, [b"a"], 3]), "malformed"),
        (b"\x01" + b"\x00" * 2000, "oversized"),
    ],
)
def test_bad_frames_raise_frame_error_of_their_kind(frame: bytes, kind: str) -> None:
    with pytest.raises(FrameError) as caught:
        decode_frame(frame, 1000)
    assert caught.value.kind == kind


@settings(max_examples=500)
@given(st.binary(max_size=400))
def test_decode_never_raises_anything_but_frame_error_on_random_bytes(data: bytes) -> None:
    try:
        decoded = decode_frame(data, 1 << 16)
    except FrameError:
        return
    assert all(type(m) is TaskMessage and type(m.message) is bytes for m in decoded)


@settings(max_examples=300)
@given(messages, st.data())
def test_decode_survives_every_truncation_and_byte_flip(batch: list[TaskMessage], data) -> None:
    [(frame, _)] = encode_batch(batch, BIG, BIG) or [(memoryview(b"\x01\x92\xc4\x00\x90"), 0)]
    raw = bytearray(frame)
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    flip = data.draw(st.integers(min_value=0, max_value=max(0, len(raw) - 1)))
    for candidate in (bytes(raw[:cut]), bytes(raw[:flip]) + bytes([raw[flip] ^ 0xFF]) + bytes(raw[flip + 1 :])):
        try:
            decode_frame(candidate, BIG)
        except FrameError:
            pass


@pytest.mark.parametrize(
    "sizes",
    [[4096] * 3, [70_000, 5000], [65_535, 65_536, 4096], [5000] * 16, [4096] * 20,
     [9000] * 17 + [300], [1 << 20], [5000], [300] * 3, [100]],
)
def test_a_scattering_encoder_frames_the_same_bytes(sizes: list[int]) -> None:
    batch = [TaskMessage(i, bytes([i % 251]) * size) for i, size in enumerate(sizes)]
    packed = encode_batch(batch, 300_000, 2 << 20)
    scattered = [(bytes(frame), count) for frame, count in
                 BatchEncoder(300_000, 2 << 20, scatter=True).encode(batch)]
    assert scattered == packed
    assert [m for frame, _ in scattered for m in decode_frame(frame, 2 << 20)] == batch


def test_frame_parts_leave_large_payloads_uncopied() -> None:
    payloads = [bytes(5000), bytes(6000)]
    (frame, count), = BatchEncoder(BIG, BIG, scatter=True).encode(
        [TaskMessage(1, payloads[0]), TaskMessage(2, payloads[1])])
    assert isinstance(frame, FrameParts) and count == 2
    assert frame.buffers[2] is payloads[0] and frame.buffers[4] is payloads[1]
    assert len(frame) == len(bytes(frame))
