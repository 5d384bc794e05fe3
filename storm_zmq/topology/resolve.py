"""Resolve and validate a topology declaration into :class:`ComponentDefinition`s.

Called by the ``Topology`` metaclass when a subclass is created, so every mistake
surfaces at import time, with a message that names the topology and the component
(``topology WordCount: bolt 'count_bolt': ...``), before anything is scheduled.
Pure functions over the specs: no imports of user code, no IO.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from storm_zmq.topology.definition import ComponentDefinition, InputDefinition
from storm_zmq.topology.errors import TopologyError
from storm_zmq.topology.grouping import Grouping, GroupingSpec
from storm_zmq.topology.spec import ComponentSpec, StreamRef
from storm_zmq.topology.stream import DEFAULT_STREAM, is_system_id

__all__ = ["resolve_components"]


def resolve_components(
    topology: str, attrs: Sequence[tuple[str, ComponentSpec]]
) -> dict[str, ComponentDefinition]:
    """Name, check and resolve the specs assigned (as ``(attribute, spec)``, in
    definition order) in topology ``topology``. Sets each spec's ``name``."""
    names = _assign_names(topology, attrs)
    specs = {names[id(spec)]: spec for _, spec in attrs}
    if not any(spec.kind == "spout" for spec in specs.values()):
        raise TopologyError(f"topology {topology}: no spout (a topology needs at least one)")
    for name, spec in specs.items():
        spec.name = name
    components = {
        name: _resolve_component(topology, name, spec, names, specs) for name, spec in specs.items()
    }
    _check_cycles(topology, components)
    return components


def _assign_names(topology: str, attrs: Sequence[tuple[str, ComponentSpec]]) -> dict[int, str]:
    """id(spec) -> component name: the ``name=`` given, else the attribute name."""
    by_id: dict[int, str] = {}
    attr_of_spec: dict[int, str] = {}
    attr_of_name: dict[str, str] = {}
    for attr, spec in attrs:
        if id(spec) in attr_of_spec:
            raise TopologyError(
                f"topology {topology}: the same {spec.component_cls.__name__} spec is assigned "
                f"to both {attr_of_spec[id(spec)]!r} and {attr!r}; call .spec() once per "
                "component"
            )
        name = spec.given_name if spec.given_name is not None else attr
        if is_system_id(name):
            raise TopologyError(
                f"topology {topology}: component name {name!r} is reserved (names starting "
                "with '__' are Storm's system components, like '__acker')"
            )
        if name in attr_of_name:
            raise TopologyError(
                f"topology {topology}: duplicate component name {name!r} (attributes "
                f"{attr_of_name[name]!r} and {attr!r})"
            )
        attr_of_spec[id(spec)] = attr
        attr_of_name[name] = attr
        by_id[id(spec)] = name
    return by_id


def _resolve_component(
    topology: str,
    name: str,
    spec: ComponentSpec,
    names: dict[int, str],
    specs: dict[str, ComponentSpec],
) -> ComponentDefinition:
    where = f"topology {topology}: {spec.kind} {name!r}"
    if spec.kind == "spout" and spec.inputs:
        raise TopologyError(f"{where}: a spout takes no inputs")
    if spec.kind == "bolt" and not spec.inputs:
        raise TopologyError(f"{where}: a bolt needs at least one input")
    inputs: list[InputDefinition] = []
    seen: set[tuple[str, str]] = set()
    for index, (ref, grouping) in enumerate(spec.inputs):
        source = _source_name(where, topology, ref, names, specs)
        upstream = specs[source]
        stream = upstream.outputs.get(ref.stream)
        if stream is None:
            raise TopologyError(
                f"{where}: input stream {ref.stream!r} of {source!r} is not declared; "
                f"{source!r} declares {list(upstream.outputs)}"
            )
        if (source, ref.stream) in seen:
            raise TopologyError(f"{where}: subscribes twice to stream {ref.stream!r} of {source!r}")
        seen.add((source, ref.stream))
        if index in spec.implicit_groupings and stream.direct:
            grouping = Grouping.DIRECT
        _check_grouping(where, source, ref.stream, stream.fields, stream.direct, grouping)
        inputs.append(InputDefinition(source, ref.stream, grouping))
    return ComponentDefinition(
        name=name,
        component_cls=spec.component_cls,
        kind=spec.kind,
        par=spec.par,
        num_tasks=spec.num_tasks,
        config=copy.deepcopy(spec.config),
        inputs=tuple(inputs),
        outputs=dict(spec.outputs),
    )


def _source_name(
    where: str,
    topology: str,
    ref: StreamRef,
    names: dict[int, str],
    specs: dict[str, ComponentSpec],
) -> str:
    component = ref.component
    if isinstance(component, str):
        if component not in specs:
            raise TopologyError(
                f"{where}: input from unknown component {component!r} (components of "
                f"{topology}: {list(specs)})"
            )
        return component
    source = names.get(id(component))
    if source is None:
        raise TopologyError(
            f"{where}: input from a component not in this topology: a "
            f"{component.component_cls.__name__} spec that is not a class attribute of "
            f"{topology} (assign it in the class body, and use that attribute as the input)"
        )
    return source


def _check_grouping(
    where: str,
    source: str,
    stream: str,
    fields: tuple[str, ...],
    direct: bool,
    grouping: GroupingSpec,
) -> None:
    if direct and grouping.kind != "direct":
        raise TopologyError(
            f"{where}: stream {stream!r} of {source!r} is direct, so it must be "
            f"subscribed with Grouping.DIRECT, not {grouping!r}"
        )
    if grouping.kind == "direct" and not direct:
        raise TopologyError(
            f"{where}: Grouping.DIRECT on stream {stream!r} of {source!r}, which is not "
            "declared direct (declare it as Stream(..., direct=True))"
        )
    for field in grouping.fields:
        if field not in fields:
            raise TopologyError(
                f"{where}: fields grouping on {field!r}, but stream {stream!r} of "
                f"{source!r} has fields {list(fields)}"
            )


def _check_cycles(topology: str, components: dict[str, ComponentDefinition]) -> None:
    """Reject a cycle whose edges all subscribe to 'default' streams.

    Storm allows cycles, but one built only from default streams is almost always a
    wiring mistake (and loops tuples forever); a feedback loop must go through a
    stream declared for it. Such a cycle exists exactly when the graph restricted
    to default-stream edges has one, which a depth-first search finds.
    """
    # edges upstream -> downstream over default streams, in definition order
    downstream: dict[str, list[str]] = {name: [] for name in components}
    for consumer in components.values():
        for source, stream, _ in consumer.inputs:
            if stream == DEFAULT_STREAM:
                downstream[source].append(consumer.name)
    done: set[str] = set()
    for root in components:
        if root in done:
            continue
        path = [root]
        on_path = {root}
        stack = [iter(downstream[root])]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                node = path.pop()
                on_path.discard(node)
                done.add(node)
                continue
            if nxt in on_path:
                cycle = path[path.index(nxt) :] + [nxt]
                raise TopologyError(
                    f"topology {topology}: cycle {' -> '.join(map(repr, cycle))} on "
                    "'default' streams; a cycle must subscribe to at least one "
                    "explicitly declared (non-'default') stream"
                )
            if nxt in done:
                continue
            path.append(nxt)
            on_path.add(nxt)
            stack.append(iter(downstream[nxt]))
