"""Worker processes a supervisor did not start itself: those a previous run of it
left running.

Storm's workers outlive their supervisor ("no worker processes are affected by the
death of Nimbus or the Supervisors"): a supervisor that stops, crashes or is
upgraded leaves them running, and when it starts again it adopts them. An adopted
worker is not its child, so it cannot be waited for; `AdoptedProcess` watches it by
pid and start time instead (a pid the kernel gave to another process since is not
taken for it), and learns its exit code from the file the worker writes as it
exits (`EXIT_FILE`). A worker killed by a signal writes none: its code is unknown.

`find_workers` is how both the supervisor and `storm-zmq kill_workers` tell which
processes are the workers of a `storm.local.dir`: a live process whose command line
is a cluster worker's, given the launch file of that worker directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

#: In a worker's directory: its pid, written by the supervisor that started it.
PID_FILE = "pid"
#: In a worker's directory: its exit code, written by the worker as it exits.
EXIT_FILE = "exit"
#: The module a worker runs (`python -m storm_zmq.cluster.worker`).
WORKER_MODULE = "storm_zmq.cluster.worker"
#: `AdoptedProcess.poll()` of a worker that exited without writing its code (a
#: signal killed it): not a real exit status, and said as "unknown" (`exit_text`).
UNKNOWN_EXIT = -1000
#: How often `AdoptedProcess.wait` looks whether the process is gone.
WAIT_POLL_SECS = 0.05


class WorkerProcess(Protocol):
    """What a supervisor needs of a worker process: `subprocess.Popen` for one it
    started, `AdoptedProcess` for one it adopted."""

    pid: int

    def poll(self) -> int | None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def exit_text(code: int) -> str:
    """How a log line says a worker's exit code."""
    if code == UNKNOWN_EXIT:
        return "with an unknown code (killed by a signal, or it crashed)"
    return f"with code {code}"


def _start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks after boot); None when it is gone or a
    zombie (it exited; its parent, not us, reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2:].split()  # after "pid (comm) "
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


class AdoptedProcess:
    """A worker started by an earlier run of this supervisor (see the module
    docstring); the `subprocess.Popen` methods a supervisor uses."""

    def __init__(self, pid: int, start_ticks: int, exit_file: Path) -> None:
        self.pid = pid
        self._start_ticks = start_ticks
        self._exit_file = exit_file
        self._code: int | None = None

    @classmethod
    def of(cls, pid: int, exit_file: Path) -> AdoptedProcess | None:
        """The live process `pid`, or None when there is none."""
        ticks = _start_ticks(pid)
        return None if ticks is None else cls(pid, ticks, exit_file)

    def _alive(self) -> bool:
        return _start_ticks(self.pid) == self._start_ticks

    def poll(self) -> int | None:
        if self._code is None and not self._alive():
            try:
                self._code = int(self._exit_file.read_text())
            except (OSError, ValueError):
                self._code = UNKNOWN_EXIT
        return self._code

    def _signal(self, number: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"worker pid {self.pid}", timeout or 0.0)
            time.sleep(WAIT_POLL_SECS)
        return code


@dataclass(frozen=True)
class FoundWorker:
    """A live worker of a local dir: its directory and process, and how often its
    supervisor had relaunched it (the ``--restarts`` it was started with)."""

    directory: Path
    process: AdoptedProcess
    restarts: int


def _restarts(arguments: list[bytes]) -> int:
    try:
        return int(arguments[arguments.index(b"--restarts") + 1])
    except (ValueError, IndexError):
        return 0


def find_workers(workers_dir: Path) -> tuple[list[FoundWorker], list[Path]]:
    """The live workers of `workers_dir` (``storm.local.dir/workers``), and the pid
    files that name no live worker of theirs (the caller removes them). A pid file
    names its worker when that process runs `WORKER_MODULE` with the launch file of
    the pid file's directory."""
    found, stale = [], []
    for pid_file in sorted(workers_dir.glob(f"*/{PID_FILE}")):
        directory = pid_file.parent
        try:
            pid = int(pid_file.read_text())
            arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            stale.append(pid_file)
            continue
        launch_file = os.fsencode(directory / "launch.json")
        process = AdoptedProcess.of(pid, directory / EXIT_FILE)
        if process is None or WORKER_MODULE.encode() not in arguments \
                or launch_file not in arguments:
            stale.append(pid_file)
            continue
        found.append(FoundWorker(directory, process, _restarts(arguments)))
    return found, stale
