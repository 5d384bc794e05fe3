"""The types a tuple carries beyond msgpack's own: round trips, canonical and fixed
encodings, and clear refusals."""

from __future__ import annotations

import datetime
import decimal
import json
import os
import random
import subprocess
import sys
import uuid
from typing import Any
from zoneinfo import ZoneInfo

import msgpack
import pytest

from storm_zmq.topology import value_types
from storm_zmq.topology.grouping import Grouping, fields_hash, make_chooser


def pack(value: Any) -> bytes:
    return msgpack.packb(value, default=value_types.encode)


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, ext_hook=value_types.decode)


NEW_YORK = ZoneInfo("America/New_York")
UTC = datetime.UTC

VALUES = [
    datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
    datetime.datetime(1, 1, 1),
    datetime.datetime(9999, 12, 31, 23, 59, 59, 999999),
    datetime.datetime(2024, 1, 2, tzinfo=UTC),
    datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=-9, minutes=-30))),
    datetime.datetime(2024, 11, 3, 1, 30, tzinfo=NEW_YORK),
    datetime.datetime(2024, 11, 3, 1, 30, fold=1, tzinfo=NEW_YORK),  # the second 1:30 that night
    datetime.date(2024, 2, 29),
    datetime.date(1, 1, 1),
    datetime.time(0, 0),
    datetime.time(23, 59, 59, 999999),
    datetime.time(12, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
    datetime.timedelta(0),
    datetime.timedelta(days=-1, seconds=5, microseconds=7),
    datetime.timedelta.max,
    datetime.timedelta.min,
    decimal.Decimal("1.10"),
    decimal.Decimal("-0"),
    decimal.Decimal("1E+999999"),
    decimal.Decimal("Infinity"),
    uuid.UUID(int=0),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_carried_value_comes_back_equal_of_its_type_with_its_zone_and_fold(value: Any) -> None:
    back = unpack(pack(value))
    assert type(back) is type(value)
    assert back == value and str(back) == str(value)  # str: Decimal's exponent and sign
    if isinstance(value, datetime.datetime | datetime.time):
        assert back.tzinfo == value.tzinfo and back.fold == value.fold
        assert back.utcoffset() == value.utcoffset()


def test_a_decimal_nan_comes_back_as_nan() -> None:
    assert unpack(pack(decimal.Decimal("NaN"))).is_nan()


def test_carried_values_inside_lists_and_dicts_and_beside_plain_ones() -> None:
    value = {"when": [datetime.date(2024, 1, 1), {"amount": decimal.Decimal("2.50")}], "n": 1}
    assert unpack(pack(value)) == value


def test_equal_values_encode_to_the_same_bytes_and_the_codes_never_change() -> None:
    """The encodings are the wire format and a fields grouping's hash: fixed."""
    assert pack(datetime.date(2024, 1, 2)) == b"\xd6\x03" + bytes([0x07, 0xE8, 1, 2])
    assert pack(datetime.datetime(2024, 1, 2, 3, 4, 5, 6)) == (
        b"\xc7\x0b\x01" + bytes([0x07, 0xE8, 1, 2, 3, 4, 5, 0, 0, 0, 6]))
    assert pack(datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=-1)))) == (
        b"\xc7\x13\x01" + bytes([0x07, 0xE8, 1, 2, 0, 0, 0, 0, 0, 0, 0])
        + (-3_600_000_000).to_bytes(8, "big", signed=True))
    assert pack(datetime.time(3, 4)) == b"\xc7\x07\x04" + bytes([3, 4, 0, 0, 0, 0, 0])
    assert pack(decimal.Decimal("1.10")) == b"\xd6\x06" + b"1.10"
    assert pack(uuid.UUID(int=1)) == b"\xd8\x07" + bytes(15) + b"\x01"
    assert pack(datetime.timedelta(days=-1, seconds=2, microseconds=3)) == (
        b"\xc7\x0c\x05" + b"\xff\xff\xff\xff" + bytes([0, 0, 0, 2, 0, 0, 0, 3]))
    zoned = pack(datetime.datetime(2024, 11, 3, 1, 30, fold=1, tzinfo=NEW_YORK))  # the second 1:30
    assert zoned[:3] == b"\xc7\x1b\x02"
    assert zoned[3:] == bytes([0x07, 0xE8, 0x80 | 11, 3, 1, 30, 0, 0, 0, 0, 0]) + b"America/New_York"
    assert pack(datetime.datetime(2024, 1, 2, 3, fold=1)) == (  # naive: which local time it is
        b"\xc7\x0b\x01" + bytes([0x07, 0xE8, 0x80 | 1, 2, 3, 0, 0, 0, 0, 0, 0]))
    for value in VALUES:
        assert pack(value) == pack(unpack(pack(value)))


