"""Network namespaces as stand-in hosts for tests: a peer behind a veth pair can be
made to vanish (its link down) the way a machine that loses power does, without a
FIN or an RST. Needs root and iproute2 (CI has both); tests skip saying which is
missing."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import uuid


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=30)


def cannot_make_namespaces() -> str | None:
    """Why this machine cannot give a test network namespaces, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "network namespaces need iproute2 (the `ip` command)"
    probe = f"szprobe{uuid.uuid4().hex[:6]}"
    try:
        run("ip", "netns", "add", probe)
    except subprocess.CalledProcessError as exc:
        return f"this machine refuses `ip netns add`: {exc.stderr.strip()}"
    run("ip", "netns", "del", probe)
    return None


def fresh_subnet() -> str:
    """A /24 for a test's namespaces ("10.23x.y"), another each time: what a killed
    run left behind (a namespace, a link with its address) cannot answer for it."""
    return f"10.{random.randrange(231, 240)}.{random.randrange(1, 255)}"
