"""The ``storm-zmq`` command line: one module per subcommand, wired up in `main`.

Helpers shared by subcommands live here (not in `main`) so that subcommand modules
can import them without importing the module that imports them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from storm_zmq.config import load_config

__all__ = ["UsageError", "add_config_arguments", "load_config_from_args"]


class UsageError(Exception):
    """Something the user asked for is wrong (not a bug): `main` prints the message
    as ``storm-zmq: error: ...`` and exits 2, without a traceback."""


def add_config_arguments(parser: argparse.ArgumentParser, *, short_config: bool = True) -> None:
    """Add ``-c/--config FILE`` and repeatable ``-o/--override key=value``, the two
    ways every subcommand takes configuration on top of the storm.yaml files.
    ``short_config=False`` leaves ``-c`` to the subcommand (``stats -c COMPONENT``,
    as streamparse's ``sparse stats``): the file is then ``--config`` only."""
    flags = ("-c", "--config") if short_config else ("--config",)
    parser.add_argument(
        *flags, metavar="FILE", default=None,
        help="storm.yaml to use instead of conf/storm.yaml (default: $STORM_CONF if set)",
    )
    parser.add_argument(
        "-o", "--override", metavar="KEY=VALUE", dest="overrides", action="append",
        default=[], help="set one key, value parsed as YAML (repeatable; wins over files)",
    )


def load_config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The effective configuration for arguments added by `add_config_arguments`."""
    return load_config(args.config, args.overrides)


def topology_file_arg(given: str) -> str:
    """A command's TOPOLOGY_FILE: the path as given, or, when nothing is there and
    it is a bare name, ``topologies/NAME.py`` of the working directory, as sparse's
    ``-n NAME`` found it (``storm-zmq run wordcount``)."""
    if Path(given).expanduser().exists() or Path(given).name != given:
        return given
    candidate = Path("topologies") / (given if given.endswith(".py") else f"{given}.py")
    return str(candidate) if candidate.is_file() else given
