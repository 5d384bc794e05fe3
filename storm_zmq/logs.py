"""Worker logs: one rotated file per worker, the way Storm keeps them.

A cluster worker logs to ``<storm.local.dir>/logs/<topology-id>-<port>.log``
(`worker_log_path`), a `logging.handlers.RotatingFileHandler` bounded by
``worker.log.max.bytes`` and ``worker.log.backups``. Its ``print()`` output and
whatever Python writes to ``sys.stderr`` (tracebacks, uncaught thread exceptions,
warnings) is captured into the same log, as Storm redirects a worker's System.out
and System.err to its log (loggers ``STDOUT`` and ``STDERR``); otherwise a chatty
``print`` would fill a file that nothing rotates.

What still bypasses Python's ``sys.stderr`` — the interpreter failing before logging
is set up, a C extension writing to file descriptor 2, `faulthandler`'s dump on a
segfault — goes to ``<topology-id>-<port>.out``, the file the supervisor gives the
worker as its stdout and stderr (`open_worker_output`). It is small by nature and
rolled once (to ``.out.1``) at a worker start when it outgrew ``worker.log.max.bytes``.

Local-mode workers (``storm-zmq run``) keep logging to the terminal's stderr.
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
    "LOG_FORMAT",
    "configure_worker_logging",
    "open_worker_output",
    "worker_log_name",
    "worker_log_path",
    "worker_output_name",
]

#: A record starts with its time; lines without it continue the previous record.
LOG_FORMAT = "%(asctime)s {prefix} %(levelname)s %(name)s: %(message)s"

#: A partial line longer than this is logged without waiting for its end.
_MAX_PARTIAL_LINE = 64 * 1024


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


class _LoggerWriter(io.TextIOBase):
    """A text stream that logs each complete line to `logger` at `level`: what
    ``sys.stdout`` / ``sys.stderr`` become in a cluster worker."""

    def __init__(self, logger: logging.Logger, level: int, fallback: TextIO | None) -> None:
        super().__init__()
        self._logger = logger
        self._level = level
        self._fallback = fallback
        self._partial = ""
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
        with self._lock:
            data = self._partial + text
            lines = data.split("\n")
            self._partial = lines.pop()
            if len(self._partial) > _MAX_PARTIAL_LINE:
                lines.append(self._partial)
                self._partial = ""
        self._emit(lines)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            lines, self._partial = ([self._partial] if self._partial else []), ""
        self._emit(lines)

    def _emit(self, lines: list[str]) -> None:
        self._inside.active = True
        try:
            for line in lines:
                if line.strip():
                    self._logger.log(self._level, line.rstrip())
        finally:
            self._inside.active = False


def configure_worker_logging(
    conf: dict[str, Any], log_file: Path | None, prefix: str, *,
    stderr: bool = True, capture_stdio: bool = False, capture_stdout: bool = False,
    level: int = logging.INFO,
) -> logging.Handler | None:
    """Set up a worker process's logging; return the file handler, if any.

    With `log_file`, records go to that file, rotated at ``worker.log.max.bytes``
    keeping ``worker.log.backups`` old files (``.log.1`` is the newest). With
    `stderr`, they also go to the process's stderr (a local-mode worker's terminal).
    A cluster worker passes ``stderr=False, capture_stdio=True``: its stderr is the
    supervisor's unrotated ``.out`` file, so copying every record there would undo
    the rotation; instead ``print()`` and ``sys.stderr`` are captured into the log.
    A local-mode worker passes `capture_stdout`: its ``print()`` becomes a record
    (logger ``STDOUT``) on its stderr, named by the worker like the rest of its
    output, instead of landing unprefixed among the run's progress lines on stdout.
    `prefix` names the worker on every line (``<topology-id> worker-<n>``, or
    ``worker-<n>`` in local mode).
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    formatter = logging.Formatter(LOG_FORMAT.format(prefix=prefix.replace("%", "%%")))
    real_stderr = sys.__stderr__ if capture_stdio else sys.stderr
    file_handler: logging.Handler | None = None
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file_handler = _RotatingFileHandler(
            log_file, maxBytes=int(conf["worker.log.max.bytes"]),
            backupCount=int(conf["worker.log.backups"]), encoding="utf-8")
        file_handler.setFormatter(formatter)
        root.addHandler(file_handler)
    if stderr or file_handler is None:
        console = logging.StreamHandler(real_stderr)
        console.setFormatter(formatter)
        root.addHandler(console)
    if capture_stdio:
        if real_stderr is not None:
            try:  # a segfault's Python stack, written straight to fd 2 (the .out file)
                faulthandler.enable(file=real_stderr)
            except (AttributeError, ValueError, io.UnsupportedOperation):
                pass
    if capture_stdio or capture_stdout:
        sys.stdout = _LoggerWriter(logging.getLogger("STDOUT"), logging.INFO, real_stderr)
    if capture_stdio:
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
