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
in two time zones, may go to different tasks.

Only these exact types are carried; a subclass (a pandas ``Timestamp`` is a
``datetime``) is refused with a hint, since it would arrive as its base type and lose
what it adds. A ``datetime`` or ``time`` keeps its time zone if it is a
``datetime.timezone`` (a fixed offset; its name is not kept) or a
``zoneinfo.ZoneInfo`` (by key); any other ``tzinfo`` (pytz, dateutil) is refused,
since its rules cannot be rebuilt on the receiving side.

Extension type codes (docs/wire-format.md) are part of the wire format: never reuse
or renumber one.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgpack

#: msgpack extension type codes of the carried types (0-127; these are fixed).
DATETIME = 1  # UTF-8 ISO 8601, naive or with a fixed UTC offset
ZONED_DATETIME = 2  # msgpack [local ISO 8601 without offset, zone key, fold]
DATE = 3  # UTF-8 ISO 8601 date
TIME = 4  # UTF-8 ISO 8601 time, naive or with a fixed UTC offset
TIMEDELTA = 5  # msgpack [days, seconds, microseconds]
DECIMAL = 6  # UTF-8 str() of the Decimal (NaN, Infinity and -0 included)
UUID = 7  # the 16 bytes

#: What a tuple carries, for error messages.
CARRIED = (
    "None, bool, int, float, str, bytes, datetime.datetime/date/time/timedelta, "
    "decimal.Decimal, uuid.UUID, and lists/tuples/dicts of those"
)


class UnsupportedValue(TypeError):
    """A value of a carried type that cannot travel as it is (its message says why)."""


class BadExtension(ValueError):
    """Extension data that is no carried value (its message says why)."""


def _offset_iso(value: datetime.datetime | datetime.time, kind: str) -> bytes:
    tz = value.tzinfo
    if tz is None or type(tz) is datetime.timezone:
        return value.isoformat().encode()
    raise UnsupportedValue(
        f"a {kind} whose tzinfo is a {type(tz).__module__}.{type(tz).__qualname__}, whose "
        "rules cannot travel (use datetime.timezone or zoneinfo.ZoneInfo, or convert it "
        "to UTC first)"
    )


def _encode_datetime(value: datetime.datetime) -> msgpack.ExtType:
    tz = value.tzinfo
    if type(tz) is ZoneInfo:
        key = tz.key
        if key is None:  # made from a file, not by name: the receiver could not find it
            raise UnsupportedValue(
                "a datetime whose ZoneInfo was not made from a zone key (ZoneInfo.from_file); "
                "use ZoneInfo(key), or convert it to UTC first"
            )
        local = value.replace(tzinfo=None).isoformat()
        return msgpack.ExtType(ZONED_DATETIME, msgpack.packb([local, key, value.fold]))
    return msgpack.ExtType(DATETIME, _offset_iso(value, "datetime"))


def _encode_time(value: datetime.time) -> msgpack.ExtType:
    return msgpack.ExtType(TIME, _offset_iso(value, "time"))


def _encode_date(value: datetime.date) -> msgpack.ExtType:
    return msgpack.ExtType(DATE, value.isoformat().encode())


def _encode_timedelta(value: datetime.timedelta) -> msgpack.ExtType:
    return msgpack.ExtType(TIMEDELTA, msgpack.packb([value.days, value.seconds, value.microseconds]))


def _encode_decimal(value: decimal.Decimal) -> msgpack.ExtType:
    return msgpack.ExtType(DECIMAL, str(value).encode())


def _encode_uuid(value: uuid.UUID) -> msgpack.ExtType:
    return msgpack.ExtType(UUID, value.bytes)


_ENCODERS: dict[type, Any] = {
    datetime.datetime: _encode_datetime,
    datetime.date: _encode_date,
    datetime.time: _encode_time,
    datetime.timedelta: _encode_timedelta,
    decimal.Decimal: _encode_decimal,
    uuid.UUID: _encode_uuid,
}


def _text(data: bytes) -> str:
    return bytes(data).decode()


def _decode_zoned(data: bytes) -> datetime.datetime:
    local, key, fold = msgpack.unpackb(data)
    if type(local) is not str or type(key) is not str or fold not in (0, 1):
        raise BadExtension("zoned datetime is not [local ISO time, zone key, fold]")
    try:
        zone = ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise BadExtension(f"time zone {key!r} is not known on this host ({exc})") from None
    return datetime.datetime.fromisoformat(local).replace(tzinfo=zone, fold=fold)


def _decode_timedelta(data: bytes) -> datetime.timedelta:
    days, seconds, microseconds = msgpack.unpackb(data)
    return datetime.timedelta(days=days, seconds=seconds, microseconds=microseconds)


_DECODERS: dict[int, Any] = {
    DATETIME: lambda data: datetime.datetime.fromisoformat(_text(data)),
    ZONED_DATETIME: _decode_zoned,
    DATE: lambda data: datetime.date.fromisoformat(_text(data)),
    TIME: lambda data: datetime.time.fromisoformat(_text(data)),
    TIMEDELTA: _decode_timedelta,
    DECIMAL: lambda data: decimal.Decimal(_text(data)),
    UUID: lambda data: uuid.UUID(bytes=bytes(data)),
}


#: The first extension code of a topology's own types (`topology.kryo.register`):
#: codes below it are kept for built-in types to come.
FIRST_REGISTERED = 32
MAX_REGISTERED = 128 - FIRST_REGISTERED


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
            if kind.cls in self._encoders or kind.code in self._decoders:
                raise ValueError(f"{kind.name} is registered twice, or is a type carried anyway")
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
                hint = " (a pandas Timestamp: .to_pydatetime())" if base in _ENCODERS else \
                    " or register it too (topology.kryo.register)"
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
        except BadExtension:
            raise
        except Exception as exc:  # the parsers' own kinds: decimal's, msgpack's, uuid's
            raise BadExtension(f"extension type {code} holds no value of its type ({exc!r})") from None

    def _encode_registered(self, kind: RegisteredType, value: Any) -> msgpack.ExtType:
        try:
            data = kind.to_data(value)
        except Exception as exc:
            raise UnsupportedValue(f"a {_name(type(value))}, whose serializer ({kind.name}) "
                                   f"raised {exc!r}") from None
        try:
            return msgpack.ExtType(kind.code, msgpack.packb(data, default=self.encode))
        except (TypeError, ValueError, OverflowError) as exc:
            raise UnsupportedValue(f"a {_name(type(value))}, serialized by {kind.name} to "
                                   f"something a tuple cannot carry ({exc})") from None

    def _decode_registered(self, kind: RegisteredType, data: bytes) -> Any:
        value = msgpack.unpackb(data, ext_hook=self.decode, strict_map_key=False)
        try:
            return kind.from_data(value)
        except Exception as exc:
            raise BadExtension(f"{kind.name} could not make a value back ({exc!r})") from None


def _name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


#: The built-in types only: what a topology without registrations carries.
BUILTIN = ValueCodec()
encode = BUILTIN.encode
decode = BUILTIN.decode
