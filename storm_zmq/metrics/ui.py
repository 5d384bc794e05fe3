"""The web UI: a small HTTP server over a `MetricsSource` (storm_zmq.metrics.sources).

Routes::

    /                       the page (static/index.html, ui.js, ui.css): it fetches
                            the JSON below every second and draws tables and the graph
    /api/topologies         [{"name", "id", "status", "num_workers", "uptime_secs"}]
    /api/topology/<name>    TopologySummary.to_dict() (404 unknown name)
    /api/cluster            ClusterOverview.to_dict(): nimbuses, supervisors, slots,
                            and "actions", whether this server takes topology
                            actions (404 in a local run, which has no cluster)
    /metrics                Prometheus text format 0.0.4, every topology (and the
                            cluster's supervisors and slots)

    POST /api/topology/<name>/<action>   Storm's topology actions (cluster mode):
                            activate, deactivate, rebalance, kill; a JSON body may
                            give "wait_secs" and (rebalance) "num_workers". Answers
                            {"message"} or {"error"}: 403 when `actions` is off or
                            the request lacks the `ACTION_HEADER` (a page of another
                            site cannot send it without a CORS preflight, which this
                            server never grants: no cross-site request forgery) or
                            names another site in `Host` (DNS rebinding: see
                            `host_may_act`), 404
                            for an unknown topology, 409 when the topology cannot
                            take the action (killed), 400 for a bad body.

The standard library's ThreadingHTTPServer, one thread per connection, bounded: at
most `MAX_REQUESTS` are served at once, others get 503 at once (a stuck ZooKeeper read
must not pile up threads), and at most `MAX_CONNECTIONS` connections have a thread
(one still sending its request holds one, up to the handler's timeout); beyond
that a connection is closed as it is accepted.

A source failure is a 503 with the message as JSON, which the page shows over the
numbers it last drew, and which Prometheus counts as a failed scrape (``up`` 0):
nothing stale is served as if fresh. Every such answer comes within
`REQUEST_DEADLINE` seconds: a source that says it cannot answer now (`check()`:
ZooKeeper not connected) is a 503 at once; the reads run on one reader thread that a
request waits for at most the deadline (a ZooKeeper that is connected but does not
answer), and while a read has been running longer than that, requests are refused at
once instead of queueing behind it. Nothing needs restarting when ZooKeeper is back.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import queue
import re
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import unquote, urlsplit

from storm_zmq.cluster.requests import ActionRefused, seconds
from storm_zmq.metrics import prometheus
from storm_zmq.metrics.sources import ACTIONS, MetricsSource, UnknownTopology

__all__ = ["ACTION_HEADER", "MAX_CONNECTIONS", "MAX_REQUESTS", "REQUEST_DEADLINE",
           "MetricsServer", "SourceTimeout"]

log = logging.getLogger(__name__)

#: Requests served at once; more are answered 503 without waiting.
MAX_REQUESTS = 16
#: Connections with a thread (reading a request, or being answered); more are closed.
MAX_CONNECTIONS = 4 * MAX_REQUESTS
#: Seconds a request waits for the source's reads before it is answered 503 (well
#: under Prometheus' default scrape timeout of 10 s).
REQUEST_DEADLINE = 5.0
#: The header a topology action must carry (module docstring).
ACTION_HEADER = "X-Requested-By"
#: The largest body of an action request, in bytes.
MAX_ACTION_BODY = 4096
_ACTION_PATH = re.compile(rf"/api/topology/(.+)/({'|'.join(ACTIONS)})")

_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/ui.js": ("ui.js", "text/javascript; charset=utf-8"),
    "/ui.css": ("ui.css", "text/css; charset=utf-8"),
}


def _static(name: str) -> bytes:
    return resources.files("storm_zmq.metrics").joinpath("static", name).read_bytes()


class SourceTimeout(RuntimeError):
    """The source did not answer within a request's deadline."""


class _Task:
    def __init__(self, func: Callable[[], Any]) -> None:
        self.func = func
        self.done = threading.Event()
        self.abandoned = False
        self.result: Any = None
        self.error: BaseException | None = None


