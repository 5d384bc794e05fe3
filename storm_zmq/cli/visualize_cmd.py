"""``storm-zmq visualize TOPOLOGY_FILE``: the topology's graph as Graphviz dot or
Mermaid (streamparse's ``sparse visualize``), rendered by
`storm_zmq.topology.visualize`, or as an image drawn by Graphviz's ``dot`` when the
output file's suffix asks for one. Only the graph is read: no configuration, no
ZooKeeper, no workers.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from storm_zmq.cli import UsageError, topology_file_arg
from storm_zmq.topology.visualize import FORMATS

#: Output file suffixes that choose the format when --format is not given.
SUFFIX_FORMATS = {".dot": "dot", ".gv": "dot", ".mmd": "mermaid", ".mermaid": "mermaid"}
#: Image suffixes: the dot graph rendered by Graphviz (`dot -T...`), as streamparse's
#: `sparse visualize` does.
IMAGE_SUFFIXES = {".png": "png", ".svg": "svg", ".pdf": "pdf", ".jpg": "jpg", ".jpeg": "jpg"}
#: Bound on Graphviz's time for one topology's graph (it takes milliseconds).
DOT_TIMEOUT_SECS = 60


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "visualize",
        help="draw a topology's graph (Graphviz dot or Mermaid)",
        description="Print the graph of TOPOLOGY_FILE: spouts and bolts with their "
        "parallelism, one edge per subscription labelled with its grouping and stream. "
        "Render dot with `dot -Tsvg`; paste Mermaid into a ```mermaid block.",
    )
    parser.add_argument("topology_file", metavar="TOPOLOGY_FILE", type=topology_file_arg,
                        help="a topology file, or NAME for topologies/NAME.py")
    parser.add_argument("-f", "--format", choices=FORMATS, default=None,
                        help="dot or mermaid (default: from OUT's suffix "
                             f"{sorted(SUFFIX_FORMATS)}, else dot)")
    parser.add_argument("-n", "--name", "--class", dest="name", default=None,
                        help="the Topology class when the file defines several")
    parser.add_argument("-o", "--output", metavar="OUT", default=None,
                        help="write to OUT instead of standard output; an image suffix "
                             f"({', '.join(sorted(IMAGE_SUFFIXES))}) renders the dot graph "
                             "with Graphviz's `dot`")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from storm_zmq.topology import load_topology
    from storm_zmq.topology.visualize import render

    suffix = Path(args.output).suffix.lower() if args.output else ""
    image = IMAGE_SUFFIXES.get(suffix)
    fmt = args.format
    if image and fmt not in (None, "dot"):
        raise UsageError(f"-o {args.output}: an image is rendered from the dot graph, "
                         f"not from --format {fmt}")
    if fmt is None:
        fmt = SUFFIX_FORMATS.get(suffix, "dot")
    dot = shutil.which("dot") if image else None
    if image and dot is None:
        raise UsageError(f"-o {args.output}: rendering an image needs Graphviz's `dot` on PATH "
                         "(not found); install graphviz, or write the graph with -o GRAPH.dot")
    definition = load_topology(args.topology_file, args.name).definition()
    text = render(definition, fmt)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    data = _render_image(dot, image, text) if dot and image else text.encode()
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise UsageError(f"cannot write -o {out}: {exc.strerror or exc}") from None
    print(f"wrote the {image or fmt} graph of {definition.name} to {out}", file=sys.stderr)
    return 0


def _render_image(dot: str, image: str, graph: str) -> bytes:
    """The dot `graph` as an `image` (png, svg, ...) drawn by Graphviz."""
    try:
        result = subprocess.run([dot, f"-T{image}"], input=graph.encode(), capture_output=True,
                                timeout=DOT_TIMEOUT_SECS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"Graphviz's `dot` ({dot}) failed: {exc}") from None
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip().splitlines()
        raise UsageError(f"Graphviz's `dot -T{image}` failed (exit {result.returncode})"
                         + (f": {detail[-1]}" if detail else ""))
    return result.stdout
