"""The Python types a tuple's values may hold beyond msgpack's own, and how they
travel: dates and times, decimals and UUIDs.

Why: a Storm user's tuples carry timestamps, dates, money and ids (Storm's Kryo
registers Java's own types of those), and so do a Spark DataFrame's rows. msgpack
has none of them; without these a value that a task of the same worker gets as it
is (local tuples are objects) fails once it crosses workers. Each type is a msgpack
extension type (`encode` is msgpack's ``default`` hook, `decode` its ``ext_hook``),
so values of msgpack's own types cost nothing more.

The encodings are canonical (an equal value of the same type always encodes to the
same bytes), because a fields grouping hashes them: every worker must pick the same
task for the same key. As in Storm (Java's ``equals``), values are grouped by type
and representation: ``Decimal("1.0")`` and ``Decimal("1.00")``, or the same instant
in two time zones, may go to different tasks; so may two datetimes Python calls
equal that differ in their fold where it tells two times apart (the repeated hour of
a naive local time, which ``fromtimestamp`` gives fold 1): they are two instants.

Only these exact types are carried; a subclass (a pandas ``Timestamp`` is a
``datetime``) is refused with a hint, since it would arrive as its base type and lose
what it adds. A ``datetime`` keeps its time zone if it is a ``datetime.timezone`` (a
fixed offset; its name is not kept) or a ``zoneinfo.ZoneInfo`` (by key), a ``time``
if it is a ``datetime.timezone``; any other ``tzinfo`` (pytz, dateutil) is refused,
since its rules cannot be rebuilt on the receiving side. The fold travels where it
tells two times apart (see `_FOLD`).

Extension type codes (docs/wire-format.md) are part of the wire format: never reuse
or renumber one.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import struct
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgpack

#: msgpack extension type codes of the carried types (0-127; these are fixed), and
#: their data: big-endian binary, packed and parsed by `struct` (ISO 8601 text cost
#: four times as much to make and read).
DATETIME = 1  # _DATETIME, then the UTC offset in microseconds (_OFFSET) if it has one
ZONED_DATETIME = 2  # _DATETIME (local time), then the zone key in UTF-8
DATE = 3  # _DATE
TIME = 4  # _TIME, then the UTC offset in microseconds (_OFFSET) if it has one
TIMEDELTA = 5  # _TIMEDELTA
DECIMAL = 6  # UTF-8 str() of the Decimal (NaN, Infinity and -0 included)
UUID = 7  # the 16 bytes

# The fold (PEP 495) is the top bit of a datetime's month and a time's hour: kept for
# a naive value (which local time it is) and for a zoned one in the hour that happens
# twice; 0 with a fixed offset, where it changes nothing, so that equal values encode
# alike.
_DATETIME = struct.Struct("!HBBBBBI")  # year, fold|month, day, hour, minute, second, microsecond
_DATE = struct.Struct("!HBB")
_TIME = struct.Struct("!BBBI")  # fold|hour, minute, second, microsecond
_FOLD = 0x80
_TIMEDELTA = struct.Struct("!iII")  # days, seconds, microseconds
_OFFSET = struct.Struct("!q")

#: What a tuple carries, for error messages.
CARRIED = (
    "None, bool, int, float, str, bytes, datetime.datetime/date/time/timedelta, "
    "decimal.Decimal, uuid.UUID, and lists/tuples/dicts of those"
)

_new_tuple = tuple.__new__
_ExtType = msgpack.ExtType


def _ext(code: int, data: bytes) -> msgpack.ExtType:
    """``msgpack.ExtType(code, data)`` without its argument checks (a third of a
    datetime's encoding time): the callers here pass an int and bytes."""
    return _new_tuple(_ExtType, (code, data))


class UnsupportedValue(TypeError):
    """A value of a carried type that cannot travel as it is (its message says why)."""


class BadExtension(ValueError):
    """Extension data that is no carried value (its message says why)."""


def _offset(value: datetime.datetime | datetime.time, kind: str, zones: str) -> bytes:
    """The UTC offset's bytes of a value with a fixed offset."""
    tz = value.tzinfo
    if type(tz) is datetime.timezone:
        return _OFFSET.pack(tz.utcoffset(None) // _MICROSECOND)
    raise UnsupportedValue(
        f"a {kind} whose tzinfo is a {type(tz).__module__}.{type(tz).__qualname__}, whose "
        f"rules cannot travel (use {zones}, or convert it to UTC first)"
    )


_MICROSECOND = datetime.timedelta(microseconds=1)


def _datetime_fields(value: datetime.datetime, fold: int) -> bytes:
    return _DATETIME.pack(value.year, value.month | fold << 7, value.day, value.hour,
                          value.minute, value.second, value.microsecond)


def _encode_datetime(value: datetime.datetime) -> msgpack.ExtType:
    tz = value.tzinfo
    if tz is None:
        return _new_tuple(_ExtType, (DATETIME, _datetime_fields(value, value.fold)))
    if type(tz) is ZoneInfo:
        key = tz.key
        if key is None:  # made from a file, not by name: the receiver could not find it
            raise UnsupportedValue(
                "a datetime whose ZoneInfo was not made from a zone key (ZoneInfo.from_file); "
                "use ZoneInfo(key), or convert it to UTC first"
            )
        fold = value.fold
        if fold and value.utcoffset() == value.replace(fold=0).utcoffset():
            fold = 0  # not the hour that happens twice: the same time either way
        return _ext(ZONED_DATETIME, _datetime_fields(value, fold) + key.encode())
    return _ext(DATETIME, _datetime_fields(value, 0)
                + _offset(value, "datetime", "datetime.timezone or zoneinfo.ZoneInfo"))


def _encode_time(value: datetime.time) -> msgpack.ExtType:
    naive = value.tzinfo is None
    fields = _TIME.pack(value.hour | (value.fold << 7 if naive else 0), value.minute,
                        value.second, value.microsecond)
    if naive:
        return _ext(TIME, fields)
    return _ext(TIME, fields + _offset(value, "time", "datetime.timezone: a time has no date "
                                        "to find a ZoneInfo's offset for"))


def _encode_date(value: datetime.date) -> msgpack.ExtType:
    return _ext(DATE, _DATE.pack(value.year, value.month, value.day))


def _encode_timedelta(value: datetime.timedelta) -> msgpack.ExtType:
    return _ext(TIMEDELTA, _TIMEDELTA.pack(value.days, value.seconds, value.microseconds))


def _encode_decimal(value: decimal.Decimal) -> msgpack.ExtType:
    return _ext(DECIMAL, str(value).encode())


def _encode_uuid(value: uuid.UUID) -> msgpack.ExtType:
    return _ext(UUID, value.bytes)


_ENCODERS: dict[type, Any] = {
    datetime.datetime: _encode_datetime,
    datetime.date: _encode_date,
    datetime.time: _encode_time,
    datetime.timedelta: _encode_timedelta,
    decimal.Decimal: _encode_decimal,
    uuid.UUID: _encode_uuid,
}


#: Fixed-offset time zones by offset in microseconds, so that a run of tuples from
#: one zone makes one object; bounded (offsets beyond it are made each time).
_ZONES: dict[int, datetime.timezone] = {}
_MAX_ZONES = 256


def _fixed_zone(data: bytes, at: int) -> datetime.timezone | None:
    if len(data) == at:
        return None
    if len(data) != at + _OFFSET.size:
        raise BadExtension(f"{len(data)} bytes, where a value has {at} or {at + _OFFSET.size}")
    (micros,) = _OFFSET.unpack_from(data, at)
    zone = _ZONES.get(micros)
    if zone is None:
        zone = datetime.timezone(datetime.timedelta(microseconds=micros))
        if len(_ZONES) < _MAX_ZONES:
            _ZONES[micros] = zone
    return zone


def _decode_datetime(data: bytes) -> datetime.datetime:
    fields = _DATETIME.unpack_from(data)
    if len(data) == _DATETIME.size and fields[1] < _FOLD:  # naive, fold 0: most of them
        return datetime.datetime(*fields)
    if len(data) == _DATETIME.size:  # naive, fold 1
        year, month, day, hour, minute, second, micro = fields
        return datetime.datetime(year, month & ~_FOLD, day, hour, minute, second, micro, fold=1)
    if fields[1] & _FOLD:
        raise BadExtension("a fold with a fixed offset")
    return datetime.datetime(*fields, tzinfo=_fixed_zone(data, _DATETIME.size))


def _decode_zoned(data: bytes) -> datetime.datetime:
    year, month, day, hour, minute, second, micro = _DATETIME.unpack_from(data)
    key = bytes(data[_DATETIME.size:]).decode()
    try:
        zone = ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise BadExtension(f"time zone {key!r} is not known on this host ({exc})") from None
    return datetime.datetime(year, month & ~_FOLD, day, hour, minute, second, micro,
                             fold=month >> 7, tzinfo=zone)


def _decode_time(data: bytes) -> datetime.time:
    fields = _TIME.unpack_from(data)
    zone = _fixed_zone(data, _TIME.size)
    if fields[0] < _FOLD:
        return datetime.time(*fields, tzinfo=zone)
    if zone is not None:
        raise BadExtension("a fold with a fixed offset")
    hour, minute, second, micro = fields
    return datetime.time(hour & ~_FOLD, minute, second, micro, fold=1)


def _exactly(layout: struct.Struct, data: bytes) -> tuple[Any, ...]:
    if len(data) != layout.size:
        raise BadExtension(f"{len(data)} bytes, where a value has {layout.size}")
    return layout.unpack(data)


_DECODERS: dict[int, Any] = {
    DATETIME: _decode_datetime,
    ZONED_DATETIME: _decode_zoned,
    DATE: lambda data: datetime.date(*_exactly(_DATE, data)),
    TIME: _decode_time,
    TIMEDELTA: lambda data: datetime.timedelta(*_exactly(_TIMEDELTA, data)),
    DECIMAL: lambda data: decimal.Decimal(bytes(data).decode()),
    UUID: lambda data: uuid.UUID(bytes=bytes(data)),
}


#: The first extension code of a topology's own types (`topology.kryo.register`):
#: codes below it are kept for built-in types to come.
FIRST_REGISTERED = 32
MAX_REGISTERED = 128 - FIRST_REGISTERED
#: How deep registered values may nest in one another (see `ValueCodec._nest`).
MAX_NESTING = 32


@dataclass(frozen=True)
class RegisteredType:
    """A type of the user's that tuples carry as extension type `code`: `to_data`
    makes a value something a tuple carries (a dict, a list, a str...),
    `from_data` makes it back. `name` (the registration's) is for messages."""

    cls: type
    code: int
    name: str
    to_data: Callable[[Any], Any]
    from_data: Callable[[Any], Any]


class ValueCodec:
    """What a topology's tuples carry beyond msgpack's own types: the built-in ones,
    and the topology's own (`topology.kryo.register`, whose loader numbers them by
    their place in that list: the same in every worker, as Storm numbers its Kryo
    registrations). Its `encode` and `decode` are msgpack's ``default`` and
    ``ext_hook``."""

    def __init__(self, registered: Sequence[RegisteredType] = ()) -> None:
        self.registered = tuple(registered)
        self._local = threading.local()  # pack's Packer, one per thread
        self._encoders: dict[type, Callable[[Any], msgpack.ExtType]] = dict(_ENCODERS)
        self._decoders: dict[int, Callable[[bytes], Any]] = dict(_DECODERS)
        for kind in self.registered:
            if not FIRST_REGISTERED <= kind.code < 128:
                raise ValueError(f"{kind.name}: extension code {kind.code} is outside "
                                 f"{FIRST_REGISTERED}-127")
            if kind.cls in _ENCODERS:
                raise ValueError(f"{kind.name} is carried anyway (no need to register it)")
            if kind.cls in self._encoders:
                raise ValueError(f"{kind.name} is registered twice")
            if kind.code in self._decoders:
                raise ValueError(f"{kind.name}: extension code {kind.code} is taken")
            self._encoders[kind.cls] = functools.partial(self._encode_registered, kind)
            self._decoders[kind.code] = functools.partial(self._decode_registered, kind)

    def packer(self) -> Callable[[Any], bytes]:
        """A new ``pack`` for one thread (a Packer is not thread-safe): reusing one
        is about twice as fast as ``msgpack.packb``."""
        return msgpack.Packer(autoreset=True, default=self.encode).pack

    def packb(self, value: Any) -> bytes:
        return msgpack.packb(value, default=self.encode)

    def pack(self, value: Any) -> bytes:
        """`packb` with a Packer kept per thread: for every remote payload."""
        try:
            pack = self._local.pack
        except AttributeError:
            pack = self._local.pack = self.packer()
        return pack(value)

    def encode(self, value: Any) -> msgpack.ExtType:
        """msgpack's ``default`` hook: the extension type of a carried value;
        TypeError (msgpack's own way to refuse) for anything else,
        `UnsupportedValue` with the reason for a carried type that cannot travel
        as it is."""
        encoder = self._encoders.get(type(value))
        if encoder is not None:
            return encoder(value)
        if isinstance(value, int):  # msgpack asks about an int only outside its 64 bits
            raise OverflowError(f"int {value} is outside the 64-bit range msgpack carries")
        for base in self._encoders:
            if isinstance(value, base):
                kind = type(value)
                hint = (" (a pandas Timestamp: .to_pydatetime())" if base is datetime.datetime
                        else "" if base in _ENCODERS else " or register it too (topology.kryo.register)")
                raise UnsupportedValue(
                    f"a {_name(kind)}, a subclass of {_name(base)} that would arrive as a "
                    f"plain {base.__qualname__}; convert it to one{hint}"
                )
        raise TypeError(f"cannot serialize {type(value)!r}")

    def decode(self, code: int, data: bytes) -> Any:
        """msgpack's ``ext_hook``: the value of a carried type's extension.
        `BadExtension` (a ValueError) for an unknown code or data that is not the
        type's encoding (the payload is then refused as malformed)."""
        decoder = self._decoders.get(code)
        if decoder is None:
            raise BadExtension(f"unknown msgpack extension type {code} (not a value a tuple "
                               "carries: do all workers run the same topology.kryo.register?)")
        try:
            return decoder(data)
        except BadExtension as exc:
            raise BadExtension(f"extension type {code}: {exc}") from None
        except Exception as exc:  # the parsers' own kinds: decimal's, msgpack's, uuid's
            raise BadExtension(f"extension type {code} holds no value of its type ({exc!r})") from None

    def unpackb(self, data: bytes) -> Any:
        """msgpack's unpackb with this codec's types. Arrays come back as lists
        (msgpack has one array type), except as map keys, where a list cannot be
        one: a map with array keys (a dict keyed by tuples) takes a second, slower
        decode whose maps are built by `_map_of_pairs`, as a registered value's data
        is, which makes those keys tuples; only such data pays it. (Not the hook in
        the first decode: it runs for every map, and a tracked payload has a roots
        map per tuple.)"""
        try:
            return msgpack.unpackb(data, use_list=True, strict_map_key=False, ext_hook=self.decode)
        except TypeError:  # an array as a map key
            return msgpack.unpackb(data, use_list=True, strict_map_key=False,
                                   object_pairs_hook=_map_of_pairs, ext_hook=self.decode)

    def _nest(self, limit_error: type[Exception]) -> None:
        """One level deeper into registered values, in this thread. Each level is a
        msgpack call inside a msgpack call, on the C stack: a chain of a few hundred
        (a linked list, a malicious payload) would overflow it and kill the process,
        where Python's recursion limit would not stop it first."""
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth >= MAX_NESTING:
            raise limit_error(f"registered values nested more than {MAX_NESTING} deep (or a "
                              "value that contains itself)")
        local.depth = depth + 1

    def _encode_registered(self, kind: RegisteredType, value: Any) -> msgpack.ExtType:
        try:
            data = kind.to_data(value)
        except Exception as exc:
            raise UnsupportedValue(f"a {_name(type(value))}, whose serializer ({kind.name}) "
                                   f"raised {exc!r}") from None
        self._nest(UnsupportedValue)
        try:
            return _ext(kind.code, self.packb(data))
        except UnsupportedValue:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise UnsupportedValue(f"a {_name(type(value))}, serialized by {kind.name} to "
                                   f"something a tuple cannot carry ({exc})") from None
        finally:
            self._local.depth -= 1

    def _decode_registered(self, kind: RegisteredType, data: bytes) -> Any:
        self._nest(BadExtension)
        try:
            # In one pass, maps built by `_map_of_pairs`: `unpackb`'s retry here
            # decoded every inner level again for each level above it (a 300-byte
            # payload of 24 levels took two minutes), and a walk over the decoded
            # value after it recursed in Python (deep lists hit the recursion limit).
            value = msgpack.unpackb(data, use_list=True, strict_map_key=False,
                                    object_pairs_hook=_map_of_pairs, ext_hook=self.decode)
        finally:
            self._local.depth -= 1
        try:
            return kind.from_data(value)
        except Exception as exc:
            raise BadExtension(f"{kind.name} could not make a value back ({exc!r})") from None


def _map_of_pairs(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """A decoded map whose array keys (lists, as arrays decode) become tuples."""
    return {_key(key): value for key, value in pairs}


def _key(key: Any) -> Any:
    """`key` with its lists, nested ones too, made tuples; without recursion, so
    that a key as deep as msgpack decodes does not meet Python's recursion limit."""
    if type(key) is not list:
        return key
    todo: list[tuple[Any, list[Any]]] = [(iter(key), [])]  # a list's rest, its items made
    while True:
        rest, made = todo[-1]
        for item in rest:
            if type(item) is list:
                todo.append((iter(item), []))
                break
            made.append(item)
        else:
            todo.pop()
            if not todo:
                return tuple(made)
            todo[-1][1].append(tuple(made))


def _name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


#: The built-in types only: what a topology without registrations carries.
BUILTIN = ValueCodec()
encode = BUILTIN.encode
decode = BUILTIN.decode
