"""What a local run shows: per-component counters aggregated over workers,
rates, complete latency percentiles. Pure: fed the workers' reports and times."""

from __future__ import annotations

import heapq
import random
import time
from typing import Any

from storm_zmq.metrics.summary import TopologyLayout, TopologySummary, summarize
from storm_zmq.runtime.assignment import ACKER

#: Complete-latency samples a run keeps for its percentiles, at most: a draw from
#: every tree the workers' samples stand for (`RunStats.update`).
LATENCY_SAMPLES_KEPT = 100_000


class RunStats:
    def __init__(self, definition: Any) -> None:
        self.topology = definition.name
        self.spouts = [name for name, c in definition.components.items() if c.kind == "spout"]
        self.spout_tasks = {name: definition.components[name].num_tasks for name in self.spouts}
        self.bolts = [name for name, c in definition.components.items() if c.kind == "bolt"]
        self.layout = TopologyLayout.from_definition(definition)
        self.latest: dict[int, dict[str, Any]] = {}
        self.reported_at: dict[int, float] = {}
        # (priority, sample, weight) of the samples kept, a min-heap of the highest
        # priorities, and the highest priority not kept (`_keep_latencies`)
        self._latencies: list[tuple[float, float, float]] = []
        self._threshold = 0.0
        self.latency_samples_seen = 0  # trees the samples stood for, of which latencies_ms is a draw
        self._draw = random.Random()
        self.started_at: float | None = None
        self.deactivated_at: float | None = None  # the stop began: spouts deactivated
        self.stopped_at: float | None = None
        self._last_progress: tuple[float, dict[str, int]] | None = None

    def start(self, now: float) -> None:
        self.started_at = now

    def deactivate(self, now: float) -> None:
        if self.deactivated_at is None:
            self.deactivated_at = now

    def stop(self, now: float) -> None:
        self.stopped_at = now

    def update(self, worker: int, report: dict[str, Any]) -> None:
        for entry in report["components"].values():
            samples = entry.get("latencies_ms", ())
            runs = entry.get("latency_runs") or [[len(samples), len(samples)]]
            start = 0
            for count, stood_for in runs:
                self._keep_latencies(samples[start:start + count], stood_for / max(count, 1))
                start += count
        self.latest[worker] = report
        self.reported_at[worker] = time.monotonic()

    def _keep_latencies(self, samples: Any, weight: float = 1.0) -> None:
        """Keep at most `LATENCY_SAMPLES_KEPT` samples standing for every tree of the
        run, so that its percentiles are the whole run's. Each sample stands for
        `weight` trees (a busy spout executor reports a draw of its trees, 5,000 a
        report; a quiet one all of them): priority sampling (Duffield, Lund and
        Thorup) keeps those of the highest priorities w/u, each then standing for
        max(w, the highest priority not kept) trees, which `percentile` weighs.
        Keeping the newest samples made a 25 s run's p99 that of its last 14 s;
        weighing every sample alike made a run's p99 its quiet phase's (5.3 ms where
        every tree's gave 2.7: a metrics audit)."""
        kept, draw = self._latencies, self._draw.random
        self.latency_samples_seen += round(len(samples) * weight)
        for sample in samples:
            priority = weight / (1.0 - draw())  # (0, 1] below: never a division by 0
            if len(kept) < LATENCY_SAMPLES_KEPT:
                heapq.heappush(kept, (priority, sample, weight))
            elif priority > kept[0][0]:
                dropped = heapq.heapreplace(kept, (priority, sample, weight))
                self._threshold = max(self._threshold, dropped[0])
            else:
                self._threshold = max(self._threshold, priority)

    @property
    def latencies_ms(self) -> list[float]:
        """The complete latencies kept (`_keep_latencies`), unweighted."""
        return [sample for _, sample, _ in self._latencies]

    def reported_since(self, moment: float) -> bool:
        return bool(self.reported_at) and all(t > moment for t in self.reported_at.values())

    def snapshot(self) -> TopologySummary:
        """The run as every view shows it (storm_zmq.metrics.summary)."""
        reports = [r if "worker" in r else {**r, "worker": w} for w, r in self.latest.items()]
        return summarize(self.layout, reports, name=self.topology)

    def totals(self) -> dict[str, dict[str, int]]:
        """Per component that reported, counters summed over workers."""
        return {c.name: c.counters() for c in self.snapshot().components if c.workers}

    def all_spouts_exhausted(self) -> bool:
        totals = self.totals()
        return bool(self.spouts) and all(
            name in totals
            and totals[name]["exhausted_tasks"] == self.spout_tasks[name]
            and totals[name]["pending"] == 0
            for name in self.spouts
        )

    def drained(self) -> bool:
        return self.backlog() == (0, 0)

    def backlog(self) -> tuple[int, int]:
        """(tuple trees pending at the spouts, tuples queued anywhere) as last reported.
        Queued includes the task messages a send thread holds and those the workers
        sent each other and have not yet received: a first batch waits for its
        connection to be made, in no queue, and acking off nothing else says it is
        coming."""
        totals = self.totals()
        pending = sum(t["pending"] for t in totals.values())
        queued = sum(t["queued"] for t in totals.values()) + self._held_by_send_threads() + self.in_transit()
        return pending, queued

    def _held_by_send_threads(self) -> int:
        """Task messages in the workers' transfer queues or being sent."""
        return sum(r.get("transfer_queued", 0) + r.get("sending", 0) for r in self.latest.values())

    def waited_for(self) -> str:
        """Which components a drain waits for, as last reported: the spouts whose
        trees are pending, the components with tuples queued, and, when trees are
        pending with nothing queued, that some bolt holds their tuples unacked (the
        totals alone did not say which component a drain of 30 s waited for)."""
        totals = self.totals()
        pending = [f"{name} {t['pending']:,}" for name, t in sorted(totals.items()) if t["pending"]]
        queued = [f"{name} {t['queued']:,}" for name, t in sorted(totals.items()) if t["queued"]]
        # what is in transit after a reconnect is lost, and `undrained` says so
        between = self._held_by_send_threads() + (0 if self.reconnects() else self.in_transit())
        parts = []
        if pending:
            parts.append(f"trees pending at {', '.join(pending)}")
        if queued:
            parts.append(f"tuples queued for {', '.join(queued)}")
        if between > 0:
            parts.append(f"{between:,} tuple(s) on their way between workers")
        if pending and not queued and between <= 0:
            parts.append("none queued: a bolt holds their tuples without acking them (auto_ack "
                         "off, or a BatchingBolt waiting for its tick), or a tree lost a tuple, "
                         "which its timeout fails")
        return "; ".join(parts)

    def undrained(self, waited: float) -> str | None:
        """What a drain that ends after `waited` seconds leaves behind, in words;
        None when nothing. Messages still in transit after a connection was made
        again are said to be lost with it, not queued."""
        pending, queued = self.backlog()
        if not (pending or queued):
            return None
        in_transit, reconnects = self.in_transit(), self.reconnects()
        lost = ""
        if in_transit and reconnects:  # not queued anywhere: gone with a connection
            lost = (f" ({in_transit:,} of the tuples were sent to another worker over a "
                    f"connection that dropped and was made again, {reconnects} time(s): "
                    "they never arrived, and their tuple trees, if tracked, timed out)")
        where = self.waited_for()
        return (f"stopping with {pending:,} tuple tree(s) pending and {queued:,} tuple(s) "
                f"queued after draining {waited:.0f} s: they were neither acked nor failed{lost}"
                f"{f' ({where})' if where else ''}")

    def in_transit(self) -> int:
        """Task messages the workers sent each other and have not received, as last
        reported (never negative: a stranger's refused messages count as received)."""
        reports = self.latest.values()
        return max(0, sum(r.get("remote_sent", 0) for r in reports)
                   - sum(r.get("remote_received", 0) for r in reports))

    def reconnects(self) -> int:
        """Connections to peers made again during the run, summed over the workers:
        what a connection held when it dropped never arrives, and stays in
        `in_transit` for good."""
        return sum(peer.get("reconnects", 0) for r in self.latest.values()
                   for peer in (r.get("peers") or {}).values() if isinstance(peer, dict))

    def percentile(self, fraction: float) -> float | None:
        """The latency below which `fraction` of the run's trees completed, the kept
        samples weighed by the trees they stand for (`_keep_latencies`)."""
        if not self._latencies:
            return None
        threshold = self._threshold
        ordered = sorted((sample, max(weight, threshold)) for _, sample, weight in self._latencies)
        wanted = fraction * sum(weight for _, weight in ordered)
        below = 0.0
        for sample, weight in ordered:
            below += weight
            if below > wanted:
                return sample
        return ordered[-1][0]

    def _samples_said(self) -> str:
        seen, kept = self.latency_samples_seen, len(self._latencies)
        if seen <= kept:
            return f"{kept:,} samples"
        return f"{kept:,} samples standing for the {seen:,} tuple trees completed over the run"

    def progress_line(self, now: float) -> str:
        totals = self.totals()
        counts = {name: t["emitted"] if name in self.spouts else t["executed"] for name, t in totals.items()}
        rates: dict[str, float] = {}
        if self._last_progress is not None:
            then, previous = self._last_progress
            span = max(now - then, 1e-9)
            rates = {name: (counts[name] - previous.get(name, 0)) / span for name in counts}
        self._last_progress = (now, counts)
        elapsed = now - (self.started_at or now)
        parts = []
        for name in self.spouts + self.bolts:
            t = totals.get(name)
            if t is None:
                continue
            verb = "emitted" if name in self.spouts else "executed"
            rate = f" ({_human(rates[name])}/s)" if name in rates else ""
            extra = ""
            if name in self.spouts:
                extra = f", {_human(t['acked'])} acked, {_human(t['failed'])} failed"
                if t["pending"]:
                    extra += f", {_human(t['pending'])} pending"
            parts.append(f"{name}: {_human(counts[name])} {verb}{rate}{extra}")
        return f"[{elapsed:5.0f}s] " + " | ".join(parts)

    def summary(self, reason: str) -> str:
        """The run's last words. Its avg/s is over the time the spouts were active
        (from when the workers were ready to the stop's deactivation; idle time
        included): the drain and the workers' stop, which the whole time includes,
        made it 787 where the spout emitted 945 a second (a metrics audit). The
        progress lines give the rates as they went."""
        totals = self.totals()
        end = self.stopped_at or time.monotonic()
        elapsed = max(end - (self.started_at or 0), 1e-9)
        active = max(min(self.deactivated_at or end, end) - (self.started_at or 0), 1e-9)
        lines = [f"{self.topology} stopped after {elapsed:.1f} s: {reason}"]
        if elapsed - active >= 0.05:
            lines[0] += f" (spouts active {active:.1f} s: avg/s is per active second)"
        header = f"  {'component':<24} {'emitted':>12} {'executed':>12} {'acked':>12} {'failed':>9} {'avg/s':>10}"
        lines.append(header)
        for name in self.spouts + self.bolts + [ACKER]:
            t = totals.get(name)
            if t is None:
                continue
            main = t["emitted"] if name in self.spouts else t["executed"]
            lines.append(
                f"  {name:<24} {t['emitted']:>12,} {t['executed']:>12,} {t['acked']:>12,} "
                f"{t['failed']:>9,} {main / active:>10,.0f}"
            )
        p50, p99, p999 = self.percentile(0.5), self.percentile(0.99), self.percentile(0.999)
        if p50 is not None:
            lines.append(
                f"  complete latency: p50 {p50:.2f} ms, p99 {p99:.2f} ms, p99.9 {p999:.2f} ms "
                f"({self._samples_said()})"
            )
        refused: dict[str, int] = {}
        for report in self.latest.values():
            for kind, n in report.get("refused", {}).items():
                refused[kind] = refused.get(kind, 0) + n
            for key, n in report.get("transport", {}).items():  # refused by the transport
                if key.startswith("refused_") and n:
                    kind = key[len("refused_"):]
                    refused[kind] = refused.get(kind, 0) + n
        malformed = sum(t["malformed"] for t in totals.values())
        if refused or malformed:
            lines.append(f"  dropped input: {refused}, malformed tuples: {malformed}")
        reported = {name: t["errors_reported"] for name, t in totals.items() if t["errors_reported"]}
        if reported:  # raise_exception, or exit_on_exception off: the run went on
            counts = ", ".join(f"{name} {n:,}" for name, n in reported.items())
            lines.append(f"  errors reported: {counts} (tracebacks in the log above, up to "
                         "topology.max.error.report.per.interval a task per interval)")
        return "\n".join(lines)


def _human(value: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.1f}{unit}"
    return f"{value:.0f}"
