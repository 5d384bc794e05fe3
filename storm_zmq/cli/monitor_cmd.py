"""``storm-zmq monitor NAME [-i SECS] [-m COMPONENT] [-w COUNTER]``: Storm's ``monitor``.

Every ``-i`` seconds (4, Storm's default) a line per component: how much its counter
(``-w``: emitted, as Storm's, or transferred, executed, acked, failed) grew since the
last line, and at what rate (storm_zmq.metrics.throughput), until Ctrl-C, ``-n``
rounds, or the topology is gone. Storm's ``-s STREAM`` has no counterpart: the
workers count per component, over all its streams.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import Any

from storm_zmq.cli import UsageError, add_config_arguments

#: The counters -w may watch (storm_zmq.metrics.summary.COUNTERS that users read).
WATCHED = ("emitted", "transferred", "executed", "acked", "failed")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "monitor", help="show a running topology's throughput every few seconds",
        description="Show, every SECS seconds (-i), how much each component's counter grew "
        "and its rate per second, until Ctrl-C (cluster mode; Storm's monitor).",
    )
    parser.add_argument("name", metavar="NAME", help="the topology's name (see storm-zmq list)")
    parser.add_argument("-i", "--interval", type=_interval, default=4.0, metavar="SECS",
                        help="seconds between lines (default 4, as Storm's)")
    parser.add_argument("-m", "--component", action="append", default=[], metavar="COMPONENT",
                        help="only this component (repeatable; default: all but the acker)")
    parser.add_argument("-w", "--watch", choices=WATCHED, default="emitted",
                        help="the counter to watch (default: emitted, as Storm's)")
    parser.add_argument("-n", "--rounds", type=_rounds, default=None, metavar="N",
                        help="stop after N rounds, a line per component each while the "
                             "workers report (N + 1 intervals: the first only takes the "
                             "counts to grow from; default: until Ctrl-C)")
    add_config_arguments(parser)
    parser.set_defaults(func=monitor_topology)


#: The shortest -i: workers report once a second (worker.heartbeat.frequency.secs).
MIN_INTERVAL = 1.0


def _interval(text: str) -> float:
    from storm_zmq.cluster.requests import seconds

    try:
        value = seconds(text, "", positive=True)
    except ValueError:
        value = 0.0
    if value < MIN_INTERVAL:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds >= {MIN_INTERVAL:g} (workers report once a "
            f"second), got {text!r}")
    return value


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of rounds >= 1, got {text!r}")
    return value


def monitor_topology(args: argparse.Namespace) -> int:
    from storm_zmq.cli.cluster_cmd import cluster_session

    # A shell without job control starts a background command with SIGINT ignored,
    # and Python then never raises KeyboardInterrupt: monitor went on for 10 minutes
    # after a Ctrl-C. It is a command one stops with Ctrl-C, so it takes it back
    # (and stops at once, also while connecting or reading).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    with cluster_session(args) as state:  # ZooKeeper's errors: one line, as every command's
        return _watch(args, state)


def _watch(args: argparse.Namespace, state: Any) -> int:
    from storm_zmq.metrics.sources import ClusterSource, UnknownTopology
    from storm_zmq.metrics.throughput import Throughput

    throughput = Throughput(args.watch, tuple(args.component))
    source = ClusterSource(state, cache_secs=0.0)
    rounds = -1  # the first look only takes the counts the lines' growth is from
    seen = False  # the topology, once: later, its absence means it was removed
    waiting = False  # said that no worker reports, until one does again
    printed = False  # the header
    status = None  # the topology's, said when it changes
    while True:
        try:
            summary = source.summary(args.name)
        except UnknownTopology as exc:
            if seen:  # as `logs -f` ends: what was watched ended, not the command
                print(f"topology {args.name!r} was killed; stopping", file=sys.stderr)
                return 0
            raise UsageError(str(exc)) from None
        seen = True
        known = {c.name for c in summary.components}
        missing = [name for name in args.component if name not in known]
        if missing:
            raise UsageError(f"topology {args.name} has no component "
                             f"{', '.join(map(repr, missing))} (it has "
                             f"{', '.join(sorted(known)) or 'none'})")
        if summary.status != status:
            if status is not None:
                print(f"topology {args.name!r} is {summary.status} now", file=sys.stderr,
                      flush=True)
            status = summary.status
        reporting = summary.totals()["workers_reporting"]
        if not reporting and not waiting:
            print(f"no worker of {args.name!r} reports (not assigned yet, starting, or "
                  "moving); waiting", file=sys.stderr, flush=True)
        waiting = not reporting
        rows = throughput.update(summary)
        if any(row.rate is not None for row in rows):
            if not printed:  # growth since the last line; its rate by the reports' times
                printed = True
                print(f"{'time':<8}  {'component':<24} {'kind':<6} {'executors':>9} "
                      f"{'+' + args.watch:>12} {'per second':>12}")
            stamp = time.strftime("%H:%M:%S")
            for row in rows:
                grown = "-" if row.grown is None else f"{row.grown:,}"
                rate = "-" if row.rate is None else f"{row.rate:,.0f}"
                print(f"{stamp:<8}  {row.component:<24} {row.kind:<6} {row.executors:>9} "
                      f"{grown:>12} {rate:>12}", flush=True)
        # a round without reports counts too: `-n` bounds the time a script waits (an
        # audit: with no worker reporting, `monitor NAME -n 2` never ended)
        rounds += 1
        if rounds == args.rounds:
            return 0
        time.sleep(args.interval)