class _Reader:
    """One daemon thread running the source's reads in turn (the source serializes
    them anyway), so that a request can stop waiting for a read that hangs: the read
    goes on, its result is dropped."""

    def __init__(self, deadline: float, activity: Callable[[], str]) -> None:
        self.deadline = deadline
        self.activity = activity
        self._queue: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started: float | None = None  # time.monotonic() the running read began
        self._thread: threading.Thread | None = None

    def run(self, func: Callable[[], Any]) -> Any:
        """`func()` on the reader thread; `SourceTimeout` if it takes over the
        deadline, or at once while an earlier read has been running that long."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="storm-ui-read",
                                                daemon=True)
                self._thread.start()
            started = self._started
        if started is not None and time.monotonic() - started > self.deadline:
            raise SourceTimeout(f"no answer for {time.monotonic() - started:.0f} s: "
                                f"still {self.activity()}")
        task = _Task(func)
        self._queue.put(task)
        if not task.done.wait(self.deadline):
            task.abandoned = True
            raise SourceTimeout(f"no answer within {self.deadline:g} s (the UI's deadline "
                                f"per request): still {self.activity()}")
        if task.error is not None:
            raise task.error
        return task.result

    def stop(self) -> None:
        self._queue.put(None)  # a read still running ends on its own (daemon thread)

    def _loop(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            if task.abandoned:  # its request gave up while it queued
                continue
            with self._lock:
                self._started = time.monotonic()
            try:
                task.result = task.func()
            except BaseException as exc:  # handed to the request, raised there
                task.error = exc
            finally:
                with self._lock:
                    self._started = None
                task.done.set()


class MetricsServer(ThreadingHTTPServer):
    """``MetricsServer(source, host, port)`` binds at once (a busy port raises
    OSError here, before anything else starts); `start()` serves on a daemon thread;
    `stop()` ends it. Port 0 picks a free port (`port` tells which). `deadline`: the
    longest a request waits for the source (module docstring)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = MAX_CONNECTIONS  # the listen backlog (socketserver's is 5)

    def __init__(self, source: MetricsSource, host: str = "127.0.0.1", port: int = 8080, *,
                 deadline: float = REQUEST_DEADLINE, actions: bool = True) -> None:
        self.source = source
        #: whether the topology actions are taken (ui.actions.enabled)
        self.actions = actions
        self.reader = _Reader(deadline, lambda: str(getattr(source, "activity",
                                                            "reading the metrics source")))
        self._failing = False  # the last answer from the source was a failure
        self._slots = threading.BoundedSemaphore(MAX_REQUESTS)
        self._connections = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._thread: threading.Thread | None = None
        super().__init__((host, port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Start a connection's thread only within `MAX_CONNECTIONS`: clients that
        open connections and send slowly would otherwise each get a thread."""
        if not self._connections.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._connections.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connections.release()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        host = self.server_address[0]
        host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"http://{host}:{self.port}/"

    def start(self) -> MetricsServer:
        self._thread = threading.Thread(target=self.serve_forever, name="storm-ui",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.reader.stop()
        self.server_close()

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    server: MetricsServer
    # HTTP/1.0: one request per connection, so a thread lives as long as its request
    # (keep-alive connections of idle browsers would each hold one); and a client
    # that sends nothing gives its thread back after `timeout` seconds
    protocol_version = "HTTP/1.0"
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
        log.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:  # noqa: N802 - stdlib's name
        self._in_a_slot(lambda: self._route(urlsplit(self.path).path))

    def do_POST(self) -> None:  # noqa: N802 - stdlib's name
        def act() -> None:
            status, answer = self._act(unquote(urlsplit(self.path).path))
            self._send(status, _json(answer), "application/json")

        self._in_a_slot(act)

    def _in_a_slot(self, answer: Callable[[], None]) -> None:
        """Answer within `MAX_REQUESTS` at once (else 503 now); a client gone
        meanwhile is no error."""
        if not self.server._slots.acquire(blocking=False):
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, _json({"error": "busy, try again"}),
                       "application/json")
            return
        try:
            answer()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.server._slots.release()

    def _act(self, path: str) -> tuple[HTTPStatus, dict[str, Any]]:
        match = _ACTION_PATH.fullmatch(path)
        act = getattr(self.server.source, "act", None)
        if match is None:
            return HTTPStatus.NOT_FOUND, {"error": f"no action at {path}"}
        if act is None:
            return HTTPStatus.NOT_FOUND, {"error": "a local run takes no topology actions "
                                                   "(Ctrl-C stops it)"}
        if not self.server.actions:
            return HTTPStatus.FORBIDDEN, {"error": "topology actions are off on this UI "
                                                   "(ui.actions.enabled: false)"}
        if self.headers.get(ACTION_HEADER) is None:
            return HTTPStatus.FORBIDDEN, {"error": f"an action needs the header {ACTION_HEADER} "
                                                   "(the UI's page sends it)"}
        host = self.headers.get("Host", "")
        if not host_may_act(host):
            return HTTPStatus.FORBIDDEN, {"error": f"an action needs the UI reached by an "
                                                   f"address or this machine's name, not {host!r}"}
        name, action = match.groups()
        try:
            wait, workers, executors = self._action_body(action)
        except ValueError as exc:
            return HTTPStatus.BAD_REQUEST, {"error": str(exc)}
        more = {"executors": executors} if executors else {}  # a source without -e works on
        try:
            check = getattr(self.server.source, "check", None)
            if check is not None:
                check()
            message = self.server.reader.run(
                lambda: act(name, action, wait=wait, workers=workers, **more))
        except UnknownTopology as exc:
            return HTTPStatus.NOT_FOUND, {"error": str(exc)}
        except ActionRefused as exc:
            return HTTPStatus.CONFLICT, {"error": str(exc)}
        except SourceTimeout as exc:  # the write may still land: say so
            return HTTPStatus.SERVICE_UNAVAILABLE, {
                "error": f"{exc}; the {action} may still be recorded (see the page)"}
        except Exception as exc:  # ZooKeeper down: say so; nothing was written
            log.warning("%s %s: %s", action, name, exc)
            return HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(exc)}
        log.info("%s: %s", self.address_string(), message)
        return HTTPStatus.OK, {"message": message}

    def _action_body(self, action: str) -> tuple[float | None, int | None, dict[str, int]]:
        """(wait_secs, num_workers, executors) of the request's JSON body, None (or {})
        if absent; ValueError for a body `action` does not take."""
        if self.headers.get("Transfer-Encoding"):  # a body this server would not read
            raise ValueError("send the body with a Content-Length, not chunked")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise ValueError("Content-Length is not a number") from None
        if not 0 <= length <= MAX_ACTION_BODY:
            raise ValueError(f"a body of at most {MAX_ACTION_BODY} bytes, got {length}")
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"the body is not JSON: {exc}") from None
        takes = {"kill": {"wait_secs"},
                 "rebalance": {"wait_secs", "num_workers", "executors"}}.get(action, set())
        if not isinstance(body, dict):
            raise ValueError(f"expected a JSON object as the body, got {json.dumps(body)}")
        if set(body) - takes:
            unknown = ", ".join(sorted(set(body) - takes))
            raise ValueError(f"{action} takes {' and '.join(sorted(takes)) or 'no body'}, "
                             f"not {unknown}")
        wait, workers = body.get("wait_secs"), body.get("num_workers")
        if wait is not None and (isinstance(wait, bool) or not isinstance(wait, (int, float))):
            raise ValueError(f"wait_secs must be a number of seconds >= 0, got {json.dumps(wait)}")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or workers < 1):
            raise ValueError(f"num_workers must be an integer >= 1, got {json.dumps(workers)}")
        executors = body.get("executors") or {}
        if not isinstance(executors, dict) or not all(
                isinstance(n, int) and not isinstance(n, bool) for n in executors.values()):
            raise ValueError('executors must be an object of component names to whole numbers '
                             f'(rebalance -e), got {json.dumps(executors)}')
        return (None if wait is None else seconds(wait, "wait_secs")), workers, executors

    def _route(self, path: str) -> None:
        source = self.server.source
        if _ACTION_PATH.fullmatch(unquote(path)):
            self._send(HTTPStatus.METHOD_NOT_ALLOWED,
                       _json({"error": "a topology action is a POST (see docs/observability.md)"}),
                       "application/json", {"Allow": "POST"})
            return
        if path in _STATIC:
            name, content_type = _STATIC[path]
            self._send(HTTPStatus.OK, _static(name), content_type)
            return
        produce = _producer(source, path, self.server.actions)
        if produce is None:
            missing = "a local run has no cluster" if path == "/api/cluster" else f"no page {path}"
            self._send(HTTPStatus.NOT_FOUND, _json({"error": missing}),
                       "application/json")
            return
        try:
            check = getattr(source, "check", None)
            if check is not None:
                check()  # ZooKeeper not connected: say so now, not after a wait
            body, kind = self.server.reader.run(produce)
        except UnknownTopology as exc:
            self._send(HTTPStatus.NOT_FOUND, _json({"error": str(exc)}), "application/json")
            return
        except Exception as exc:  # ZooKeeper down, a damaged record: say so, keep serving
            # one warning when the failures start (the page asks every second)
            (log.debug if self.server._failing else log.warning)("serving %s: %s", path, exc)
            self.server._failing = True
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, _json({"error": str(exc)}),
                       "application/json")
            return
        if self.server._failing:
            self.server._failing = False
            log.info("serving %s again", path)
        self._send(HTTPStatus.OK, body, kind)

    def _send(self, status: HTTPStatus, body: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


def host_may_act(host_header: str) -> bool:
    """Whether a request for the UI by this `Host` may take an action. A page of
    another site may get a browser to send the action header by DNS rebinding (its
    own name, re-pointed at this machine, is then its origin), but its request
    still names that site in `Host`: actions are taken only for an IP address,
    ``localhost`` or this machine's own names."""
    name = host_header.strip().lower()
    if name.startswith("["):  # [v6]:port
        name = name[1:].split("]", 1)[0]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    if not name:
        return False
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    return name.rstrip(".") in _own_names()


@functools.lru_cache(maxsize=1)
def _own_names() -> frozenset[str]:
    """This machine's names, looked up once (getfqdn may wait for DNS)."""
    return frozenset({"localhost", socket.gethostname().lower(), socket.getfqdn().lower()})


def _producer(source: MetricsSource, path: str,
              actions: bool) -> Callable[[], tuple[bytes, str]] | None:
    """What reads the source for `path`, giving (body, content type); None: no such page.
    `actions`: whether this server takes topology actions (the page shows its buttons)."""
    if path == "/api/topologies":
        return lambda: (_json(source.topologies()), "application/json")
    if path == "/api/cluster":
        cluster = getattr(source, "cluster", None)
        if cluster is None:
            return None
        return lambda: (_json({**cluster().to_dict(), "actions": actions}), "application/json")
    if path.startswith("/api/topology/"):
        name = unquote(path[len("/api/topology/"):])
        return lambda: (_json(source.summary(name).to_dict()), "application/json")
    if path == "/metrics":
        def metrics() -> tuple[bytes, str]:
            summaries = []
            for row in source.topologies():
                if row.get("status") == "killed":
                    continue
                try:
                    summaries.append(source.summary(row["name"]))
                except UnknownTopology:  # killed since it was listed
                    continue
            cluster = getattr(source, "cluster", None)
            overview = cluster() if cluster is not None else None
            return prometheus.render(summaries, overview).encode(), prometheus.CONTENT_TYPE
        return metrics
    return None


def _json(value: Any) -> bytes:
    # NaN/Infinity are not JSON; summaries never hold them, and allow_nan=False
    # turns a slip into an error here instead of a page that cannot parse it
    return json.dumps(value, allow_nan=False, separators=(",", ":")).encode()
