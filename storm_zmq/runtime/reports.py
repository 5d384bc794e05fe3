"""How a local-mode worker's messages to its runner (ready, stats, error, stopped)
are encoded on their pipe.

By marshal rather than the pipe's own pickle. Under PyPy (`worker.python`) pickle is
Python code, and the report a worker sends every 0.5 s (thousands of latency samples,
a dict per component) ran cold and half compiled: 2-20 ms of the interpreter lock
that the worker's executor threads waited for, one of the causes of PyPy's latency
tail (docs/benchmarks.md, session 38). PyPy's marshal is built in: 0.5 ms for
such a report from the first one. Version 4 is what both CPython 3.11 and PyPy 3.9
write and read (a newer CPython's marshal.version may be higher: the version is fixed
here, as the runner and the worker may run different interpreters). A message with a
value marshal cannot carry (a tuple subclass, an object) goes by pickle, marked.
"""

from __future__ import annotations

import marshal
import pickle
from typing import Any

MARSHAL_VERSION = 4
_MARSHAL = b"M"
_PICKLE = b"P"


def encode_report(message: tuple[Any, ...]) -> bytes:
    """`message` as bytes for the runner's pipe."""
    try:
        return _MARSHAL + marshal.dumps(message, MARSHAL_VERSION)
    except ValueError:  # "unmarshallable object" somewhere inside
        return _PICKLE + pickle.dumps(message, protocol=4)


def decode_report(data: bytes) -> tuple[Any, ...]:
    """What `encode_report` made of a message."""
    kind, body = data[:1], memoryview(data)[1:]
    if kind == _MARSHAL:
        return marshal.loads(body)
    if kind == _PICKLE:
        return pickle.loads(body)
    raise ValueError(f"not a worker report (first byte {bytes(kind)!r})")
