"""`topology.kryo.register`: the user's own types that tuples carry, as Storm's Kryo
registrations are: a list whose items are a class's name, or a one-entry map of a
class's name to its serializer's name.

    topology.kryo.register:
      - myproject.types.Point                   # its fields travel
      - myproject.types.Side                    # an Enum: its member's name travels
      - myproject.types.Money: myproject.types.MoneySerializer

Without a serializer a class travels as Kryo's default (FieldSerializer) sends one:
its fields (``__dict__`` and ``__slots__``) by name, set again on an instance made
without calling ``__init__``; an Enum by its member's name. A serializer (a class,
made with no arguments, or an object) has ``serialize(value)``, returning what a
tuple carries (registered types included), and ``deserialize(data)``.

A component's own ``config`` may register types too: as Storm's nimbus does
(`Nimbus.normalizeConf`), they join the topology's list, which every worker then
reads (`topology_registrations`, at run and at submit).

Each item gets the extension code `value_types.FIRST_REGISTERED` + its place in the
list, skipped ones included, so that a worker that cannot import one (with
`topology.skip.missing.kryo.registrations`) still numbers the others as the rest do.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import logging
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from storm_zmq.config import SCHEMA, check_value
from storm_zmq.topology.value_types import (
    BUILTIN,
    FIRST_REGISTERED,
    MAX_REGISTERED,
    RegisteredType,
    ValueCodec,
)

if TYPE_CHECKING:
    from storm_zmq.topology.definition import TopologyDefinition

log = logging.getLogger(__name__)

REGISTER = "topology.kryo.register"
SKIP_MISSING = "topology.skip.missing.kryo.registrations"

#: Types msgpack carries as its own (a subclass too: a NamedTuple is an array), so
#: a registration of one of them would never be used.
_CARRIED_ANYWAY = (bool, int, float, str, bytes, bytearray, list, tuple, dict)


class RegistrationError(ValueError):
    """A `topology.kryo.register` item that cannot be used; the message names it."""


def entries(value: Any) -> list[tuple[str, str | None]]:
    """(class name, serializer name or None) per item; the shape was checked with
    the config (`config.check_value`)."""
    items = []
    for item in value or ():
        if isinstance(item, Mapping):
            ((class_name, serializer_name),) = item.items()
            items.append((class_name, serializer_name))
        else:
            items.append((item, None))
    return items


def topology_registrations(conf: Mapping[str, Any], definition: TopologyDefinition) -> list[Any]:
    """`topology.kryo.register` for the whole topology, made as Storm's nimbus makes
    it: each component's own registrations, in the topology's order of components,
    then the topology's (`conf`'s). A class named again keeps its first place and
    takes the later serializer (or none), so the topology's word is the last."""
    merged: dict[str, str | None] = {}
    for value in [*(component.config.get(REGISTER) for component in definition.components.values()),
                  conf.get(REGISTER)]:
        for class_name, serializer_name in entries(value):
            merged[class_name] = serializer_name
    return [name if serializer is None else {name: serializer} for name, serializer in merged.items()]


def import_object(name: str) -> Any:
    """The object a dotted name (``pkg.module.Class``) or ``pkg.module:Class.Inner``
    names. ImportError or AttributeError, saying which part was not found."""
    if ":" in name:
        module_name, _, path = name.partition(":")
    else:
        module_name, _, path = name.rpartition(".")
        if not module_name:
            raise ImportError(f"{name!r} is not a dotted name (module.Class)")
    module = importlib.import_module(module_name)
    value: Any = module
    for part in path.split("."):
        value = getattr(value, part)
    return value


def registered_type(cls: Any, code: int, name: str, serializer: Any = None) -> RegisteredType:
    """How `cls` travels (see the module docstring); RegistrationError if it cannot."""
    if not isinstance(cls, type):
        raise RegistrationError(f"{name} is a {type(cls).__name__}, not a class")
    if issubclass(cls, _CARRIED_ANYWAY):
        raise RegistrationError(
            f"{name} is a subclass of {next(b for b in _CARRIED_ANYWAY if issubclass(cls, b)).__name__}, "
            "which msgpack carries as its own (a tuple's as a list): the registration would never be used"
        )
    if serializer is not None:
        if isinstance(serializer, type):
            try:
                serializer = serializer()
            except Exception as exc:
                raise RegistrationError(f"the serializer of {name} cannot be made with no "
                                        f"arguments: {exc!r}") from None
        missing = [m for m in ("serialize", "deserialize") if not callable(getattr(serializer, m, None))]
        if missing:
            raise RegistrationError(f"the serializer of {name} has no {' and no '.join(missing)} method")
        return RegisteredType(cls, code, name, serializer.serialize, serializer.deserialize)
    if issubclass(cls, enum.Flag):  # a combination of members has no name of its own
        return RegisteredType(cls, code, name, _flag_value(cls), _flag_of(cls))
    if issubclass(cls, enum.Enum):
        return RegisteredType(cls, code, name, _member_name, _member_named(cls))
    return RegisteredType(cls, code, name, _fields_reader(cls), _instance_maker(cls))


