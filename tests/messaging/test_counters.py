"""Refused input: every refusal counted, the log rate-limited per kind."""

from __future__ import annotations

import logging

import pytest

from storm_zmq.messaging.counters import RefusalLog


def test_counts_everything_but_logs_once_per_kind_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    refusals = RefusalLog(logging.getLogger("t"), "server on port 1", interval=10, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING):
        logged = [refusals.record("version", "bad version") for _ in range(5)]
        logged.append(refusals.record("malformed", "bad body"))
        now[0] = 10.5
        logged.append(refusals.record("version", "bad version again"))
    assert logged == [True, False, False, False, False, True, True]
    assert refusals.counts == {"version": 6, "malformed": 1}
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "server on port 1: dropped bad version"
    assert lines[-1] == "server on port 1: dropped bad version again (4 more since the last report)"


def test_a_refusal_quoting_a_strangers_megabytes_logs_a_line_of_hundreds(
        caplog: pytest.LogCaptureFixture) -> None:
    # (a data-plane audit: a 4 MB frame's repr made one log line of 10 MB)
    refusals = RefusalLog(logging.getLogger("t"), "server on port 1", interval=10)
    with caplog.at_level(logging.WARNING):
        refusals.record("malformed", "payload " + "x" * 4_000_000)
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("server on port 1: dropped payload xxx")
    assert line.endswith("... (4,000,008 characters)") and len(line) < 400


def test_a_malformed_status_or_stream_is_quoted_short() -> None:
    import msgpack

    from storm_zmq.runtime.backpressure import MalformedStatus, decode_status

    with pytest.raises(MalformedStatus) as caught:
        decode_status(msgpack.packb(["x" * 1_000_000]))
    assert len(str(caught.value)) < 200
