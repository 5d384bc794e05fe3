"""Tests for storm_zmq.runtime.flat_payloads: whatever it writes is byte for byte
what msgpack writes, whatever it reads it reads as msgpack does, and everything
else is refused (the caller then asks msgpack, the authority)."""

from __future__ import annotations

import math
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_zmq.runtime.flat_payloads import REFUSED, NotFlat, pack_payload, unpack_payload

U64_MAX = 2**64 - 1
I64_MIN = -(2**63)

#: Every int at and next to each boundary between msgpack's int encodings.
INT_EDGES = sorted({edge + step
                    for edge in (0, 2**7, 2**8, 2**16, 2**32, 2**63, 2**64 - 1,
                                 -32, -(2**7), -(2**15), -(2**31), I64_MIN)
                    for step in (-1, 0, 1)
                    if I64_MIN <= edge + step <= U64_MAX})
#: A str of each length at and next to each boundary between msgpack's str encodings.
STR_SIZES = [0, 1, 31, 32, 33, 255, 256, 257, 65535, 65536, 65537]

scalars = (st.none() | st.booleans() | st.integers(I64_MIN, U64_MAX) | st.sampled_from(INT_EDGES)
           | st.floats() | st.text() | st.binary())
flat_tuple = st.lists(scalars, max_size=5) | st.lists(scalars, max_size=5).map(tuple)
nested = st.recursive(scalars, lambda children: st.lists(children, max_size=3)
                      | st.dictionaries(st.text(max_size=3) | st.integers(-3, 3), children, max_size=3),
                      max_leaves=6)


#: The arguments of a payload in the shape flat_payloads handles (writing or reading).
a_flat_batch = given(values=st.lists(flat_tuple, min_size=1, max_size=20),
                     source=st.integers(-(2**31), 2**31 - 1), stream=st.text(max_size=10),
                     roots=st.none() | st.lists(st.integers(0, U64_MAX), min_size=1, max_size=40))


def typed(value: Any) -> Any:
    """`value` with every item's type next to it: True is not 1, 1.0 is not 1, and a
    NaN equals a NaN."""
    if isinstance(value, list):
        return ["list", [typed(item) for item in value]]
    if isinstance(value, dict):
        return ["dict", sorted((repr(typed(k)), typed(v)) for k, v in value.items())]
    if isinstance(value, float) and math.isnan(value):
        return ["float", "nan"]
    return [type(value).__name__, value]


def msgpack_reads(data: bytes) -> Any:
    """What the serialization module's msgpack path reads from `data`."""
    return msgpack.unpackb(data, use_list=True, strict_map_key=False)


# -- writing -------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@a_flat_batch
def test_a_flat_batch_is_written_as_msgpack_writes_it(
    values: list, source: int, stream: str, roots: list[int] | None,
) -> None:
    try:
        expected = msgpack.packb([values, source, stream, roots])
    except UnicodeEncodeError:  # a lone surrogate: neither writes it
        with pytest.raises(UnicodeEncodeError):
            pack_payload(values, source, stream, roots)
        return
    assert pack_payload(values, source, stream, roots) == expected


@pytest.mark.parametrize("value", INT_EDGES)
def test_every_int_encoding_boundary_is_msgpacks(value: int) -> None:
    source = value if -(2**31) <= value < 2**31 else 1  # a task id is an int32
    assert pack_payload([[value]], source, "s", [value]) == msgpack.packb([[[value]], source, "s", [value]])