def _member_name(member: enum.Enum) -> str:
    return member.name


def _flag_value(cls: type[enum.Flag]) -> Callable[[enum.Flag], int]:
    """A Flag's value, refused at the emit if the receiver would refuse it."""
    check = _flag_check(cls)

    def value(member: enum.Flag) -> int:
        value = member.value
        check(value)
        return value
    return value


def _flag_of(cls: type[enum.Flag]) -> Callable[[Any], enum.Flag]:
    """A Flag from its value: only bits of its members, since a Flag that keeps
    unknown bits (boundary KEEP) caches every value it is given, for good."""
    check = _flag_check(cls)

    def flag(value: Any) -> enum.Flag:
        check(value)
        return cls(value)
    return flag


def _flag_check(cls: type[enum.Flag]) -> Callable[[Any], None]:
    mask = getattr(cls, "_flag_mask_", None)

    def check(value: Any) -> None:
        if type(value) is not int or (mask is not None and value & ~mask):
            raise ValueError(f"{value!r} is not a combination of {cls.__qualname__}'s members")
    return check


def _member_named(cls: type[enum.Enum]) -> Callable[[Any], enum.Enum]:
    def member(name: Any) -> enum.Enum:
        return cls[name]
    return member


def _slot_descriptors(cls: type) -> dict[str, Any]:
    """The slots of `cls`'s instances: the name each is stored under (a private
    ``__x`` of class ``C`` is ``_C__x``) -> the slot's own descriptor, which reads
    and stores it whatever a subclass defines under that name. Found as the member
    descriptors the classes hold, not rebuilt from ``__slots__``."""
    slots: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__flags__ & _HEAP_TYPE:  # a C type's members are its own business
            continue
        for attribute in vars(klass).values():
            if (type(attribute) is types.MemberDescriptorType and attribute.__objclass__ is klass
                    and attribute.__name__ not in ("__dict__", "__weakref__")):
                slots[attribute.__name__] = attribute
    return slots


#: Py_TPFLAGS_HEAPTYPE: a class made by a class statement, not a C type
#: (SimpleNamespace's __dict__, an exception's __suppress_context__ are members too).
_HEAP_TYPE = 1 << 9


def _behaviour(cls: type) -> tuple[set[str], set[str]]:
    """(names the class defines with behaviour, the caches among them): an instance
    attribute under a method's or a property's name would shadow it and break on
    its first use; a ``functools.cached_property`` is one that is meant to, a cache
    that is made again where it is needed. A dataclass field is not behaviour,
    whatever its default is."""
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    defined, caches, seen = set(), set(), set()
    for klass in cls.__mro__:
        for name, attribute in vars(klass).items():
            if name in seen:  # what the name resolves to is its first definition
                continue
            seen.add(name)
            if name in fields or type(attribute) is types.MemberDescriptorType:
                continue
            if isinstance(attribute, functools.cached_property):
                caches.add(name)
            elif hasattr(type(attribute), "__get__"):
                defined.add(name)
    return defined, caches


def _instances_have_dict(cls: type) -> bool:
    """Where the MRO has a ``__dict__`` descriptor (`type.__dictoffset__` says the
    same on CPython; PyPy has none)."""
    return any("__dict__" in vars(klass) for klass in cls.__mro__)


