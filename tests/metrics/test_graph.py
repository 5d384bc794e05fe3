"""The graph layout: depths by longest input path, cycles broken, rows in order."""

from __future__ import annotations

from storm_zmq.metrics.graph import NODE_HEIGHT, NODE_WIDTH, depths, layout_graph
from storm_zmq.metrics.summary import Edge


def test_depth_is_the_longest_input_path() -> None:
    edges = [Edge("s", "a"), Edge("a", "b"), Edge("s", "b"), Edge("b", "c"), Edge("t", "c")]
    assert depths(["s", "t", "a", "b", "c"], edges) == {"s": 0, "t": 0, "a": 1, "b": 2, "c": 3}


def test_cycles_and_self_loops_and_unknown_names_do_not_hang() -> None:
    edges = [Edge("s", "a"), Edge("a", "b"), Edge("b", "a"), Edge("b", "b"), Edge("x", "a")]
    result = depths(["s", "a", "b"], edges)
    assert result["s"] == 0 and {result["a"], result["b"]} == {1, 2}


def test_a_deep_chain_is_fine() -> None:
    names = [f"c{i}" for i in range(3000)]
    edges = [Edge(a, b) for a, b in zip(names, names[1:], strict=False)]
    assert depths(names, edges)["c2999"] == 2999


def test_layout_places_columns_by_depth_and_rows_in_definition_order() -> None:
    edges = [Edge("s", "a"), Edge("s", "b", "errors", "all"), Edge("a", "c"), Edge("b", "c"),
             Edge("s", "__acker")]
    graph = layout_graph(["s", "a", "b", "c"], edges)
    nodes = {n["name"]: n for n in graph["nodes"]}
    assert [(nodes[n]["depth"], nodes[n]["row"]) for n in "sabc"] == [(0, 0), (1, 0), (1, 1), (2, 0)]
    assert nodes["a"]["x"] == nodes["b"]["x"] > nodes["s"]["x"]
    assert nodes["b"]["y"] > nodes["a"]["y"]
    # every box inside the drawing, no overlap within a column
    for n in graph["nodes"]:
        assert n["x"] + NODE_WIDTH <= graph["width"] and n["y"] + NODE_HEIGHT <= graph["height"]
    assert nodes["b"]["y"] - nodes["a"]["y"] >= NODE_HEIGHT
    # the edge to a component not drawn is left out
    assert [(e["source"], e["target"]) for e in graph["edges"]] == \
        [("s", "a"), ("s", "b"), ("a", "c"), ("b", "c")]
    assert graph["edges"][1]["stream"] == "errors" and graph["edges"][1]["grouping"] == "all"


def test_an_empty_topology_has_an_empty_drawing() -> None:
    assert layout_graph([], []) == {"width": 0, "height": 0, "node_width": NODE_WIDTH,
                                    "node_height": NODE_HEIGHT, "nodes": [], "edges": []}
