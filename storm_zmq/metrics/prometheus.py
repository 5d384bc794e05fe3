"""`TopologySummary`s in Prometheus' text exposition format 0.0.4. Pure.

Names follow Prometheus' conventions: prefix ``storm_zmq_``, the object
(``component``, ``worker``, ``topology``), base units (seconds, bytes), ``_total`` on
counters. Latencies are summaries without quantiles (``_sum`` in seconds and
``_count`` in samples), so ``rate(x_sum) / rate(x_count)`` is the mean latency over
any window, which a mean gauge could not give. A component's counters and latency
summaries are one series per worker running it (``host``, ``port``, ``worker``
labels): a sum over the workers would go down whenever one restarts, which
Prometheus takes for a counter reset; per worker it is one. Every family is written once, with
its ``# HELP`` and ``# TYPE``, and a series per topology/component/worker/peer.
The table of names is in docs/observability.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from storm_zmq.cluster.overview import ClusterOverview
from storm_zmq.metrics.summary import (
    ComponentOnWorker,
    ComponentSummary,
    TopologySummary,
    WorkerSummary,
)

__all__ = ["CONTENT_TYPE", "escape_label_value", "render"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = tuple[tuple[str, str], ...]

# A component's counters, one series per worker: (name, help); the value is the
# MONOTONIC number of the name less "_total".
_COMPONENT_COUNTERS: list[tuple[str, str]] = [
    ("emitted_total", "Tuples emitted by the component's code (Storm's emitted)."),
    ("transferred_total", "Tuple deliveries to target tasks, one per target (Storm's "
                          "transferred)."),
    ("executed_total", "Tuples given to the bolt's process() (Storm's executed)."),
    ("acked_total", "Bolts: tuples acked; spouts: tuple trees completed (Storm's acked)."),
    ("failed_total", "Bolts: tuples failed; spouts: tuple trees failed or timed out "
                     "(Storm's failed)."),
    ("malformed_total", "Remote payloads refused: they did not decode or fit the topology."),
    ("errors_reported_total", "Calls of report_error() by the component."),
]

# A component's gauges, over its workers: (name, help, value: None = no sample)
_COMPONENT_GAUGES: list[tuple[str, str, Callable[[ComponentSummary], Any]]] = [
    ("queued", "Tuples waiting at the component's executors: receive queues, batches in hand, held back.", lambda c: c.queued),
    ("queue_capacity", "Capacity of the component's executors' receive queues.",
     lambda c: c.queue_capacity),
    ("pending", "Spouts: tuple trees emitted and not yet acked or failed.", lambda c: c.pending),
    ("exhausted_tasks", "Spout tasks that reported their input exhausted.",
     lambda c: c.exhausted_tasks),
    ("capacity_ratio", "Fraction of the last report window the busiest executor spent in "
                       "process() (Storm's capacity).", lambda c: c.capacity),
    ("tasks", "Tasks of the component.", lambda c: c.tasks),
    ("executors", "Executors of the component (each runs some of its tasks, in a thread of "
                   "its own or in the worker's shared one).", lambda c: c.executors),
]

_LATENCIES = [
    ("execute", "Time inside the bolt's process(), process_tick() and process_batch() over "
                "its executed tuples (Storm's execute latency), every tuple."),
    ("process", "Time from the start of a tuple's process() to its ack (Storm's process "
                "latency; queueing not included): every tuple where process() acks it, else "
                "sampled."),
    ("complete", "Time from a spout emit to the tuple tree's completion (Storm's complete "
                 "latency), every tree."),
]

_WORKER: list[tuple[str, str, str, Callable[[WorkerSummary], Any]]] = [
    ("up", "gauge", "1 while the worker's last report is recent, 0 when it is stale.",
     lambda w: 0 if w.stale else 1),
    ("uptime_seconds", "gauge", "Seconds since the worker process started.",
     lambda w: w.uptime_secs),
    ("report_age_seconds", "gauge", "Age of the worker's last report: an upper bound, by "
     "this server's clock from its previous look at ZooKeeper (a scrape's, or the UI's), so "
     "a live worker can read up to the time between looks; alert above that.",
     lambda w: w.age_secs),
    ("cpu_seconds_total", "counter", "CPU time of the worker process, all its threads.",
     lambda w: w.cpu_secs),
    ("resident_memory_bytes", "gauge", "Resident set size of the worker process.",
     lambda w: w.rss_bytes),
    ("open_fds", "gauge", "Open file descriptors of the worker process.",
     lambda w: w.open_fds),
    ("queued", "gauge", "Tuples waiting at the worker's executors (queues, batches in hand, held).",
     lambda w: w.queued),
    ("transfer_queued", "gauge", "Tuples in the worker's outbound transfer queue.",
     lambda w: w.transfer_queued),
    ("transfer_queue_capacity", "gauge", "Capacity of the worker's transfer queue.",
     lambda w: w.transfer_capacity),
    ("received_frames_total", "counter", "Frames the worker's transport received.",
     lambda w: w.frames_received),
    ("received_messages_total", "counter", "Task messages the worker's transport received.",
     lambda w: w.messages_received),
    ("received_bytes_total", "counter", "Bytes the worker's transport received.",
     lambda w: w.bytes_received),
    ("backpressure_events_total", "counter",
     "Times the worker told peers to stop sending to one of its tasks.",
     lambda w: w.backpressure_events),
    ("restarts", "gauge", "Times its supervisor relaunched the worker of this slot (it died "
     "or hung), since that supervisor started; cluster mode only.", lambda w: w.restarts),
    ("throttled_tasks", "gauge", "Tasks of the worker throttled by backpressure now.",
     lambda w: len(w.throttled_tasks)),
    ("cpu_figure", "gauge", "How short of CPU the worker says it is: the share of a core its "
     "process used over 0.5 s, or in which one of its executor threads was runnable if more, at "
     "most 0.8 while no executor queue is a quarter full (load-aware shuffles).",
     lambda w: w.cpu_figure),
    ("shuffle_weight", "gauge", "The worker's weight in load-aware shuffles as it sees "
     "itself: 1 is an even share, down to 0.1 while it is short of CPU.",
     lambda w: w.shuffle_weight),
]

_PEER: list[tuple[str, str, str]] = [
    ("sent_frames_total", "frames_sent", "Frames sent to the peer worker."),
    ("sent_messages_total", "messages_sent", "Task messages sent to the peer worker."),
    ("sent_bytes_total", "bytes_sent", "Bytes sent to the peer worker."),
    ("send_timeouts_total", "send_timeouts", "Sends to the peer that timed out."),
    ("reconnects_total", "reconnects", "Reconnections to the peer worker."),
]


def escape_label_value(value: str) -> str:
    """Backslash, double quote and line feed escaped, as the format requires."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(value: float) -> str:
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class _Family:
    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name, self.kind, self.help = name, kind, help_text
        self.samples: list[tuple[str, Labels, float]] = []

    def add(self, labels: Labels, value: Any, suffix: str = "") -> None:
        """A sample; None (not known) is left out rather than written as 0."""
        if isinstance(value, (int, float)):
            self.samples.append((self.name + suffix, labels, value))

    def lines(self) -> list[str]:
        help_text = self.help.replace("\\", "\\\\").replace("\n", "\\n")
        out = [f"# HELP {self.name} {help_text}", f"# TYPE {self.name} {self.kind}"]
        for name, labels, value in self.samples:
            text = ",".join(f'{key}="{escape_label_value(str(v))}"' for key, v in labels)
            out.append(f"{name}{{{text}}} {_value(value)}" if text else f"{name} {_value(value)}")
        return out


