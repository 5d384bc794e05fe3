"""Network namespaces as stand-in hosts for tests: a peer behind a veth pair can be
made to vanish (its link down) the way a machine that loses power does, without a
FIN or an RST. Needs root and iproute2 (CI has both); tests skip saying which is
missing."""

from __future__ import annotations

import os
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
