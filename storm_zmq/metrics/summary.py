"""Worker reports -> one `TopologySummary`: what every metrics view shows.

Pure (no ZooKeeper, sockets or clocks of its own): `storm-zmq stats`, the web UI, the
Prometheus endpoint and the local runner all turn the same inputs into the same
numbers here, so they can never disagree.

Inputs (docs/observability.md, /work/notes/metrics-schema.md):

- worker reports: the dicts every worker sends every 0.5 s (cluster mode: the
  ``stats`` of its ZooKeeper heartbeat, `reports_from_beats`). Counters are
  cumulative per worker. Any key may be missing (older workers send a subset): a
  missing or non-numeric counter is 0, a missing latency has no samples, a missing
  capacity is None (unknown, not 0).
- a `TopologyLayout`: component names, kinds, parallelism and inputs, from the
  `TopologyDefinition` (local mode, the code package) or a stored dict.
- errors kept in ZooKeeper, ``{component: [{"time", "host", "port", "task",
  "text"}, ...]}``, merged with the ``errors`` the reports carry.

Aggregation (Storm's): counters and queue depths are summed over workers; latencies
are summed as ``ms_total`` and ``samples`` and divided once (a mean of means would
weight a quiet worker like a busy one); capacity is the maximum over workers (the
busiest executor is the bottleneck). One report per worker index is kept, the newest
(a worker moved to another slot leaves its old heartbeat behind for a while); a report
whose age (by the clocks, or the viewer's own: `summarize`'s ``ages``) is more than
``stale_after`` seconds is listed as stale but not counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from storm_zmq.topology.visualize import grouping_label

__all__ = [
    "ACKER",
    "COUNTERS",
    "GAUGES",
    "LATENCIES",
    "MAX_ERRORS",
    "MONOTONIC",
    "ComponentLayout",
    "ComponentOnWorker",
    "ComponentSummary",
    "Edge",
    "ErrorRecord",
    "TopologyLayout",
    "TopologySummary",
    "WorkerSummary",
    "reports_from_beats",
    "summarize",
]

#: The system bolt that tracks tuple trees (storm_zmq.runtime.assignment.ACKER).
ACKER = "__acker"

#: Cumulative per-component counters, summed over workers (Storm's meanings).
COUNTERS = ("emitted", "transferred", "executed", "acked", "failed", "malformed",
            "errors_reported")
#: Instantaneous per-component values, summed over workers.
GAUGES = ("queued", "queue_capacity", "pending", "exhausted_tasks")
#: Latencies reported as ``<name>_ms_total`` + ``<name>_samples``.
LATENCIES = ("execute", "process", "complete")
#: What only goes up in one worker (until it restarts): the counters, and the
#: latencies' sums and sample counts.
MONOTONIC = COUNTERS + tuple(f"{which}_{part}" for which in LATENCIES
                             for part in ("ms_total", "samples"))

#: Errors kept per component (Storm keeps 10, as ZooKeeper does here).
MAX_ERRORS = 10

_KINDS = ("spout", "bolt", "acker")


def _number(value: Any) -> float:
    """A counter as reported, or 0 for missing, None, bool or garbage: a view must
    still render when one worker sends something odd."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return value


def _optional_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# --------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class Edge:
    """One subscription, drawn as an arrow: `target` reads `stream` of `source`."""

    source: str
    target: str
    stream: str = "default"
    grouping: str = "shuffle"


@dataclass(frozen=True)
class ComponentLayout:
    """What the topology declares about one component (None: not known)."""

    name: str
    kind: str | None = None
    par: int | None = None
    num_tasks: int | None = None