def test_a_subclass_is_refused_with_what_to_convert_it_to() -> None:
    class Stamp(datetime.datetime):
        pass

    with pytest.raises(value_types.UnsupportedValue, match="a subclass of datetime.datetime .*convert it"):
        pack(Stamp(2024, 1, 1))


class FixedZone(datetime.tzinfo):
    """A tzinfo of another library's kind (pytz, dateutil): its rules are code."""

    def utcoffset(self, dt: Any) -> datetime.timedelta:
        return datetime.timedelta(hours=2)

    def dst(self, dt: Any) -> datetime.timedelta:
        return datetime.timedelta(0)


def test_a_zone_whose_rules_cannot_travel_is_refused_with_what_to_use() -> None:
    with pytest.raises(value_types.UnsupportedValue,
                       match=r"a datetime whose tzinfo is a .*FixedZone, whose rules cannot travel "
                             r"\(use datetime.timezone or zoneinfo.ZoneInfo"):
        pack(datetime.datetime(2024, 1, 1, tzinfo=FixedZone()))
    for zone in (FixedZone(), NEW_YORK):  # a time has no date to find a zone's offset for
        with pytest.raises(value_types.UnsupportedValue,
                           match=r"a time whose tzinfo is a .*, whose rules cannot travel \(use "
                                 r"datetime.timezone: a time has no date"):
            pack(datetime.time(1, 0, tzinfo=zone))


def test_the_fold_travels_where_it_tells_two_times_apart_and_only_there() -> None:
    """Naive: which of a repeated local hour it is. Zoned: kept in the hour that
    happens twice, dropped elsewhere (equal values, equal bytes, one task for both in
    a fields grouping). Fixed offset: dropped (it changes nothing)."""
    naive = datetime.datetime(2021, 11, 7, 1, 30, fold=1)
    assert unpack(pack(naive)).fold == 1
    twice = datetime.datetime(2021, 11, 7, 1, 30, fold=1, tzinfo=NEW_YORK)
    back = unpack(pack(twice))
    assert back.fold == 1 and back.utcoffset() == twice.utcoffset() == datetime.timedelta(hours=-5)
    june = datetime.datetime(2021, 6, 1, 12, tzinfo=NEW_YORK)
    assert june == june.replace(fold=1) and pack(june) == pack(june.replace(fold=1))
    fixed = datetime.datetime(2021, 6, 1, 12, tzinfo=UTC)
    assert pack(fixed.replace(fold=1)) == pack(fixed)
    assert unpack(pack(datetime.time(1, 30, fold=1))).fold == 1
    assert fields_hash([june]) == fields_hash([june.replace(fold=1)])


def test_a_zone_made_from_a_file_is_refused(tmp_path: Any) -> None:
    import zoneinfo

    path = next((p for p in (os.path.join(d, "America/New_York") for d in zoneinfo.TZPATH)
                 if os.path.exists(p)), None)
    if path is None:
        pytest.skip("no time zone database file on this machine (tzdata package only)")
    with open(path, "rb") as file:
        zone = ZoneInfo.from_file(file)
    with pytest.raises(value_types.UnsupportedValue, match="not made from a zone key"):
        pack(datetime.datetime(2024, 1, 1, tzinfo=zone))


def test_other_types_stay_msgpacks_type_error() -> None:
    with pytest.raises(TypeError) as info:
        pack({1, 2})
    assert not isinstance(info.value, value_types.UnsupportedValue)


