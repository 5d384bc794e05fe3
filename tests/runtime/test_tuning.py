"""How a worker uses the machine: CPU pinning (pure choice, real affinity), the
transport threads' scheduling policy, and the garbage-collection clock."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.local import RunOptions, run_local
from storm_zmq.runtime.tuning import (
    CPYTHON_RECEIVE_BUFFER,
    HOST_SLOT_KEY,
    PYPY_RECEIVE_BUFFER,
    RunnableMeter,
    host_slot,
    host_slots,
    receive_buffer_size,
    slot_cpu,
    tune_jit,
    wake_without_preempting,
    worker_cpu,
)
from tests.conftest import start_hog
from tests.messaging.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
ALLOWED = sorted(os.sched_getaffinity(0))


def test_worker_cpu_is_the_port_position_among_the_allowed_cpus() -> None:
    ports = [6700, 6701, 6702, 6703]
    assert [worker_cpu(p, ports, {0, 1, 2, 3}) for p in ports] == [0, 1, 2, 3]
    assert [worker_cpu(p, ports, {5, 3, 9, 7}) for p in ports] == [3, 5, 7, 9]  # sorted CPUs
    assert [worker_cpu(p, ports[:2], {0, 1, 2}) for p in ports[:2]] == [0, 1]
    assert worker_cpu(7001, ports, {0, 1, 2, 3}) == 1  # not a host port: spread by port number
    assert worker_cpu(6700, ports, set()) is None


def test_no_worker_is_pinned_where_the_host_has_more_worker_ports_than_cpus() -> None:
    # workers that must share cores do better where the kernel can move them
    ports = [6700, 6701, 6702, 6703]
    assert [worker_cpu(p, ports, {0, 1}) for p in ports] == [None] * 4
    assert worker_cpu(6700, [6700], {4}) == 4


def _cpus_of_slots(supervisors: dict[str, dict[str, Any]], machine: str,
                   cpus: set[int]) -> dict[tuple[str, int], int | None]:
    """(supervisor, port) -> CPU, for every supervisor on `machine`, as each one's
    launches would choose it with every registration in `supervisors` known."""
    chosen = {}
    for supervisor, info in supervisors.items():
        if info["hostname"] != machine:
            continue
        slots = host_slots(supervisor, info["ports"], machine, supervisors)
        for port in info["ports"]:
            chosen[supervisor, port] = slot_cpu(*host_slot(supervisor, port, slots), cpus)
    return chosen


def test_two_supervisors_on_one_host_give_their_workers_different_cpus() -> None:
    # The README's recipe, two supervisors on one machine; their own ports alone
    # put the first port of each on the first CPU.
    supervisors = {
        "s1": {"host": "127.0.0.1", "hostname": "box", "ports": [7700, 7701]},
        "s2": {"host": "127.0.0.1", "hostname": "box", "ports": [7710, 7711]},
        "other": {"host": "10.0.0.2", "hostname": "elsewhere", "ports": [7700, 7701]},
    }
    assert worker_cpu(7700, [7700, 7701], {0, 1}) == worker_cpu(7710, [7710, 7711], {0, 1}) == 0
    assert host_slots("s2", [7710, 7711], "box", supervisors) == [
        (7700, "s1"), (7701, "s1"), (7710, "s2"), (7711, "s2")]
    # 4 worker ports on 2 CPUs: the host's rule (more ports than CPUs) pins nothing
    assert set(_cpus_of_slots(supervisors, "box", {0, 1}).values()) == {None}
    # on 4 CPUs, one each
    assert _cpus_of_slots(supervisors, "box", {0, 1, 2, 3}) == {
        ("s1", 7700): 0, ("s1", 7701): 1, ("s2", 7710): 2, ("s2", 7711): 3}
    # a port each on 2 CPUs: both pinned, to different CPUs
    one_each = {"s1": {"hostname": "box", "ports": [7700]}, "s2": {"hostname": "box", "ports": [7710]}}
    assert _cpus_of_slots(one_each, "box", {0, 1}) == {("s1", 7700): 0, ("s2", 7710): 1}
    # the same port on one machine (supervisors in network namespaces): still a slot each
    same_port = {"a": {"hostname": "box", "ports": [6700]}, "b": {"hostname": "box", "ports": [6700]}}
    assert _cpus_of_slots(same_port, "box", {0, 1}) == {("a", 6700): 0, ("b", 6700): 1}


def test_a_supervisor_counts_its_own_ports_not_its_registration() -> None:
    # not registered yet, or an older registration with other ports: its own count
    registered = {"s1": {"hostname": "box", "ports": [6700, 6701, 6702]},
                  "s2": {"host": "box", "ports": [6710]}}  # no "hostname": by "host"
    assert host_slots("s1", [6701], "box", registered) == [(6701, "s1"), (6710, "s2")]
    assert host_slots("s3", [6720], "box", {}) == [(6720, "s3")]
    assert host_slot("s1", 6701, [(6701, "s1"), (6710, "s2")]) == [0, 2]


def test_pin_worker_pins_the_caller_and_the_threads_it_starts_later() -> None:
    script = textwrap.dedent("""
        import os, threading
        from storm_zmq.runtime.tuning import pin_worker
        ports = [6700, 6701]
        print(pin_worker({"worker.cpu.pinning": False, "supervisor.slots.ports": ports}, 6701))
        more_ports_than_cpus = list(range(6700, 6701 + len(os.sched_getaffinity(0))))
        print(pin_worker({"worker.cpu.pinning": True, "supervisor.slots.ports": more_ports_than_cpus},
                         6700))
        print(pin_worker({"worker.cpu.pinning": True, "supervisor.slots.ports": more_ports_than_cpus},
                         6701, host_ports=ports))
        seen = []
        thread = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))
        thread.start(); thread.join()
        print(sorted(os.sched_getaffinity(0)), seen[0])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=REPO, check=True)
    off, too_many_ports, cpu, affinities = done.stdout.splitlines()
    assert off == "None"
    assert too_many_ports == "None"  # one slot port more than CPUs: none pinned
    if len(ALLOWED) < 2:
        assert cpu == "None" and affinities == f"{ALLOWED} {ALLOWED}"
        return
    # the second of the host ports given, whatever supervisor.slots.ports says
    assert cpu == str(ALLOWED[1])
    assert affinities == f"[{ALLOWED[1]}] [{ALLOWED[1]}]"


