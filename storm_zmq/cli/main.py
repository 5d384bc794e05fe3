"""Entry point of the ``storm-zmq`` console script.

Errors the user caused (bad configuration, bad arguments) print one line,
``storm-zmq: error: <message>``, and exit 2; a traceback is kept for bugs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable

from storm_zmq import __version__
from storm_zmq.cli import (
    UsageError,
    cluster_cmd,
    config_cmd,
    logs_cmd,
    monitor_cmd,
    quickstart_cmd,
    run_cmd,
    stats_cmd,
    ui_cmd,
    visualize_cmd,
)
from storm_zmq.config import ConfigError
from storm_zmq.runtime.local import RunError
from storm_zmq.topology import TopologyError

#: Subcommand modules; each has ``add_parser(subparsers)`` that sets ``func``.
SUBCOMMANDS = (
    run_cmd, cluster_cmd, stats_cmd, monitor_cmd, ui_cmd, logs_cmd, quickstart_cmd, visualize_cmd,
    config_cmd,
)

#: Exceptions that are the user's to fix, reported without a traceback.
USER_ERRORS: tuple[type[Exception], ...] = (ConfigError, UsageError, RunError, TopologyError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="storm-zmq",
        description="A Python-native Storm over a pluggable ZeroMQ/TCP transport.",
    )
    parser.add_argument("--version", action="version", version=f"storm-zmq {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``storm-zmq`` with `argv` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors: argparse printed them
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return quiet_on_closed_stdout(lambda: func(args))
    except USER_ERRORS as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def quiet_on_closed_stdout(body: Callable[[], int]) -> int:
    """Run the `body` of a command that prints to stdout, flushing it at the end. A
    reader that went away (`| head`) ends the command quietly with exit 0, as a Unix
    tool ends, rather than with a BrokenPipeError traceback; stdout then points to
    devnull so that flushing it at exit fails no more (Python's documented way)."""
    try:
        code = body()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):  # no stdout file to redirect
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        return 0


if __name__ == "__main__":
    sys.exit(main())
