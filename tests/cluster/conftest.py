"""What the cluster tests share: processes that stand in for workers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_zmq.cluster.processes import PID_FILE, WORKER_MODULE

#: Sleeps until told to stop; on SIGTERM writes its pid and code 3 to its exit file
#: and exits 3, as a worker does. Its arguments look like a worker's.
STAND_IN = """
import os, pathlib, signal, sys, time
def stop(*_):
    pathlib.Path(sys.argv[3]).with_name("exit").write_text(f"{os.getpid()} 3")
    sys.exit(3)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
time.sleep(120)
"""


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        process.kill()
        process.wait()


def stand_in(started: list[subprocess.Popen[bytes]], directory: Path, *, module: str = WORKER_MODULE,
             restarts: int = 0) -> subprocess.Popen[bytes]:
    """A process with a worker's command line for `directory`, its pid file written."""
    directory.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-c", STAND_IN, module, "--launch-file", str(directory / "launch.json"),
         "--restarts", str(restarts)], stdout=subprocess.PIPE)
    started.append(process)
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    (directory / PID_FILE).write_text(str(process.pid))
    return process
