"""The batch frame codec shared by every network transport (docs/wire-format.md).

Pure functions: no sockets, no threads, so every malformed input can be tested.

A frame is the msgpack encoding of the version number (a positive fixint, so
version 1 is the single byte 0x01) followed by the body, the msgpack array
``[tasks, payloads]``: ``tasks`` is a bin of little-endian int32 task ids, one per
message, and ``payloads`` an array of bin, one per message. Task ids travel as one
packed blob because that is both smaller and faster to check than an array of ints.
"""

from __future__ import annotations

import bisect
import struct
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, repeat
from typing import Final, Union

import msgpack

from storm_zmq.messaging.base import MessageTooLarge, TaskMessage, TransportError
from storm_zmq.portable import STRICT

VERSION: Final = 1
#: Worst-case bytes a frame spends besides payload bytes: version, array headers,
#: the task blob's header (fixed part), and per message 4 (task id) + 5 (bin header).
_FRAME_OVERHEAD: Final = 16
_PER_MESSAGE_OVERHEAD: Final = 9
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_BIG_ENDIAN_HOST: Final = sys.byteorder == "big"
_VERSION_BYTE: Final = bytes((VERSION,))
_pack_int32 = struct.Struct("<i").pack
_new_tuple = tuple.__new__


class FrameError(TransportError):
    """A received frame that cannot be delivered. `kind` is a stable counter name:
    ``oversized``, ``version``, ``malformed`` (plus ``truncated`` and ``handshake``
    from the transports that can observe them)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind} frame: {detail}")
        self.kind = kind
        self.detail = detail


class BatchEncoder:
    """Encodes batches into frames, reusing one msgpack buffer per connection.

    Reuse matters: a fresh 256 KiB buffer per frame is handed back to the kernel by
    the allocator and faulted in again on the next batch, which measured 10x slower
    for 16 KiB payloads (docs/benchmarks.md). So a frame is a view of the shared
    buffer, valid until the next frame is requested: send (copy) it first.
    """

    def __init__(self, target_size: int, max_frame_size: int, scatter: bool = False) -> None:
        self.target_size = target_size
        self.max_frame_size = max_frame_size
        #: Yield frames of large payloads as `FrameParts` (for a stream transport's
        #: vectored write) instead of packing them.
        self.scatter = scatter
        self._packer = msgpack.Packer(autoreset=False)
        self._single_packer = msgpack.Packer()

    def encode(self, messages: Iterable[TaskMessage]) -> Iterator[tuple[Frame, int]]:
        """Check and plan the whole batch now, then yield each frame with the
        number of messages it carries, in order.

        Every frame is at most `target_size` bytes unless a single message needs
        more, in which case it travels alone up to `max_frame_size`; a message
        larger than that raises `MessageTooLarge` here, before any frame exists,
        so a caller never sends half a batch because of one bad message. Invalid
        messages (a task id that is not an int32, a payload that is not bytes)
        raise TypeError naming the problem.
        """
        msgs = messages if isinstance(messages, (list, tuple)) else list(messages)
        if len(msgs) == 1:
            return self._single(msgs[0])
        if not msgs:
            return self._frames(b"", (), [])
        task_blob, payloads = _columns(msgs)
        upper_bound = (
            _FRAME_OVERHEAD + _PER_MESSAGE_OVERHEAD * len(payloads) + sum(map(len, payloads))
        )
        if upper_bound <= self.target_size:
            return self._frames(task_blob, payloads, [(0, len(payloads))])
        plan = _plan_split(payloads, self.target_size, self.max_frame_size)
        return self._frames(task_blob, payloads, plan)

    def _single(self, message: TaskMessage) -> Iterator[tuple[Frame, int]]:
        """One message, the runtime's most frequent small batch: packed directly by
        an auto-resetting packer (a 100-byte message costs 0.85 us here against
        2.6 us through the general path's task array and shared buffer)."""
        try:
            task, payload = message
        except (TypeError, ValueError):
            raise _not_a_task_message() from None
        if type(payload) is not bytes:
            raise _not_bytes(payload)
        if len(payload) + _FRAME_OVERHEAD + _PER_MESSAGE_OVERHEAD > self.max_frame_size:
            _plan_split((payload,), self.target_size, self.max_frame_size)  # raises
        try:
            task_id = _pack_int32(task)
        except struct.error:
            raise _not_a_task_id(task) from None
        if self.scatter and len(payload) >= SCATTER_FROM:
            return _one_frame(FrameParts(task_id, (payload,)))
        return _one_frame(_VERSION_BYTE + self._single_packer.pack((task_id, (payload,))))

    def _frames(
        self, task_blob: bytes, payloads: Sequence[bytes], plan: list[tuple[int, int]]
    ) -> Iterator[tuple[Frame, int]]:
        packer = self._packer
        for start, end in plan:
            chunk = payloads[start:end]
            if self.scatter and _worth_scattering(chunk):
                yield FrameParts(task_blob[4 * start : 4 * end], chunk), end - start
                continue
            packer.reset()
            packer.pack(VERSION)
            packer.pack((task_blob[4 * start : 4 * end], chunk))
            with packer.getbuffer() as frame:
                yield frame, end - start


#: Average payload size from which a scattering encoder leaves payloads in place,
#: and the most payloads a frame may have for that (two buffers each, within the
#: 1024 a vectored write takes).
SCATTER_FROM: Final = 4096
_SCATTER_MAX_PAYLOADS: Final = 500


def _worth_scattering(payloads: Sequence[bytes]) -> bool:
    return (len(payloads) <= _SCATTER_MAX_PAYLOADS
            and sum(map(len, payloads)) >= SCATTER_FROM * len(payloads))


class FrameParts:
    """A frame as the buffers it is made of: msgpack headers (a few bytes each) and
    the payloads themselves, not copied. A vectored write (`sendmsg`) hands them to
    the kernel as they are, saving the copy into a frame buffer, which for large
    payloads is most of what encoding costs. `bytes(parts)` is the frame."""

    __slots__ = ("buffers", "size")

    def __init__(self, task_blob: bytes, payloads: Sequence[bytes]) -> None:
        buffers = [_VERSION_BYTE + b"\x92" + _bin_header(len(task_blob)) + task_blob
                   + _array_header(len(payloads))]
        for payload in payloads:
            buffers.append(_bin_header(len(payload)))
            buffers.append(payload)
        self.buffers = buffers
        self.size = sum(map(len, buffers))

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.buffers)


