"""How a worker process is started (runtime/launch.py), and workers under PyPy
(`worker.python`, docs/pypy.md): real runs, as tests/runtime/test_local_mode.py's.

The PyPy tests need Debian's pypy3 (scripts/system-deps.sh installs it as root) and
.venv-pypy (scripts/pypy-env.sh, which scripts/test.sh runs; made here if missing).
"""

from __future__ import annotations

import fnmatch
import io
import os
import subprocess
import sys
import threading
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import storm_zmq
from storm_zmq import portable
from storm_zmq.config import DEFAULTS
from storm_zmq.runtime.launch import LaunchError, worker_python, worker_pythonpath
from storm_zmq.runtime.local import RunOptions, run_local
from storm_zmq.runtime.tuning import PYPY_RECEIVE_BUFFER
from tests.messaging.conftest import free_port
from tests.runtime.test_local_mode import THREADS, expected_counts, outputs, run

ROOT = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).parent / "project"


# --- the interpreter and its path -------------------------------------------------


def test_no_worker_python_is_this_interpreter() -> None:
    assert worker_python({"worker.python": None}) == sys.executable
    assert worker_python({}) == sys.executable


@pytest.mark.parametrize(("value", "says"), [
    ("no-such-python", "'no-such-python' is not an executable"),
    ("/bin/true", "/bin/true is not a Python that runs"),
    ("/bin/false", "/bin/false is not a Python that runs"),
])
def test_a_worker_python_that_cannot_run_a_worker_is_named(value: str, says: str) -> None:
    with pytest.raises(LaunchError, match=says) as caught:
        worker_python({"worker.python": value})
    assert "scripts/pypy-env.sh" in str(caught.value)


def test_a_worker_python_without_the_workers_dependencies_names_what_it_lacks(
    tmp_path: Path,
) -> None:
    bare = tmp_path / "bare"  # this Python without the venv's site-packages
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = str(bare / "bin" / "python")
    with pytest.raises(LaunchError, match=r"cannot import zmq, msgpack, yaml, which every worker needs"):
        worker_python({"worker.python": python})


def test_a_run_with_a_worker_python_that_cannot_be_used_says_so_in_one_line(tmp_path: Path) -> None:
    result = run("wordcount.py", tmp_path, "-o", "worker.python=no-such-python")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "storm-zmq: error: worker.python: 'no-such-python' is not an executable (a path, or a "
        "command on PATH); for PyPy workers, bash scripts/pypy-env.sh makes "
        ".venv-pypy/bin/python (docs/pypy.md)"]


def test_the_workers_path_has_the_checkout_and_this_processs_entries_not_its_interpreters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    local = worker_pythonpath(own_path=True).split(os.pathsep)
    home = str(Path(storm_zmq.__file__).resolve().parent.parent)
    assert local[0] == home
    assert str(tmp_path) in local and local[-1] == "/elsewhere"
    assert not [e for e in local if e.startswith((sys.prefix, sys.base_prefix))], local
    assert worker_pythonpath(own_path=False).split(os.pathsep) == [home, "/elsewhere"]


def test_cpu_affinity_through_glibc_is_what_os_gives() -> None:
    """PyPy 3.9's os has no sched_*affinity: portable reads and sets it via glibc."""
    allowed = set(os.sched_getaffinity(0))
    assert portable._libc_affinity("sched_getaffinity", None) == allowed
    one = min(allowed)
    seen: list[set[int]] = []

    def pinned_thread() -> None:  # affinity is per thread: this one only
        portable._libc_affinity("sched_setaffinity", {one})
        seen.append(set(os.sched_getaffinity(0)))

    thread = threading.Thread(target=pinned_thread)
    thread.start()
    thread.join()
    assert seen == [{one}]
    assert set(os.sched_getaffinity(0)) == allowed


# --- PyPy workers ---------------------------------------------------------------


