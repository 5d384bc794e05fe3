"""Where summaries come from: the thin I/O shell around `summarize`.

- `ClusterSource`: a started `ClusterState`; topology records, worker heartbeats and
  errors from ZooKeeper. The graph (components' kinds and inputs) comes from the
  record's ``layout`` when the submitter stored one, else from the topology's code
  package, loaded once per topology id in a child process (the topology file imports
  user code, which must not run inside, or break, the UI process), else from the
  record's bare component list.
- `LocalSource`: a local run's `RunStats` (`storm-zmq run --ui`).

Both answer `topologies()` and `summary(name)`; an unknown name raises
`UnknownTopology` naming the running ones. `ClusterSource` also answers `cluster()`,
the cluster's nimbuses, supervisors and slots (storm_zmq.cluster.overview), and takes
Storm's topology actions (`act`); a local run has no cluster. A source may also have `check()`, which
raises `SourceUnavailable` at once when it cannot answer now (the UI calls it before
each read: ZooKeeper down must not make a request wait), and `activity`, what a read
in progress is doing, for the UI to say what it is waiting for.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from storm_zmq.cluster.heartbeat import placed_beats
from storm_zmq.cluster.logviewer import worker_logs
from storm_zmq.cluster.overview import ClusterOverview, read_overview
from storm_zmq.cluster.requests import (
    NO_NIMBUS,
    ActionRefused,
    Outcome,
    kill_request,
    rebalance_request,
    status_request,
)
from storm_zmq.metrics.ages import ReportAges
from storm_zmq.metrics.summary import (
    TopologyLayout,
    TopologySummary,
    report_age,
    report_key,
    reports_from_beats,
    summarize,
)

__all__ = ["ACTIONS", "ClusterSource", "LocalSource", "MetricsSource", "SourceUnavailable", "UnknownTopology",
           "layout_from_package", "ui_zookeeper_conf"]

log = logging.getLogger(__name__)

#: Seconds a child process may take to load a topology's code for its graph.
LAYOUT_TIMEOUT = 60.0
#: A summary this recent is served again instead of reading ZooKeeper (several
#: browsers refreshing every second must not multiply the load).
CACHE_SECS = 0.5
#: The UI's ZooKeeper client: the longest wait for a connection (ms) (see
#: `ui_zookeeper_conf`).
UI_CONNECT_WAIT_MS = 2000
#: Storm's topology actions, as `ClusterSource.act` takes them.
ACTIONS = ("activate", "deactivate", "rebalance", "kill")


def ui_zookeeper_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """`conf` for the ClusterState of `storm-zmq ui`: its reads are not retried
    (the page's next refresh, Prometheus' next scrape, is the retry) and a read waits
    at most `UI_CONNECT_WAIT_MS` for a connection, so the UI is back within seconds
    of ZooKeeper. The daemons keep their limits."""
    from storm_zmq.cluster.state import impatient_zookeeper_conf

    return impatient_zookeeper_conf(conf, UI_CONNECT_WAIT_MS)


class UnknownTopology(LookupError):
    """No topology of that name is running; the message names the ones that are."""

    def __init__(self, name: str, running: list[str]) -> None:
        listed = ", ".join(sorted(running)) if running else "none"
        super().__init__(f"no running topology named {name!r} (running: {listed})")
        self.name = name
        self.running = running


class SourceUnavailable(RuntimeError):
    """The source cannot answer now (ZooKeeper not connected); the message says why."""


class MetricsSource(Protocol):
    def topologies(self) -> list[dict[str, Any]]:
        """One row per topology: name, id, status, num_workers, uptime_secs."""
        ...

    def summary(self, name: str) -> TopologySummary:
        """The topology called `name` now; `UnknownTopology` if there is none."""
        ...


class ClusterSource:
    """Summaries of the topologies in a cluster (see the module docstring). Thread
    safe: ZooKeeper reads are serialized (one kazoo retry object is shared)."""

    def __init__(self, state: Any, *, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 layout_timeout: float = LAYOUT_TIMEOUT, cache_secs: float = CACHE_SECS) -> None:
        self.state = state
        self.clock = clock
        self.monotonic = monotonic  # what a worker's age is measured by, once seen to change
        self.layout_timeout = layout_timeout
        self.cache_secs = cache_secs
        # a worker heartbeat older than this is a dead worker to nimbus: not counted
        self.stale_after = float(state.conf.get("nimbus.task.timeout.secs", 30))
        self._lock = threading.Lock()
        self._layouts: dict[str, TopologyLayout] = {}
        self._cache: dict[str, tuple[float, TopologySummary]] = {}
        self._ages: dict[str, ReportAges] = {}  # per topology id: see storm_zmq.metrics.ages
        self._answered: float | None = None  # time.monotonic() of the last complete read
        self._reading = f"reading ZooKeeper at {getattr(state, 'hosts', '?')}"
        #: What a read in progress is doing (for the UI's "no answer within ..." line).
        self.activity = self._reading

    def check(self) -> None:
        """Raise `SourceUnavailable` at once while the ZooKeeper session is not
        connected (a read would wait for it), saying since when nothing was read."""
        connected = getattr(self.state, "connected", None)
        if connected is None or connected.is_set():
            return
        answered = self._answered
        since = "" if answered is None else \
            f"; the last complete read of it here was {self.monotonic() - answered:.0f} s ago"
        raise SourceUnavailable(
            f"ZooKeeper at {getattr(self.state, 'hosts', '?')} is unreachable (not connected"
            f"{since}); reconnecting by itself")

    def _answer(self) -> None:
        self._answered = self.monotonic()

    def _records(self) -> list[tuple[str, dict[str, Any]]]:
        records = []
        for topology_id in self.state.topologies():
            record = self.state.get_topology(topology_id)
            if isinstance(record, dict) and isinstance(record.get("name"), str):
                records.append((topology_id, record))
        return records

    def topologies(self) -> list[dict[str, Any]]:
        with self._lock:
            records = self._records()
            self._answer()
        now = self.clock()
        return [{
            "name": record["name"],
            "id": topology_id,
            "status": record.get("status"),
            "num_workers": record.get("num_workers"),
            "uptime_secs": (now - record["launch_time"])
            if isinstance(record.get("launch_time"), (int, float)) else None,
        } for topology_id, record in records]

    def find(self, name: str) -> tuple[str, dict[str, Any]]:
        """(id, record) of the topology called `name`: the live one, else one that
        is killed and still draining (its workers are finishing their tuples and
        running cleanup(), which is worth watching; as in Storm's UI, it shows until
        nimbus removes it)."""
        return self._find(name, self._records())

    @staticmethod
    def _find(
        name: str, records: list[tuple[str, dict[str, Any]]]
    ) -> tuple[str, dict[str, Any]]:
        named = sorted(((tid, r) for tid, r in records if r["name"] == name),
                       key=lambda found: found[1].get("status") == "killed")
        if named:
            return named[0]
        raise UnknownTopology(name, [r["name"] for _, r in records
                                     if r.get("status") != "killed"])

    def summary(self, name: str) -> TopologySummary:
        with self._lock:
            cached = self._cache.get(name)
            now = self.clock()
            if cached is not None and 0 <= now - cached[0] < self.cache_secs:
                return cached[1]
            records = self._records()
            topology_id, record = self._find(name, records)
            layout = self._layout(topology_id, record)
            beats = self.state.worker_beats(topology_id)
            assignment = self.state.get_assignment(topology_id)
            logs: dict[tuple[str, int], str] = {}
            if assignment is not None:  # only the workers placed now (a rebalance's leftovers)
                beats = placed_beats(assignment, beats)
                logs = self._log_urls(topology_id, assignment)
            reports = reports_from_beats(beats)
            errors = self.state.errors(topology_id)
            summary = summarize(
                layout, reports, name=name, errors=errors,
                topology_id=topology_id, status=record.get("status"),
                launch_time=record.get("launch_time"), num_workers=record.get("num_workers"),
                now=now, stale_after=self.stale_after,
                ages=self._report_ages(topology_id, reports, now, [tid for tid, _ in records]),
            )
            if logs:
                summary = replace(summary, workers=tuple(
                    replace(w, log_url=logs.get((w.host, w.port))) for w in summary.workers))
            self._cache[name] = (now, summary)
            self._answer()
            return summary

    def cluster(self) -> ClusterOverview:
        """The nimbuses, supervisors and their slots now."""
        with self._lock:
            overview = read_overview(self.state, clock=self.clock)
            self._answer()
            return overview

    def act(self, name: str, action: str, *, wait: float | None = None,
            workers: int | None = None, executors: dict[str, int] | None = None) -> str:
        """Storm's topology actions (the UI's buttons): record the request as the
        command line does (storm_zmq.cluster.requests) and say what happens next.
        `ActionRefused` for what cannot be done, `UnknownTopology` for no such name."""
        outcome, now = Outcome(), self.clock()
        with self._lock:
            topology_id, _ = self._find(name, self._records())
            changes: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
                "activate": lambda r: status_request(name, r, "active", outcome),
                "deactivate": lambda r: status_request(name, r, "inactive", outcome),
                "rebalance": lambda r: rebalance_request(name, r, wait, workers, now, outcome,
                                                         executors),
                "kill": lambda r: kill_request(name, topology_id, r, wait, now, outcome),
            }
            change = changes.get(action)
            if change is None:
                raise ActionRefused(f"no action {action!r} (one of {', '.join(ACTIONS)})")
            # compare-and-set: nimbus may write the record at the same time
            if self.state.update_topology(topology_id, change) is None:  # removed meanwhile
                raise UnknownTopology(name, [r["name"] for _, r in self._records()
                                             if r.get("status") != "killed"])
            self._cache.pop(name, None)
            said = outcome.message
            if action == "rebalance":  # its own slots are its to reuse
                try:
                    overview = read_overview(self.state, leaving_out=topology_id,
                                             clock=self.clock)
                    said += "".join(f"; {w}" for w in overview.slot_warnings(name, outcome.workers))
                except Exception as exc:  # the request is recorded: say that, not a 503
                    log.warning("no slot warnings for the rebalance of %s: %s", name, exc)
            # the workers follow a status themselves; a kill or rebalance is nimbus's
            if action in ("kill", "rebalance") and self.state.leader() is None:
                said += f"; {NO_NIMBUS}"
            self._answer()
            return said

    def _log_urls(self, topology_id: str, assignment: dict[str, Any]) -> dict[tuple[str, int], str]:
        """(host, port) -> the tail of that worker's log on its supervisor's viewer;
        none from a damaged assignment (the numbers matter more than the links)."""
        try:
            return {(w.host, w.port): w.tail_url
                    for w in worker_logs(topology_id, assignment, self.state.supervisors())
                    if w.tail_url}
        except (KeyError, TypeError, ValueError) as exc:
            log.debug("no log links for topology %s: %r", topology_id, exc)
            return {}

    def _report_ages(self, topology_id: str, reports: list[dict[str, Any]], now: float,
                     known: list[str]) -> dict[str, float | None]:
        """The workers' ages by this viewer's clock where it has seen them change
        (storm_zmq.metrics.ages); topologies no longer in ZooKeeper are forgotten."""
        self._ages = {tid: ages for tid, ages in self._ages.items() if tid in known}
        ages = self._ages.setdefault(topology_id, ReportAges(max_gap=self.stale_after))
        return ages.ages({report_key(r): (r.get("time"), report_age(r, now)) for r in reports},
                         self.monotonic())

    def _layout(self, topology_id: str, record: dict[str, Any]) -> TopologyLayout:
        if topology_id in self._layouts:
            return self._layouts[topology_id]
        layout = None
        if isinstance(record.get("layout"), dict):
            layout = TopologyLayout.from_record(record)
        else:
            try:
                data = self.state.get_code(topology_id)
                if data is not None:
                    self.activity = f"loading the graph of {record['name']} from its code"
                    layout = layout_from_package(
                        data, str(record["topology_file"]), str(record["topology_class"]),
                        timeout=self.layout_timeout)
            except Exception as exc:  # the numbers matter more than the drawing
                log.warning("no graph for topology %s from its code: %s", topology_id, exc)
            finally:
                self.activity = self._reading
        if layout is None:
            return TopologyLayout.from_record(record)  # not cached: try again next time
        self._layouts[topology_id] = layout
        return layout


def layout_from_package(data: bytes, topology_file: str, topology_class: str, *,
                        timeout: float = LAYOUT_TIMEOUT) -> TopologyLayout:
    """The layout of the topology in code package `data`, loaded by a child Python
    (`main` below) in a temporary directory. Raises RuntimeError saying why not."""
    from storm_zmq.cluster.package import unpack_package

    with tempfile.TemporaryDirectory(prefix="storm-zmq-layout-") as temp:
        code = Path(temp) / "code"
        unpack_package(data, code)
        try:
            result = subprocess.run(
                [sys.executable, "-m", "storm_zmq.metrics.sources",
                 str(code / topology_file), topology_class],
                capture_output=True, text=True, timeout=timeout, cwd=temp)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"loading {topology_file} took over {timeout:g} s") from None
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise RuntimeError(f"loading {topology_file} failed: {lines[-1] if lines else '?'}")
    return TopologyLayout.from_dict(json.loads(result.stdout))


class LocalSource:
    """The one topology of a local run. `attach(stats)` hands over the runner's
    `RunStats` once the workers run; before that the topology shows as starting."""

    def __init__(self, layout: TopologyLayout, name: str, *, num_workers: int | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.layout = layout
        self.name = name
        self.num_workers = num_workers
        self.clock = clock
        self.stats: Any = None
        self._attached_at: float | None = None

    def attach(self, stats: Any) -> None:
        """Called from `RunOptions.on_started` with the runner's `RunStats`."""
        self.stats = stats
        self._attached_at = self.clock()

    def _status(self) -> str:
        stats = self.stats
        if stats is None:
            return "starting"
        return "stopped" if getattr(stats, "stopped_at", None) is not None else "active"

    def _launch_time(self) -> float | None:
        started = getattr(self.stats, "started_at", None)
        if isinstance(started, (int, float)):  # RunStats keeps monotonic times
            return self.clock() - (time.monotonic() - started)
        return self._attached_at

    def topologies(self) -> list[dict[str, Any]]:
        launch = self._launch_time()
        return [{"name": self.name, "id": None, "status": self._status(),
                 "num_workers": self.num_workers,
                 "uptime_secs": None if launch is None else max(0.0, self.clock() - launch)}]

    def summary(self, name: str) -> TopologySummary:
        if name != self.name:
            raise UnknownTopology(name, [self.name])
        # list() copies in one step under the GIL while the runner thread updates
        reports = list(self.stats.latest.values()) if self.stats is not None else []
        return summarize(self.layout, reports, name=self.name, status=self._status(),
                         launch_time=self._launch_time(), num_workers=self.num_workers,
                         now=self.clock())


def main(argv: list[str] | None = None) -> int:
    """``python -m storm_zmq.metrics.sources TOPOLOGY_FILE CLASS``: print the
    topology's layout as JSON (run by `layout_from_package` in a child process)."""
    from storm_zmq.topology import load_topology

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m storm_zmq.metrics.sources TOPOLOGY_FILE CLASS", file=sys.stderr)
        return 2
    definition = load_topology(args[0], args[1]).definition()
    print(json.dumps(TopologyLayout.from_definition(definition).to_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
