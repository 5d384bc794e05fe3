"""``storm-zmq logs NAME [-f] [--component C] [--lines N]``: a running topology's
worker logs, from any machine that reaches ZooKeeper.

ZooKeeper says where each worker runs (the assignment: supervisor, host, port, and
which components' executors it holds) and how to reach each supervisor's log viewer
(``logviewer_port`` in the supervisor's registration, `storm_zmq.cluster.logviewer`).
Each worker's ``<topology-id>-<port>.log`` is fetched over HTTP and printed with its
``host:port`` in front. ``--component C`` keeps the workers running C and the log
records mentioning C (a record's continuation lines, e.g. a traceback, stay with it).
``-f`` follows: it polls every worker with the offset it has read up to, and
re-reads the assignment so that a worker moved elsewhere is followed there; it
ends when the topology is killed. A
supervisor whose log viewer is off or unreachable gets one line saying on which
host and in which file that worker's log is.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, TextIO

from storm_zmq.cli import UsageError, add_config_arguments
from storm_zmq.cluster.logviewer import WorkerLog, worker_logs
from storm_zmq.signals import on_signals

__all__ = ["FollowState", "RecordFilter", "WorkerLog", "worker_logs"]

#: Bytes asked for per poll of one worker while following (the viewer's cap).
FOLLOW_READ = 1024 * 1024
#: A log line is assumed to average at most this many bytes when asking for a tail.
TAIL_BYTES_PER_LINE = 400
#: Seconds between polls with -f, and between re-reads of the assignment.
FOLLOW_INTERVAL = 1.0
REFRESH_INTERVAL = 5.0
HTTP_TIMEOUT = 5.0

# Records start with their time ("2024-05-01 12:00:00,123 ..."), see storm_zmq.logs.
_RECORD_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


class RecordFilter:
    """Keeps log records that mention a component (or everything when None). A line
    not starting with a time continues the previous record and shares its fate."""

    def __init__(self, component: str | None) -> None:
        self._pattern = (None if component is None
                         else re.compile(rf"(?<![\w]){re.escape(component)}(?![\w])"))
        self._keep = component is None

    def __call__(self, line: str) -> bool:
        if self._pattern is None:
            return True
        if _RECORD_START.match(line):
            self._keep = bool(self._pattern.search(line))
        return self._keep


@dataclass
class FollowState:
    """Pure bookkeeping of one followed file: the offset read up to and the partial
    last line (printed once its end arrives)."""

    offset: int = 0
    partial: str = ""
    filter: RecordFilter = field(default_factory=lambda: RecordFilter(None))

    def feed(self, start: int, data: bytes) -> tuple[list[str], bool]:
        """Complete new lines of a chunk read from `start`, and whether the file was
        rotated (the viewer restarted at 0 before our offset)."""
        rotated = start < self.offset
        if rotated:
            self.partial = ""
        text = self.partial + data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self.partial = lines.pop()
        self.offset = start + len(data)
        return [line for line in lines if self.filter(line)], rotated


def tail_lines(start: int, data: bytes, count: int) -> list[str]:
    """The last `count` complete lines of a tail read from offset `start` (the first
    line is cut when the read began mid-file)."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    if start > 0:
        lines = lines[1:]
    if lines and lines[-1] == "":
        lines.pop()
    return lines[-count:] if count > 0 else []


def fetch(url: str, file: str, start: int | None, length: int) -> tuple[int, bytes]:
    """GET a chunk of `file` from a log viewer: (start offset, bytes)."""
    query = {"file": file, "length": str(length)}
    if start is not None:
        query["start"] = str(start)
    request = f"{url}/api/v1/log?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
        data = response.read(length + 1)
        return int(response.headers.get("X-Log-Start", start or 0)), data


