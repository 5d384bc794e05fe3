"""Workers a supervisor adopts (storm_zmq.cluster.processes), with real processes
standing in for workers: how they are found by their command lines,
watched without being waited for, and how their exit codes are learnt. Supervisors
adopting real workers are in tests/cluster/test_cluster.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storm_zmq.cluster.processes import (
    EXIT_FILE,
    PID_FILE,
    UNKNOWN_EXIT,
    AdoptedProcess,
    exit_code,
    exit_text,
    find_workers,
    process_age,
    record_exit,
    stop_processes,
)
from tests.cluster.conftest import stand_in


def test_the_workers_of_a_local_dir_are_found_by_their_command_lines(
        tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    workers = tmp_path.resolve() / "workers"
    ours = stand_in(started, workers / "T-1-6700", restarts=2)
    unwritten = stand_in(started, workers / "T-1-6701")  # its supervisor died first
    (workers / "T-1-6701" / PID_FILE).unlink()
    # not this directory's workers: another module, another local dir, one gone
    other = stand_in(started, workers / "T-1-6702", module="something.else")
    stand_in(started, tmp_path / "elsewhere" / "workers" / "T-1-6703")
    gone = stand_in(started, workers / "T-1-6704")
    gone.kill()
    gone.wait()

    found = find_workers(workers)
    assert [(w.directory.name, w.process.pid, w.restarts) for w in found] == [
        ("T-1-6700", ours.pid, 2), ("T-1-6701", unwritten.pid, 0)]
    assert other.poll() is None  # finding touches no process
    # the process's own start time, not when it was found
    assert abs(found[0].process.started_at - time.time()) < 30


def deaf(started: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """A process that ignores SIGTERM."""
    process = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                "print('ready', flush=True); time.sleep(120)"],
                               stdout=subprocess.PIPE)
    started.append(process)
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    return process


def test_stopping_is_graceful_then_forced_for_all_at_once(
        tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    graceful = [stand_in(started, tmp_path / f"w{n}") for n in range(2)]
    deafs = [deaf(started) for _ in range(2)]
    began = time.monotonic()
    assert stop_processes([deafs[0], *graceful, deafs[1]], grace=2.0) == []
    took = time.monotonic() - began
    assert [p.returncode for p in graceful] == [3, 3]  # SIGTERM: their cleanup ran
    assert [p.returncode for p in deafs] == [-signal.SIGKILL] * 2
    # one grace for them all: one each would be 4 s at least
    assert 2.0 <= took < 3.9, took


def test_an_adopted_worker_is_watched_until_it_exits_and_its_code_is_its_exit_file(
        tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    process = stand_in(started, tmp_path / "w")
    adopted = AdoptedProcess.of(process.pid, tmp_path / "w" / EXIT_FILE)
    assert adopted is not None and adopted.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        adopted.wait(0.1)
    adopted.terminate()
    # not our child in a supervisor: here it is, and stays a zombie until reaped,
    # which counts as exited
    assert adopted.wait(10) == 3
    assert process.wait(10) == 3
    adopted.kill()  # gone: signals nothing, raises nothing


def test_a_worker_killed_by_a_signal_has_an_unknown_exit_code(
        tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    process = stand_in(started, tmp_path / "w")
    adopted = AdoptedProcess.of(process.pid, tmp_path / "w" / EXIT_FILE)
    assert adopted is not None
    adopted.kill()
    assert adopted.wait(10) == UNKNOWN_EXIT
    assert process.wait(10) == -signal.SIGKILL
    assert exit_text(UNKNOWN_EXIT) == "with an unknown code (killed by a signal, or it crashed)"
    assert exit_text(-9) == "with code -9"


def test_an_exit_file_is_read_for_the_worker_it_names_only(
        tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    record_exit(tmp_path / EXIT_FILE, 7)
    assert exit_code(tmp_path / EXIT_FILE, os.getpid()) == 7
    assert list(tmp_path.iterdir()) == [tmp_path / EXIT_FILE]  # written whole, then renamed
    assert exit_code(tmp_path / EXIT_FILE, os.getpid() + 1) == UNKNOWN_EXIT
    assert exit_code(tmp_path / EXIT_FILE, None) == UNKNOWN_EXIT  # an unreadable pid file
    for garbage in ("", "3", f"{os.getpid()} x", f"{os.getpid()} 1 2"):
        (tmp_path / EXIT_FILE).write_text(garbage)
        assert exit_code(tmp_path / EXIT_FILE, os.getpid()) == UNKNOWN_EXIT, garbage
    # The slot's next worker runs in the same directory: its exit is not the one
    # before's (kill_workers read it after the supervisor relaunched the slot, and
    # reported the first worker's clean exit as a kill when the launch removed the file)
    first = stand_in(started, tmp_path / "w")
    adopted = AdoptedProcess.of(first.pid, tmp_path / "w" / EXIT_FILE)
    assert adopted is not None
    first.terminate()
    assert first.wait(10) == 3
    following = stand_in(started, tmp_path / "w")  # launched before anyone polled
    assert adopted.poll() == 3
    following.terminate()
    assert following.wait(10) == 3
    late = AdoptedProcess(first.pid, start_ticks=1, exit_file=tmp_path / "w" / EXIT_FILE)
    assert late.poll() == UNKNOWN_EXIT  # the file now says how the next one exited


def test_a_pid_that_another_process_has_since_is_not_the_adopted_worker(tmp_path: Path) -> None:
    # the same pid with another start time: the worker exited and the kernel reused
    # its pid; this process must never be signalled
    adopted = AdoptedProcess(os.getpid(), start_ticks=1, exit_file=tmp_path / EXIT_FILE)
    assert adopted.poll() == UNKNOWN_EXIT
    adopted.terminate()  # would end this test run if it signalled
    assert AdoptedProcess.of(2**22 + 12345, tmp_path / EXIT_FILE) is None  # no such pid


def test_a_process_age_counts_from_its_start() -> None:
    """What a worker's "still waiting for initialize()" notice counts from: its
    launch, which the supervisor's (or `run`'s) start timeout counts from too."""
    before = time.monotonic()
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        age = process_age(child.pid)
        assert age is not None and -0.05 <= age <= time.monotonic() - before + 0.05
    finally:
        child.communicate(b"")
    assert process_age(child.pid) is None  # gone (reaped)
