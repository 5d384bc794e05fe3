"""Where the two interpreters a worker may run on differ: CPython >= 3.11 (the
project's) and PyPy 3.9 (Debian's pypy3, chosen with `worker.python`; docs/pypy.md).

Everything a worker process imports (the runtime, the transports, the components'
API, the worker-side cluster modules) keeps to Python 3.9 plus what this module
gives; ruff checks those files against 3.9 (pyproject.toml,
per-file-target-version) and tests/runtime/test_launch.py runs them on PyPy. The rest (the
CLI, nimbus, the UI, the Spark spout) may use all of 3.11.
"""

from __future__ import annotations

import ctypes
import os
import sys
import traceback
from typing import Any

#: ``@dataclass(**SLOTS)``: slotted where dataclasses can (3.10+); PyPy's instances
#: are compact without slots.
SLOTS: dict[str, Any] = {"slots": True} if sys.version_info >= (3, 10) else {}

#: ``zip(..., **STRICT)``: unequal lengths raise where zip can tell (3.10+); on 3.9
#: the shorter one ends it. Where a length is not checked before, that is all.
STRICT: dict[str, Any] = {"strict": True} if sys.version_info >= (3, 10) else {}

ON_PYPY = sys.implementation.name == "pypy"


def format_exception(exc: BaseException) -> str:
    """The traceback as Python prints it, with the notes `add_note` added."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if sys.version_info < (3, 11):
        text += "".join(f"{note}\n" for note in getattr(exc, "__notes__", ()))
    return text


def format_exception_only(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc))


def add_note(exc: BaseException, note: str) -> None:
    """`BaseException.add_note` (3.11), kept where 3.11 keeps it: `__notes__`."""
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    else:
        notes = getattr(exc, "__notes__", None)
        if notes is None:
            notes = []
            exc.__notes__ = notes  # type: ignore[attr-defined]
        notes.append(note)


_CPU_SET_BYTES = 128  # glibc's cpu_set_t: 1024 CPUs


def _libc_affinity(call: str, cpus: set[int] | None) -> set[int]:
    libc = ctypes.CDLL(None, use_errno=True)
    mask = (ctypes.c_ubyte * _CPU_SET_BYTES)()
    for cpu in cpus or ():
        mask[cpu // 8] |= 1 << (cpu % 8)
    if getattr(libc, call)(0, _CPU_SET_BYTES, mask) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return {i * 8 + bit for i, byte in enumerate(mask) for bit in range(8) if byte >> bit & 1}


def get_affinity() -> set[int]:
    """The CPUs this process may run on (`os.sched_getaffinity(0)`, which PyPy 3.9
    lacks: there through glibc)."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return _libc_affinity("sched_getaffinity", None)


def set_affinity(cpus: set[int]) -> None:
    """Keep this process (its calling thread and those it starts after) on `cpus`."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)
    else:
        _libc_affinity("sched_setaffinity", cpus)