def _error_text(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        body = exc.read(500).decode("utf-8", errors="replace").strip()
        return f"HTTP {exc.code}: {body}" if body else f"HTTP {exc.code}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc)


class LogPrinter:
    """Fetches and prints worker logs; remembers what it could not reach."""

    def __init__(self, out: TextIO, err: TextIO, component: str | None, lines: int) -> None:
        self.out = out
        self.err = err
        self.component = component
        self.lines = lines
        self.states: dict[tuple[str, int, str], FollowState] = {}
        self.failing: set[tuple[str, int, str]] = set()
        self.shown = 0

    def _unreachable(self, worker: WorkerLog, why: str) -> None:
        if worker.key not in self.failing:
            self.failing.add(worker.key)
            print(f"{worker.label}: {why}; the log is {worker.where()}", file=self.err)

    def tail(self, worker: WorkerLog) -> None:
        """Print the last lines of a worker and start following it from its end."""
        state = FollowState(filter=RecordFilter(self.component))
        if not worker.registered:
            self._unreachable(worker, f"its supervisor {worker.supervisor} is not registered "
                                      "(stopped, or its ZooKeeper session expired), so neither "
                                      "is its log viewer; the worker runs on without it")
            return
        if worker.url is None:
            self._unreachable(worker, f"the log viewer of supervisor {worker.supervisor} is "
                                      "off (logviewer.port: 0, or its port was taken)")
            return
        length = min(FOLLOW_READ, max(64 * 1024, self.lines * TAIL_BYTES_PER_LINE))
        try:
            start, data = fetch(worker.url, worker.file, None, length)
        except Exception as exc:  # any failure to reach it is reported the same way
            self._unreachable(worker, f"cannot read it from {worker.url} ({_error_text(exc)})")
            return
        self.failing.discard(worker.key)
        state.offset = start + len(data)
        lines = tail_lines(start, data, len(data) + 1)
        if data and not data.endswith(b"\n") and lines:  # its end comes with a later read
            state.partial = lines.pop()
        lines = [line for line in lines if state.filter(line)]
        self._print(worker, lines[-self.lines:] if self.lines > 0 else [])
        self.states[worker.key] = state

    def poll(self, worker: WorkerLog) -> None:
        """Print what a followed worker logged since the last poll."""
        state = self.states.get(worker.key)
        if state is None:
            self.tail(worker)
            return
        assert worker.url is not None
        try:
            start, data = fetch(worker.url, worker.file, state.offset, FOLLOW_READ)
        except Exception as exc:
            self._unreachable(worker, f"cannot read it from {worker.url} ({_error_text(exc)})")
            return
        if worker.key in self.failing:
            self.failing.discard(worker.key)
            print(f"{worker.label}: reachable again", file=self.err)
        lines, rotated = state.feed(start, data)
        if rotated:
            print(f"{worker.label}: log rotated", file=self.err)
        self._print(worker, lines)

    def _print(self, worker: WorkerLog, lines: list[str]) -> None:
        for line in lines:
            self.out.write(f"{worker.label} {line}\n")
        self.shown += len(lines)
        self.out.flush()


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "logs",
        help="show a running topology's worker logs (-f follows)",
        description="Print the last lines of every worker log of topology NAME, each "
        "prefixed with the worker's host:port, read from the supervisors' log viewers "
        "(logviewer.port). Where a log viewer is off or unreachable, say on which host "
        "and in which file the log is.",
    )
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("-f", "--follow", action="store_true",
                        help="keep printing new lines until Ctrl-C")
    parser.add_argument("--component", metavar="C", default=None,
                        help="only workers running component C, only records mentioning C")
    parser.add_argument("-n", "--lines", type=int, default=50, metavar="N",
                        help="lines to show from the end of each log (default 50)")
    add_config_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from storm_zmq.cli.cluster_cmd import _find, cluster_session

    out = out or sys.stdout
    err = err or sys.stderr
    if args.lines < 0:
        raise UsageError(f"--lines must be at least 0, got {args.lines}")
    printer = LogPrinter(out, err, args.component, args.lines)
    with cluster_session(args) as state:
        # a killed topology's workers drain (and run cleanup()) until nimbus removes
        # it: their logs are what its owner wants to see then
        topology_id, record = _find(state, args.name, killed_too=True)
        follow = args.follow
        if follow and record["status"] == "killed":
            print(f"topology {args.name!r} is killed: showing its logs, not following", file=err)
            follow = False
        if args.component is not None:
            known = sorted([*record.get("components", {}), "__acker"])
            if args.component not in known:
                raise UsageError(f"topology {args.name!r} has no component "
                                 f"{args.component!r} (components: {', '.join(known)})")

        def current() -> list[WorkerLog]:
            assignment = state.get_assignment(topology_id)
            if assignment is None:
                return []
            workers = worker_logs(topology_id, assignment, state.supervisors())
            if args.component is not None:
                workers = [w for w in workers if args.component in w.components]
            return workers

        workers = current()
        if not workers and state.get_assignment(topology_id) is None:
            print(f"topology {args.name!r} ({topology_id}) has no workers yet: nimbus has "
                  "not assigned it (are there supervisors with free slots?)", file=err)
            if not follow:
                return 1
        for worker in workers:
            printer.tail(worker)
        if not follow:
            return 0 if printer.states or not workers else 1
        # Ctrl-C (SIGINT) sets a flag the loop checks, by a handler of our own:
        # Python raises KeyboardInterrupt only if it started with SIGINT at its
        # default, and a shell without job control starts a background command
        # with SIGINT ignored (the suite saw `logs -f` go on after SIGINT). A flag
        # also ends the follow between polls, never inside a kazoo or HTTP call;
        # it is set outside the handler (storm_zmq.signals: the suite saw that hang).
        stopping = threading.Event()
        with on_signals([signal.SIGINT], stopping.set):
            refreshed = time.monotonic()
            while not stopping.wait(FOLLOW_INTERVAL):  # the poll period
                if time.monotonic() - refreshed >= REFRESH_INTERVAL:
                    refreshed = time.monotonic()
                    try:
                        # killed (or removed, or submitted anew under another id):
                        # nothing more comes of what is followed
                        record = state.get_topology(topology_id)
                        if record is None or record["status"] == "killed":
                            print(f"topology {args.name!r} was killed; stopping", file=err)
                            return 0
                        workers = current()
                    except Exception as exc:  # ZooKeeper away: follow the workers we know
                        print(f"cannot re-read the assignment ({exc}); following the "
                              "workers known", file=err)
                for worker in workers:
                    if stopping.is_set():
                        break
                    printer.poll(worker)
        return 0