@dataclass(frozen=True)
class TopologyLayout:
    """The topology's shape, independent of any run: components in definition order
    and the edges between them. Built from a `TopologyDefinition`, from its dict form
    (`to_dict`, what a topology record can carry) or from the bare ``components``
    of a topology record (names and parallelism, no kinds or edges)."""

    components: tuple[ComponentLayout, ...] = ()
    edges: tuple[Edge, ...] = ()

    @classmethod
    def from_definition(cls, definition: Any) -> TopologyLayout:
        """From a `storm_zmq.topology.definition.TopologyDefinition`."""
        components = tuple(
            ComponentLayout(name, c.kind, c.par, c.num_tasks)
            for name, c in definition.components.items()
        )
        edges = tuple(
            Edge(source, name, stream, grouping_label(grouping))
            for name, c in definition.components.items()
            for source, stream, grouping in c.inputs
        )
        return cls(components, edges)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TopologyLayout:
        """The inverse of `to_dict`; entries it cannot read are skipped (a stored
        layout from another version must not break the UI)."""
        components = []
        for entry in data.get("components", ()) if isinstance(data, Mapping) else ():
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                kind = entry.get("kind")
                components.append(ComponentLayout(
                    entry["name"], kind if kind in _KINDS else None,
                    _int_or_none(entry.get("par")), _int_or_none(entry.get("num_tasks"))))
        edges = []
        for entry in data.get("edges", ()) if isinstance(data, Mapping) else ():
            if isinstance(entry, Mapping) and isinstance(entry.get("source"), str) \
                    and isinstance(entry.get("target"), str):
                edges.append(Edge(entry["source"], entry["target"],
                                  str(entry.get("stream", "default")),
                                  str(entry.get("grouping", "shuffle"))))
        return cls(tuple(components), tuple(edges))

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TopologyLayout:
        """From a topology record in ZooKeeper: its ``layout`` (a `to_dict`) when the
        submitter stored one, else its ``components`` ({name: [par, num_tasks]}).
        The executors are the ``components``' either way: a ``rebalance -e`` changes
        them there, not in the stored layout."""
        if isinstance(record.get("layout"), Mapping):
            layout = cls.from_dict(record["layout"])
            now = _mapping(record.get("components"))
            return cls(tuple(
                replace(c, par=_int_or_none(now[c.name][0]))
                if isinstance(now.get(c.name), (list, tuple)) and len(now[c.name]) == 2 else c
                for c in layout.components), layout.edges)
        components = []
        for name, value in _mapping(record.get("components")).items():
            par = num_tasks = None
            if isinstance(value, (list, tuple)) and len(value) == 2:
                par, num_tasks = _int_or_none(value[0]), _int_or_none(value[1])
            components.append(ComponentLayout(name, None, par, num_tasks))
        return cls(tuple(components), ())

    def to_dict(self) -> dict[str, Any]:
        return {"components": [asdict(c) for c in self.components],
                "edges": [asdict(e) for e in self.edges]}

    def get(self, name: str) -> ComponentLayout | None:
        for component in self.components:
            if component.name == name:
                return component
        return None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class ErrorRecord:
    """One reported error (newest first in lists)."""

    component: str
    text: str
    time: float | None = None
    task: int | None = None
    host: str | None = None
    port: int | None = None


@dataclass(frozen=True)
class ComponentOnWorker:
    """A component's `MONOTONIC` numbers as one worker reported them. Why kept: the
    component's totals are a sum over the workers reporting now, which goes down
    when one restarts or turns stale; per worker, a number only goes up until that
    worker restarts, which is what a Prometheus counter must do."""

    host: str | None
    port: int | None
    worker: int | None
    values: tuple[tuple[str, float], ...]  # (name in MONOTONIC, value)


@dataclass(frozen=True)
class ComponentSummary:
    """One component over all (non-stale) workers. Latency means are in ms, None
    without samples; `capacity` is None when no worker reported one."""

    name: str
    kind: str  # "spout" | "bolt" | "acker" | "unknown"
    tasks: int = 0
    executors: int = 0
    workers: tuple[str, ...] = ()  # "host:port" of the workers running it
    emitted: int = 0
    transferred: int = 0
    executed: int = 0
    acked: int = 0
    failed: int = 0
    malformed: int = 0
    errors_reported: int = 0
    queued: int = 0
    queue_capacity: int = 0
    pending: int = 0
    exhausted_tasks: int = 0
    execute_ms_total: float = 0.0
    execute_samples: int = 0
    process_ms_total: float = 0.0
    process_samples: int = 0
    complete_ms_total: float = 0.0
    complete_samples: int = 0
    capacity: float | None = None
    errors: tuple[ErrorRecord, ...] = ()
    #: the same numbers per worker (for Prometheus; not in `to_dict`)
    on_workers: tuple[ComponentOnWorker, ...] = ()

    def latency_ms(self, which: str) -> float | None:
        """Mean `which` ("execute", "process", "complete") latency in ms."""
        samples = getattr(self, f"{which}_samples")
        return getattr(self, f"{which}_ms_total") / samples if samples else None

    @property
    def execute_latency_ms(self) -> float | None:
        return self.latency_ms("execute")

    @property
    def process_latency_ms(self) -> float | None:
        return self.latency_ms("process")

    @property
    def complete_latency_ms(self) -> float | None:
        return self.latency_ms("complete")

    def counters(self) -> dict[str, int]:
        """Counters and gauges by name (what `RunStats.totals()` returns per component)."""
        return {key: getattr(self, key) for key in COUNTERS + GAUGES}

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "on_workers"}
        data["workers"] = list(self.workers)
        data["errors"] = [asdict(e) for e in self.errors]
        for which in LATENCIES:
            data[f"{which}_latency_ms"] = self.latency_ms(which)
        return data


