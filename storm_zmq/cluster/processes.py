"""Worker processes a supervisor did not start itself: those a previous run of it
left running.

Storm's workers outlive their supervisor ("no worker processes are affected by the
death of Nimbus or the Supervisors"): a supervisor that stops, crashes or
restarts leaves them running, and when it starts again it adopts them. An adopted
worker is not its child, so it cannot be waited for; `AdoptedProcess` watches it by
pid and start time instead (a pid the kernel gave to another process since is not
taken for it), and learns its exit code from the file the worker writes as it
exits (`EXIT_FILE`, `record_exit`). A worker killed by a signal writes none: its
code is unknown. The file names the pid it is about: the supervisor launches the
slot's next worker in the same directory, and `storm-zmq kill_workers` may read the
code of the worker it stopped after that launch (it did, once, in CI, when the
launch still removed the file).

`find_workers` is how both the supervisor and `storm-zmq kill_workers` tell which
processes are the workers of a `storm.local.dir`: every live process whose command
line runs the worker module with a launch file in a directory under its
``workers/``. The pid files a supervisor writes are for people; a worker whose pid
file was never written (its supervisor died right after starting it) is found too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

#: In a worker's directory: its pid, written by the supervisor that started it.
PID_FILE = "pid"
#: In a worker's directory: ``PID CODE`` of its last worker that exited, written by
#: the worker as it exits (`record_exit`).
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


def record_exit(exit_file: Path, code: int) -> None:
    """Say, as this worker process exits, with what code (for a supervisor that
    adopted it and cannot wait for it). Written whole, then renamed into place,
    so that a reader never sees half of it."""
    partial = exit_file.with_name(f"{exit_file.name}.{os.getpid()}")
    partial.write_text(f"{os.getpid()} {code}")
    partial.replace(exit_file)


def exit_code(exit_file: Path, pid: int | None) -> int:
    """What worker `pid` wrote to its `EXIT_FILE` as it exited; `UNKNOWN_EXIT` if
    nothing, or if the file is another process's (a later worker of the slot)."""
    try:
        written_by, code = exit_file.read_text().split()
        return int(code) if int(written_by) == pid else UNKNOWN_EXIT
    except (OSError, ValueError):
        return UNKNOWN_EXIT


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


def process_age(pid: int) -> float | None:
    """Seconds since process `pid` started (to a clock tick); None when it is gone
    or /proc cannot tell."""
    ticks = _start_ticks(pid)
    if ticks is None:
        return None
    try:
        return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError):  # no CLOCK_BOOTTIME off Linux
        return None


def _boot_time() -> float:
    with open("/proc/stat", "rb") as stat:
        for line in stat:
            if line.startswith(b"btime "):
                return float(line.split()[1])
    raise OSError("no btime in /proc/stat")


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

    @property
    def started_at(self) -> float:
        """When the process started (epoch seconds, to a clock tick)."""
        return _boot_time() + self._start_ticks / os.sysconf("SC_CLK_TCK")

    def _alive(self) -> bool:
        return _start_ticks(self.pid) == self._start_ticks

    def poll(self) -> int | None:
        if self._code is None and not self._alive():
            self._code = exit_code(self._exit_file, self.pid)
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


def _argument(arguments: list[bytes], name: bytes) -> bytes | None:
    try:
        return arguments[arguments.index(name) + 1]
    except (ValueError, IndexError):
        return None


def worker_processes() -> Iterator[tuple[int, int, list[bytes], Path]]:
    """(pid, start ticks, command line, launch file) of every live worker process of
    this machine, whichever supervisor started it."""
    module = WORKER_MODULE.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        ticks = _start_ticks(pid)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                arguments = cmdline.read().split(b"\0")
        except OSError:
            continue
        launch_file = _argument(arguments, b"--launch-file")
        if ticks is None or module not in arguments or launch_file is None:
            continue
        if _start_ticks(pid) == ticks:  # else the pid was reused while reading
            yield pid, ticks, arguments, Path(os.fsdecode(launch_file))


def find_workers(workers_dir: Path) -> list[FoundWorker]:
    """The live workers of `workers_dir` (``storm.local.dir/workers``, resolved),
    by directory (see the module docstring)."""
    found = []
    for pid, ticks, arguments, launch_file in worker_processes():
        directory = launch_file.parent
        if directory.parent != workers_dir:
            continue  # another local dir's
        try:
            restarts = int(_argument(arguments, b"--restarts") or 0)
        except ValueError:
            restarts = 0
        found.append(FoundWorker(directory, AdoptedProcess(pid, ticks, directory / EXIT_FILE),
                                 restarts))
    return sorted(found, key=lambda worker: worker.directory)


def running_supervisors_slots() -> dict[str, list[int]]:
    """Supervisor id -> its `supervisor.slots.ports`, of every supervisor whose
    workers run on this machine, read from their launch files: what CPU pinning
    counts for a supervisor that stopped and left its workers running (it is no
    longer registered, yet its workers still hold their CPUs). A launch file this
    process may not read is left out."""
    slots = {}
    for _pid, _ticks, _arguments, launch_file in worker_processes():
        try:
            launch = json.loads(launch_file.read_text())
            slots[str(launch["supervisor"])] = [int(p) for p in launch["conf"]["supervisor.slots.ports"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return slots


def stop_processes(processes: Sequence[WorkerProcess], grace: float) -> list[WorkerProcess]:
    """SIGTERM to each (a worker stops gracefully: its components' cleanup() runs),
    then SIGKILL to those still running `grace` seconds later; at once with a grace
    of 0. Returns those that had not exited 10 s after SIGKILL."""
    if grace > 0:
        for process in processes:
            process.terminate()
        deadline = time.monotonic() + grace
        for process in processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    left = [process for process in processes if process.poll() is None]
    for process in left:
        process.kill()
    stuck = []
    for process in left:
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            stuck.append(process)
    return stuck
