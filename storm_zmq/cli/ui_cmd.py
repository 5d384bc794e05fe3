"""``storm-zmq ui [--host H] [--port P]``: the cluster's web UI and Prometheus endpoint.

Serves storm_zmq.metrics.ui over one ZooKeeper session until Ctrl-C/SIGTERM: the page
at ``/``, JSON under ``/api/``, Prometheus text at ``/metrics``. ZooKeeper going away
later is a quick 503 shown on the page (the session reconnects by itself, as every
daemon's does, within about 2 s of ZooKeeper's return; reads are not retried: see
`ui_zookeeper_conf`); unreachable at start is one error line.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from storm_zmq.cli import UsageError, add_config_arguments, load_config_from_args
from storm_zmq.signals import on_signals


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ui", help="serve the web UI and Prometheus metrics of the cluster",
        description="Serve the web UI (topologies, components, workers, errors, the "
        "graph; refreshed every second) and Prometheus metrics at /metrics.",
    )
    parser.add_argument("--host", default=None, help="interface to bind (default: ui.host)")
    parser.add_argument("--port", type=int, default=None, help="port (default: ui.port)")
    add_config_arguments(parser)
    parser.set_defaults(func=serve_ui)


def start_server(source: Any, host: str, port: int,
                 flags: str = "--host / --port", actions: bool = True) -> Any:
    """A started `MetricsServer`; a port that cannot be bound is a `UsageError`
    naming the settings and the command's `flags` that choose it."""
    from storm_zmq.metrics.ui import MetricsServer

    try:
        server = MetricsServer(source, host, port, actions=actions)
    except OSError as exc:
        raise UsageError(f"cannot serve the UI on {host}:{port}: {exc.strerror or exc} "
                         f"(ui.host / ui.port, {flags})") from None
    return server.start()


def serve_ui(args: argparse.Namespace) -> int:
    from storm_zmq.cli.cluster_cmd import quiet_kazoo
    from storm_zmq.cluster.state import ClusterState, ClusterStateError
    from storm_zmq.metrics.sources import ClusterSource, ui_zookeeper_conf

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_kazoo()  # failing to start is one error line
    conf = load_config_from_args(args)
    host = args.host if args.host is not None else conf["ui.host"]
    port = args.port if args.port is not None else conf["ui.port"]
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {port}")
    try:
        state = ClusterState(ui_zookeeper_conf(conf)).start(
            timeout=conf["storm.zookeeper.connection.timeout"] / 1000)
    except ClusterStateError as exc:
        raise UsageError(str(exc)) from None
    logging.getLogger("kazoo").setLevel(logging.WARNING)  # from now on a lost connection is worth a line
    stopping = threading.Event()
    try:
        server = start_server(ClusterSource(state), host, port,
                              actions=bool(conf["ui.actions.enabled"]))
        with on_signals([signal.SIGTERM, signal.SIGINT], stopping.set):
            print(f"storm-zmq UI at {server.url} (Prometheus metrics at {server.url}metrics; "
                  f"topology actions {'on' if server.actions else 'off: ui.actions.enabled'})",
                  flush=True)
            while not stopping.wait(1.0):  # a timed wait: signals are handled promptly
                pass
        server.stop()
    finally:
        state.stop()
    print("UI stopped", file=sys.stderr)
    return 0