@pytest.mark.parametrize("size", STR_SIZES)
def test_every_str_and_bin_length_boundary_is_msgpacks(size: int) -> None:
    values = [["é" * (size // 2) + "x" * (size % 2), b"b" * size]]
    assert pack_payload(values, 3, "x" * size, None) == msgpack.packb([values, 3, "x" * size, None])


@pytest.mark.parametrize("count", [15, 16, 65535, 65536])
def test_every_array_length_boundary_is_msgpacks(count: int) -> None:
    values = [[1]] * count
    assert pack_payload(values, 1, "s", [2] * count) == msgpack.packb([values, 1, "s", [2] * count])


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.lists(nested, max_size=4), min_size=1, max_size=5))
def test_anything_else_is_refused_or_written_as_msgpack_writes_it(values: list) -> None:
    try:
        written = pack_payload(values, 1, "s", None)
    except REFUSED:
        return
    assert written == msgpack.packb([values, 1, "s", None])


@pytest.mark.parametrize("values, roots", [
    ([[{"a": 1}]], None),  # a map value
    ([[[1, 2]]], None),  # an array inside a tuple
    ([[object()]], None),
    ([[1.5j]], None),
    ([[True.__class__]], None),
    ([{"not": "a list"}], None),  # a tuple's values not an array
    ([[1]], [{1: 2}]),  # roots as a map per tuple
    ([[1]], [None]),
    ([[1]], (1, 2)),  # roots not a list
    ([[1]], [1, "2"]),
])
def test_what_is_not_flat_is_refused(values: list, roots: Any) -> None:
    with pytest.raises(NotFlat):
        pack_payload(values, 1, "s", roots)


@pytest.mark.parametrize("value", [2**64, I64_MIN - 1, "\udc80"])
def test_what_msgpack_cannot_write_is_refused_too(value: Any) -> None:
    with pytest.raises((OverflowError, UnicodeEncodeError)):
        msgpack.packb(value)
    with pytest.raises(REFUSED):
        pack_payload([[value]], 1, "s", None)


def test_subclasses_of_scalar_types_are_left_to_msgpack() -> None:
    """msgpack writes a str or int subclass as its base type; flat_payloads leaves
    what its exact type checks do not know to msgpack rather than guess."""
    class Name(str):
        pass

    with pytest.raises(NotFlat):
        pack_payload([[Name("x")]], 1, "s", None)


# -- reading -------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@a_flat_batch
def test_a_flat_payload_is_read_as_msgpack_reads_it(
    values: list, source: int, stream: str, roots: list[int] | None,
) -> None:
    try:
        data = msgpack.packb([values, source, stream, roots])
    except UnicodeEncodeError:
        return
    assert typed(unpack_payload(data)) == typed(msgpack_reads(data))


@pytest.mark.parametrize("value", INT_EDGES + [1.5, -0.0, math.inf, None, True, False, b"", b"x"])
def test_every_scalar_encoding_is_read_as_msgpack_reads_it(value: Any) -> None:
    for data in (msgpack.packb([[[value]], 1, "s", None]),
                 msgpack.packb([[[value]], 1, "s", None], use_single_float=True)):
        assert typed(unpack_payload(data)) == typed(msgpack_reads(data))


@pytest.mark.parametrize("size", STR_SIZES)
def test_every_str_and_bin_length_is_read_as_msgpack_reads_it(size: int) -> None:
    data = msgpack.packb([[["é" * size, b"b" * size]], 1, "x" * size, [1] * (2 * size + 2)])
    assert typed(unpack_payload(data)) == typed(msgpack_reads(data))


@pytest.mark.parametrize("data", [
    msgpack.packb([[[{"a": 1}]], 1, "s", None]),  # a map value
    msgpack.packb([[[[1]]], 1, "s", None]),  # an array in a tuple
    msgpack.packb([[[1]], 1, "s", [{1: 2}]]),  # roots as maps
    msgpack.packb([[[msgpack.ExtType(5, b"x")]], 1, "s", None]),  # an extension
    msgpack.packb([[[1]], 1, "s", None, 5]),  # not four elements
    msgpack.packb([[[1]], 1, "s", None]) + b"\x00",  # extra data
    msgpack.packb([[[1]], 1, "s", None])[:-1],  # truncated
    msgpack.packb([[["abc"]], 1, "s", None])[:-3],  # a str longer than what is left
    msgpack.packb([[[b"abc"]], 1, "s", None])[:-3],
    b"\x94\x91\x91\xa1\xff\x01\xa1s\xc0",  # a str that is not UTF-8
    b"\x94\xdd\xff\xff\xff\xff",  # a huge count and nothing behind it
    b"\x94\x91\x91\xc1\x01\xa1s\xc0",  # 0xc1, never used
    b"",
    b"garbage",
])
def test_what_is_not_a_flat_payload_is_refused(data: bytes) -> None:
    with pytest.raises(REFUSED):
        unpack_payload(data)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=48))
def test_any_bytes_are_refused_or_read_as_msgpack_reads_them(data: bytes) -> None:
    try:
        read = unpack_payload(data)
    except REFUSED:
        return
    assert typed(read) == typed(msgpack_reads(data))


@settings(max_examples=500, deadline=None)
@given(values=st.lists(flat_tuple, min_size=1, max_size=4), noise=st.binary(min_size=1, max_size=8),
       data=st.data())
def test_corrupted_payloads_are_refused_or_read_as_msgpack_reads_them(
    values: list, noise: bytes, data: st.DataObject,
) -> None:
    try:
        payload = bytearray(msgpack.packb([values, 7, "default", [1, 2]]))
    except UnicodeEncodeError:
        return
    at = data.draw(st.integers(0, len(payload)))
    mutated = bytes(payload[:at] + noise + payload[at + len(noise):])
    try:
        read = unpack_payload(mutated)
    except REFUSED:
        return
    assert typed(read) == typed(msgpack_reads(mutated))


@pytest.mark.parametrize("head", range(256), ids=lambda head: f"{head:#04x}")
def test_every_first_byte_of_a_value_is_refused_or_read_as_msgpack_reads_it(head: int) -> None:
    """Each byte in a tuple value's place, followed by 0 to 9 zero bytes and the
    rest of a payload: a header read as the wrong type would take the bytes after
    it for something else."""
    for tail in range(10):
        data = b"\x94\x91\x91" + bytes([head]) + b"\x00" * tail + b"\x01\xa1s\xc0"
        try:
            read = unpack_payload(data)
        except REFUSED:
            continue
        assert typed(read) == typed(msgpack_reads(data)), data