def render(summaries: Iterable[TopologySummary], overview: ClusterOverview | None = None) -> str:
    """The exposition text for `summaries` (one scrape), ending in a newline;
    with the cluster's `overview` first (cluster mode)."""
    summaries = list(summaries)
    families: list[_Family] = []

    def family(name: str, kind: str, help_text: str) -> _Family:
        created = _Family(f"storm_zmq_{name}", kind, help_text)
        families.append(created)
        return created

    if overview is not None:
        family("cluster_supervisors", "gauge",
               "Supervisors registered in ZooKeeper.").add((), len(overview.supervisors))
        family("cluster_leader", "gauge", "1 while a nimbus leads, 0 when none does "
               "(nothing is assigned or repaired then).").add((), int(overview.leader is not None))
        unsupervised = family("cluster_unsupervised_workers", "gauge", "Workers an assignment "
                              "places on no registered supervisor slot (they run on while "
                              "they heartbeat; nimbus moves them once they stop).")
        unsupervised.add((), len(overview.unsupervised))
        slots = family("supervisor_slots", "gauge", "Worker slots of a supervisor "
                       "(supervisor.slots.ports), by state: used (a topology's assignment "
                       "places a worker there) or free.")
        for sup in overview.supervisors:
            labels = (("supervisor", sup.id), ("host", sup.host))
            slots.add(labels + (("state", "used"),), len(sup.used))
            slots.add(labels + (("state", "free"),), len(sup.free))

    info = family("topology_info", "gauge",
                  "1 per topology, with its id and status as labels.")
    workers = family("topology_workers", "gauge", "Workers the topology is configured with.")
    reporting = family("topology_workers_reporting", "gauge",
                       "Workers whose report is recent.")
    uptime = family("topology_uptime_seconds", "gauge", "Seconds since the topology was "
                    "submitted (local mode: started).")
    for s in summaries:
        info.add((("topology", s.name), ("id", s.topology_id or ""),
                  ("status", s.status or "")), 1)
        workers.add((("topology", s.name),), s.num_workers)
        reporting.add((("topology", s.name),), s.totals()["workers_reporting"])
        uptime.add((("topology", s.name),), s.uptime_secs)

    for suffix, help_text in _COMPONENT_COUNTERS:
        f = family(f"component_{suffix}", "counter", help_text)
        key = suffix.removesuffix("_total")
        for s in summaries:
            for c in s.components:
                for w in c.on_workers:
                    f.add(_component_worker_labels(s, c, w), dict(w.values)[key])
    for suffix, help_text, get in _COMPONENT_GAUGES:
        f = family(f"component_{suffix}", "gauge", help_text)
        for s in summaries:
            for c in s.components:
                f.add(_component_labels(s, c), get(c))
    for which, help_text in _LATENCIES:
        f = family(f"component_{which}_latency_seconds", "summary", help_text)
        for s in summaries:
            for c in s.components:
                for w in c.on_workers:
                    labels, values = _component_worker_labels(s, c, w), dict(w.values)
                    f.add(labels, values[f"{which}_ms_total"] / 1000.0, "_sum")
                    f.add(labels, values[f"{which}_samples"], "_count")

    for suffix, kind, help_text, get in _WORKER:
        f = family(f"worker_{suffix}", kind, help_text)
        for s in summaries:
            for w in s.workers:
                f.add(_worker_labels(s, w), get(w))
    refused = family("worker_refused_total", "counter",
                     "Input the worker dropped, by kind (unknown task, bad frame, ...).")
    for s in summaries:
        for w in s.workers:
            for kind in sorted(w.refused):
                refused.add(_worker_labels(s, w) + (("kind", kind),), w.refused[kind])
    for suffix, key, help_text in _PEER:
        f = family(f"worker_{suffix}", "counter", help_text)
        for s in summaries:
            for w in s.workers:
                for peer in sorted(w.peers, key=_peer_order):
                    if key in w.peers[peer]:
                        f.add(_worker_labels(s, w) + (("peer", peer),), w.peers[peer][key])
    errors = family("component_recent_errors", "gauge",
                    "Errors of the component currently kept (at most 10).")
    for s in summaries:
        for c in s.components:
            errors.add(_component_labels(s, c), len(c.errors))

    lines: list[str] = []
    for f in families:
        lines += f.lines()
    return "\n".join(lines) + "\n"


def _component_labels(s: TopologySummary, c: ComponentSummary) -> Labels:
    return (("topology", s.name), ("component", c.name), ("kind", c.kind))


def _component_worker_labels(s: TopologySummary, c: ComponentSummary,
                             w: ComponentOnWorker) -> Labels:
    return _component_labels(s, c) + _where(w)


def _worker_labels(s: TopologySummary, w: WorkerSummary) -> Labels:
    return (("topology", s.name), *_where(w))


def _where(w: WorkerSummary | ComponentOnWorker) -> Labels:
    """The labels that name a worker: host, port and index."""
    return (("host", w.host or ""), ("port", "" if w.port is None else str(w.port)),
            ("worker", "" if w.worker is None else str(w.worker)))


def _peer_order(peer: str) -> Sequence[Any]:
    return (0, int(peer), "") if peer.isdigit() else (1, 0, peer)
