"""How a worker process is started: under which interpreter, with which environment.

A worker runs under the interpreter `worker.python` names (docs/pypy.md): by default
the one running storm-zmq, or PyPy, whose JIT runs the per-tuple path of the
runtime and of the components several times faster. The worker is always a fresh
`python -m ...` (never a fork: a ZeroMQ context must not cross one), so that any
interpreter can be it. What it imports comes on PYTHONPATH: the checkout holding
storm_zmq, and in local mode this process's own path entries, less those that
belong to this interpreter's installation (its standard library and site-packages,
which would be the wrong ones for another). The worker loads the topology file
itself, and with it the project's ``src/`` (topology/loader.py).

`WorkerProcess` is local mode's worker: the process object the runner holds (the
part of multiprocessing.Process it uses), and a pipe to it on which the worker's
spec goes first.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import site
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import storm_zmq

PYTHON_KEY = "worker.python"
#: The module a local-mode worker runs (``python -m``): how its process is found.
LOCAL_WORKER_MODULE = "storm_zmq.runtime.worker_process"

#: PyPy's young generation when the environment sets none: its default follows the
#: CPU's L2 cache (512 KB on this machine class), and a worker moving a million
#: tuples a second then collects it thousands of times a second (docs/pypy.md).
#: CPython ignores the variable.
PYPY_NURSERY = ("PYPY_GC_NURSERY", "128MB")


class LaunchError(Exception):
    """The worker interpreter cannot be used (named, with what to do)."""


#: What every worker imports besides the standard library (setup.cfg).
WORKER_NEEDS = ("storm_zmq", "zmq", "msgpack", "yaml")
_HOW = "for PyPy workers, bash scripts/pypy-env.sh makes .venv-pypy/bin/python (docs/pypy.md)"
#: What an interpreter says of itself (`interpreter_facts`), as one JSON line.
_PROBE = """
import importlib.util, json, platform, sys
facts = {"implementation": platform.python_implementation(),
         "version": platform.python_version(), "executable": sys.executable,
         "new_enough": sys.version_info >= (3, 9),
         "missing": [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]}
if not facts["missing"]:
    import msgpack, zmq
    facts.update(pyzmq=zmq.pyzmq_version(), msgpack=".".join(map(str, msgpack.version)))
print(json.dumps(facts))
"""


def interpreter_facts(python: str) -> dict[str, Any]:
    """What `python` says of itself, run as a worker would be: implementation,
    version, executable, whether it is 3.9 or later, which of `WORKER_NEEDS` it
    cannot import, and, when none, its pyzmq and msgpack versions. LaunchError when
    it does not run or is not a Python."""
    try:
        probe = subprocess.run([python, "-c", _PROBE, *WORKER_NEEDS], capture_output=True,
                               text=True, timeout=60, env=worker_environment())
    except (OSError, subprocess.SubprocessError) as exc:
        raise LaunchError(f"{PYTHON_KEY}: {python} does not run ({exc}); {_HOW}") from None
    lines = probe.stdout.splitlines()
    try:
        facts = json.loads(lines[-1]) if lines else None
    except ValueError:
        facts = None
    if not isinstance(facts, dict) or "missing" not in facts:  # no answer, or not this one
        raise LaunchError(f"{PYTHON_KEY}: {python} is not a Python that runs "
                          f"({probe.stderr.strip()[-200:] or 'no answer'}); {_HOW}")
    return facts


def worker_python(conf: dict[str, Any]) -> str:
    """The interpreter's path for `conf`'s workers. Another than this one is asked
    once whether it can run a worker (Python 3.9+, the worker's dependencies), so
    that a missing one is one line here, not a traceback from each worker."""
    wanted = conf.get(PYTHON_KEY)
    if not wanted:
        return sys.executable
    found = shutil.which(str(wanted))  # a relative path: from this process's directory
    if found is None:
        raise LaunchError(f"{PYTHON_KEY}: {wanted!r} is not an executable (a path, or a "
                          f"command on PATH); {_HOW}")
    found = os.path.abspath(found)  # a supervisor starts its workers in their own directory
    if found == os.path.abspath(sys.executable):
        return found
    facts = interpreter_facts(found)
    if not facts["new_enough"]:
        raise LaunchError(f"{PYTHON_KEY}: {found} is older than Python 3.9; {_HOW}")
    if facts["missing"]:
        raise LaunchError(f"{PYTHON_KEY}: {found} cannot import {', '.join(facts['missing'])}, "
                          f"which every worker needs; {_HOW}")
    return found


def _owned_by_this_interpreter(entry: str) -> bool:
    """Inside this interpreter's installation, or its user site-packages."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    if site.ENABLE_USER_SITE:
        roots.add(site.getusersitepackages())
    path = os.path.abspath(entry)
    return any(os.path.commonpath([path, os.path.abspath(root)]) == os.path.abspath(root)
               for root in roots)


def worker_pythonpath(own_path: bool) -> str:
    """PYTHONPATH for a worker: storm_zmq's directory, then (`own_path`: local mode,
    whose workers see what the runner sees) this process's path entries that are
    not its interpreter's, then the PYTHONPATH this process was given."""
    # storm_zmq from a checkout (an editable install); one installed in this
    # interpreter's site-packages must be installed in the workers' too
    home = str(Path(storm_zmq.__file__).resolve().parent.parent)
    entries = [] if _owned_by_this_interpreter(home) else [home]
    for entry in sys.path if own_path else ():
        path = os.path.abspath(entry or os.getcwd())
        if os.path.isdir(path) and not _owned_by_this_interpreter(path):
            entries.append(path)
    entries += [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]
    return os.pathsep.join(dict.fromkeys(entries))


def worker_environment(own_path: bool = True) -> dict[str, str]:
    """This process's environment, with the worker's PYTHONPATH and PyPy's nursery."""
    env = dict(os.environ)
    env["PYTHONPATH"] = worker_pythonpath(own_path)
    env.setdefault(*PYPY_NURSERY)
    return env


class WorkerProcess:
    """A local-mode worker: ``python -m storm_zmq.runtime.worker_process FD`` under
    `python`, its spec sent pickled as the first message on `pipe` (whose other
    end is the child's FD). Exit codes as multiprocessing gives them: the code, or
    minus the signal that ended it."""

    def __init__(self, python: str, spec: dict[str, Any]) -> None:
        self.python = python
        self.spec = spec
        self.pipe: Connection | None = None
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self._popen = subprocess.Popen(
                [self.python, "-m", LOCAL_WORKER_MODULE, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), env=worker_environment(), stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.pipe = Connection(ours.detach())
        try:
            # the protocol both interpreters read (PyPy 3.9: up to 5; CPython 3.11's default 4)
            self.pipe.send_bytes(pickle.dumps(self.spec, protocol=4))
        except OSError:
            pass  # it died at start: the runner sees its exit

    @property
    def exitcode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    def is_alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def join(self, timeout: float | None = None) -> None:
        if self._popen is None:
            return
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def kill(self) -> None:
        if self.is_alive():
            assert self._popen is not None
            self._popen.kill()
