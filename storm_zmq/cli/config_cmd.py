"""``storm-zmq config``: print the effective configuration.

Shows what the storm.yaml files and ``-o`` options resolve to, so a setting can be
checked before a topology runs with it.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

import yaml

from storm_zmq.cli import UsageError, add_config_arguments
from storm_zmq.config import SCHEMA, Setting, closest_key, load_config_with_origins


def add_parser(subparsers: Any) -> None:
    """Register the ``config`` subcommand."""
    parser = subparsers.add_parser(
        "config",
        help="print the effective configuration",
        description="Print the effective configuration (defaults < ~/.storm/storm.yaml "
        "< conf/storm.yaml, -c FILE or $STORM_CONF < -o), all keys sorted or only KEYs.",
    )
    add_config_arguments(parser)
    parser.add_argument("keys", nargs="*", metavar="KEY", help="print only these keys")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print a JSON object")
    output.add_argument(
        "--origins", action="store_true", help="show which file or option set each key"
    )
    output.add_argument(
        "--describe", action="store_true",
        help="say what each key means, its type, range and built-in default (the "
        "reference for every key storm-zmq reads, as Storm's defaults.yaml is)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    conf, origins = load_config_with_origins(args.config, args.overrides)
    keys = args.keys or sorted(conf)
    for key in keys:
        if key not in conf:
            suggestion = closest_key(key)
            hint = f"; did you mean {suggestion}?" if suggestion else ""
            raise UsageError(f"unknown key {key!r}{hint}")
    if args.json:
        selected = {key: conf[key] for key in keys}
        json.dump(selected, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    for key in keys:
        line = format_setting(key, conf[key])
        if args.origins:
            line += f"  # {origins[key]}"
        print(line)
        if args.describe:
            print(describe_setting(key, SCHEMA.get(key)))
    return 0


def describe_setting(key: str, setting: Setting | None) -> str:
    """The indented lines under a key in `--describe`: meaning, then type, range and
    default (what `format_setting` shows is the effective value, which may differ)."""
    if setting is None:
        return "    not a storm-zmq key: passed to the topologies as it is, as in Storm"
    limits = [f"type {setting.type_name}"]
    if setting.minimum is not None:
        limits.append(f"at least {setting.minimum:g}")
    if setting.maximum is not None:
        limits.append(f"at most {setting.maximum:g}")
    limits.append(f"default {_inline_yaml(setting.default)}")
    return "\n".join(textwrap.wrap(f"{setting.doc} ({', '.join(limits)})", width=88,
                                   initial_indent="    ", subsequent_indent="    "))


def format_setting(key: str, value: Any) -> str:
    """``key: value`` in YAML syntax on one line (collections inline), so the line
    can be pasted into a storm.yaml."""
    return f"{_inline_yaml(key)}: {_inline_yaml(value)}"


def _inline_yaml(value: Any) -> str:
    if isinstance(value, str) and "\n" in value:
        return json.dumps(value)  # a JSON string is a YAML double-quoted scalar
    text = yaml.safe_dump(value, default_flow_style=True, width=float("inf"))
    return text.removesuffix("\n").removesuffix("\n...")
