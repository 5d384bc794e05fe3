"""``storm-zmq visualize TOPOLOGY_FILE``: the topology's graph as Graphviz dot or
Mermaid (streamparse's ``sparse visualize``), rendered by
`storm_zmq.topology.visualize`. Only the graph is read: no configuration, no
ZooKeeper, no workers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from storm_zmq.cli import UsageError
from storm_zmq.topology.visualize import FORMATS

#: Output file suffixes that choose the format when --format is not given.
SUFFIX_FORMATS = {".dot": "dot", ".gv": "dot", ".mmd": "mermaid", ".mermaid": "mermaid"}


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "visualize",
        help="draw a topology's graph (Graphviz dot or Mermaid)",
        description="Print the graph of TOPOLOGY_FILE: spouts and bolts with their "
        "parallelism, one edge per subscription labelled with its grouping and stream. "
        "Render dot with `dot -Tsvg`; paste Mermaid into a ```mermaid block.",
    )
    parser.add_argument("topology_file", metavar="TOPOLOGY_FILE")
    parser.add_argument("-f", "--format", choices=FORMATS, default=None,
                        help="dot or mermaid (default: from OUT's suffix "
                             f"{sorted(SUFFIX_FORMATS)}, else dot)")
    parser.add_argument("-n", "--name", default=None,
                        help="the Topology class when the file defines several")
    parser.add_argument("-o", "--output", metavar="OUT", default=None,
                        help="write to OUT instead of standard output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from storm_zmq.topology import load_topology
    from storm_zmq.topology.visualize import render

    fmt = args.format
    if fmt is None:
        suffix = Path(args.output).suffix.lower() if args.output else ""
        fmt = SUFFIX_FORMATS.get(suffix, "dot")
    definition = load_topology(args.topology_file, args.name).definition()
    text = render(definition, fmt)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    try:
        out.write_text(text)
    except OSError as exc:
        raise UsageError(f"cannot write -o {out}: {exc.strerror or exc}") from None
    print(f"wrote the {fmt} graph of {definition.name} to {out}", file=sys.stderr)
    return 0