#: What `BatchEncoder.encode` yields as a frame: a view of its reused buffer (valid
#: until the next frame), bytes, or, when scattering, `FrameParts`.
Frame = Union[bytes, memoryview, FrameParts]  # (not |: this runs on 3.9 too)


def _bin_header(size: int) -> bytes:
    if size < 0x100:
        return b"\xc4" + size.to_bytes(1, "big")
    if size < 0x10000:
        return b"\xc5" + size.to_bytes(2, "big")
    return b"\xc6" + size.to_bytes(4, "big")


def _array_header(size: int) -> bytes:
    if size < 16:
        return (0x90 | size).to_bytes(1, "big")
    if size < 0x10000:
        return b"\xdc" + size.to_bytes(2, "big")
    return b"\xdd" + size.to_bytes(4, "big")


def _one_frame(frame: Frame) -> Iterator[tuple[Frame, int]]:
    yield frame, 1


def encode_batch(
    messages: Iterable[TaskMessage], target_size: int, max_frame_size: int
) -> list[tuple[bytes, int]]:
    """`BatchEncoder.encode` as a list of independent frames (bytes): for tests and
    for the benchmark's baselines, which pre-encode what they send."""
    encoder = BatchEncoder(target_size, max_frame_size)
    return [(bytes(frame), count) for frame, count in encoder.encode(messages)]


