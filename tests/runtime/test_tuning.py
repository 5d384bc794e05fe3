"""How a worker uses the machine: CPU pinning (pure choice, real affinity) and the
garbage-collection clock."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.local import RunOptions, run_local
from storm_zmq.runtime.tuning import worker_cpu
from tests.messaging.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
ALLOWED = sorted(os.sched_getaffinity(0))


def test_worker_cpu_is_the_slot_position_modulo_the_allowed_cpus() -> None:
    ports = [6700, 6701, 6702, 6703]
    assert [worker_cpu(p, ports, {0, 1}) for p in ports] == [0, 1, 0, 1]
    assert [worker_cpu(p, ports, {5, 3, 9}) for p in ports] == [3, 5, 9, 3]  # sorted CPUs
    assert worker_cpu(6702, ports, {4}) == 4
    assert worker_cpu(7001, ports, {0, 1}) == 1  # not a slot port: spread by port number
    assert worker_cpu(6700, ports, set()) is None


def test_pin_worker_pins_the_caller_and_the_threads_it_starts_later() -> None:
    script = textwrap.dedent("""
        import os, threading
        from storm_zmq.runtime.tuning import pin_worker
        ports = [6700, 6701]
        print(pin_worker({"worker.cpu.pinning": False, "supervisor.slots.ports": ports}, 6701))
        print(pin_worker({"worker.cpu.pinning": True, "supervisor.slots.ports": ports}, 6701))
        seen = []
        thread = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))
        thread.start(); thread.join()
        print(sorted(os.sched_getaffinity(0)), seen[0])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=REPO, check=True)
    off, cpu, affinities = done.stdout.splitlines()
    expected = ALLOWED[1 % len(ALLOWED)]
    assert off == "None"
    assert cpu == str(expected)
    assert affinities == f"[{expected}] [{expected}]"


def _cpu_list(text: str) -> frozenset[int]:
    """The kernel's CPU list format: ``0-3,6``."""
    cpus: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return frozenset(cpus)


def _thread_cpus(pid: int) -> dict[str, frozenset[int]]:
    """The CPUs every thread of process `pid` may run on, by thread name."""
    found: dict[str, frozenset[int]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        found[f"{fields['Name'].strip()}/{tid}"] = _cpu_list(fields["Cpus_allowed_list"].strip())
    return found


@pytest.mark.parametrize("pinning", [True, False])
def test_workers_of_a_run_are_pinned_to_one_cpu_each_when_asked(pinning: bool) -> None:
    if len(ALLOWED) < 2:
        pytest.skip("this machine lets the test use one CPU: pinned and unpinned look the same")
    ports = [free_port(), free_port()]
    seen: dict[int, dict[str, frozenset[int]]] = {}

    def on_report(worker: int, report: dict[str, Any]) -> None:
        if worker not in seen:
            seen[worker] = _thread_cpus(report["pid"])

    options = RunOptions(
        topology_file=str(REPO / "topologies" / "wordcount.py"), conf=dict(DEFAULTS), seconds=2,
        workers=2, transport="zmq", progress=False, on_report=on_report,
        overrides={"supervisor.slots.ports": ports, "worker.cpu.pinning": pinning},
    )
    result = run_local(options, io.StringIO())
    assert result.exit_code == 0, result.reason
    assert sorted(seen) == [0, 1]
    for worker, threads in seen.items():
        # every thread: executors, receive, send, backpressure, ZeroMQ's I/O threads
        assert len(threads) >= 6, threads
        expected = frozenset([ALLOWED[worker % len(ALLOWED)]] if pinning else ALLOWED)
        assert set(threads.values()) == {expected}, (worker, threads)