def _fields_reader(cls: type) -> Callable[[Any], dict[str, Any]]:
    """What gives an instance's fields by name, sorted, so that equal values encode
    alike (a fields grouping hashes the encoding) whatever order their attributes
    were set in: its dict, less the caches of its cached properties, and its slots,
    each read through its own descriptor. An attribute under a name of the class's
    behaviour is refused here, as the receiver would refuse it."""
    slots = _slot_descriptors(cls)
    defined, caches = _behaviour(cls)

    has_dict = _instances_have_dict(cls)

    def fields(value: Any) -> dict[str, Any]:
        state = dict(object.__getattribute__(value, "__dict__")) if has_dict else {}
        if caches:
            for name in caches.intersection(state):
                del state[name]
        if not defined.isdisjoint(state):
            raise ValueError(f"its attribute(s) {sorted(defined.intersection(state))} shadow "
                             "the class's own (a method or property under that name)")
        for name, descriptor in slots.items():
            try:
                state[name] = descriptor.__get__(value)
            except AttributeError:  # never set
                pass
        return {key: state[key] for key in sorted(state)}
    return fields


def _instance_maker(cls: type) -> Callable[[Any], Any]:
    """What makes an instance back from its fields, as Kryo's FieldSerializer does:
    without ``__init__``, each field stored where it lives (the instance dict, or its
    slot), so no property setter or ``__setattr__`` of the class runs on what came
    from the network. Refused: a name that is not a field (a dunder, or not a slot
    of a class whose instances have no dict) and, for a dataclass, a missing field."""
    slots = _slot_descriptors(cls)
    has_dict = _instances_have_dict(cls)
    required = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []

    defined, caches = _behaviour(cls)
    defined |= caches  # a cache is made again on arrival, never sent

    def refused(key: str) -> bool:
        if key in slots:
            return False
        return key.startswith("__") and key.endswith("__") or not has_dict or key in defined

    def make(state: Any) -> Any:
        if type(state) is not dict or not all(type(key) is str for key in state):
            raise ValueError("fields are not a map of names to values")
        for key in state:
            if refused(key):
                raise ValueError(f"{key!r} is not a field of {cls.__qualname__}")
        missing = [key for key in required if key not in state]
        if missing:
            raise ValueError(f"fields {missing} of {cls.__qualname__} are missing")
        value = cls.__new__(cls)
        in_dict = {key: item for key, item in state.items() if key not in slots}
        if in_dict:
            object.__getattribute__(value, "__dict__").update(in_dict)
        for key in slots.keys() & state.keys():
            slots[key].__set__(value, state[key])  # the slot itself; a frozen class's too
        return value
    return make


def load_codec(conf: Mapping[str, Any]) -> ValueCodec:
    """The codec of a topology's tuples: the built-in types, and those its
    `topology.kryo.register` names, imported now (the project's directories must
    be on the path). RegistrationError naming the item if one cannot be used; an
    item whose class or serializer is not found is skipped with a warning instead
    when `topology.skip.missing.kryo.registrations` is true, as in Storm."""
    problem = check_value(SCHEMA[REGISTER], conf.get(REGISTER))  # unchecked in a harness's conf
    if problem is not None:
        raise RegistrationError(f"{REGISTER}: {problem}")
    items = entries(conf.get(REGISTER))
    if not items:
        return BUILTIN
    if len(items) > MAX_REGISTERED:
        raise RegistrationError(f"{REGISTER} has {len(items)} items; at most {MAX_REGISTERED}")
    registered = []
    for index, (class_name, serializer_name) in enumerate(items):
        where = f"{REGISTER} item {index} ({class_name})"
        try:
            cls = import_object(class_name)
            serializer = None if serializer_name is None else import_object(serializer_name)
        except (ImportError, AttributeError) as exc:  # not found: may be skipped
            if not conf.get(SKIP_MISSING):
                raise RegistrationError(
                    f"{where}: {type(exc).__name__}: {exc} (is the project's src/ where it "
                    f"is? {SKIP_MISSING}: true skips such an item)"
                ) from None
            log.warning("%s: skipped, not found here (%s: %s)", where, type(exc).__name__, exc)
            continue
        except Exception as exc:  # found, and broken (a syntax error, its import raised)
            raise RegistrationError(f"{where}: importing it raised {type(exc).__name__}: {exc}") from None
        try:
            registered.append(registered_type(cls, FIRST_REGISTERED + index, class_name, serializer))
        except RegistrationError as exc:
            raise RegistrationError(f"{where}: {exc}") from None
    try:
        return ValueCodec(registered)
    except ValueError as exc:
        raise RegistrationError(f"{REGISTER}: {exc}") from None
