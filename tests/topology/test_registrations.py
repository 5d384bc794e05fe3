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
    REGISTER,
    RegistrationError,
    entries,
    import_object,
    load_codec,
    topology_registrations,
)

TYPES = '''
import dataclasses, enum, functools, types

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

class Perm(enum.Flag):
    R = 4
    W = 2
    X = 1

class Node:
    def __init__(self, value, next=None):
        self.value, self.next = value, next

class Grid:
    def __init__(self, cells):
        self.cells = cells

class Private:
    __slots__ = ("__secret", "shown")
    def __init__(self, secret, shown):
        self.__secret, self.shown = secret, shown
    def secret(self):
        return self.__secret

class Guarded:
    def __init__(self, v):
        self._v = v
    @property
    def v(self):
        return self._v
    @v.setter
    def v(self, value):
        raise AssertionError("a property setter ran on network data")

class OnlySlots:
    __slots__ = ("a",)

class Vector:
    def __init__(self, x):
        self.x = x
    def norm(self):
        return abs(self.x)

class Base:
    __slots__ = ("x",)

class Hidden(Base):
    __slots__ = ()
    x = property(lambda self: 0)

class Basket:
    def __init__(self, prices):
        self.prices = prices
    @functools.cached_property
    def total(self):
        return sum(self.prices)

def double(n):
    return n * 2

@dataclasses.dataclass
class WithDefaults:
    n: int
    f: object = double
    g: object = staticmethod(double)
    h: type = Base

class Renamed:
    __slots__ = ("__p",)
    def __init__(self, p):
        self.__p = p
    def p(self):
        return self.__p
Renamed.__name__ = "SomethingElse"

class Kept(enum.Flag, boundary=enum.KEEP):
    R = 4
    W = 2

class Box:
    def __init__(self, v):
        self.v = v

class Namespace(types.SimpleNamespace):
    pass

class Cached:
    @functools.cached_property
    def total(self):
        return 1

class Settled(Cached):
    total = None
    def __init__(self):
        self.total = 42

class Overlay(Base):
    @property
    def x(self):
        return "overlay"
    @x.setter
    def x(self, value):
        raise AssertionError("a subclass's property setter ran on network data")

@dataclasses.dataclass(frozen=True)
class Key:
    parts: tuple

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


def test_a_components_registrations_join_the_topologys_as_storms_nimbus_adds_them() -> None:
    from storm_zmq import Bolt, Spout, Topology

    class Source(Spout):
        outputs = ["v"]

    class Sink(Bolt):
        pass

    class Registering(Topology):
        config = {REGISTER: ["m.Money", "m.Other"]}
        source = Source.spec(config={REGISTER: ["m.Point", {"m.Money": "m.MoneySerializer"}]})
        sink = Sink.spec(inputs=[source], config={REGISTER: [{"m.Side": "m.SideSerializer"}, "m.Point"]})
        plain = Sink.spec(inputs=[source])

    definition = Registering.definition()
    # the components' in their order, then the topology's; a class named again
    # keeps its first place, and the last word on its serializer (here the topology's)
    assert topology_registrations(definition.config, definition) == [
        "m.Point", "m.Money", {"m.Side": "m.SideSerializer"}, "m.Other"]
    assert topology_registrations({}, Registering.definition()) == [
        "m.Point", {"m.Money": "m.MoneySerializer"}, {"m.Side": "m.SideSerializer"}]


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


def test_a_module_that_raises_on_import_is_one_error_even_when_skipping(
        types: Any, tmp_path: Path) -> None:
    (tmp_path / "broken_types.py").write_text("class Point:\n    def f(self:\n")
    for skip in (False, True):
        with pytest.raises(RegistrationError, match=r"item 0 \(broken_types.Point\): importing it "
                                                    r"raised SyntaxError: "):
            codec("broken_types.Point", skip=skip)


def test_the_same_type_twice_or_a_built_in_one_is_refused(types: Any) -> None:
    with pytest.raises(RegistrationError, match="regtypes.Point is registered twice"):
        codec("regtypes.Point", "regtypes.Point")
    with pytest.raises(RegistrationError, match=r"datetime.date is carried anyway \(no need to register it\)"):
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


def test_flags_travel_by_value_so_combinations_and_zero_come_back(types: Any) -> None:
    c = codec("regtypes.Perm")
    for flag in (types.Perm.R, types.Perm.R | types.Perm.W, types.Perm(0)):
        assert round_trip(c, flag) == flag


def test_a_private_slot_travels_under_its_stored_name(types: Any) -> None:
    back = round_trip(codec("regtypes.Private"), types.Private("s3cret", 1))
    assert back.secret() == "s3cret" and back.shown == 1


def test_a_map_with_tuple_keys_inside_a_registered_value_comes_back(types: Any) -> None:
    back = round_trip(codec("regtypes.Grid"), types.Grid({(1, 2): "a", (3, 4): ["b"]}))
    assert back.cells == {(1, 2): "a", (3, 4): ["b"]}


def test_registered_values_nest_a_bounded_depth_both_ways(types: Any) -> None:
    """Each level is a msgpack call in a msgpack call: 200 of them overflowed the C
    stack and killed the process (a linked list, or 731 bytes from the network)."""
    c = codec("regtypes.Node")
    shallow = None
    for i in range(value_types.MAX_NESTING):
        shallow = types.Node(i, shallow)
    assert round_trip(c, shallow).value == value_types.MAX_NESTING - 1
    deep = types.Node(-1, shallow)
    with pytest.raises(value_types.UnsupportedValue, match="nested more than 32 deep"):
        c.packb(deep)
    looped = types.Node(0)
    looped.next = looped
    with pytest.raises(value_types.UnsupportedValue, match="or a value that contains itself"):
        c.packb(looped)
    data = b""
    for _ in range(200):  # hand-made: a sender cannot make it
        data = msgpack.packb(msgpack.ExtType(value_types.FIRST_REGISTERED, data))
    with pytest.raises(value_types.BadExtension, match="nested more than 32 deep"):
        c.unpackb(data)
    assert round_trip(c, shallow).value == value_types.MAX_NESTING - 1  # the depth was reset


def test_network_fields_are_stored_not_set_and_only_fields_are_taken(types: Any) -> None:
    c = codec("regtypes.Guarded", "regtypes.OnlySlots", "regtypes.Point")

    def made_from(cls_code: int, state: Any) -> Any:
        data = msgpack.packb(msgpack.ExtType(value_types.FIRST_REGISTERED + cls_code, msgpack.packb(state)))
        return c.unpackb(data)

    assert made_from(0, {"_v": 42}).v == 42
    for code, state, message in [
        (0, {"v": 42}, "'v' is not a field of Guarded"),  # its property: the setter must not run
        (0, {"_v": 1, "__init__": 2}, "'__init__' is not a field"),
        (0, {"__dict__": {5: 6}}, "'__dict__' is not a field of Guarded"),
        (0, {"__class__": "x"}, "'__class__' is not a field"),
        (1, {"b": 1}, "'b' is not a field of OnlySlots"),
        (2, {"x": 1}, r"fields \['y'\] of Point are missing"),
        (2, {5: 1}, "fields are not a map of names to values"),
    ]:
        with pytest.raises(value_types.BadExtension, match=message):
            made_from(code, state)


def test_the_shape_of_the_setting_is_checked_where_no_config_was(types: Any) -> None:
    with pytest.raises(RegistrationError, match="topology.kryo.register: expected a list of class names"):
        load_codec({"topology.kryo.register": "regtypes.Point"})
    with pytest.raises(RegistrationError, match="item 0: a map must be one class name"):
        load_codec({"topology.kryo.register": [{"a.B": "c", "d.E": "f"}]})


def test_a_method_is_not_a_field_and_a_slot_is_stored_past_a_subclass_property(types: Any) -> None:
    c = codec("regtypes.Vector", "regtypes.Overlay")

    def made_from(cls_code: int, state: Any) -> Any:
        data = msgpack.packb(msgpack.ExtType(value_types.FIRST_REGISTERED + cls_code, msgpack.packb(state)))
        return c.unpackb(data)

    with pytest.raises(value_types.BadExtension, match="'norm' is not a field of Vector"):
        made_from(0, {"x": 1, "norm": 5})
    assert made_from(0, {"x": -3}).norm() == 3
    overlay = made_from(1, {"x": 7})
    assert types.Base.x.__get__(overlay) == 7


def test_a_flag_value_outside_its_members_is_refused(types: Any) -> None:
    data = msgpack.packb(msgpack.ExtType(value_types.FIRST_REGISTERED, msgpack.packb(64)))
    with pytest.raises(value_types.BadExtension, match="64 is not a combination of Perm's members"):
        codec("regtypes.Perm").unpackb(data)


def test_nested_registered_values_with_tuple_keys_decode_in_one_pass(types: Any) -> None:
    """Each level used to decode its inner levels again on its retry for the tuple
    keys: 24 levels of 300 bytes took two minutes (pytest's timeout stops this one
    long before 28 levels would end)."""
    c = codec("regtypes.Plain")
    value = None
    for _ in range(28):
        value = types.Plain(inner=value, grid={(1,): 0})
    back = round_trip(c, value)
    depth = 0
    while back is not None:
        assert back.grid == {(1,): 0}
        back, depth = back.inner, depth + 1
    assert depth == 28


def test_deep_plain_nesting_inside_a_registered_value_comes_back(types: Any) -> None:
    deep: Any = 1
    for _ in range(600):
        deep = [deep]
    back = round_trip(codec("regtypes.Box"), types.Box(deep)).v
    for _ in range(600):
        back = back[0]
    assert back == 1


def test_caches_defaults_and_renamed_classes_keep_their_fields(types: Any) -> None:
    c = codec("regtypes.Basket", "regtypes.WithDefaults", "regtypes.Renamed")
    basket = types.Basket([1, 2])
    assert basket.total == 3  # the cache is in its __dict__ now
    back = round_trip(c, basket)
    assert "total" not in vars(back) and back.total == 3
    defaults = types.WithDefaults(1, 5, 6, 7)
    assert round_trip(c, defaults) == defaults
    assert round_trip(c, types.Renamed("p")).p() == "p"


def test_a_slot_is_read_and_stored_through_its_own_descriptor(types: Any) -> None:
    hidden = types.Hidden()
    types.Base.x.__set__(hidden, 5)
    back = round_trip(codec("regtypes.Hidden"), hidden)
    assert types.Base.x.__get__(back) == 5 and back.x == 0


def test_what_a_receiver_would_refuse_is_refused_at_the_emitter(types: Any) -> None:
    c = codec("regtypes.Vector", "regtypes.Kept")
    shadowed = types.Vector(1)
    shadowed.norm = 5
    with pytest.raises(value_types.UnsupportedValue, match=r"its attribute\(s\) \['norm'\] shadow the class's own"):
        c.packb(shadowed)
    with pytest.raises(value_types.UnsupportedValue, match="8 is not a combination of Kept's members"):
        c.packb(types.Kept(8))


def test_c_types_members_and_overridden_names_are_not_taken_for_slots_or_caches(types: Any) -> None:
    c = codec("regtypes.Namespace", "regtypes.Settled")
    back = round_trip(c, types.Namespace(a=1))  # SimpleNamespace's __dict__ is a member
    assert type(back) is types.Namespace and vars(back) == {"a": 1}
    assert vars(round_trip(c, types.Settled())) == {"total": 42}  # a plain attribute here


def test_deeply_nested_tuple_keys_come_back(types: Any) -> None:
    key: Any = 1
    for _ in range(600):
        key = (key,)
    assert round_trip(codec("regtypes.Box"), types.Box({key: 1})).v == {key: 1}
