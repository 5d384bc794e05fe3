"""Fixtures shared across test directories.

The real ZooKeeper server is one per test process for the whole suite
(tests/zk_fixtures.py), whichever directory uses it: two when scripts/test.sh
runs the suite in two processes (pytest-xdist's -n).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator

import pytest

pytest_plugins = ["tests.zk_fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    """A suite stopped with SIGTERM (`kill`, a CI job's timeout) stops as on Ctrl-C:
    pytest then runs the teardowns and `finally` blocks that stop the ZooKeeper
    server, cluster daemons and workers the tests started. Killed outright, it left
    them running, using CPU that skewed the next benchmark."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _forget_topology_projects() -> Iterator[None]:
    """`load_topology` puts a project's directory and its ``src/`` on sys.path and
    imports its packages under their plain names (``spouts``, ``bolts``, ...). After
    a test that did, both are forgotten, so that the next project's packages of the
    same names are its own, whatever ran before."""
    path = list(sys.path)
    yield
    added = [entry for entry in sys.path if entry not in path]
    if not added:
        return
    sys.path[:] = path
    prefixes = tuple(os.path.realpath(entry) + os.sep for entry in added)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and os.path.realpath(file).startswith(prefixes):
            del sys.modules[name]