@dataclass(frozen=True)
class WorkerSummary:
    """One worker's own numbers. `peers` is per destination worker index (str)."""

    key: str  # "host:port"
    worker: int | None = None
    host: str | None = None
    port: int | None = None
    pid: int | None = None
    time: float | None = None  # unix time of the report
    age_secs: float | None = None  # now - time, or by the viewer's clock (metrics/ages.py)
    stale: bool = False
    uptime_secs: float | None = None
    #: how often its supervisor relaunched this slot's worker (died, hung), since that
    #: supervisor started; None in local mode
    restarts: int | None = None
    #: the transport class the worker runs (storm.messaging.transport, resolved)
    transport_class: str | None = None
    cpu_secs: float | None = None  # CPU time of the worker process since it started
    rss_bytes: int | None = None
    open_fds: int | None = None
    components: tuple[str, ...] = ()
    queued: int = 0
    queue_capacity: int = 0
    transfer_queued: int = 0
    transfer_capacity: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    transport: dict[str, float] = field(default_factory=dict)
    peers: dict[str, dict[str, float]] = field(default_factory=dict)
    frames_received: int = 0
    messages_received: int = 0
    bytes_received: int = 0
    frames_sent: int = 0
    messages_sent: int = 0
    bytes_sent: int = 0
    send_timeouts: int = 0
    reconnects: int = 0
    backpressure_events: int = 0
    throttled_tasks: tuple[int, ...] = ()
    #: How short of CPU the worker says it is, and its weight in the shuffles as it
    #: sees itself (storm_zmq.runtime.balance); None without load-aware weights.
    cpu_figure: float | None = None
    shuffle_weight: float | None = None
    #: its log's tail on its supervisor's log viewer (cluster mode, the viewer on)
    log_url: str | None = None

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())

    @property
    def transport_name(self) -> str | None:
        """The short name (zmq, tcp, local) of its transport class, else the class."""
        from storm_zmq.messaging import TRANSPORT_ALIASES

        for name, path in TRANSPORT_ALIASES.items():
            if path == self.transport_class:
                return name
        return self.transport_class

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["components"] = list(self.components)
        data["throttled_tasks"] = list(self.throttled_tasks)
        data["refused_total"] = self.refused_total
        data["transport_name"] = self.transport_name
        return data


