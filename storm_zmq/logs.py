"""Worker logs: one rotated file per worker, the way Storm keeps them.

A cluster worker logs to ``<storm.local.dir>/logs/<topology-id>-<port>.log``
(`worker_log_path`), a `logging.handlers.RotatingFileHandler` bounded by
``worker.log.max.bytes`` and ``worker.log.backups``. Its ``print()`` output and
whatever Python writes to ``sys.stderr`` (tracebacks, uncaught thread exceptions,
warnings) is captured into the same log, as Storm redirects a worker's System.out
and System.err to its log (loggers ``STDOUT`` and ``STDERR``); otherwise a chatty
``print`` would fill a file that nothing rotates. A block of lines (one ``print``,
one traceback) is one record (`StreamRecords`).

What still bypasses Python's ``sys.stderr`` — the interpreter failing before logging
is set up, a C extension writing to file descriptor 2, `faulthandler`'s dump on a
segfault — goes to ``<topology-id>-<port>.out``, the file the supervisor gives the
worker as its stdout and stderr (`open_worker_output`). It is small by nature and
rolled once (to ``.out.1``) at a worker start when it outgrew ``worker.log.max.bytes``.

Local-mode workers (``storm-zmq run``) log to the terminal's stderr, their
``print()`` and stderr captured as records there (named by the worker).
"""

from __future__ import annotations

import faulthandler
import io
import logging
import logging.handlers
import os
import sys
import threading
from pathlib import Path
from typing import IO, Any, TextIO

__all__ = [
    "LOG_CONTEXT_METHOD",
    "LOG_FORMAT",
    "ExecutorContext",
    "StreamRecords",
    "configure_worker_logging",
    "open_worker_output",
    "worker_log_name",
    "worker_log_path",
    "worker_output_name",
]

#: A record starts with its time; lines without it continue the previous record.
#: A record written while an executor's code ran names it after the logger
#: (`ExecutorContext`): ``INFO STDOUT [count:3]: ...``.
LOG_FORMAT = "%(asctime)s {prefix} %(levelname)s %(name)s%(storm_executor)s: %(message)s"

#: The method by which a thread says which executor's code it runs (`ExecutorContext`).
LOG_CONTEXT_METHOD = "storm_zmq_log_context"

#: Captured output held longer than this (characters) is logged without waiting
#: for its line's end (`StreamRecords`).
_MAX_PARTIAL_LINE = 64 * 1024


