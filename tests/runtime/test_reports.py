"""storm_zmq.runtime.reports: a worker's messages to its runner, by marshal (pickle
for what marshal cannot carry), readable across the interpreters they may run on."""

from __future__ import annotations

import subprocess
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.runtime.reports import decode_report, encode_report

ROOT = Path(__file__).parents[2]
Point = namedtuple("Point", "x y")  # a tuple subclass: marshal refuses it

#: The shape of a stats report (runtime/worker.py `Worker.stats`), cut down.
REPORT: tuple[Any, ...] = ("stats", 1, {
    "worker": 1, "host": "127.0.0.1", "port": 6701, "time": 1764441600.25,
    "components": {"sentence_spout": {
        "kind": "spout", "tasks": [1, 2], "capacity": None, "pending": 0,
        "latencies_ms": [0.25, 3.5, 1e-9], "latency_runs": [[3, 7]],
        "by_executor": [{"executor": 3, "tasks": [1], "emitted": 2**63 + 5, "capacity": 0.5}],
    }},
    "refused": {}, "errors": ["worker 1: something"], "balance": {}, "flag": True,
})


def test_a_report_comes_back_as_it_was_sent_by_marshal() -> None:
    data = encode_report(REPORT)
    assert data[:1] == b"M"
    assert decode_report(data) == REPORT
    assert type(decode_report(data)) is tuple


def test_what_marshal_cannot_carry_goes_by_pickle() -> None:
    message = ("error", 0, {"where": Point(1, 2)})
    data = encode_report(message)
    assert data[:1] == b"P"
    assert decode_report(data) == message


def test_bytes_that_are_no_report_are_named() -> None:
    with pytest.raises(ValueError, match=r"not a worker report \(first byte b'x'\)"):
        decode_report(b"x123")


def test_a_pypy_workers_report_reads_on_cpython(pypy: str) -> None:
    # the runner (CPython 3.11) reads what a PyPy 3.9 worker wrote
    written = subprocess.run(
        [pypy, "-c", "import sys; from storm_zmq.runtime.reports import encode_report; "
                     f"sys.stdout.buffer.write(encode_report({REPORT!r}))"],
        capture_output=True, check=True, cwd=ROOT, timeout=60)
    assert written.stdout[:1] == b"M"
    assert decode_report(written.stdout) == REPORT
