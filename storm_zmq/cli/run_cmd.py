"""``storm-zmq run``: run a topology in local mode, on real worker processes.

The main job. No ZooKeeper: the assignment is computed here and the workers talk
over the configured transport on loopback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from storm_zmq.cli import add_config_arguments, topology_file_arg
from storm_zmq.config import config_sources, load_config_with_origins, parse_override
from storm_zmq.messaging import TRANSPORT_ALIASES


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a topology locally on real worker processes",
        description="Run TOPOLOGY_FILE (a streamparse-style topologies/<name>.py) in local "
        "mode: WORKERS worker processes on the ports of supervisor.slots.ports, over the "
        "configured transport, until -t seconds pass, every spout is exhausted, or Ctrl-C.",
    )
    parser.add_argument("topology_file", metavar="TOPOLOGY_FILE", type=topology_file_arg,
                        help="a topology file, or NAME for topologies/NAME.py")
    parser.add_argument("-t", "--time", type=float, default=0.0, metavar="SECONDS",
                        help="stop after this many seconds once every component has "
                        "initialized (0 = until Ctrl-C or exhausted); start-up is bounded by "
                        "supervisor.worker.start.timeout.secs")
    parser.add_argument("-w", "--workers", type=int, default=None,
                        help="worker processes (default: topology.workers)")
    parser.add_argument("--transport", choices=sorted(TRANSPORT_ALIASES), default=None,
                        help="override storm.messaging.transport")
    parser.add_argument("-n", "--name", "--class", dest="name", default=None,
                        help="the Topology class to run when the file defines several")
    parser.add_argument("-d", "--debug", action="store_true",
                        help="topology.debug: log every emit (component, task, stream)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--ui", action="store_true",
                        help="serve the web UI and Prometheus /metrics while it runs")
    parser.add_argument("--ui-port", type=int, default=None, metavar="PORT",
                        help="port of the UI (default: ui.port; 0 picks a free one)")
    add_config_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from storm_zmq.runtime.local import RunOptions, run_local

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    read: list[str] = []
    conf, _ = load_config_with_origins(args.config, args.overrides, read=read)
    if not args.time >= 0:  # also refuses nan
        from storm_zmq.cli import UsageError

        raise UsageError(f"-t/--time must be a number of seconds >= 0, got {args.time}")
    if args.workers is not None and args.workers < 1:
        from storm_zmq.cli import UsageError

        raise UsageError(f"-w/--workers must be at least 1, got {args.workers}")
    overrides = dict(parse_override(text) for text in args.overrides)
    options = RunOptions(
        topology_file=args.topology_file,
        conf=conf,
        seconds=args.time,
        workers=args.workers,
        transport=args.transport,
        debug=args.debug,
        topology_name=args.name,
        overrides=overrides,
        progress=not args.quiet,
        config_sources=config_sources(read, len(args.overrides), args.topology_file),
    )
    server = _start_ui(args, options) if args.ui else None
    try:
        result = run_local(options, sys.stdout)
    finally:
        if server is not None:
            server.stop()
    return result.exit_code


def _start_ui(args: argparse.Namespace, options: Any) -> Any:
    """Bind the UI before any worker starts (a busy port costs nothing), serve the
    topology as starting, and hand it the run's stats through `on_started`."""
    from storm_zmq.cli import UsageError
    from storm_zmq.cli.ui_cmd import start_server
    from storm_zmq.metrics.sources import LocalSource
    from storm_zmq.metrics.summary import TopologyLayout
    from storm_zmq.runtime.local import prepare_run

    definition, conf, workers = prepare_run(options, warn=False)  # run_local warns
    port = args.ui_port if args.ui_port is not None else conf["ui.port"]
    if not 0 <= port <= 65535:
        raise UsageError(f"--ui-port must be between 0 and 65535, got {port}")
    worker_ports = list(conf["supervisor.slots.ports"])[:workers]
    if port in worker_ports:  # the UI took it, and the run blamed supervisor.slots.ports
        raise UsageError(f"UI port {port} (--ui-port / ui.port) is one of the workers' ports "
                         f"{worker_ports} (supervisor.slots.ports); choose another")
    source = LocalSource(TopologyLayout.from_definition(definition), definition.name,
                         num_workers=workers)
    server = start_server(source, conf["ui.host"], port, flags="--ui-port")
    options.on_started = source.attach
    print(f"storm-zmq UI at {server.url} (Prometheus metrics at {server.url}metrics)",
          flush=True)
    return server
