"""The resolved, validated topology model that the runtime and cluster consume.

Why a separate model: the DSL (``Topology`` subclasses, specs referring to each other
by object) is convenient to write but awkward to execute. A
:class:`TopologyDefinition` has every name resolved, every grouping checked and
every implicit default made explicit, so the runtime never re-validates anything.
It holds only plain values (component classes are referenced, and pickle, by their
import path), so it can be shipped to worker processes.

The dataclasses are frozen; their ``dict`` fields are private copies made at
resolution and must be treated as read-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, NamedTuple

from storm_zmq.topology.grouping import GroupingSpec
from storm_zmq.topology.spec import TASKS_KEY, ComponentKind
from storm_zmq.topology.stream import Stream, is_attribute_name

__all__ = ["ComponentDefinition", "InputDefinition", "TopologyDefinition",
           "MAX_TASK_PARALLELISM_KEY", "with_task_counts", "storm_context"]

#: Storm's cap on every component's task count (`Config.setMaxTaskParallelism`).
MAX_TASK_PARALLELISM_KEY = "topology.max.task.parallelism"


class InputDefinition(NamedTuple):
    """One subscription: ``(source_component, stream, grouping)``."""

    component: str
    stream: str
    grouping: GroupingSpec


@dataclass(frozen=True)
class ComponentDefinition:
    """One spout or bolt, resolved."""

    name: str
    component_cls: type
    kind: ComponentKind
    par: int
    num_tasks: int
    config: dict[str, Any]
    inputs: tuple[InputDefinition, ...]
    outputs: dict[str, Stream]

    @property
    def is_spout(self) -> bool:
        return self.kind == "spout"

    @property
    def is_bolt(self) -> bool:
        return self.kind == "bolt"


@dataclass(frozen=True)
class TopologyDefinition:
    """A whole topology: ``components`` in definition order."""

    name: str
    config: dict[str, Any]
    components: dict[str, ComponentDefinition]
    # ``file:line`` of the class statement whose body set "config", and of the one
    # that assigned each component (by name): a config error found after the import
    # (`validate_topology_conf`) points there, as an error at import does. Missing
    # where Python cannot tell (a class made by exec or in a REPL).
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def spouts(self) -> dict[str, ComponentDefinition]:
        return {n: c for n, c in self.components.items() if c.kind == "spout"}

    @property
    def bolts(self) -> dict[str, ComponentDefinition]:
        return {n: c for n, c in self.components.items() if c.kind == "bolt"}

    def unreachable_fields(self) -> list[str]:
        """Warnings for declared fields that are no Python attribute name (``user-id``,
        ``class``, ``_x``): `tup.values.<name>` cannot reach them, and the values
        namedtuple names them by position (``_0``) instead. pystorm refused such names
        at start; here they still travel (a fields grouping takes them, and a
        SparkSpout's columns may have them), so they are said, not refused."""
        warnings = []
        for name, component in self.components.items():
            for stream in component.outputs.values():
                odd = [f for f in stream.fields if not is_attribute_name(f)]
                if odd:
                    where = f" at {self.sources[name]}" if name in self.sources else ""
                    renamed = ", ".join(f"{f!r} is tup.values._{stream.fields.index(f)}"
                                        for f in odd)
                    warnings.append(
                        f"component {name!r}{where}: field(s) {odd} of stream {stream.name!r} "
                        f"are not Python attribute names, so tup.values.<name> cannot reach "
                        f"them: {renamed} (or by position); rename them (pystorm refused them)")
        return warnings

    @property
    def parallelism(self) -> dict[str, tuple[int, int]]:
        """Component -> (executors, tasks): what `runtime.assignment` assigns."""
        return {name: (c.par, c.num_tasks) for name, c in self.components.items()}

    @cached_property
    def _consumers(self) -> dict[tuple[str, str], list[tuple[str, GroupingSpec]]]:
        index: dict[tuple[str, str], list[tuple[str, GroupingSpec]]] = {
            (name, stream): [] for name, c in self.components.items() for stream in c.outputs
        }
        for consumer in self.components.values():
            for source, stream, grouping in consumer.inputs:
                index[(source, stream)].append((consumer.name, grouping))
        return index

    def consumers(self, component: str, stream: str) -> list[tuple[str, GroupingSpec]]:
        """The ``(consumer_name, grouping)`` subscriptions to ``component``'s
        ``stream``, in definition order; empty if the stream has no subscriber.
        KeyError if the component does not exist or does not declare the stream."""
        try:
            return list(self._consumers[(component, stream)])
        except KeyError:
            if component not in self.components:
                raise KeyError(f"topology {self.name}: no component {component!r}") from None
            raise KeyError(
                f"topology {self.name}: {component!r} declares no stream {stream!r} "
                f"(it declares {list(self.components[component].outputs)})"
            ) from None


def with_task_counts(definition: TopologyDefinition, conf: dict[str, Any]) -> TopologyDefinition:
    """The topology with the task counts it runs with, as Storm counts them: a
    component's ``topology.tasks`` (its config's: `ComponentSpec`), else the
    topology conf's, else its ``par``; then at most ``topology.max.task.parallelism``
    (the component's config over the topology conf's), the tasks running on at most
    as many executors. Applied where the topology is assigned (local run, submit),
    whose ``conf`` is the whole topology conf (storm.yaml, the topology's, ``-o``)."""
    components = {}
    for name, component in definition.components.items():
        tasks = conf.get(TASKS_KEY)
        if tasks is not None and component.config.get(TASKS_KEY) is None:
            component = replace(component, num_tasks=tasks, par=min(component.par, tasks))
        cap = component.config.get(MAX_TASK_PARALLELISM_KEY, conf.get(MAX_TASK_PARALLELISM_KEY))
        if cap is not None and cap < component.num_tasks:
            component = replace(component, num_tasks=cap, par=min(component.par, cap))
        components[name] = component
    return replace(definition, components=components)


def _grouping_json(grouping: GroupingSpec) -> dict[str, Any]:
    """A grouping as Storm's multilang context gives it: the Thrift union's field
    (``FIELDS``, ``SHUFFLE``, ``LOCAL_OR_SHUFFLE``...), and the fields of a fields
    grouping. A global grouping is Storm's fields grouping on no fields, and reads so."""
    if grouping.kind in ("fields", "global"):
        return {"type": "FIELDS", "fields": list(grouping.fields)}
    return {"type": grouping.kind.upper()}


def storm_context(definition: TopologyDefinition, component: str) -> dict[str, Any]:
    """The keys of Storm's `TopologyContext.toJSONString` (what pystorm components
    got at start) that describe `component`'s place in the topology: its streams and
    their fields, who consumes them and how, what it consumes and how."""
    spec = definition.components[component]
    targets: dict[str, dict[str, Any]] = {}
    for stream in spec.outputs:
        consumers = definition.consumers(component, stream)
        if consumers:
            targets[stream] = {name: _grouping_json(grouping) for name, grouping in consumers}
    sources: dict[str, dict[str, Any]] = {}
    source_fields: dict[str, dict[str, list[str]]] = {}
    for source, stream, grouping in spec.inputs:
        sources.setdefault(source, {})[stream] = _grouping_json(grouping)
        source_fields.setdefault(source, {})[stream] = list(
            definition.components[source].outputs[stream].fields)
    return {
        "streams": list(spec.outputs),
        "stream->outputfields": {name: list(s.fields) for name, s in spec.outputs.items()},
        "stream->target->grouping": targets,
        "source->stream->grouping": sources,
        "source->stream->fields": source_fields,
    }
