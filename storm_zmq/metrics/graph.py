"""Where to draw each component of the topology graph: pure, so the layout is tested
here and the page's script only draws boxes and arrows at the given coordinates.

Columns by depth (Storm UI's left-to-right flow): a component's depth is the length
of the longest input path from a component without inputs (spouts are depth 0).
Cycles (a bolt feeding an earlier one, which Storm allows) are broken by ignoring the
edges that close them, so the depth is always finite. Within a column components
keep definition order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from storm_zmq.metrics.summary import Edge

__all__ = ["NODE_HEIGHT", "NODE_WIDTH", "depths", "layout_graph"]

NODE_WIDTH = 170
NODE_HEIGHT = 48
_COLUMN = 240
_ROW = 80
_MARGIN = 20


def depths(names: Sequence[str], edges: Iterable[Edge]) -> dict[str, int]:
    """Depth of every name in `names`; edges naming anything else are ignored.

    A depth-first walk along the edges, starting from each name in order, finds the
    edges that close a cycle (to a component still on the walk's path); the rest form
    a DAG, over which depths are longest paths. Iterative, so any depth works."""
    known = set(names)
    outputs: dict[str, list[str]] = {name: [] for name in names}
    for edge in edges:
        if edge.source in known and edge.target in known and edge.source != edge.target \
                and edge.target not in outputs[edge.source]:
            outputs[edge.source].append(edge.target)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    kept: dict[str, list[str]] = {name: [] for name in names}
    for root in names:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(outputs[root]))]
        while stack:
            node, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                state[node] = 2
                stack.pop()
            elif state.get(target) == 1:
                continue  # closes a cycle: ignored
            else:
                kept[node].append(target)
                if target not in state:
                    state[target] = 1
                    stack.append((target, iter(outputs[target])))
    indegree = dict.fromkeys(names, 0)
    for targets in kept.values():
        for target in targets:
            indegree[target] += 1
    result = dict.fromkeys(names, 0)
    ready = [name for name in names if indegree[name] == 0]
    while ready:
        node = ready.pop()
        for target in kept[node]:
            result[target] = max(result[target], result[node] + 1)
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
    return result


def layout_graph(names: Sequence[str], edges: Iterable[Edge]) -> dict[str, Any]:
    """``{"width", "height", "nodes": [{"name", "depth", "row", "x", "y"}], "edges":
    [{"source", "target", "stream", "grouping"}]}``: node (x, y) is the box's top
    left corner in an SVG of the given size."""
    edges = [e for e in edges if e.source in set(names) and e.target in set(names)]
    level = depths(names, edges)
    rows: dict[int, int] = {}
    nodes = []
    for name in names:
        column = level[name]
        row = rows.get(column, 0)
        rows[column] = row + 1
        nodes.append({"name": name, "depth": column, "row": row,
                      "x": _MARGIN + column * _COLUMN, "y": _MARGIN + row * _ROW})
    columns = max(rows, default=-1) + 1
    height_rows = max(rows.values(), default=0)
    return {
        "width": 2 * _MARGIN + max(columns - 1, 0) * _COLUMN + NODE_WIDTH if nodes else 0,
        "height": 2 * _MARGIN + max(height_rows - 1, 0) * _ROW + NODE_HEIGHT if nodes else 0,
        "node_width": NODE_WIDTH,
        "node_height": NODE_HEIGHT,
        "nodes": nodes,
        "edges": [{"source": e.source, "target": e.target, "stream": e.stream,
                   "grouping": e.grouping} for e in edges],
    }
