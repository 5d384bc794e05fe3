"""The ``Topology`` base class (streamparse's DSL).

::

    class WordCount(Topology):
        config = {"topology.max.spout.pending": 1000}
        word_spout = WordSpout.spec(par=2)
        count_bolt = WordCountBolt.spec(inputs={word_spout: Grouping.fields("word")}, par=4)

Why a metaclass: streamparse topologies are declared as class bodies, and the
useful moment to validate one is when its class is created, i.e. when the
topology file is imported, so that a mistake fails fast with a message naming the
topology and the component. The metaclass collects the ``ComponentSpec`` class
attributes in definition order (a subclass inherits its bases' components and may
replace them by attribute name), names each after its attribute unless it was
given ``name=``, validates the graph, and keeps the resolved components for
:meth:`Topology.definition`.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, ClassVar

from storm_zmq.topology.definition import ComponentDefinition, TopologyDefinition
from storm_zmq.topology.errors import TopologyError
from storm_zmq.topology.resolve import resolve_components
from storm_zmq.topology.spec import ComponentSpec

__all__ = ["Topology", "TopologyMeta"]

# class attributes with a meaning of their own, which cannot be components
_RESERVED_ATTRS = frozenset({"name", "config", "specs", "definition"})
# Storm's topology name rule (it becomes part of ZooKeeper paths and file names)
_BAD_NAME_CHARS = "/.:\\"


class TopologyMeta(type):
    """Validates every ``Topology`` subclass when it is created."""

    def __new__(
        mcs, classname: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> TopologyMeta:
        cls = super().__new__(mcs, classname, bases, namespace, **kwargs)
        cls._setup(classname, bases, namespace)
        return cls

    def _setup(cls, classname: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> None:
        for attr in _RESERVED_ATTRS:
            if isinstance(namespace.get(attr), ComponentSpec):
                raise TopologyError(
                    f"topology {classname}: attribute {attr!r} is reserved in Topology classes "
                    f"and cannot hold a component; use name={attr!r} on another attribute"
                )
        name = namespace.get("name", classname)
        if not isinstance(name, str) or not name or any(c in name for c in _BAD_NAME_CHARS):
            raise TopologyError(
                f"topology {classname}: name must be a non-empty str without any of "
                f"{_BAD_NAME_CHARS!r}, got {name!r}"
            )
        cls.name = name
        config = namespace.get("config", getattr(cls, "config", {}))
        if not isinstance(config, dict):
            raise TopologyError(f"topology {name}: config must be a dict, got {config!r}")
        # an inherited config is copied, so that changing one class's config (e.g. CLI
        # overrides) never changes its base's
        cls.config = config if "config" in namespace else dict(config)
        is_base = not any(isinstance(base, TopologyMeta) for base in bases)
        attrs = {} if is_base else _inherited_attrs(bases)
        # which class's body set the config and each component attribute (error
        # messages point at its class statement)
        owners: dict[str, type] = {}
        for base in reversed(bases):
            owners.update(getattr(base, "_owners", {}))
        if "config" in namespace:
            owners["config"] = cls
        for attr, value in namespace.items():
            if isinstance(value, ComponentSpec):
                attrs.pop(attr, None)  # re-assigned attributes move to their new place
                attrs[attr] = value
                owners[attr] = cls
            else:
                attrs.pop(attr, None)  # an inherited component overridden (e.g. by None)
                _reject_component_class(name, attr, value)
        cls._attr_specs = attrs
        cls._owners = owners
        if is_base:
            cls.specs = []
            cls._components = {}
            return
        components = resolve_components(name, list(attrs.items()))
        cls.specs = list(attrs.values())  # streamparse's: a list, in declaration order
        cls._components = components


def _inherited_attrs(bases: tuple[type, ...]) -> dict[str, ComponentSpec]:
    """Component attributes of the bases, the first base winning (like the MRO)."""
    attrs: dict[str, ComponentSpec] = {}
    for base in reversed(bases):
        for attr, spec in getattr(base, "_attr_specs", {}).items():
            attrs.pop(attr, None)
            attrs[attr] = spec
    return attrs


def _reject_component_class(topology: str, attr: str, value: Any) -> None:
    """``word_spout = WordSpout`` (no ``.spec()``) would silently be ignored."""
    if not isinstance(value, type):
        return
    from storm_zmq.component import Component  # here: component imports this package

    if issubclass(value, Component):
        raise TopologyError(
            f"topology {topology}: attribute {attr!r} is the component class "
            f"{value.__name__}, not a spec; did you forget to call {value.__name__}.spec()?"
        )


class Topology(metaclass=TopologyMeta):
    """Base class of topologies: subclass it and assign component specs.

    Class attributes set by the metaclass: ``name`` (the class name unless the
    class sets ``name``), ``config`` (the class's ``config`` dict, default ``{}``)
    and ``specs`` (as in streamparse, a list of its :class:`ComponentSpec` objects in
    definition order).
    """

    name: ClassVar[str]
    config: ClassVar[dict[str, Any]] = {}
    specs: ClassVar[list[ComponentSpec]]
    _attr_specs: ClassVar[dict[str, ComponentSpec]]
    _components: ClassVar[dict[str, ComponentDefinition]]
    _owners: ClassVar[dict[str, type]]

    @classmethod
    def definition(cls) -> TopologyDefinition:
        """The resolved, validated model the runtime runs: a fresh deep copy per call
        (so a caller can never change what the next caller gets), whose ``config`` is
        the class's ``config`` as it is now, so overrides applied to ``cls.config``
        before this call are included."""
        if not cls._components:
            raise TopologyError(f"{cls.__name__} is the base class, not a topology")
        return TopologyDefinition(
            name=cls.name,
            config=copy.deepcopy(cls.config),
            components=copy.deepcopy(cls._components),
            sources=_sources_of(cls),
        )


def _sources_of(cls: TopologyMeta) -> dict[str, str]:
    """``TopologyDefinition.sources``: the class statements that set the config and
    assigned each component (a base topology may be in another file)."""
    located: dict[type, str] = {}
    sources: dict[str, str] = {}
    for what, owner in [("config", cls._owners.get("config", cls))] + [
            (spec.name, cls._owners.get(attr, cls)) for attr, spec in cls._attr_specs.items()]:
        if owner not in located:
            located[owner] = _source_of(owner)
        if located[owner]:
            sources[what] = located[owner]
    return sources


def _source_of(cls: type) -> str:
    """``file:line`` of the class statement, or "" when Python cannot tell (a class
    made in a REPL or by ``type()``, a file changed since it was imported). Only a
    help for error messages: it never fails."""
    try:
        file = inspect.getsourcefile(cls)
        _, line = inspect.getsourcelines(cls)
    except Exception:
        return ""
    return f"{file}:{line}" if file else ""
