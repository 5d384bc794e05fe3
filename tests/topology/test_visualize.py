"""The graph renderers on every example topology, checked structurally: every
component a node (spouts and bolts shaped differently), every subscription an edge
with its grouping and stream, and hostile names escaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from storm_zmq import Bolt, Grouping, Spout, Stream, Topology
from storm_zmq.topology import TopologyDefinition, load_topology
from storm_zmq.topology.visualize import edge_label, render, to_dot, to_mermaid

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(
    [*ROOT.glob("topologies/*.py"), *ROOT.glob("tests/runtime/project/topologies/*.py")])
EXAMPLES = [p for p in EXAMPLES if p.stem != "invalid"]  # invalid.py fails on purpose


def definition_of(path: Path) -> TopologyDefinition:
    return load_topology(path).definition()


# A dot double-quoted string: any character but an unescaped quote.
DOT_STRING = r'"(?:[^"\\]|\\.)*"'
DOT_NODE = re.compile(rf"^  ({DOT_STRING}) \[label=({DOT_STRING}), shape=(\w+)")
DOT_EDGE = re.compile(rf"^  ({DOT_STRING}) -> ({DOT_STRING}) \[label=({DOT_STRING})")


def unquote(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text[1:-1])


def parse_dot(text: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """(node -> shape, [(source, target, label)]), checking balanced braces and that
    every line inside the graph is a statement this renderer makes."""
    lines = text.splitlines()
    assert re.fullmatch(rf"digraph {DOT_STRING} \{{", lines[0])
    assert lines[-1] == "}"
    # braces outside strings balance
    outside = re.sub(DOT_STRING, "", text)
    assert outside.count("{") == outside.count("}") == 1
    nodes: dict[str, str] = {}
    edges = []
    for line in lines[1:-1]:
        if node := DOT_NODE.match(line):
            nodes[unquote(node.group(1))] = node.group(3)
        elif edge := DOT_EDGE.match(line):
            edges.append((unquote(edge.group(1)), unquote(edge.group(2)), unquote(edge.group(3))))
        else:
            assert re.fullmatch(r"  (rankdir=LR|(node|edge) \[.*\]);", line), line
        assert line.endswith(";")
    return nodes, edges


def expected_edges(definition: TopologyDefinition) -> list[tuple[str, str, str]]:
    return [(i.component, c.name, edge_label(i))
            for c in definition.components.values() for i in c.inputs]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_dot_has_every_component_and_every_subscription(path: Path) -> None:
    definition = definition_of(path)
    nodes, edges = parse_dot(to_dot(definition))
    assert set(nodes) == set(definition.components)
    for name, component in definition.components.items():
        assert nodes[name] == ("cds" if component.is_spout else "box")
    assert edges == expected_edges(definition)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_mermaid_has_every_component_and_every_subscription(path: Path) -> None:
    definition = definition_of(path)
    text = to_mermaid(definition)
    lines = text.splitlines()
    assert "flowchart LR" in lines
    ids = {}
    for line in lines:
        if m := re.fullmatch(r'  (c\d+)(\(\[|\[)"([^"]*)"(\]\)|\]):::(spout|bolt)', line):
            ids[m.group(1)] = m.group(3).split("<br/>")[0]
            assert (m.group(2) == "([") == (m.group(5) == "spout")
    assert sorted(ids.values()) == sorted(definition.components)
    edges = [(ids[m.group(1)], ids[m.group(3)], m.group(2))
             for m in re.finditer(r'^  (c\d+) -\.?->\|"([^"]*)"\| (c\d+)$', text, re.M)]
    assert edges == expected_edges(definition)


def test_groupings_and_streams_are_labelled() -> None:
    definition = definition_of(ROOT / "tests/runtime/project/topologies/groupings.py")
    labels = {(s, t): label for s, t, label in expected_edges(definition)}
    assert labels == {("numbers", "batcher"): "shuffle", ("batcher", "everyone"): "all",
                      ("batcher", "one"): "global", ("direct", "chosen"): "direct"}
    dot = to_dot(definition)
    assert '"direct" -> "chosen" [label="direct", style=dashed];' in dot
    wordcount = to_dot(definition_of(ROOT / "topologies/wordcount.py"))
    assert '"split_bolt" -> "count_bolt" [label="fields(word)"];' in wordcount


class _Source(Spout):
    outputs = [Stream(["a", "b"]), Stream(["x"], name='err"s{1}')]


class _Sink(Bolt):
    outputs = []


class Hostile(Topology):
    name = 'we"ird {name} <b>#1<b>'
    src = _Source.spec(name='sp"out\\ {x}')
    sink = _Sink.spec(name="a|b<c>&#d", inputs={
        src: Grouping.fields("a", "b"),
        src['err"s{1}']: Grouping.LOCAL_OR_SHUFFLE,
    }, par=2, num_tasks=4)


def test_hostile_names_are_escaped_in_dot() -> None:
    definition = Hostile.definition()
    nodes, edges = parse_dot(to_dot(definition))
    assert set(nodes) == {'sp"out\\ {x}', "a|b<c>&#d"}
    assert edges == [('sp"out\\ {x}', "a|b<c>&#d", "fields(a, b)"),
                     ('sp"out\\ {x}', "a|b<c>&#d", '[err"s{1}] local_or_shuffle')]
    assert "x2, 4 tasks" in to_dot(definition)


def test_hostile_names_are_escaped_in_mermaid() -> None:
    text = to_mermaid(Hostile.definition())
    body = text.split("flowchart LR\n")[1]
    labels = re.findall(r'"([^"]*)"', body)
    assert len(labels) == 4  # two nodes, two edges: no quote ended a label early
    for label in labels:
        assert not set(label.replace("<br/>", "")) & set('<>|&"')
    assert "a#124;b#lt;c#gt;#amp;#35;d" in body
    assert '[err#quot;s{1}] local_or_shuffle' in body
    assert text.splitlines()[1] == 'title: "we\\"ird {name} <b>#1<b>"'


def test_render_refuses_an_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown graph format 'svg'"):
        render(Hostile.definition(), "svg")