def _worker_modules() -> list[str]:
    """The modules ruff checks against 3.9 (pyproject.toml): what a worker imports."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        globs = tomllib.load(file)["tool"]["ruff"]["per-file-target-version"]
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "storm_zmq").rglob("*.py"))
    chosen = [f for f in files if any(fnmatch.fnmatch(f, g) for g in globs)]
    return [f[:-3].replace("/", ".").removesuffix(".__init__") for f in chosen]


def test_every_module_a_worker_imports_imports_on_pypy(pypy: str) -> None:
    modules = _worker_modules()
    assert "storm_zmq.runtime.worker" in modules and "storm_zmq.cluster.worker" in modules
    code = "import importlib, sys\nfor name in sys.argv[1:]: importlib.import_module(name)\nprint('ok')"
    result = subprocess.run([pypy, "-c", code, *modules], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("transport", "options"), [("zmq", ()), ("tcp", ()), ("zmq", THREADS)],
                         ids=["zmq", "tcp", "zmq-thread-each"])
def test_word_counts_are_exact_on_two_pypy_workers(
    tmp_path: Path, pypy: str, transport: str, options: tuple[str, ...],
) -> None:
    """With a thread each, the worker looks at its executor threads' frames once a
    second (stuck-alone notices): under PyPy that raised SystemError in the worker."""
    count = 20000
    result = run("wordcount.py", tmp_path, "--transport", transport, "-o", f"test.count={count}",
                 "-o", f"worker.python={pypy}", *options, workers=2)
    assert result.returncode == 0, result.stderr
    assert "every spout is exhausted" in result.stdout
    counted: Counter[str] = Counter()
    for task_counts in outputs(tmp_path, "count").values():
        assert not set(task_counts) & set(counted), "a word was counted by two tasks"
        counted.update(task_counts)
    assert counted == expected_counts(count)
    spouts = outputs(tmp_path, "spout")
    assert sorted(i for s in spouts.values() for i in s["acked"]) == list(range(count))
    assert {s["python"] for s in spouts.values()} == {"pypy"}, "the spout ran on PyPy"
    assert f"acking on, python {pypy}" in result.stdout, "the run says which interpreter"
    assert result.stderr.count("PyPy's JIT records at most 1000 operations a trace") == 2, (
        "each worker sets worker.pypy.jit.trace_limit")


@pytest.mark.slow
def test_pypy_workers_queue_storms_32768_tuples_per_executor_unless_told(tmp_path: Path, pypy: str) -> None:
    """topology.executor.receive.buffer.size null is chosen by the worker's interpreter
    (CPython's 4096: tests/runtime/test_metrics_report.py); a value set is kept."""
    for setting, expected in ((None, PYPY_RECEIVE_BUFFER), (100, 100)):
        latest: dict[int, dict[str, Any]] = {}
        options = RunOptions(
            topology_file=str(PROJECT / "topologies" / "wordcount.py"), conf=dict(DEFAULTS),
            workers=2, progress=False,
            overrides={"supervisor.slots.ports": [free_port(), free_port()],
                       "test.output_dir": str(tmp_path), "test.count": 200, "worker.python": pypy,
                       "topology.executor.receive.buffer.size": setting},
            on_report=latest.__setitem__,
        )
        result = run_local(options, io.StringIO())
        assert result.exit_code == 0 and result.reason == "every spout is exhausted"
        for name in ("split", "count"):
            entries = [r["components"][name] for r in latest.values() if name in r["components"]]
            assert entries and all(e["queue_capacity"] == e["executors"] * expected for e in entries), (
                setting, name, entries)


@pytest.mark.slow
def test_groupings_ticks_direct_all_and_global_on_pypy_workers(tmp_path: Path, pypy: str) -> None:
    count = 60
    result = run("groupings.py", tmp_path, "-o", f"test.count={count}",
                 "-o", f"worker.python={pypy}", workers=2)
    assert result.returncode == 0, result.stderr
    assert sum(outputs(tmp_path, "batches").values()) >= 1, "batches processed on ticks"
    by_task: dict[int, list[int]] = {}
    for seen in outputs(tmp_path, "sink").values():
        for task, value in seen:
            by_task.setdefault(task, []).append(value)
    full = [task for task, values in by_task.items() if sorted(values) == list(range(count))]
    assert len(full) >= 4, f"ALL to 3 tasks and GLOBAL to 1: {sorted(by_task)}"
    partial = sorted(len(v) for v in by_task.values() if len(v) < count)
    assert partial == [20, 20, 20], "direct emits split by the spout's choice"


@pytest.mark.slow
def test_a_component_that_raises_on_a_pypy_worker_stops_the_run_with_its_traceback(
    tmp_path: Path, pypy: str,
) -> None:
    result = run("crash.py", tmp_path, "-o", "test.count=100", "-o", f"worker.python={pypy}")
    assert result.returncode == 1
    assert "component 'crash' task" in result.stderr
    assert result.stderr.count("ZeroDivisionError: the bolt divided by zero on purpose") == 1
    assert "Traceback" in result.stderr and "components.py" in result.stderr


@pytest.mark.slow
def test_a_spark_spout_on_pypy_workers_says_it_needs_cpython(tmp_path: Path, pypy: str) -> None:
    """pyspark and pyarrow are not in .venv-pypy: the spout's initialize() says so."""
    result = subprocess.run(
        [sys.executable, "-m", "storm_zmq.cli.main", "run", str(ROOT / "topologies" / "spark_wordcount.py"),
         "-w", "1", "-t", "30", "-q", "-o", f"worker.python={pypy}",
         "-o", f"supervisor.slots.ports=[{free_port()}]"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "spark spout 'lines_spout' task" in result.stderr
    assert f"pyspark is not installed for {pypy}, the workers' interpreter" in result.stderr
    assert "a SparkSpout runs on CPython workers (docs/pypy.md)" in result.stderr
