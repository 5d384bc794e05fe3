"""``storm-zmq visualize``: being built (placeholder so that the command list is fixed)."""

from __future__ import annotations

from typing import Any


def add_parser(subparsers: Any) -> None:
    """Register the subcommand (not yet: the module is being written)."""
