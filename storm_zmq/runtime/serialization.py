"""How a tuple travels inside a TaskMessage payload to another worker.

Only tuples for remote tasks are serialized; local ones move as objects. A payload
is the msgpack array ``[source_task, stream, roots, values]``: `roots` maps each
root id of the tuple's trees to this tuple's edge id (Storm's MessageId), or is nil
for an untracked tuple. Ids are unsigned 64-bit, which msgpack carries as is.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import msgpack

# One packer per thread: twice as fast as msgpack.packb, and never shared between
# executor threads.
_thread = threading.local()
_U64 = 2**64 - 1


class SerializationError(TypeError):
    """A value in an emitted tuple that msgpack cannot carry."""


class MalformedTuple(ValueError):
    """A received payload that is not a tuple of this topology."""


class TupleId:
    """A tuple's place in its tuple trees: `roots` (root id -> this tuple's edge
    id) and `ack_val`, the XOR of the edge ids of tuples anchored to it so far."""

    __slots__ = ("roots", "ack_val")

    def __init__(self, roots: dict[int, int]) -> None:
        self.roots = roots
        self.ack_val = 0

    def __repr__(self) -> str:
        return "TupleId(" + ", ".join(f"{r:x}:{e:x}" for r, e in self.roots.items()) + ")"


def encode_tuple(
    source_task: int,
    stream: str,
    roots: dict[int, int] | None,
    values: Sequence[Any],
    component: str,
) -> bytes:
    try:
        pack = _thread.pack
    except AttributeError:
        pack = _thread.pack = msgpack.Packer(autoreset=True).pack
    try:
        return pack((source_task, stream, roots, values))
    except (TypeError, ValueError, OverflowError) as exc:
        raise SerializationError(_explain(values, component, stream, exc)) from None


def decode_tuple(payload: bytes) -> tuple[int, str, dict[int, int] | None, list[Any]]:
    """Decode and check a payload. Values decode as lists (msgpack has one array
    type), which is what a bolt sees from a local emitter of lists too."""
    try:
        decoded = msgpack.unpackb(payload, use_list=True, strict_map_key=False)
    except Exception as exc:  # msgpack raises many kinds; all mean "not a tuple"
        raise MalformedTuple(f"payload is not a tuple: {exc!r}") from None
    if type(decoded) is not list or len(decoded) != 4:
        raise MalformedTuple("payload is not a 4-element array")
    source_task, stream, roots, values = decoded
    if type(source_task) is not int or type(stream) is not str or type(values) is not list:
        raise MalformedTuple("payload fields have the wrong types")
    if roots is not None:
        if type(roots) is not dict or not all(
            type(root) is int and type(edge) is int and 0 < root <= _U64 and 0 <= edge <= _U64
            for root, edge in roots.items()
        ):
            raise MalformedTuple("tuple roots are not a map of 64-bit ids")
    return source_task, stream, roots, values


def _explain(values: Sequence[Any], component: str, stream: str, exc: Exception) -> str:
    for index, value in enumerate(values):
        try:
            msgpack.packb(value)
        except Exception:
            return (
                f"component {component!r}, stream {stream!r}: value {index} of the tuple is a "
                f"{type(value).__module__}.{type(value).__qualname__}, which cannot be "
                "serialized (msgpack carries None, bool, int, float, str, bytes, and "
                "lists/tuples/dicts of those)"
            )
    return f"component {component!r}, stream {stream!r}: tuple cannot be serialized: {exc}"
