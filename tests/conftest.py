"""Fixtures shared across test directories.

The real ZooKeeper server is one per test process for the whole suite
(tests/zk_fixtures.py), whichever directory uses it: three when scripts/test.sh
runs the suite in three processes (pytest-xdist's -n; one more than the CPUs).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import IO

import pytest

pytest_plugins = ["tests.zk_fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    """A suite stopped with SIGTERM (`kill`, a CI job's timeout) stops as on Ctrl-C:
    pytest then runs the teardowns and `finally` blocks that stop the ZooKeeper
    server, cluster daemons and workers the tests started. Killed outright, it left
    them running, using CPU that skewed the next benchmark."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def start_hog(cpus: set[int]) -> subprocess.Popen[bytes]:
    """A process that computes without end on `cpus`, returned once it runs there:
    another process that wants the same CPU. The caller kills it."""
    hog = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {sorted(cpus)}); print('on', flush=True)\n"
                               "while True: pass"], stdout=subprocess.PIPE)
    assert hog.stdout is not None and hog.stdout.readline() == b"on\n"
    return hog


@contextlib.contextmanager
def _locked(name: str, operation: int) -> Iterator[IO[str]]:
    """`flock` on a file every pytest process of the suite shares (and of a
    suite run beside it from another clone, which is just as well)."""
    path = Path(tempfile.gettempdir()) / f"storm-zmq-tests-{os.getuid()}.{name}.lock"
    with open(path, "a") as lock:
        fcntl.flock(lock, operation)
        try:
            yield lock
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _is_serial(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("serial") is not None


class _MachineShare:
    """When pytest-xdist runs the suite in several processes (scripts/test.sh), a test
    marked ``serial`` has the machine to itself: it measures CPU time, rates or
    timing windows that a test running beside it would skew. Every test holds a
    shared lock while it runs, a serial one the exclusive lock; the `gate` lets a
    serial test waiting for the running ones keep new ones from starting meanwhile.

    A serial test followed by another keeps the machine for it: the other
    processes wait once for the run of them (pytest_collection_modifyitems puts
    them first, so that one process gets them all), not once each, each wait being
    the longest test running beside it (these waits, each serial test's alone,
    came to a quarter of the processes' time: docs/benchmarks.md, session 36). In one process nothing is locked."""

    def __init__(self) -> None:
        self._alone: contextlib.ExitStack | None = None

    @contextlib.contextmanager
    def running(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        if "PYTEST_XDIST_WORKER" not in os.environ:
            yield
            return
        if _is_serial(item):
            if self._alone is None:
                with contextlib.ExitStack() as alone:
                    alone.enter_context(_locked("gate", fcntl.LOCK_EX))
                    alone.enter_context(_locked("machine", fcntl.LOCK_EX))
                    self._alone = alone.pop_all()
            try:
                yield
            finally:
                if not _is_serial(nextitem):
                    self._alone.close()
                    self._alone = None
            return
        with contextlib.ExitStack() as held:
            with _locked("gate", fcntl.LOCK_EX):
                held.enter_context(_locked("machine", fcntl.LOCK_SH))
            yield


_machine = _MachineShare()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The order pytest-xdist's processes take the tests in. It sends each process
    its first share in order (a quarter of its part), then more as it runs low, in
    shares of as many tests as a quarter of what is left allows. First come the
    serial tests: the first process gets them all and runs them one after another,
    holding the machine throughout (_MachineShare). Then tests/spark, most of it in
    that first share too, so that one SparkSession (tests/spark/conftest.py)
    serves it. The rest are shuffled, always alike (every process must collect the
    same order): in the files' order, a late share of tests/scripts or of the
    local runs took a minute where a share of unit tests took a second, and the
    run waited for it (session 36: 45 s of one process alone at the end)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    spark = Path(__file__).parent / "spark"
    serial = [item for item in items if _is_serial(item)]
    sparks = [item for item in items if not _is_serial(item) and item.path.is_relative_to(spark)]
    first = set(serial + sparks)
    rest = [item for item in items if item not in first]
    random.Random(36).shuffle(rest)
    items[:] = serial + sparks + rest


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    # outermost (tryfirst): the wait for a serial test is not counted by pytest-timeout
    with _machine.running(item, nextitem):
        yield


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


@pytest.fixture(autouse=True)
def _no_cluster_workers_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """Cluster workers outlive their supervisor (storm_zmq.cluster.supervisor), so a
    test that stops its supervisors leaves their workers running by design. After a
    test with a `tmp_path`, any cluster worker whose launch file is under it is
    killed, so that none uses the CPU of the tests after it."""
    if "tmp_path" not in request.fixturenames:
        yield
        return
    tmp = request.getfixturevalue("tmp_path")
    yield
    from storm_zmq.cluster.processes import worker_processes

    for pid, _ticks, _arguments, launch_file in worker_processes():
        if launch_file.is_relative_to(tmp):
            print(f"killing cluster worker pid {pid}, left running by the test")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def pypy() -> str:
    """.venv-pypy's python, made once for every test process (under a lock)."""
    if shutil.which("pypy3") is None:
        pytest.skip("pypy3 is not installed on this machine (scripts/system-deps.sh "
                    "installs Debian's pypy3 as root)")
    with _locked("pypy-env", fcntl.LOCK_EX):
        made = subprocess.run(["bash", str(Path(__file__).parents[1] / "scripts" / "pypy-env.sh")],
                              capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()