@dataclass(frozen=True)
class TopologySummary:
    """A topology at one moment: components (definition order, then components only
    the reports name, the acker last), workers (by index), edges and errors."""

    name: str
    topology_id: str | None = None
    status: str | None = None
    time: float | None = None
    uptime_secs: float | None = None
    num_workers: int | None = None
    components: tuple[ComponentSummary, ...] = ()
    workers: tuple[WorkerSummary, ...] = ()
    edges: tuple[Edge, ...] = ()
    errors: dict[str, tuple[ErrorRecord, ...]] = field(default_factory=dict)

    def component(self, name: str) -> ComponentSummary:
        """The component called `name`; KeyError listing the known ones."""
        for component in self.components:
            if component.name == name:
                return component
        raise KeyError(f"topology {self.name} has no component {name!r} "
                       f"(it has {', '.join(c.name for c in self.components) or 'none'})")

    def totals(self) -> dict[str, Any]:
        """Storm's "topology stats": emitted/transferred over the user's components,
        acked/failed/pending and complete latency over the spouts."""
        user = [c for c in self.components if c.kind != "acker"]
        spouts = [c for c in self.components if c.kind == "spout"]
        samples = sum(c.complete_samples for c in spouts)
        return {
            "emitted": sum(c.emitted for c in user),
            "transferred": sum(c.transferred for c in user),
            "acked": sum(c.acked for c in spouts),
            "failed": sum(c.failed for c in spouts),
            "pending": sum(c.pending for c in spouts),
            "complete_ms_total": sum(c.complete_ms_total for c in spouts),
            "complete_samples": samples,
            "complete_latency_ms": (sum(c.complete_ms_total for c in spouts) / samples
                                    if samples else None),
            "workers_reporting": sum(1 for w in self.workers if not w.stale),
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (what `storm-zmq stats --json` prints and the UI fetches), with
        the graph's drawing positions (`storm_zmq.metrics.graph`) under ``graph``."""
        from storm_zmq.metrics.graph import layout_graph

        drawn = [c.name for c in self.components if c.kind != "acker"]
        return {
            "name": self.name,
            "id": self.topology_id,
            "status": self.status,
            "time": self.time,
            "uptime_secs": self.uptime_secs,
            "num_workers": self.num_workers,
            "totals": self.totals(),
            "components": [c.to_dict() for c in self.components],
            "workers": [w.to_dict() for w in self.workers],
            "edges": [asdict(e) for e in self.edges],
            "graph": layout_graph(drawn, self.edges),
            "errors": {name: [asdict(e) for e in records]
                       for name, records in self.errors.items()},
        }


def reports_from_beats(beats: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Worker reports from ZooKeeper heartbeats (``{"<host>-<port>": {"time": t,
    "stats": report}}``); host, port and time come from the node when the report
    lacks them. A heartbeat without stats (a worker still starting) is skipped."""
    reports = []
    for node, beat in sorted(beats.items()):
        if not isinstance(beat, Mapping) or not isinstance(beat.get("stats"), Mapping):
            continue
        report = dict(beat["stats"])
        host, _, port = node.rpartition("-")
        report.setdefault("host", host or None)
        if "port" not in report and port.isdigit():
            report["port"] = int(port)
        if "time" not in report and _optional_number(beat.get("time")) is not None:
            report["time"] = beat["time"]
        reports.append(report)
    return reports


def summarize(
    layout: TopologyLayout,
    reports: Iterable[Mapping[str, Any]],
    *,
    name: str,
    errors: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
    topology_id: str | None = None,
    status: str | None = None,
    launch_time: float | None = None,
    num_workers: int | None = None,
    now: float | None = None,
    stale_after: float | None = None,
    ages: Mapping[str, float | None] | None = None,
) -> TopologySummary:
    """Aggregate `reports` (see the module docstring). `now` (unix time) gives the
    workers' ages and the uptime; with `stale_after`, a report older than that many
    seconds is not counted. `ages` ("host:port" -> seconds) replaces the age `now`
    gives a worker's report, for a viewer that judges ages by its own clock
    (`storm_zmq.metrics.ages`)."""
    workers = _workers(reports, now, stale_after, ages or {})
    live = [report for report, summary in workers if not summary.stale]
    merged_errors = _errors(errors or {}, [r for r, _ in workers])

    names = [c.name for c in layout.components]
    seen = {n for report in live for n in _mapping(report.get("components"))}
    extra = sorted(n for n in seen if n not in names and n != ACKER)
    if ACKER in seen and ACKER not in names:
        extra.append(ACKER)
    components = tuple(
        _component(n, layout.get(n), live, merged_errors.get(n, ()))
        for n in names + extra
    )
    uptime = None
    if now is not None and _optional_number(launch_time) is not None:
        uptime = max(0.0, now - launch_time)
    return TopologySummary(
        name=name, topology_id=topology_id, status=status, time=now, uptime_secs=uptime,
        num_workers=num_workers, components=components,
        workers=tuple(summary for _, summary in workers), edges=layout.edges,
        errors=merged_errors,
    )


def _workers(reports: Iterable[Mapping[str, Any]], now: float | None, stale_after: float | None,
             ages: Mapping[str, float | None]) -> list[tuple[Mapping[str, Any], WorkerSummary]]:
    """One (report, summary) per worker, the newest report per worker index, sorted
    by index then address."""
    newest: dict[Any, Mapping[str, Any]] = {}
    for report in reports:
        if not isinstance(report, Mapping):
            continue
        index = _int_or_none(report.get("worker"))
        key: Any = ("index", index) if index is not None else \
            ("address", report.get("host"), report.get("port"))
        previous = newest.get(key)
        if previous is None or _newer(report, previous, ages):
            newest[key] = report
    result = [(report, _worker(report, now, stale_after, ages)) for report in newest.values()]
    result.sort(key=lambda pair: (pair[1].worker is None, pair[1].worker or 0, pair[1].key))
    return result


def _newer(report: Mapping[str, Any], previous: Mapping[str, Any],
           ages: Mapping[str, float | None]) -> bool:
    """Whether `report` is at least as new as `previous` (two heartbeats of one
    worker index, from different slots): by the viewer's ages when it has both,
    since their times come from two hosts' clocks."""
    age, previous_age = ages.get(report_key(report)), ages.get(report_key(previous))
    if age is not None and previous_age is not None:
        return age <= previous_age
    return _number(report.get("time")) >= _number(previous.get("time"))


def _host_port(report: Mapping[str, Any]) -> tuple[str | None, int | None]:
    host = report.get("host")
    return (host if isinstance(host, str) else None), _int_or_none(report.get("port"))


def report_key(report: Mapping[str, Any]) -> str:
    """The "host:port" of the worker that sent `report` (its `WorkerSummary.key`)."""
    host, port = _host_port(report)
    return f"{host}:{port}"


def report_age(report: Mapping[str, Any], now: float | None) -> float | None:
    """Seconds from the report's ``time`` to `now` (at least 0): the two hosts'
    clocks compared. None when either is unknown."""
    report_time = _optional_number(report.get("time"))
    return max(0.0, now - report_time) if now is not None and report_time is not None else None


def _worker(report: Mapping[str, Any], now: float | None, stale_after: float | None,
            ages: Mapping[str, float | None]) -> WorkerSummary:
    components = _mapping(report.get("components"))
    transport = {k: v for k, v in _mapping(report.get("transport")).items()
                 if _optional_number(v) is not None}
    peers = {str(peer): {k: v for k, v in _mapping(stats).items()
                         if _optional_number(v) is not None}
             for peer, stats in _mapping(report.get("peers")).items()}
    refused = {str(k): int(_number(v)) for k, v in _mapping(report.get("refused")).items()}
    backpressure = _mapping(report.get("backpressure"))
    throttled = backpressure.get("throttled_tasks")
    balance = _mapping(report.get("balance"))
    report_time = _optional_number(report.get("time"))
    host, port = _host_port(report)
    address = report_key(report)
    age = ages[address] if address in ages else report_age(report, now)

    def over_peers(key: str) -> int:
        return int(sum(_number(p.get(key)) for p in peers.values()))

    return WorkerSummary(
        key=address,
        worker=_int_or_none(report.get("worker")),
        host=host,
        port=port,
        pid=_int_or_none(report.get("pid")),
        time=report_time,
        age_secs=age,
        stale=stale_after is not None and age is not None and age > stale_after,
        uptime_secs=_optional_number(report.get("uptime_secs")),
        restarts=_int_or_none(report.get("restarts")),
        transport_class=report.get("transport_class")
        if isinstance(report.get("transport_class"), str) else None,
        cpu_secs=_optional_number(report.get("cpu_secs")),
        rss_bytes=_int_or_none(report.get("rss_bytes")),
        open_fds=_int_or_none(report.get("open_fds")),
        components=tuple(components),
        queued=int(sum(_number(_mapping(c).get("queued")) for c in components.values())),
        queue_capacity=int(sum(_number(_mapping(c).get("queue_capacity"))
                               for c in components.values())),
        transfer_queued=int(_number(report.get("transfer_queued"))),
        transfer_capacity=int(_number(report.get("transfer_capacity"))),
        refused=refused,
        transport=transport,
        peers=peers,
        frames_received=int(_number(transport.get("frames_received"))),
        messages_received=int(_number(transport.get("messages_received"))),
        bytes_received=int(_number(transport.get("bytes_received"))),
        frames_sent=over_peers("frames_sent"),
        messages_sent=over_peers("messages_sent"),
        bytes_sent=over_peers("bytes_sent"),
        send_timeouts=over_peers("send_timeouts"),
        reconnects=over_peers("reconnects"),
        backpressure_events=int(_number(backpressure.get("events"))),
        throttled_tasks=tuple(t for t in throttled if _int_or_none(t) is not None)
        if isinstance(throttled, (list, tuple)) else (),
        cpu_figure=_optional_number(balance.get("figure")),
        shuffle_weight=_optional_number(balance.get("weight")),
    )


def _component(name: str, declared: ComponentLayout | None,
               reports: list[Mapping[str, Any]],
               errors: tuple[ErrorRecord, ...]) -> ComponentSummary:
    totals: dict[str, float] = dict.fromkeys(COUNTERS + GAUGES, 0)
    latency: dict[str, float] = {}
    for which in LATENCIES:
        latency[f"{which}_ms_total"] = 0.0
        latency[f"{which}_samples"] = 0
    capacity: float | None = None
    tasks: set[int] = set()
    executors = 0
    hosts: list[str] = []
    on_workers: list[ComponentOnWorker] = []
    reported_kind = None
    for report in reports:
        entry = _mapping(_mapping(report.get("components")).get(name))
        if not entry and name not in _mapping(report.get("components")):
            continue
        hosts.append(f"{report.get('host')}:{report.get('port')}")
        host, port = _host_port(report)
        on_workers.append(ComponentOnWorker(
            host=host, port=port,
            worker=_int_or_none(report.get("worker")),
            values=tuple((key, _number(entry.get(key))) for key in MONOTONIC)))
        for key in totals:
            totals[key] += _number(entry.get(key))
        for key in latency:
            latency[key] += _number(entry.get(key))
        value = _optional_number(entry.get("capacity"))
        if value is not None:
            capacity = value if capacity is None else max(capacity, value)
        task_ids = entry.get("tasks")
        if isinstance(task_ids, (list, tuple)):
            tasks.update(t for t in task_ids if _int_or_none(t) is not None)
        executors += int(_number(entry.get("executors")))
        if entry.get("kind") in _KINDS:
            reported_kind = entry["kind"]
    kind = (declared.kind if declared is not None and declared.kind else None) \
        or reported_kind or ("acker" if name == ACKER else "unknown")
    num_tasks = len(tasks) or (declared.num_tasks if declared and declared.num_tasks else 0)
    if not executors and declared is not None and declared.par:
        executors = declared.par
    return ComponentSummary(
        name=name, kind=kind, tasks=num_tasks, executors=executors, workers=tuple(hosts),
        **{key: int(value) for key, value in totals.items()},
        **{key: (int(value) if key.endswith("_samples") else float(value))
           for key, value in latency.items()},
        capacity=capacity, errors=errors, on_workers=tuple(on_workers),
    )


def _errors(stored: Mapping[str, Iterable[Mapping[str, Any]]],
            reports: list[Mapping[str, Any]]) -> dict[str, tuple[ErrorRecord, ...]]:
    """Errors per component, newest first, at most `MAX_ERRORS`, the same error
    (component, task, time, text) counted once whichever way it came."""
    by_component: dict[str, dict[tuple[Any, ...], ErrorRecord]] = {}

    def add(component: Any, entry: Mapping[str, Any], host: Any, port: Any) -> None:
        if not isinstance(component, str) or not isinstance(entry, Mapping):
            return
        record = ErrorRecord(
            component=component,
            text=str(entry.get("text", "")),
            time=_optional_number(entry.get("time")),
            task=_int_or_none(entry.get("task")),
            host=entry.get("host", host) if isinstance(entry.get("host", host), str) else None,
            port=_int_or_none(entry.get("port", port)),
        )
        key = (record.task, record.time, record.text)
        by_component.setdefault(component, {}).setdefault(key, record)

    for component, entries in stored.items():
        for entry in entries if isinstance(entries, Iterable) else ():
            add(component, entry, None, None)
    for report in reports:
        entries = report.get("errors")
        for entry in entries if isinstance(entries, (list, tuple)) else ():
            if isinstance(entry, Mapping):
                add(entry.get("component"), entry, report.get("host"), report.get("port"))
    return {
        component: tuple(sorted(records.values(),
                                key=lambda r: -(r.time if r.time is not None else -math.inf))
                         [:MAX_ERRORS])
        for component, records in sorted(by_component.items())
    }