@pytest.mark.parametrize(
    ("code", "data", "message"),
    [
        (99, b"", "unknown msgpack extension type 99"),
        (value_types.DATE, b"\x07\xe8\x0d\x01", "extension type 3 holds no value.*month must be in 1..12"),
        (value_types.DATE, b"\x07\xe8\x01", "extension type 3: 3 bytes, where a value has 4"),
        (value_types.DATETIME, b"\x07\xe8\x01\x01", "extension type 1 holds no value"),
        (value_types.DATETIME, bytes([7, 0xE8, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1]),
         "extension type 1: 12 bytes, where a value has 11 or 19"),
        (value_types.DATETIME, bytes([7, 0xE8, 1, 1, 0, 0, 0, 0, 0, 0, 0]) + (10**12).to_bytes(8, "big"),
         "extension type 1 holds no value.*offset must be a timedelta strictly between"),
        (value_types.TIME, bytes([25, 0, 0, 0, 0, 0, 0]), "hour must be in 0..23"),
        (value_types.DECIMAL, b"1.2.3", "extension type 6 holds no value"),
        (value_types.DECIMAL, b"\xff", "extension type 6 holds no value"),
        (value_types.UUID, b"short", "extension type 7 holds no value.*16-char"),
        (value_types.TIMEDELTA, b"\x00" * 11, "extension type 5: 11 bytes, where a value has 12"),
        (value_types.TIMEDELTA, b"\x7f\xff\xff\xff" + bytes(8), "extension type 5 holds no value.*days"),
        (value_types.ZONED_DATETIME, bytes([7, 0xE8, 1, 1, 0, 0, 0, 0, 0, 0, 0]) + b"No/Such_Zone",
         "extension type 2: time zone 'No/Such_Zone' is not known on this host"),
        (value_types.ZONED_DATETIME, bytes([7, 0xE8, 1, 1, 0, 0, 0, 0, 0, 0, 0]) + b"../etc/passwd",
         "extension type 2: time zone '../etc/passwd' is not known"),
        (value_types.DATETIME, bytes([7, 0xE8, 0x81, 1, 0, 0, 0, 0, 0, 0, 0]) + bytes(8),
         "extension type 1: a fold with a fixed offset"),
        (value_types.TIME, bytes([0x81, 0, 0, 0, 0, 0, 0]) + bytes(8),
         "extension type 4: a fold with a fixed offset"),
        (value_types.ZONED_DATETIME, b"\xc1", "extension type 2 holds no value"),
        (value_types.ZONED_DATETIME, bytes([7, 0xE8, 1, 1, 0, 0, 0, 0, 0, 0, 0]) + b"\xff",
         "extension type 2 holds no value"),
    ],
)
def test_bad_extension_data_is_a_value_error_naming_the_cause(code: int, data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        value_types.decode(code, data)


CHILD = """
import datetime, decimal, json, random, sys, uuid
from zoneinfo import ZoneInfo
from storm_zmq.topology.grouping import Grouping, make_chooser
keys = [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(40)]
keys += [decimal.Decimal(i) / 8 for i in range(40)] + [uuid.UUID(int=i * 7919) for i in range(40)]
keys += [datetime.datetime(2024, 3, 10, i % 24, tzinfo=ZoneInfo("Europe/Paris")) for i in range(40)]
one = make_chooser(Grouping.fields("key"), ["key", "n"], range(1, 14), (), random.Random())
two = make_chooser(Grouping.fields("key", "n"), ["key", "n"], range(1, 14), (), random.Random())
print(json.dumps([[one.choose((k, i))[0], two.choose((k, i))[0]] for i, k in enumerate(keys)]))
"""


def test_a_fields_grouping_on_carried_values_picks_the_same_task_in_every_process() -> None:
    results = []
    for seed in ("1", "4242"):
        out = subprocess.run([sys.executable, "-c", CHILD], env=dict(os.environ, PYTHONHASHSEED=seed),
                             capture_output=True, text=True, check=True, timeout=60).stdout
        results.append(json.loads(out))
    assert results[0] == results[1]
    assert len({one for one, _ in results[0]}) > 6, "the keys spread over the tasks"
    assert fields_hash([datetime.date(2024, 1, 1)]) == fields_hash([datetime.date(2024, 1, 1)])
    chooser = make_chooser(Grouping.fields("key"), ["key"], range(1, 14), (), random.Random())
    assert chooser.choose((decimal.Decimal("1.5"),)) == chooser.choose((decimal.Decimal("1.5"),))


def test_an_int_beyond_64_bits_stays_an_overflow() -> None:
    with pytest.raises(OverflowError):
        pack(2**64)
