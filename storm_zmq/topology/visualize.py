"""A topology's graph as text: Graphviz dot or Mermaid (``storm-zmq visualize``).

Pure: a :class:`TopologyDefinition` in, a string out. Spouts and bolts get different
shapes; each node names the component, its class and its parallelism; each edge is
one subscription, labelled with its grouping (``shuffle``, ``fields(word)``, ...)
and, when it is not ``default``, the stream. Names come from user code (``name=``,
``Stream(name=...)``, field names), so every piece of text is escaped for the target
language rather than trusted to be an identifier.
"""

from __future__ import annotations

import json

from storm_zmq.topology.definition import ComponentDefinition, InputDefinition, TopologyDefinition
from storm_zmq.topology.grouping import GroupingSpec
from storm_zmq.topology.stream import DEFAULT_STREAM

__all__ = ["FORMATS", "edge_label", "grouping_label", "render", "to_dot", "to_mermaid"]

FORMATS = ("dot", "mermaid")


def grouping_label(grouping: GroupingSpec) -> str:
    """``shuffle``, ``fields(word, count)``, ``all``, ``global``, ``direct``, ..."""
    if grouping.kind == "fields":
        return f"fields({', '.join(grouping.fields)})"
    return grouping.kind


def edge_label(subscription: InputDefinition) -> str:
    """The grouping, prefixed by ``[stream]`` when the stream is not the default one."""
    label = grouping_label(subscription.grouping)
    if subscription.stream != DEFAULT_STREAM:
        label = f"[{subscription.stream}] {label}"
    return label


def _node_lines(component: ComponentDefinition) -> list[str]:
    tasks = f", {component.num_tasks} tasks" if component.num_tasks != component.par else ""
    return [component.name,
            f"{component.kind} {component.component_cls.__name__} x{component.par}{tasks}"]


# --------------------------------------------------------------------------- dot

def _dot_string(text: str) -> str:
    """A dot double-quoted string: backslash and quote escaped, line breaks as
    ``\\n`` (dot's centred line break), so no input can end the string early."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r", "").replace("\n", "\\n")
    return f'"{escaped}"'


def to_dot(definition: TopologyDefinition) -> str:
    """Graphviz: ``dot -Tsvg graph.dot -o graph.svg``."""
    lines = [
        f"digraph {_dot_string(definition.name)} {{",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for component in definition.components.values():
        label = _dot_string("\n".join(_node_lines(component)))
        if component.is_spout:
            style = 'shape=cds, style=filled, fillcolor="#fde9c4"'
        else:
            style = 'shape=box, style="rounded,filled", fillcolor="#d7e8fb"'
        lines.append(f"  {_dot_string(component.name)} [label={label}, {style}];")
    for component in definition.components.values():
        for subscription in component.inputs:
            attrs = f"label={_dot_string(edge_label(subscription))}"
            if subscription.grouping.kind == "direct":
                attrs += ", style=dashed"
            lines.append(f"  {_dot_string(subscription.component)} -> "
                         f"{_dot_string(component.name)} [{attrs}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------- mermaid

# Mermaid has no backslash escapes: inside a quoted label, characters are written
# as entity codes. "#" goes first, since the codes themselves start with it.
_MERMAID_ENTITIES = (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"),
                     ("&", "#amp;"), ("|", "#124;"), ("`", "#96;"))


def _mermaid_text(text: str) -> str:
    for char, entity in _MERMAID_ENTITIES:
        text = text.replace(char, entity)
    return text.replace("\r", "").replace("\n", " ")


def to_mermaid(definition: TopologyDefinition) -> str:
    """Mermaid flowchart (renders in GitHub/GitLab markdown inside a ```mermaid block).
    Node ids are generated (``c0``, ``c1``, ...) so that any component name is safe."""
    ids = {name: f"c{i}" for i, name in enumerate(definition.components)}
    lines = [
        "---",
        f"title: {json.dumps(definition.name)}",  # a JSON string is a YAML string
        "---",
        "flowchart LR",
    ]
    for component in definition.components.values():
        label = "<br/>".join(_mermaid_text(part) for part in _node_lines(component))
        node = ids[component.name]
        if component.is_spout:
            lines.append(f'  {node}(["{label}"]):::spout')  # stadium
        else:
            lines.append(f'  {node}["{label}"]:::bolt')  # rectangle
    for component in definition.components.values():
        for subscription in component.inputs:
            arrow = "-.->" if subscription.grouping.kind == "direct" else "-->"
            label = _mermaid_text(edge_label(subscription))
            lines.append(f'  {ids[subscription.component]} {arrow}|"{label}"| {ids[component.name]}')
    lines.append("  classDef spout fill:#fde9c4,stroke:#b07d1a")
    lines.append("  classDef bolt fill:#d7e8fb,stroke:#2f6db5")
    return "\n".join(lines) + "\n"


def render(definition: TopologyDefinition, fmt: str) -> str:
    """`to_dot` or `to_mermaid` by name (one of :data:`FORMATS`)."""
    if fmt == "dot":
        return to_dot(definition)
    if fmt == "mermaid":
        return to_mermaid(definition)
    raise ValueError(f"unknown graph format {fmt!r}; expected one of {FORMATS}")
