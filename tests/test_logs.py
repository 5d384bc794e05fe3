"""Worker logging: the rotated file, stdio captured into it, the .out file rolled."""

from __future__ import annotations

import logging
import re
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.logs import (
    StreamRecords,
    configure_worker_logging,
    open_worker_output,
    worker_log_path,
)


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure_worker_logging sets process-wide state: put it back after a test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stdout, stderr = sys.stdout, sys.stderr
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
        if handler not in handlers:
            handler.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    sys.stdout, sys.stderr = stdout, stderr


def conf(max_bytes: int, backups: int) -> dict[str, int]:
    return {"worker.log.max.bytes": max_bytes, "worker.log.backups": backups}


def test_the_log_is_rotated_with_a_bounded_number_of_backups(
        tmp_path: Path, restore_logging: None) -> None:
    path = worker_log_path(tmp_path / "logs", "topo-1", 6700)
    assert path == tmp_path / "logs" / "topo-1-6700.log"
    configure_worker_logging(conf(2048, 3), path, "topo-1 worker-0", stderr=False)
    logger = logging.getLogger("storm_zmq.component.count")
    for i in range(400):  # ~40 KB: many rotations
        logger.info("record %04d %s", i, "x" * 40)
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["topo-1-6700.log", "topo-1-6700.log.1", "topo-1-6700.log.2",
                     "topo-1-6700.log.3"]
    for file in path.parent.iterdir():
        assert file.stat().st_size <= 2048
    newest = path.read_text().splitlines()
    assert newest[-1].endswith("record 0399 " + "x" * 40)
    assert " topo-1 worker-0 INFO storm_zmq.component.count: record " in newest[-1]
    # the backups hold the records just before, in order
    assert path.with_name("topo-1-6700.log.1").read_text().splitlines()[-1].split()[-2] == (
        f"{int(newest[0].split()[-2]) - 1:04d}")


def test_without_backups_the_file_starts_afresh_instead_of_growing(
        tmp_path: Path, restore_logging: None) -> None:
    path = tmp_path / "t-1.log"
    configure_worker_logging(conf(1024, 0), path, "t worker-0", stderr=False)
    for i in range(300):
        logging.getLogger("x").info("line %d %s", i, "y" * 30)
    assert [p.name for p in tmp_path.iterdir()] == ["t-1.log"]
    assert 0 < path.stat().st_size <= 1024
    assert "line 299" in path.read_text()


