"""`TopologySummary` as the readable tables `storm-zmq stats` prints, and
`ClusterOverview` as `storm-zmq cluster` does. Pure."""

from __future__ import annotations

import time
from collections.abc import Sequence

from storm_zmq.cluster.overview import ClusterOverview
from storm_zmq.metrics.summary import ComponentSummary, ErrorRecord, TopologySummary

__all__ = ["format_component", "format_duration", "format_overview", "format_summary"]


def format_duration(seconds: float | None) -> str:
    """``1d 2h``, ``3h 4m``, ``5m 6s``, ``7s``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.3f}"


def _capacity(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _bytes(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]],
           text_columns: Sequence[int] = (0,)) -> list[str]:
    """Left-aligned text columns (the first, unless told), right-aligned numbers."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [cell.ljust(width) if i in text_columns else cell.rjust(width)
                 for i, (cell, width) in enumerate(zip(row, widths, strict=True))]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _error_line(error: ErrorRecord) -> str:
    when = time.strftime("%H:%M:%S", time.localtime(error.time)) if error.time else "?"
    where = f"task {error.task}, " if error.task is not None else ""
    if error.host:
        where += f"{error.host}:{error.port}, "
    first = error.text.strip().splitlines()[-1] if error.text.strip() else ""
    return f"    {where}{when}: {first}"


def format_summary(summary: TopologySummary) -> str:
    """The whole topology: header, components, workers, recent errors."""
    totals = summary.totals()
    lines = [
        f"topology {summary.name}"
        + (f" ({summary.topology_id})" if summary.topology_id else "")
        + (f", {summary.status}" if summary.status else "")
        + f", {totals['workers_reporting']}"
        + (f"/{summary.num_workers}" if summary.num_workers else "")
        + " workers reporting"
        + (f", up {format_duration(summary.uptime_secs)}" if summary.uptime_secs is not None
           else ""),
        f"  emitted {_count(totals['emitted'])}, transferred {_count(totals['transferred'])}, "
        f"acked {_count(totals['acked'])}, failed {_count(totals['failed'])}, "
        f"pending {_count(totals['pending'])}, complete latency "
        f"{_ms(totals['complete_latency_ms'])} ms",
        "",
        "components",
    ]
    header = ("component", "kind", "tasks", "emitted", "transferred", "executed", "acked",
              "failed", "execute ms", "process ms", "complete ms", "capacity", "queued",
              "pending", "errors")
    rows = [
        (c.name, c.kind, str(c.tasks), _count(c.emitted), _count(c.transferred),
         _count(c.executed), _count(c.acked), _count(c.failed), _ms(c.execute_latency_ms),
         _ms(c.process_latency_ms), _ms(c.complete_latency_ms), _capacity(c.capacity),
         _count(c.queued), _count(c.pending), _count(c.errors_reported))
        for c in summary.components
    ]
    lines += _table(header, rows) if rows else ["  (no component has reported yet)"]
    lines += ["", "workers"]
    header = ("worker", "host:port", "pid", "uptime", "restarts", "transport", "rss", "fds",
              "queued", "transfer", "refused", "frames out", "bytes out", "reconnects",
              "backpressure", "cpu", "weight", "age")
    rows = [
        (("-" if w.worker is None else str(w.worker)) + (" (stale)" if w.stale else ""),
         w.key, _count(w.pid), format_duration(w.uptime_secs), _count(w.restarts),
         w.transport_name or "-", _bytes(w.rss_bytes),
         _count(w.open_fds), _count(w.queued), _count(w.transfer_queued),
         _count(w.refused_total), _count(w.frames_sent), _bytes(w.bytes_sent),
         _count(w.reconnects), _count(w.backpressure_events), _capacity(w.cpu_figure),
         _capacity(w.shuffle_weight), "-" if w.age_secs is None else f"{w.age_secs:.1f}s")
        for w in summary.workers
    ]
    lines += _table(header, rows) if rows else ["  (no worker has reported yet)"]
    if any(summary.errors.values()):
        lines += ["", "recent errors"]
        for component, errors in summary.errors.items():
            if errors:
                lines.append(f"  {component}")
                lines += [_error_line(e) for e in errors]
    return "\n".join(lines)


