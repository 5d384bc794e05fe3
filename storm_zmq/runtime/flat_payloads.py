"""A msgpack writer and reader for the payloads most tuples travel in, written in
plain Python for PyPy, where msgpack has no C extension.

On PyPy msgpack runs its pure-Python fallback: a general packer and unpacker that
ask about every type and every length, which the JIT compiles to a few hundred
nanoseconds a tuple each way, most of what a tuple crossing two PyPy workers cost
(docs/benchmarks.md, session 40). The payloads of nearly every topology have one
shape: flat tuples of str, int, float, bool, None and bytes, and `roots` nil or
the pairs form (serialization.py). For that shape these functions write and read
the same msgpack bytes as msgpack does, three to six times faster on PyPy (and
several times slower on CPython, where msgpack is C: `serialization` uses them on
PyPy only).

Anything else, a dict or a list inside a tuple, a registered type, a map of roots,
a str that is not valid UTF-8, an int beyond 64 bits, a truncated or malformed
payload, raises `NotFlat`, and the caller takes msgpack's own path, which stays
the authority on what a payload means and on every error message. So a payload
these functions read decodes exactly as msgpack would decode it, and one they
write is byte for byte what msgpack would write.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

_pack_u16 = struct.Struct(">H").pack
_pack_u32 = struct.Struct(">I").pack
_pack_u64 = struct.Struct(">Q").pack
_pack_i16 = struct.Struct(">h").pack
_pack_i32 = struct.Struct(">i").pack
_pack_i64 = struct.Struct(">q").pack
_pack_f64 = struct.Struct(">d").pack
_read_u16 = struct.Struct(">H").unpack_from
_read_u32 = struct.Struct(">I").unpack_from
_read_u64 = struct.Struct(">Q").unpack_from
_read_i16 = struct.Struct(">h").unpack_from
_read_i32 = struct.Struct(">i").unpack_from
_read_i64 = struct.Struct(">q").unpack_from
_read_f32 = struct.Struct(">f").unpack_from
_read_f64 = struct.Struct(">d").unpack_from

_NIL = 0xC0


class NotFlat(Exception):
    """A payload, or a batch to write, outside the shape this module handles:
    msgpack's own packer or unpacker takes it."""


#: What `pack_payload` and `unpack_payload` raise for what they do not handle:
#: `NotFlat`, or what the way there raises (a struct.error for an int beyond 64 bits
#: or bytes that end too soon, a UnicodeError for text that is not UTF-8, an
#: IndexError for a payload that ends in a header).
REFUSED = (NotFlat, struct.error, UnicodeError, IndexError)


# -- writing ---------------------------------------------------------------------------


def pack_payload(
    values: Sequence[Sequence[Any]], source_task: int, stream: str, roots: list[int] | None,
) -> bytes:
    """``msgpack.packb([values, source_task, stream, roots])`` for flat tuples and
    `roots` nil or in the pairs form; `NotFlat` for anything else (an exception
    raised half way, a struct.error for an int beyond 64 bits or a
    UnicodeEncodeError, means the same: the caller packs the batch with msgpack,
    which names what is wrong)."""
    out = bytearray(b"\x94")
    _array_header(out, len(values))
    for one in values:
        kind = type(one)
        if kind is not list and kind is not tuple:
            raise NotFlat
        _array_header(out, len(one))
        for value in one:
            kind = type(value)
            if kind is str:
                _write_str(out, value)
            elif kind is int:
                _write_int(out, value)
            elif kind is float:
                out.append(0xCB)
                out += _pack_f64(value)
            elif value is None:
                out.append(_NIL)
            elif value is True:
                out.append(0xC3)
            elif value is False:
                out.append(0xC2)
            elif kind is bytes:
                _write_bin(out, value)
            else:
                raise NotFlat
    _write_int(out, source_task)
    _write_str(out, stream)
    if roots is None:
        out.append(_NIL)
    else:
        if type(roots) is not list:
            raise NotFlat
        _array_header(out, len(roots))
        for value in roots:
            if type(value) is not int:
                raise NotFlat
            _write_int(out, value)
    return bytes(out)


def _sized_header(out: bytearray, size: int, fixed: int, fixed_below: int,
                  code8: int | None, code16: int, code32: int) -> None:
    """The header of a sized msgpack type, its smallest form as msgpack chooses it:
    `fixed` with the size in its low bits below `fixed_below`, else the code of the
    narrowest size field (8 bits only where the type has one: `code8`). The shape of
    `messaging/wire.py`'s frame headers, which are bytes of their own for a
    vectored write; here every header goes into the payload's one buffer."""
    if size < fixed_below:
        out.append(fixed | size)
    elif code8 is not None and size < 0x100:
        out.append(code8)
        out.append(size)
    elif size < 0x10000:
        out.append(code16)
        out += _pack_u16(size)
    else:
        out.append(code32)
        out += _pack_u32(size)


def _array_header(out: bytearray, size: int) -> None:
    _sized_header(out, size, 0x90, 16, None, 0xDC, 0xDD)


