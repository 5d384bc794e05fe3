"""The log viewer (Storm's logviewer, small): each supervisor serves its workers' log
files over HTTP on ``logviewer.port`` (0 = off), read-only, so that
``storm-zmq logs`` can show them from any machine that reaches ZooKeeper.

API (GET only; every answer is bounded):

- ``/api/v1/logs?topology=<id>``: JSON list of ``{"name", "size", "mtime"}`` of the
  files of that topology (all files without it), newest rotation last.
- ``/api/v1/log?file=<name>[&start=<offset>][&length=<n>]``: the bytes of one file
  from `start`, at most `length` (default and cap: `MAX_READ`); without `start`, its
  last `length` bytes (the tail). Headers ``X-Log-Start``, ``X-Log-End`` (the offset
  to ask for next, to follow) and ``X-Log-Size``. A `start` beyond the end (the file
  was rotated since) reads from 0 again, which ``X-Log-Start`` says.

Only files directly in the supervisor's logs directory are served: `file` is a bare
file name (no ``/``, no ``..``, no hidden files), and a symbolic link leading out of
the directory is refused (403).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from storm_zmq.logs import worker_log_name

log = logging.getLogger(__name__)

__all__ = ["MAX_READ", "LogAccessError", "LogDirectory", "LogViewer", "WorkerLog",
           "start_logviewer", "worker_logs"]

#: Most bytes one request returns.
MAX_READ = 1024 * 1024
#: Connections served at once; more are closed at once (bounded threads).
MAX_CONNECTIONS = 16


@dataclass
class WorkerLog:
    """Where one worker's log is and how to get it (`storm-zmq logs`, the UI's link)."""

    supervisor: str
    host: str
    port: int
    file: str
    components: list[str]
    url: str | None  # the log viewer, None when off or the supervisor is not registered
    logs_dir: str | None  # on the worker's host, as the supervisor registered it
    registered: bool = True  # its supervisor, in ZooKeeper now

    @property
    def label(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.host, self.port, self.file)

    @property
    def tail_url(self) -> str | None:
        """The viewer's page of the log's last `MAX_READ` bytes, None without a viewer."""
        return f"{self.url}/api/v1/log?file={quote(self.file)}" if self.url else None

    def where(self) -> str:
        if self.logs_dir is None:  # (its supervisor is not registered to say it)
            return f"{self.file} in logs/ under its supervisor's storm.local.dir on host {self.host}"
        return f"{self.logs_dir.rstrip('/')}/{self.file} on host {self.host}"


def worker_logs(topology_id: str, assignment: dict[str, Any],
                supervisors: dict[str, dict[str, Any]]) -> list[WorkerLog]:
    """Pure: the `WorkerLog` of every worker index of a stored assignment."""
    executors = assignment["assignment"]["executors"]
    result = []
    for index, (supervisor, host, port) in enumerate(assignment["slots"]):
        info = supervisors.get(supervisor) or {}
        viewer_port = info.get("logviewer_port")
        url = f"http://{_url_host(host)}:{int(viewer_port)}" if viewer_port else None
        result.append(WorkerLog(
            supervisor=supervisor, host=host, port=int(port),
            file=worker_log_name(topology_id, int(port)),
            components=sorted({c for _, c, _, w in executors if w == index}),
            url=url, logs_dir=info.get("logs_dir"), registered=supervisor in supervisors))
    return result


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class LogAccessError(Exception):
    """A request for something that is not a log file here; `status` says why."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Chunk:
    data: bytes
    start: int
    size: int

    @property
    def end(self) -> int:
        return self.start + len(self.data)


