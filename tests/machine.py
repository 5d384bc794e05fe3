"""What to do when a test needs a part of the machine that is not there (Java, Debian's
zookeeper, Graphviz).

On a developer's machine without root the suite cannot install them: the test is
skipped, saying what is missing. As root, or in CI, `scripts/system-deps.sh` has
installed them before the suite runs, so a missing one means that step broke: the test
fails, and a green run cannot hide an integration that went untested.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def should_have_been_installed() -> bool:
    """Whether `scripts/system-deps.sh` could install the machine's parts here."""
    return os.geteuid() == 0 or bool(os.environ.get("CI"))


def missing(what: str) -> NoReturn:
    """Skip (a developer's machine) or fail (root or CI) for want of `what`."""
    if should_have_been_installed():
        pytest.fail(f"{what}; scripts/system-deps.sh installs it as root, and did not here")
    pytest.skip(f"{what} (as root, scripts/system-deps.sh installs it)")