def _write_int(out: bytearray, value: int) -> None:
    """The smallest encoding of `value`, as msgpack chooses it."""
    if value >= 0:
        if value < 0x80:
            out.append(value)
        elif value < 0x100:
            out.append(0xCC)
            out.append(value)
        elif value < 0x10000:
            out.append(0xCD)
            out += _pack_u16(value)
        elif value < 0x100000000:
            out.append(0xCE)
            out += _pack_u32(value)
        else:
            out.append(0xCF)
            out += _pack_u64(value)
    elif value >= -32:
        out.append(value & 0xFF)
    elif value >= -0x80:
        out.append(0xD0)
        out.append(value & 0xFF)
    elif value >= -0x8000:
        out.append(0xD1)
        out += _pack_i16(value)
    elif value >= -0x80000000:
        out.append(0xD2)
        out += _pack_i32(value)
    else:
        out.append(0xD3)
        out += _pack_i64(value)


def _write_str(out: bytearray, value: str) -> None:
    data = value.encode("utf-8")
    _sized_header(out, len(data), 0xA0, 32, 0xD9, 0xDA, 0xDB)
    out += data


def _write_bin(out: bytearray, value: bytes) -> None:
    _sized_header(out, len(value), 0, 0, 0xC4, 0xC5, 0xC6)  # (bin has no fixed form)
    out += value


# -- reading ---------------------------------------------------------------------------


def unpack_payload(data: bytes) -> list[Any]:
    """``msgpack.unpackb(data)`` for a payload of flat tuples whose `roots` are nil
    or the pairs form: ``[values, source_task, stream, roots]`` with arrays as
    lists; one of `REFUSED` for anything else."""
    if data[0] != 0x94:
        raise NotFlat
    count, pos = _read_array_header(data, 1)
    values = []
    for _ in range(count):
        size, pos = _read_array_header(data, pos)
        one = []
        for _ in range(size):
            value, pos = _read_scalar(data, pos)
            one.append(value)
        values.append(one)
    source_task, pos = _read_scalar(data, pos)
    stream, pos = _read_scalar(data, pos)
    if data[pos] == _NIL:
        roots: list[Any] | None = None
        pos += 1
    else:
        size, pos = _read_array_header(data, pos)
        roots = []
        for _ in range(size):
            value, pos = _read_scalar(data, pos)
            roots.append(value)
    if pos != len(data):  # also a length that claimed more than there was
        raise NotFlat
    return [values, source_task, stream, roots]


def _read_array_header(data: bytes, pos: int) -> tuple[int, int]:
    head = data[pos]
    if 0x90 <= head <= 0x9F:
        return head & 0x0F, pos + 1
    if head == 0xDC:
        return _read_u16(data, pos + 1)[0], pos + 3
    if head == 0xDD:
        return _read_u32(data, pos + 1)[0], pos + 5
    raise NotFlat


def _read_scalar(data: bytes, pos: int) -> tuple[Any, int]:
    """The value at `pos` and where the next one starts, for every msgpack type
    but arrays, maps and extensions (`NotFlat`). Most frequent first."""
    head = data[pos]
    if head < 0x80:
        return head, pos + 1
    if 0xA0 <= head <= 0xBF:
        return _read_text(data, pos + 1, head & 0x1F)
    if head >= 0xE0:
        return head - 0x100, pos + 1
    if head == 0xC0:
        return None, pos + 1
    if head == 0xCF:
        return _read_u64(data, pos + 1)[0], pos + 9
    if head == 0xCB:
        return _read_f64(data, pos + 1)[0], pos + 9
    if head == 0xCC:
        return data[pos + 1], pos + 2
    if head == 0xCD:
        return _read_u16(data, pos + 1)[0], pos + 3
    if head == 0xCE:
        return _read_u32(data, pos + 1)[0], pos + 5
    if head == 0xD9:
        return _read_text(data, pos + 2, data[pos + 1])
    if head == 0xC3:
        return True, pos + 1
    if head == 0xC2:
        return False, pos + 1
    if head == 0xD0:
        byte = data[pos + 1]
        return (byte - 0x100 if byte > 0x7F else byte), pos + 2
    if head == 0xD1:
        return _read_i16(data, pos + 1)[0], pos + 3
    if head == 0xD2:
        return _read_i32(data, pos + 1)[0], pos + 5
    if head == 0xD3:
        return _read_i64(data, pos + 1)[0], pos + 9
    if head == 0xCA:
        return _read_f32(data, pos + 1)[0], pos + 5
    if head == 0xDA:
        return _read_text(data, pos + 3, _read_u16(data, pos + 1)[0])
    if head == 0xDB:
        return _read_text(data, pos + 5, _read_u32(data, pos + 1)[0])
    if head == 0xC4:
        return _read_bin(data, pos + 2, data[pos + 1])
    if head == 0xC5:
        return _read_bin(data, pos + 3, _read_u16(data, pos + 1)[0])
    if head == 0xC6:
        return _read_bin(data, pos + 5, _read_u32(data, pos + 1)[0])
    raise NotFlat


def _read_text(data: bytes, start: int, size: int) -> tuple[str, int]:
    raw, end = _read_bin(data, start, size)
    return raw.decode("utf-8"), end


def _read_bin(data: bytes, start: int, size: int) -> tuple[bytes, int]:
    end = start + size
    if end > len(data):
        raise NotFlat
    return data[start:end], end