def format_component(summary: TopologySummary, component: ComponentSummary) -> str:
    """One component: every number, where it runs, its recent errors."""
    rows = [
        ("kind", component.kind), ("tasks", str(component.tasks)),
        ("executors", str(component.executors)),
        ("workers", ", ".join(component.workers) or "-"),
        ("emitted", _count(component.emitted)), ("transferred", _count(component.transferred)),
        ("executed", _count(component.executed)), ("acked", _count(component.acked)),
        ("failed", _count(component.failed)), ("malformed", _count(component.malformed)),
        ("errors reported", _count(component.errors_reported)),
        ("execute latency ms", _ms(component.execute_latency_ms)),
        ("process latency ms", _ms(component.process_latency_ms)),
        ("complete latency ms", _ms(component.complete_latency_ms)),
        ("capacity", _capacity(component.capacity)),
        ("queued", f"{component.queued:,} of {component.queue_capacity:,}"),
        ("pending", _count(component.pending)),
        ("exhausted tasks", _count(component.exhausted_tasks)),
    ]
    width = max(len(key) for key, _ in rows)
    lines = [f"component {component.name} of topology {summary.name}"]
    lines += [f"  {key.ljust(width)}  {value}" for key, value in rows]
    if component.errors:
        lines += ["", "recent errors"]
        lines += [_error_line(e) for e in component.errors]
    return "\n".join(lines)


def format_overview(overview: ClusterOverview) -> str:
    """`storm-zmq cluster`: the totals, then the nimbuses and the supervisors, each
    supervisor's slots with the topologies that hold them."""
    supervisors = overview.supervisors
    lines = [
        f"{len(supervisors)} supervisor{'' if len(supervisors) == 1 else 's'}"
        f", {overview.slots} worker slots: {overview.used_slots} used, "
        f"{overview.free_slots} free; {overview.topologies} "
        f"topolog{'y' if overview.topologies == 1 else 'ies'}; "
        + (f"nimbus {overview.leader} leads" if overview.leader else
           "no nimbus leads: nothing is assigned until one does"),
    ]
    if overview.nimbuses:
        lines += ["", "nimbuses"] + _table(
            ("id", "host", "leader", "uptime"),
            [(n.id, n.host or "-", "yes" if n.leader else "no", format_duration(n.uptime_secs))
             for n in overview.nimbuses], text_columns=(0, 1, 2))
    if supervisors:
        rows = []
        for s in supervisors:
            held: dict[str, list[str]] = {}
            for port, name in sorted(s.used.items()):
                held.setdefault(name, []).append(str(port))
            rows.append((
                s.id,
                s.host if not s.hostname or s.hostname == s.host else f"{s.host} ({s.hostname})",
                str(len(s.ports)), str(len(s.used)), str(len(s.free)),
                format_duration(s.uptime_secs), format_duration(s.heartbeat_age_secs),
                "; ".join(f"{name}: {','.join(ports)}" for name, ports in held.items()) or "-",
            ))
        lines += ["", "supervisors"] + _table(
            ("id", "host", "slots", "used", "free", "uptime", "refreshed", "ports used by"),
            rows, text_columns=(0, 1, 7))
    else:
        lines += ["", "no supervisor is registered: start one with storm-zmq supervisor"]
    if overview.unsupervised:
        lines += ["", "workers on no registered supervisor slot: they run on while they "
                      "heartbeat (their supervisor stopped or restarts); nimbus moves them to "
                      "free slots, if any, once they stop, or at once when their supervisor "
                      "no longer has the port"] + _table(
            ("topology", "supervisor", "host:port"),
            [(t, s, f"{h}:{p}") for t, s, h, p in overview.unsupervised], text_columns=(0, 1, 2))
    return "\n".join(lines)