def test_pin_worker_takes_the_host_slot_its_supervisor_gave() -> None:
    script = textwrap.dedent("""
        import os, sys
        from storm_zmq.runtime.tuning import pin_worker
        key, cpus = sys.argv[1], len(os.sched_getaffinity(0))
        conf = {"worker.cpu.pinning": True, "supervisor.slots.ports": [6700]}
        # more slots on the host than CPUs: not pinned, whatever its own ports say
        print(pin_worker({**conf, key: [0, cpus + 1]}, 6700))
        # the last of the host's slots, though its port is the first of its own
        print(pin_worker({**conf, key: [cpus - 1, cpus]}, 6700))
    """)
    done = subprocess.run([sys.executable, "-c", script, HOST_SLOT_KEY], capture_output=True,
                          text=True, timeout=60, cwd=REPO, check=True)
    assert done.stdout.splitlines() == ["None", str(ALLOWED[-1])]


def test_a_child_started_unpinned_gets_every_cpu_the_worker_had() -> None:
    # what a SparkSpout's local JVM needs: pyspark starts it from the spout's thread
    script = textwrap.dedent("""
        import os, subprocess
        from storm_zmq.runtime.tuning import pin_worker, unpinned
        def child_cpus():
            status = subprocess.run(["cat", "/proc/self/status"], capture_output=True,
                                    text=True, check=True).stdout
            return [line.split(":")[1].strip() for line in status.splitlines()
                    if line.startswith("Cpus_allowed_list")][0]
        with unpinned():  # not pinned yet: nothing to widen
            print(child_cpus())
        print(pin_worker({"worker.cpu.pinning": True}, 6700, host_ports=[6700]))
        print(child_cpus())
        with unpinned():
            print(child_cpus())
        print(child_cpus(), sorted(os.sched_getaffinity(0)))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=REPO, check=True)
    before, cpu, pinned_child, unpinned_child, after = done.stdout.splitlines()
    assert _cpu_list(before) == frozenset(ALLOWED)
    assert cpu == str(ALLOWED[0])
    assert _cpu_list(pinned_child) == {ALLOWED[0]}
    assert _cpu_list(unpinned_child) == frozenset(ALLOWED)
    assert after == f"{ALLOWED[0]} [{ALLOWED[0]}]"  # the block restores the worker's CPU


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


def _batch_threads(pid: int) -> int:
    """How many threads of process `pid` run as SCHED_BATCH."""
    count = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            count += os.sched_getscheduler(int(tid)) == os.SCHED_BATCH
        except OSError:  # the thread ended meanwhile
            continue
    return count


def test_a_thread_that_wakes_without_preempting_is_sched_batch_and_only_it() -> None:
    policies: list[int] = []

    def body() -> None:
        policies.append(int(wake_without_preempting()))
        policies.append(os.sched_getscheduler(0))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(10)
    assert policies == [1, os.SCHED_BATCH]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # per thread: the caller's is unchanged


def test_the_runnable_meter_counts_a_threads_time_on_or_waiting_for_its_cpu_not_its_sleep() -> None:
    """A thread sleeps 0.2 s, then computes for 0.3 s on a CPU two other processes
    compute on too: it runs about a third of that and waits in the run queue the
    rest. The meter counts both, and not the sleep; and only the listed threads.
    Runnable starts when the sleep ends, not when the thread gets the CPU back: that
    wait counts too (0.24 s of it once on a busy CI machine)."""
    cpu = ALLOWED[0]
    meter = RunnableMeter()
    # (wall, on CPU) of the computing, and the wall time since the sleep ended
    spent: list[tuple[float, float, float]] = []
    started = threading.Event()
    native: list[int] = []
    read: list[tuple[float | None, float]] = []  # (share, when)

    def sleep_then_compute() -> None:
        os.sched_setaffinity(0, {cpu})  # this thread only
        native.append(threading.get_native_id())
        started.set()
        woken = time.perf_counter() + 0.2  # when the sleep ends: runnable from then
        time.sleep(0.2)
        wall, on_cpu = time.perf_counter(), time.thread_time()
        until = wall + 0.3
        while time.perf_counter() < until:
            pass
        ended = time.perf_counter()
        spent.append((ended - wall, time.thread_time() - on_cpu, ended - woken))
        now = time.monotonic()
        read.append((meter.sample(native, now), now))  # while it is there to read

    hogs = [start_hog({cpu}), start_hog({cpu})]
    try:
        thread = threading.Thread(target=sleep_then_compute)
        thread.start()
        assert started.wait(10)
        since = time.monotonic()
        assert meter.sample(native, since) is None, "the first sample"
        thread.join(10)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    ((wall, on_cpu, since_woken),), ((share, until),) = spent, read
    assert share is not None
    runnable = share * (until - since)
    said = (f"runnable {runnable:.3f} s, computing {wall:.3f} s, of which on a CPU {on_cpu:.3f} s, "
            f"{since_woken:.3f} s since the sleep ended")
    assert on_cpu < 0.6 * wall, f"the other processes took their share: {said}"
    assert 0.8 * wall <= runnable <= since_woken + 0.1, said  # and not the 0.2 s asleep
    assert meter.sample([], until + 1) is None, "a thread not listed is not counted"


@pytest.mark.parametrize("pinning", [None, True, False])
def test_workers_of_a_run_are_pinned_to_one_cpu_each_unless_told_not_to(pinning: bool | None) -> None:
    if len(ALLOWED) < 2:
        pytest.skip("this machine lets the test use one CPU: pinned and unpinned look the same")
    ports = [free_port(), free_port()]
    seen: dict[int, dict[str, frozenset[int]]] = {}
    batch: dict[int, int] = {}

    def on_report(worker: int, report: dict[str, Any]) -> None:
        if worker not in seen:
            seen[worker] = _thread_cpus(report["pid"])
            batch[worker] = _batch_threads(report["pid"])

    options = RunOptions(
        topology_file=str(REPO / "topologies" / "wordcount.py"), conf=dict(DEFAULTS), seconds=2,
        workers=2, transport="zmq", progress=False, on_report=on_report,
        # more slot ports than CPUs: a local run spreads its own workers, not the slots
        overrides={"supervisor.slots.ports": ports + [free_port() for _ in ALLOWED],
                   **({} if pinning is None else {"worker.cpu.pinning": pinning})},
    )
    result = run_local(options, io.StringIO())
    assert result.exit_code == 0, result.reason
    assert sorted(seen) == [0, 1]
    for worker, threads in seen.items():
        # every thread: executors, receive, send, backpressure, ZeroMQ's I/O threads
        assert len(threads) >= 6, threads
        expected = frozenset([ALLOWED[worker]] if pinning is not False else ALLOWED)
        assert set(threads.values()) == {expected}, (worker, threads)
    # the receive and send threads, pinned or not; no executor, no ZeroMQ I/O thread
    assert batch == {0: 2, 1: 2}


def test_a_null_receive_buffer_is_chosen_by_the_interpreter_and_a_set_one_kept() -> None:
    assert DEFAULTS["topology.executor.receive.buffer.size"] is None
    assert receive_buffer_size(DEFAULTS, on_pypy=False) == CPYTHON_RECEIVE_BUFFER == 4096
    assert receive_buffer_size(DEFAULTS, on_pypy=True) == PYPY_RECEIVE_BUFFER == 32768  # Storm's
    for on_pypy in (False, True):
        assert receive_buffer_size({"topology.executor.receive.buffer.size": 4096}, on_pypy) == 4096


#: Under PyPy: a loop hot enough to be traced, whose trace is longer than 100
#: operations; prints how often the JIT gave up on a trace for its length.
_TRACE_A_LONG_LOOP = """
import json, logging, sys, pypyjit
from storm_zmq.runtime.tuning import tune_jit
logging.basicConfig(level=logging.INFO)
too_long = []
pypyjit.set_abort_hook(lambda driver, greenkey, reason, *rest: too_long.append(reason))
tune_jit(json.loads(sys.argv[1]), 6700)

def body(i):
    total = 0
    for j in range(20):
        total += (i * j) % 7 + len(str(j))
    return total

print(sum(body(i) for i in range(20000)) > 0, len(too_long))
"""


@pytest.mark.parametrize(("limit", "cut"), [(100, True), (None, False)])
def test_a_pypy_worker_gives_its_jit_the_trace_limit_it_was_given(
    pypy: str, limit: int | None, cut: bool,
) -> None:
    """Null leaves PyPy's own limit (6000), which this loop's trace fits in."""
    conf = {"worker.pypy.jit.trace_limit": limit}
    result = subprocess.run([pypy, "-c", _TRACE_A_LONG_LOOP, json.dumps(conf)], capture_output=True,
                            text=True, timeout=120, cwd=REPO)
    ran, too_long = result.stdout.split()
    assert ran == "True", result.stderr
    assert (int(too_long) > 0) is cut, result.stdout
    assert ("records at most 100 operations" in result.stderr) is cut


def test_cpython_workers_leave_the_jit_setting_alone(caplog: pytest.LogCaptureFixture) -> None:
    assert DEFAULTS["worker.pypy.jit.trace_limit"] == 1000
    tune_jit(DEFAULTS, 6700)  # would fail to import pypyjit if it tried
    assert "PyPy's JIT" not in caplog.text
