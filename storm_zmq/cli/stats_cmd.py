"""``storm-zmq stats NAME [-c COMPONENT] [--json]``: a running topology's metrics.

Reads the workers' heartbeats and errors from ZooKeeper and prints what the web UI
shows (storm_zmq.metrics: the same summary, so the two never disagree). ``-c`` is the
component, as in streamparse's ``sparse stats -c``; the config file is ``--config``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from storm_zmq.cli import UsageError, add_config_arguments, load_config_from_args


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "stats", help="show a running topology's metrics",
        description="Show the metrics of topology NAME (cluster mode): per component "
        "emitted, transferred, executed, acked, failed, latencies, capacity, queues; per "
        "worker memory, queues and transport counters; recent errors.",
    )
    parser.add_argument("name", metavar="NAME", help="the topology's name (see storm-zmq list)")
    parser.add_argument("-c", "--component", default=None,
                        help="show only this component, with every number")
    parser.add_argument("--json", action="store_true",
                        help="print the summary as JSON (what the web UI's API serves)")
    add_config_arguments(parser, short_config=False)
    parser.set_defaults(func=show_stats)


def show_stats(args: argparse.Namespace) -> int:
    from storm_zmq.cli.cluster_cmd import quiet_kazoo
    from storm_zmq.cluster.state import ClusterState, ClusterStateError
    from storm_zmq.metrics.sources import ClusterSource, UnknownTopology
    from storm_zmq.metrics.text import format_component, format_summary

    if args.component is not None and _looks_like_a_config_file(args.component):
        # every other command's -c is the config file: say so before waiting on a
        # ZooKeeper the default config names
        raise UsageError(f"-c {args.component}: in stats, -c is the component (as in "
                         "streamparse's sparse stats -c); give the config file with --config")
    conf = load_config_from_args(args)
    quiet_kazoo()
    try:
        state = ClusterState(conf).start(
            timeout=conf["storm.zookeeper.connection.timeout"] / 1000)
    except ClusterStateError as exc:
        raise UsageError(str(exc)) from None
    try:
        summary = ClusterSource(state).summary(args.name)
    except UnknownTopology as exc:
        raise UsageError(str(exc)) from None
    except ClusterStateError as exc:
        raise UsageError(str(exc)) from None
    finally:
        state.stop()
    component = None
    if args.component is not None:
        try:
            component = summary.component(args.component)
        except KeyError as exc:
            raise UsageError(exc.args[0]) from None

    if args.json:
        data = component.to_dict() if component is not None else summary.to_dict()
        json.dump(data, sys.stdout, indent=2, allow_nan=False)
        print()
    elif component is not None:
        print(format_component(summary, component))
    else:
        print(format_summary(summary))
    return 0


def _looks_like_a_config_file(component: str) -> bool:
    """A component name is a Python identifier-like name; a path ending in .yaml is
    a user who meant the config file, as `-c` is everywhere else."""
    return component.endswith((".yaml", ".yml")) or "/" in component
