"""topology.kryo.register: the user's own types, found by name, numbered by place,
travelling by fields, by name (an Enum) or through a serializer."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path
from typing import Any

import msgpack
import pytest

from storm_zmq.topology import value_types
from storm_zmq.topology.registrations import (
    RegistrationError,
    entries,
    import_object,
    load_codec,
)

TYPES = '''
import dataclasses, enum

class Side(enum.Enum):
    BUY = 1
    SELL = "s"

@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: float

@dataclasses.dataclass(slots=True)
class Slotted:
    a: int
    b: list

class Plain:
    def __init__(self, **fields):
        for key, value in fields.items():
            setattr(self, key, value)
    def __eq__(self, other):
        return type(other) is type(self) and vars(self) == vars(other)

class SubPoint(Point):
    pass

class Money:
    def __init__(self, cents, currency):
        self.cents, self.currency = cents, currency
    def __eq__(self, other):
        return (self.cents, self.currency) == (other.cents, other.currency)

class MoneySerializer:
    def serialize(self, money):
        return [money.cents, money.currency]
    def deserialize(self, data):
        return Money(*data)

class Broken:
    def serialize(self, value):
        raise RuntimeError("cannot today")
    def deserialize(self, data):
        raise RuntimeError("nor tomorrow")

class NeedsArgs:
    def __init__(self, something):
        pass
    serialize = deserialize = staticmethod(lambda value: value)

class HalfSerializer:
    def serialize(self, value):
        return value

money_serializer = MoneySerializer()

class Words(tuple):
    pass

def helper():
    pass
'''


@pytest.fixture
def types(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    (tmp_path / "regtypes.py").write_text(textwrap.dedent(TYPES))
    monkeypatch.syspath_prepend(str(tmp_path))
    import regtypes

    yield regtypes
    import sys

    sys.modules.pop("regtypes", None)


def codec(*items: Any, skip: bool = False) -> value_types.ValueCodec:
    return load_codec({"topology.kryo.register": list(items),
                       "topology.skip.missing.kryo.registrations": skip})


def round_trip(c: value_types.ValueCodec, value: Any) -> Any:
    return msgpack.unpackb(c.packb(value), ext_hook=c.decode, strict_map_key=False)


def test_no_registrations_is_the_built_in_codec() -> None:
    assert load_codec({}) is value_types.BUILTIN
    assert load_codec({"topology.kryo.register": None}) is value_types.BUILTIN
    assert load_codec({"topology.kryo.register": []}) is value_types.BUILTIN


def test_entries_are_names_or_one_entry_maps() -> None:
    assert entries(["a.B", {"c.D": "c.DSerializer"}]) == [("a.B", None), ("c.D", "c.DSerializer")]
    assert entries(None) == []


def test_names_may_be_dotted_or_with_a_colon_before_the_attribute_path(types: Any) -> None:
    assert import_object("regtypes.Point") is types.Point
    assert import_object("regtypes:Side.BUY") is types.Side.BUY
    with pytest.raises(ImportError, match="not a dotted name"):
        import_object("Point")
    with pytest.raises(AttributeError):
        import_object("regtypes.Nope")


def test_each_kind_of_registration_comes_back_equal_and_of_its_type(types: Any) -> None:
    c = codec("regtypes.Side", "regtypes.Point", "regtypes.Slotted", "regtypes.Plain",
              {"regtypes.Money": "regtypes.MoneySerializer"})
    values = [
        types.Side.SELL,
        types.Point(1, 2.5),
        types.Slotted(3, [types.Point(0, 0.0), "x"]),
        types.Plain(when=__import__("datetime").date(2024, 1, 1), n=None),
        types.Money(150, "EUR"),
        {"nested": [types.Side.BUY, types.Money(1, "USD")]},
    ]
    back = round_trip(c, values)
    assert back == values
    assert [type(v) for v in back] == [type(v) for v in values]
    assert back[0] is types.Side.SELL


def test_a_serializer_may_be_an_object_as_well_as_a_class(types: Any) -> None:
    c = codec({"regtypes.Money": "regtypes.money_serializer"})
    assert round_trip(c, types.Money(5, "GBP")) == types.Money(5, "GBP")


def test_codes_follow_the_place_in_the_list_skipped_items_included(
        types: Any, caplog: pytest.LogCaptureFixture) -> None:
    full = codec("regtypes.Side", "regtypes.Point")
    with caplog.at_level(logging.WARNING):
        partial = codec("no_such_module.Type", "regtypes.Point", skip=True)
    assert "topology.kryo.register item 0 (no_such_module.Type): skipped, not found here" in caplog.text
    point = full.packb(types.Point(1, 1.0))
    assert point[2] == value_types.FIRST_REGISTERED + 1
    assert partial.packb(types.Point(1, 1.0)) == point  # a worker that skipped item 0 agrees


def test_equal_values_encode_alike_whatever_order_their_fields_were_set(types: Any) -> None:
    c = codec("regtypes.Plain")
    assert c.packb(types.Plain(a=1, b=2)) == c.packb(types.Plain(b=2, a=1))


@pytest.mark.parametrize(("item", "message"), [
    ("no_such_module.Type", r"item 0 \(no_such_module.Type\): ModuleNotFoundError: No module named "
                            r"'no_such_module' \(is the project's src/ where it is\? "
                            r"topology.skip.missing.kryo.registrations: true skips such an item\)"),
    ("regtypes.Nope", r"item 0 \(regtypes.Nope\): AttributeError: .*Nope"),
    ("regtypes.helper", r"item 0 \(regtypes.helper\): regtypes.helper is a function, not a class"),
    ("regtypes.Words", r"is a subclass of tuple, which msgpack carries as its own"),
    ({"regtypes.Money": "regtypes.NeedsArgs"}, r"the serializer of regtypes.Money cannot be made "
                                               r"with no arguments"),
    ({"regtypes.Money": "regtypes.HalfSerializer"}, r"the serializer of regtypes.Money has no "
                                                    r"deserialize method"),
    ({"regtypes.Money": "regtypes.Nothing"}, r"item 0 \(regtypes.Money\): AttributeError"),
])
def test_a_registration_that_cannot_be_used_names_its_item_and_why(
        types: Any, item: Any, message: str) -> None:
    with pytest.raises(RegistrationError, match=message):
        codec(item)


def test_the_same_type_twice_or_a_built_in_one_is_refused(types: Any) -> None:
    with pytest.raises(RegistrationError, match="regtypes.Point is registered twice"):
        codec("regtypes.Point", "regtypes.Point")
    with pytest.raises(RegistrationError, match="datetime.date is registered twice, or is a type carried"):
        codec("datetime.date")


def test_more_registrations_than_extension_codes_is_refused(types: Any) -> None:
    with pytest.raises(RegistrationError, match="has 97 items; at most 96"):
        codec(*["regtypes.Point"] * 97)


def test_a_subclass_of_a_registered_type_says_to_register_it_too(types: Any) -> None:
    c = codec("regtypes.Point")
    with pytest.raises(value_types.UnsupportedValue, match="a subclass of regtypes.Point .* or "
                                                           "register it too"):
        c.packb(types.SubPoint(1, 2.0))


def test_a_serializer_that_raises_is_named_on_both_sides(types: Any) -> None:
    c = codec({"regtypes.Money": "regtypes.Broken"})
    with pytest.raises(value_types.UnsupportedValue,
                       match=r"whose serializer \(regtypes.Money\) raised RuntimeError\('cannot today'\)"):
        c.packb(types.Money(1, "EUR"))
    data = msgpack.packb(msgpack.ExtType(value_types.FIRST_REGISTERED, msgpack.packb([1, "EUR"])))
    with pytest.raises(value_types.BadExtension, match=r"extension type 32: regtypes.Money could not make a value back "
                                                       r"\(RuntimeError\('nor tomorrow'\)\)"):
        msgpack.unpackb(data, ext_hook=c.decode)


def test_a_serializer_giving_what_no_tuple_carries_says_so(types: Any) -> None:
    c = codec("regtypes.Plain")
    with pytest.raises(value_types.UnsupportedValue, match=r"a regtypes.Plain, serialized by "
                                                           r"regtypes.Plain to something a tuple cannot carry"):
        c.packb(types.Plain(s={1, 2}))


def test_an_unregistered_code_names_the_likely_cause(types: Any) -> None:
    data = msgpack.packb(msgpack.ExtType(value_types.FIRST_REGISTERED + 5, b""))
    with pytest.raises(value_types.BadExtension, match="do all workers run the same topology.kryo.register"):
        msgpack.unpackb(data, ext_hook=codec("regtypes.Point").decode)