class LogDirectory:
    """The files of one logs directory, and nothing else (pure file access)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    def path(self, name: str) -> Path:
        """The file called `name` in the directory. Raises `LogAccessError`: 403 for a
        name that is not a plain file name here, 404 for one that does not exist."""
        if (not name or "/" in name or "\\" in name or "\0" in name or name.startswith(".")
                or name != os.path.basename(name)):
            raise LogAccessError(HTTPStatus.FORBIDDEN,
                                 f"{name!r} is not a log file name (a bare file name is needed)")
        path = (self.root / name).resolve()
        if path.parent != self.root:
            raise LogAccessError(HTTPStatus.FORBIDDEN, f"{name!r} leads out of the logs directory")
        if not path.is_file():
            raise LogAccessError(HTTPStatus.NOT_FOUND, f"no log file {name!r}")
        return path

    def files(self, topology_id: str | None = None) -> list[dict[str, Any]]:
        """``{"name", "size", "mtime"}`` of the log files (of `topology_id`'s workers)."""
        if not self.root.is_dir():
            return []
        found = []
        for entry in sorted(self.root.iterdir(), key=lambda p: p.name):
            if entry.name.startswith("."):
                continue
            if topology_id is not None and not entry.name.startswith(f"{topology_id}-"):
                continue
            try:
                path = self.path(entry.name)
                stat = path.stat()
            except (LogAccessError, OSError):
                continue
            found.append({"name": entry.name, "size": stat.st_size, "mtime": stat.st_mtime})
        return found

    def read(self, name: str, start: int | None, length: int = MAX_READ) -> Chunk:
        """At most `length` bytes of file `name` from `start` (None: the tail)."""
        length = max(0, min(length, MAX_READ))
        with open(self.path(name), "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if start is None:
                start = max(0, size - length)
            elif start > size:  # rotated (or truncated) since the caller's last read
                start = 0
            file.seek(start)
            data = file.read(min(length, size - start))
        return Chunk(data, start, size)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 30  # a stalled client does not hold a thread for ever
    server_version = "storm-zmq-logviewer"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)

        def param(key: str) -> str | None:
            values = query.get(key)
            return values[-1] if values else None

        try:
            if url.path == "/api/v1/logs":
                files = self.server.directory.files(param("topology"))
                self._send(HTTPStatus.OK, json.dumps(files).encode(), "application/json")
            elif url.path == "/api/v1/log":
                name = param("file")
                if name is None:
                    raise LogAccessError(HTTPStatus.BAD_REQUEST, "file=<name> is required")
                start = _int_param(param("start"), "start")
                length = _int_param(param("length"), "length")
                chunk = self.server.directory.read(
                    name, start, MAX_READ if length is None else length)
                self._send(HTTPStatus.OK, chunk.data, "text/plain; charset=utf-8", {
                    "X-Log-Start": str(chunk.start), "X-Log-End": str(chunk.end),
                    "X-Log-Size": str(chunk.size)})
            else:
                raise LogAccessError(HTTPStatus.NOT_FOUND,
                                     "not found: try /api/v1/logs or /api/v1/log?file=NAME")
        except LogAccessError as exc:
            self._send(exc.status, f"{exc}\n".encode(), "text/plain; charset=utf-8")
        except OSError as exc:
            self._send(HTTPStatus.NOT_FOUND, f"cannot read: {exc.strerror}\n".encode(),
                       "text/plain; charset=utf-8")

    def _send(self, status: HTTPStatus, body: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the API's name
        log.debug("%s " + format, self.address_string(), *args)


def _int_param(text: str | None, key: str) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise LogAccessError(HTTPStatus.BAD_REQUEST, f"{key} must be an integer >= 0, got {text!r}")
    return value


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], directory: LogDirectory) -> None:
        self.directory = directory
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # busy: refuse rather than queue unboundedly
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class LogViewer:
    """A running log viewer: a `ThreadingHTTPServer` on its own thread."""

    def __init__(self, logs_dir: Path, port: int, host: str = "") -> None:
        self.directory = LogDirectory(logs_dir)
        self._server = _Server((host, port), self.directory)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.2,),
                                        name="logviewer", daemon=True)

    def start(self) -> LogViewer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def start_logviewer(conf: dict[str, Any], logs_dir: Path) -> LogViewer | None:
    """The supervisor's log viewer on ``logviewer.port`` (all interfaces, as Storm's),
    or None when it is off (port 0) or the port is taken: the supervisor runs on
    without it, and ``storm-zmq logs`` then says where the files are."""
    port = int(conf.get("logviewer.port") or 0)
    if port == 0:
        return None
    logs_dir.mkdir(parents=True, exist_ok=True)
    try:
        viewer = LogViewer(logs_dir, port).start()
    except OSError as exc:
        log.warning("log viewer not started: cannot listen on port %d (%s); "
                    "set logviewer.port to a free port, or 0 to turn it off", port,
                    exc.strerror or exc)
        return None
    log.info("log viewer serving %s on port %d", logs_dir, viewer.port)
    return viewer
