"""The `storm-zmq` command's entry point, and `python -m storm_zmq ...` for an
environment whose scripts directory is not on PATH.

The command's own modules are imported inside `main`, so that a Ctrl-C in the
half second they take ends the command with exit status 130, as one later does,
not with a KeyboardInterrupt traceback."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from storm_zmq.cli.main import main as command
    except KeyboardInterrupt:
        return 130
    return command()


if __name__ == "__main__":
    sys.exit(main())
