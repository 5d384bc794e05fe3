"""storm_zmq/spark/session.py without Spark: reading a standalone master URL and
checking that a master accepts connections before Spark is asked for a session."""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Iterator

import pytest

from storm_zmq.spark import SparkSpoutError
from storm_zmq.spark.session import (
    DEFAULT_MASTER_PORT,
    _ctrl_c_held,
    check_master,
    master_addresses,
)
from tests.messaging.conftest import free_port


@pytest.mark.parametrize(("master", "addresses"), [
    ("spark://spark-master:7077", [("spark-master", 7077)]),
    ("spark://10.0.0.5", [("10.0.0.5", DEFAULT_MASTER_PORT)]),
    ("spark://h1:7077,h2:7078, h3", [("h1", 7077), ("h2", 7078), ("h3", 7077)]),
    ("spark://[::1]:7079,[fe80::1]", [("::1", 7079), ("fe80::1", 7077)]),
    ("local[*]", []),
    ("local[2]", []),
    ("yarn", []),
    ("k8s://https://kube:6443", []),
])
def test_a_master_url_gives_its_host_port_pairs(master: str, addresses: list[tuple[str, int]]) -> None:
    assert master_addresses(master) == addresses


@pytest.mark.parametrize("master", [
    "spark://", "spark://h:", "spark://h:x", "spark://h:70777", "spark://h:0", "spark://h1:7077,",
    "spark://h:7077/path", "spark://[::1", "spark://[::1]7077", "spark://::1:7077",
])
def test_a_malformed_master_url_says_which_address(master: str) -> None:
    with pytest.raises(ValueError, match=r"is not .*host.*:port|has no valid port"):
        master_addresses(master)


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def test_a_master_that_accepts_passes_even_after_a_dead_one(listening: int) -> None:
    check_master(f"spark://127.0.0.1:{listening}", "spark spout 'x'")
    check_master(f"spark://127.0.0.1:{free_port()},127.0.0.1:{listening}", "spark spout 'x'")
    check_master("local[*]", "spark spout 'x'")  # no connect: not a standalone master


def test_no_master_accepting_is_a_session_error_naming_each_address() -> None:
    dead = [free_port(), free_port()]
    master = f"spark://127.0.0.1:{dead[0]},127.0.0.1:{dead[1]}"
    with pytest.raises(SparkSpoutError) as info:
        check_master(master, "spark spout 'x' task 3")
    message = str(info.value)
    assert message.startswith(f"spark spout 'x' task 3: cannot start a Spark session (spark.master={master}): "
                              "no master accepts connections (")
    for port in dead:
        assert f"127.0.0.1:{port}: ConnectionRefusedError: [Errno 111] Connection refused" in message
    assert "check that a Spark master runs there" in message


def test_a_master_that_does_not_answer_is_named_timed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    def silent(address: tuple[str, int], timeout: float) -> socket.socket:
        assert timeout == 3.0
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(SparkSpoutError, match=r"\(spark.master=spark://far:7077\): no master accepts "
                                              r"connections \(far:7077: TimeoutError: timed out\)"):
        check_master("spark://far:7077", "spark spout 'x'")


def test_a_malformed_master_url_is_a_session_error() -> None:
    with pytest.raises(SparkSpoutError, match=r"spark spout 'x': cannot start a Spark session "
                                              r"\(spark.master=spark://h:x\): invalid master URL: 'h:x' has no valid port"):
        check_master("spark://h:x", "spark spout 'x'")


def test_a_first_ctrl_c_while_a_session_starts_waits_for_the_start_and_a_second_does_not(
        capsys: pytest.CaptureFixture[str]) -> None:
    # A Spark audit: Ctrl-C during pyspark's launch of the JVM lost the process,
    # which ran on after the command (checked by hand against a real launch)
    assert threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with _ctrl_c_held() as interrupted:
            os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode: held
            assert interrupted == [signal.SIGINT]
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):  # (the handler runs between bytecodes)
                    pass
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert "stopping once Spark has started" in capsys.readouterr().err
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a caller's own handling is left alone
        with _ctrl_c_held() as interrupted:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