class ExecutorContext(logging.Filter):
    """Names, on each record, the executor whose code the logging thread runs
    (``[component:task]``), as Storm's log lines carry their executor thread's name:
    the tasks of a worker share its threads, so the logger's name alone (a
    component's `logger`, ``STDOUT`` for its ``print()``, a module logger of the
    user's) cannot tell which task wrote a line, and ``storm-zmq logs --component``
    finds what a component printed by it. A thread says what it runs through a
    method named `LOG_CONTEXT_METHOD` (the runtime's executor threads have one; a
    name no other thread class has by chance). Threads a component starts itself
    name nothing. A filter that raised would raise into the logging call, a
    component's `print()` included, so whatever goes wrong names nothing instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        label = None
        context = getattr(threading.current_thread(), LOG_CONTEXT_METHOD, None)
        if context is not None:
            try:
                label = context()
            except Exception:  # noqa: BLE001 - never into the caller's logging call
                label = None
        record.storm_executor = f" [{label}]" if isinstance(label, str) and label else ""
        return True


def worker_log_name(topology_id: str, port: int) -> str:
    return f"{topology_id}-{int(port)}.log"


def worker_output_name(topology_id: str, port: int) -> str:
    return f"{topology_id}-{int(port)}.out"


def worker_log_path(logs_dir: Path, topology_id: str, port: int) -> Path:
    """The worker's rotated log file in the supervisor's ``logs`` directory."""
    return logs_dir / worker_log_name(topology_id, port)


class _RotatingFileHandler(logging.handlers.RotatingFileHandler):
    """`RotatingFileHandler` that also bounds the file with no backups: the standard
    one never rolls over when ``backupCount`` is 0, so the file would grow forever;
    this one starts the file afresh instead."""

    def doRollover(self) -> None:  # noqa: N802 - the logging API's name
        if self.backupCount > 0:
            super().doRollover()
            return
        if self.stream:
            self.stream.close()
        self.stream = open(self.baseFilename, "w", encoding=self.encoding)  # noqa: SIM115


class StreamRecords:
    """Cuts text written to a captured ``sys.stdout`` / ``sys.stderr`` into log
    records. Pure: `feed` and `flush` return the records' texts.

    One record per block, not per line, so that what belongs together stays
    together in the log (later lines follow their record without a time, as
    `LOG_FORMAT` says): text is held until a write ends a line, so ``print(text)``
    of many lines (text, then ``"\\n"``: two writes) is one record; and a traceback
    (``traceback.print_exc()``, an uncaught thread exception: a write per line) is
    held until its exception line, the first line after its header that is not
    indented. At most `max_chars` are held; beyond that they are one record at once.
    """

    TRACEBACK = "Traceback (most recent call last):"

    def __init__(self, max_chars: int = _MAX_PARTIAL_LINE) -> None:
        self.max_chars = max_chars
        self._held = ""

    @property
    def holding(self) -> bool:
        """Whether text waits for its record's end."""
        return bool(self._held)

    def feed(self, text: str) -> list[str]:
        data = self._held + text
        if len(data) <= self.max_chars and (not data.endswith("\n") or self._open_traceback(data)):
            self._held = data
            return []
        self._held = ""
        return self._records(data)

    def flush(self) -> list[str]:
        data, self._held = self._held, ""
        return self._records(data)

    def _open_traceback(self, data: str) -> bool:
        """A traceback whose exception line has not come: every line after its
        header is indented (an exception message may go on with indented lines,
        which must not keep it open)."""
        lines = [line for line in data.splitlines() if line.strip()]
        return bool(lines) and lines[0].startswith(self.TRACEBACK) and all(
            line[:1].isspace() for line in lines[1:])

    @staticmethod
    def _records(data: str) -> list[str]:
        lines = [line.rstrip() for line in data.split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        while lines and not lines[0]:
            lines.pop(0)
        return ["\n".join(lines)] if lines else []


class _LoggerWriter(io.TextIOBase):
    """A text stream that logs what is written to it to `logger` at `level`, in
    records cut by `StreamRecords`: what ``sys.stdout`` / ``sys.stderr`` become in a
    worker. One `StreamRecords` per writing thread, so that a line one thread has
    begun is neither finished by another thread's print nor logged (and named,
    `ExecutorContext`) as the other's; an entry goes once it holds nothing."""

    def __init__(self, logger: logging.Logger, level: int, fallback: TextIO | None) -> None:
        super().__init__()
        self._logger = logger
        self._level = level
        self._fallback = fallback
        self._records: dict[int, StreamRecords] = {}  # by thread ident
        self._lock = threading.Lock()
        self._inside = threading.local()  # a handler failing and printing: no recursion

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if getattr(self._inside, "active", False):
            if self._fallback is not None:
                self._fallback.write(text)
            return len(text)
        thread = threading.get_ident()
        with self._lock:
            cutter = self._records.get(thread)
            if cutter is None:
                cutter = self._records[thread] = StreamRecords()
            records = cutter.feed(text)
            if not cutter.holding:
                del self._records[thread]
        self._emit(records)
        return len(text)

    def flush(self) -> None:
        """Log what every thread holds, the calling thread's first (at exit, the
        interpreter's flush must not lose another thread's unfinished line)."""
        thread = threading.get_ident()
        with self._lock:
            cutters = sorted(self._records.items(), key=lambda item: item[0] != thread)
            self._records = {}
            records = [record for _, cutter in cutters for record in cutter.flush()]
        self._emit(records)

    def _emit(self, records: list[str]) -> None:
        self._inside.active = True
        try:
            for record in records:
                self._logger.log(self._level, record)
        finally:
            self._inside.active = False


def configure_worker_logging(
    conf: dict[str, Any], log_file: Path | None, prefix: str, *,
    stderr: bool = True, capture_stdio: bool = False, level: int = logging.INFO,
) -> logging.Handler | None:
    """Set up a worker process's logging; return the file handler, if any.

    With `log_file`, records go to that file, rotated at ``worker.log.max.bytes``
    keeping ``worker.log.backups`` old files (``.log.1`` is the newest). With
    `stderr`, they also go to the process's stderr (a local-mode worker's terminal).
    With `capture_stdio`, ``print()`` and ``sys.stderr`` become records (loggers
    ``STDOUT`` and ``STDERR``). A cluster worker passes ``stderr=False,
    capture_stdio=True``: its stderr is the supervisor's unrotated ``.out`` file, so
    copying every record there would undo the rotation; instead its output is
    captured into the log. A local-mode worker passes ``capture_stdio=True`` too: a
    component's ``print()`` and stderr become records on the terminal's stderr,
    named by the worker like the rest of its output, instead of landing unprefixed
    among the run's progress lines on stdout or another worker's lines.
    `prefix` names the worker on every line (``<topology-id> worker-<n>``, or
    ``worker-<n>`` in local mode).
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    formatter = logging.Formatter(LOG_FORMAT.format(prefix=prefix.replace("%", "%%")))
    context = ExecutorContext()
    real_stderr = sys.__stderr__ if capture_stdio else sys.stderr
    file_handler: logging.Handler | None = None
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file_handler = _RotatingFileHandler(
            log_file, maxBytes=int(conf["worker.log.max.bytes"]),
            backupCount=int(conf["worker.log.backups"]), encoding="utf-8")
        file_handler.setFormatter(formatter)
        file_handler.addFilter(context)
        root.addHandler(file_handler)
    if stderr or file_handler is None:
        console = logging.StreamHandler(real_stderr)
        console.setFormatter(formatter)
        console.addFilter(context)
        root.addHandler(console)
    if capture_stdio:
        if real_stderr is not None:
            try:  # a segfault's Python stack, written straight to fd 2 (the .out file)
                faulthandler.enable(file=real_stderr)
            except (AttributeError, ValueError, io.UnsupportedOperation):
                pass
    if capture_stdio:
        sys.stdout = _LoggerWriter(logging.getLogger("STDOUT"), logging.INFO, real_stderr)
        sys.stderr = _LoggerWriter(logging.getLogger("STDERR"), logging.WARNING, real_stderr)
    return file_handler


def open_worker_output(logs_dir: Path, topology_id: str, port: int,
                       max_bytes: int) -> IO[bytes]:
    """The file a supervisor gives a worker as stdout and stderr (see the module
    docstring), opened for appending; rolled to ``.out.1`` first when it is larger
    than `max_bytes`, so a worker crashing at every start cannot fill the disk."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    path = logs_dir / worker_output_name(topology_id, port)
    try:
        if path.stat().st_size > max_bytes:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    return open(path, "ab")  # noqa: SIM115 - the caller hands it to the child