def decode_frame(frame: bytes | memoryview, max_frame_size: int) -> list[TaskMessage]:
    """Decode one frame into TaskMessages, or raise `FrameError` saying why not.

    Accepts a memoryview so that a stream transport can decode in place.
    """
    size = len(frame)
    if size > max_frame_size:
        raise FrameError("oversized", f"{size} bytes exceeds the limit of {max_frame_size}")
    if size == 0:
        raise FrameError("malformed", "empty frame")
    if frame[0] != VERSION:
        raise FrameError("version", f"version byte {frame[0]}, this build speaks {VERSION}")
    try:
        body = msgpack.unpackb(memoryview(frame)[1:], use_list=False, raw=False)
        task_blob, payloads = body
    except Exception as exc:  # msgpack raises many kinds; all mean "not our body"
        raise FrameError("malformed", f"body is not [tasks, payloads]: {exc!r}") from None
    if type(task_blob) is not bytes or type(payloads) is not tuple:
        raise FrameError("malformed", "body fields have the wrong types")
    if len(task_blob) != 4 * len(payloads):
        raise FrameError(
            "malformed", f"{len(task_blob) // 4} task ids for {len(payloads)} payloads"
        )
    if not _ONLY_BYTES.issuperset(map(type, payloads)):
        raise FrameError("malformed", "a payload is not bin")
    tasks = array("i")
    tasks.frombytes(task_blob)
    if _BIG_ENDIAN_HOST:
        tasks.byteswap()
    return list(map(_new_tuple, repeat(TaskMessage), zip(tasks, payloads)))  # lengths checked above


_ONLY_BYTES: Final = frozenset((bytes,))


def check_messages(messages: Sequence[TaskMessage]) -> None:
    """The checks `BatchEncoder.encode` makes (TypeError naming the problem), for a
    transport that hands messages over without encoding them (local)."""
    if messages:
        _columns(messages)


def _columns(msgs: Sequence[TaskMessage]) -> tuple[bytes, tuple[bytes, ...]]:
    """A batch as its packed task ids and its payloads, checked."""
    try:  # one transposition is also the shape check: 25 ns/msg less than two
        tasks, payloads = zip(*msgs, **STRICT)
        if not STRICT and any(len(message) != 2 for message in msgs):  # 3.9: zip cannot tell
            raise ValueError
    except (TypeError, ValueError):
        raise _not_a_task_message() from None
    if not _ONLY_BYTES.issuperset(map(type, payloads)):
        bad = next(p for p in payloads if type(p) is not bytes)
        raise _not_bytes(bad)
    return _pack_tasks(tasks), payloads


# The errors of an invalid message, the same from every path that checks one.
def _not_a_task_message() -> TypeError:
    return TypeError("every message must be a TaskMessage(task, message)")


def _not_bytes(payload: object) -> TypeError:
    return TypeError(f"TaskMessage.message must be bytes, got {type(payload).__name__}")


def _not_a_task_id(task: object) -> TypeError:
    return TypeError(f"task id must be an int32 integer, got {task!r}")


def _pack_tasks(tasks: Sequence[int]) -> bytes:
    try:
        blob = array("i", tasks)
    except (TypeError, OverflowError):
        bad = next(
            (t for t in tasks if type(t) is not int or not _INT32_MIN <= t <= _INT32_MAX), None
        )
        raise _not_a_task_id(bad) from None
    if _BIG_ENDIAN_HOST:
        blob.byteswap()
    return blob.tobytes()


def max_payload_size(max_frame_size: int) -> int:
    """The largest payload a frame of `max_frame_size` bytes carries (alone)."""
    return max_frame_size - _FRAME_OVERHEAD - _PER_MESSAGE_OVERHEAD


def _plan_split(
    payloads: Sequence[bytes], target_size: int, max_frame_size: int
) -> list[tuple[int, int]]:
    """Cut a batch at message boundaries so each frame's worst-case size fits the
    target; refuse a message that cannot fit even alone."""
    sizes = [len(p) + _PER_MESSAGE_OVERHEAD for p in payloads]
    for index, size in enumerate(sizes):
        if size + _FRAME_OVERHEAD > max_frame_size:
            raise MessageTooLarge(
                f"message {index} of the batch is {size - _PER_MESSAGE_OVERHEAD} bytes; "
                f"a frame may carry at most {max_payload_size(max_frame_size)}"
            )
    cumulative = list(accumulate(sizes))
    plan = []
    start = 0
    budget = target_size - _FRAME_OVERHEAD
    while start < len(payloads):
        before = cumulative[start - 1] if start else 0
        end = bisect.bisect_right(cumulative, before + budget, lo=start)
        end = max(end, start + 1)  # an oversized single message travels alone
        plan.append((start, end))
        start = end
    return plan