def test_print_and_stderr_are_captured_into_the_log_not_the_process_stderr(
        tmp_path: Path, restore_logging: None, capfd: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t-2.log"
    configure_worker_logging(conf(1 << 20, 2), path, "t worker-1", stderr=False,
                             capture_stdio=True)
    print("hello from", "a bolt")
    sys.stdout.write("partial ")
    sys.stdout.write("line\n")
    print("worker 1 failed:\nTraceback (most recent call last):\n  boom\nValueError: x",
          file=sys.stderr)
    try:
        raise KeyError("k")
    except KeyError:
        traceback.print_exc()  # a write per line
    sys.stdout.write("unfinished")
    sys.stdout.flush()
    text = path.read_text()
    assert "INFO STDOUT: hello from a bolt" in text
    assert "INFO STDOUT: partial line" in text
    # each multi-line block is one record: its later lines follow without a prefix
    assert ("WARNING STDERR: worker 1 failed:\nTraceback (most recent call last):\n  boom\n"
            "ValueError: x\n") in text
    assert re.search(r"WARNING STDERR: Traceback \(most recent call last\):\n  File .*\n"
                     r"(    .*\n)*KeyError: 'k'\n", text), text
    assert "INFO STDOUT: unfinished" in text
    captured = capfd.readouterr()
    assert "hello" not in captured.out + captured.err


def test_local_mode_style_logs_to_stderr_only(restore_logging: None,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    handler = configure_worker_logging(conf(1 << 20, 2), None, "worker-3")
    assert handler is None
    logging.getLogger("storm_zmq.component.split").warning("to the terminal")
    assert "worker-3 WARNING storm_zmq.component.split: to the terminal" in capfd.readouterr().err


def test_a_record_names_the_executor_whose_code_its_thread_runs(
        restore_logging: None, capfd: pytest.CaptureFixture[str]) -> None:
    """A thread with a `storm_zmq_log_context()` (the runtime's executor threads)
    has what it says on every record written in it, whatever the logger, ``print()``
    included; other threads' records, and a context that says None, name nothing."""
    configure_worker_logging(conf(1 << 20, 2), None, "worker-0", capture_stdio=True)
    label: list[str | None] = ["count:3"]

    class ExecutorLike(threading.Thread):
        def storm_zmq_log_context(self) -> str | None:
            return label[0]

        def run(self) -> None:
            logging.getLogger("storm_zmq.component.count").info("counted")
            logging.getLogger("users.module").warning("their own logger")
            print("printed")
            label[0] = None
            logging.getLogger("storm_zmq.runtime.executor").info("between steps")

    thread = ExecutorLike()
    thread.start()
    thread.join()
    logging.getLogger("storm_zmq.runtime.worker").info("the main thread's")
    err = capfd.readouterr().err
    assert "worker-0 INFO storm_zmq.component.count [count:3]: counted\n" in err, err
    assert "worker-0 WARNING users.module [count:3]: their own logger\n" in err, err
    assert "worker-0 INFO STDOUT [count:3]: printed\n" in err, err
    assert "worker-0 INFO storm_zmq.runtime.executor: between steps\n" in err, err
    assert "worker-0 INFO storm_zmq.runtime.worker: the main thread's\n" in err, err


def test_a_thread_whose_context_cannot_be_read_still_logs_and_prints(
        restore_logging: None, capfd: pytest.CaptureFixture[str]) -> None:
    """The filter runs inside the caller's logging call (a component's ``print()``
    too): a context that raises, or is no method, names nothing, and loses nothing."""
    configure_worker_logging(conf(1 << 20, 2), None, "worker-0", capture_stdio=True)

    class Raising(threading.Thread):
        def storm_zmq_log_context(self) -> str | None:
            raise RuntimeError("broken")

        def run(self) -> None:
            logging.getLogger("users.module").info("logged anyway")
            print("printed anyway")

    class NotAMethod(threading.Thread):
        storm_zmq_log_context = {"not": "callable"}

        def run(self) -> None:
            print("printed too")

    for thread in (Raising(), NotAMethod()):
        thread.start()
        thread.join()
    err = capfd.readouterr().err
    assert "worker-0 INFO users.module: logged anyway\n" in err, err
    assert "worker-0 INFO STDOUT: printed anyway\n" in err, err
    assert "worker-0 INFO STDOUT: printed too\n" in err, err


def test_what_two_threads_print_at_once_stays_apart_with_its_own_executor(
        restore_logging: None, capfd: pytest.CaptureFixture[str]) -> None:
    """Captured output is cut into records per thread: a line one thread has begun
    is not finished, nor named, by another thread's print."""
    configure_worker_logging(conf(1 << 20, 2), None, "worker-0", capture_stdio=True)
    begun, finished = threading.Event(), threading.Event()

    class Named(threading.Thread):
        def __init__(self, label: str, body: Any) -> None:
            super().__init__()
            self.label, self.body = label, body

        def storm_zmq_log_context(self) -> str:
            return self.label

        def run(self) -> None:
            self.body()

    def first() -> None:
        sys.stdout.write("from A, ")
        begun.set()
        assert finished.wait(10)
        print("its end")

    def second() -> None:
        assert begun.wait(10)
        print("from B")
        finished.set()

    threads = [Named("a:1", first), Named("b:2", second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    err = capfd.readouterr().err
    assert "worker-0 INFO STDOUT [b:2]: from B\n" in err, err
    assert "worker-0 INFO STDOUT [a:1]: from A, its end\n" in err, err


def test_the_out_file_is_appended_and_rolled_once_when_too_big(tmp_path: Path) -> None:
    with open_worker_output(tmp_path, "topo-1", 6701, max_bytes=100) as out:
        out.write(b"a" * 60)
    with open_worker_output(tmp_path, "topo-1", 6701, max_bytes=100) as out:
        out.write(b"b" * 60)  # 120 bytes now: the next start rolls it
    assert (tmp_path / "topo-1-6701.out").stat().st_size == 120
    with open_worker_output(tmp_path, "topo-1", 6701, max_bytes=100) as out:
        out.write(b"c")
    assert (tmp_path / "topo-1-6701.out").read_bytes() == b"c"
    assert (tmp_path / "topo-1-6701.out.1").read_bytes() == b"a" * 60 + b"b" * 60


def test_stream_records_are_blocks_ended_by_a_write_that_ends_a_line() -> None:
    records = StreamRecords(max_chars=100)
    assert records.feed("a\nb") == []  # print("a\nb"): the text, then its end
    assert records.feed("\n") == ["a\nb"]
    assert records.feed("one line\n") == ["one line"]
    assert records.feed("\n\n") == []  # nothing but blank lines: no record
    assert records.feed("  indented, trailing spaces   \n\n") == ["  indented, trailing spaces"]
    assert records.feed("no end") == [] and records.flush() == ["no end"]
    assert records.flush() == []


def test_a_traceback_is_held_until_its_exception_line() -> None:
    records = StreamRecords(max_chars=1000)
    assert records.feed("Traceback (most recent call last):\n") == []
    assert records.feed('  File "x.py", line 1, in f\n') == []
    assert records.feed("    g()\n") == []
    assert records.feed("    ^^^\n") == []
    assert records.feed("ValueError: bad\n") == [
        'Traceback (most recent call last):\n  File "x.py", line 1, in f\n    g()\n    ^^^\n'
        "ValueError: bad"]
    # a chained one: the text between is its own record, then the next traceback
    assert records.feed("\nDuring handling of the above exception, another exception "
                        "occurred:\n\n") == ["During handling of the above exception, "
                                              "another exception occurred:"]
    assert records.feed("Traceback (most recent call last):\n  File \"y\"\n") == []
    assert records.feed("TypeError: worse\n") == [
        'Traceback (most recent call last):\n  File "y"\nTypeError: worse']
    # a message that goes on with indented lines (pydantic's) ends it all the same
    assert records.feed("Traceback (most recent call last):\n  File \"z\"\n") == []
    assert records.feed("ValueError: 1 error\n  Input should be a number\n") == [
        'Traceback (most recent call last):\n  File "z"\nValueError: 1 error\n'
        "  Input should be a number"]


def test_what_is_held_is_bounded() -> None:
    records = StreamRecords(max_chars=10)
    assert records.feed("12345") == []
    assert records.feed("678901") == ["12345678901"]  # over the bound: at once
    assert records.feed("Traceback (most recent call last):\n") == [
        "Traceback (most recent call last):"]  # longer than the bound itself
    big = StreamRecords(max_chars=60)
    assert big.feed("Traceback (most recent call last):\n") == []
    assert big.feed("  File 1\n  File 2\n  File 3\n") == [
        "Traceback (most recent call last):\n  File 1\n  File 2\n  File 3"]
