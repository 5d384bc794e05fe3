"""A spout at a fixed offered rate: Storm's loadgen idea on the word count's sentences.

`LoadGenSpout` emits the sentences of `spouts.sentences` (cycled, the same text as
the word count) so that the words emitted track ``loadgen.rate`` words per second
(topology config; ``-o loadgen.rate=50000``). The rate is split evenly over the
spout's tasks. Each `next_tuple` call emits the sentences that are due by
`time.monotonic()`, at most ``loadgen.burst`` of them (a late spout catches up in
bursts); when none is due it emits nothing, and the executor waits for its input
for a millisecond (Storm's spout wait strategy): the spout never spins a core.

Every sentence carries a `tup_id`, so with acking on each one is tracked and the
spout's complete latency (emit to the ack of its whole tuple tree) is measured.
A rate of 0 means no pacing: as fast as the topology takes it.

That complete latency starts at the emit, as Storm's does, so it leaves out how
late the spout was called: a sentence due at t but emitted at t + 3 ms, after the
spout's wait and the bolts' turns, hides those 3 ms (coordinated omission). With
``loadgen.latency.dir`` set, each task also measures every ack from the moment its
sentence was due, as Storm's own loadgen does, and appends them to
``latency-<task>.bin`` there every half second (scripts/bench_topology.py judges
the latency target on these; it gives each run a new directory, as files are
appended to): per ack three native doubles, its time
(`time.monotonic`), the ms since it was due and the ms its emit was late. Raw
doubles because the writing runs in the spout's turn, holding up the worker's
other executors: a JSON line of a half second's acks took 5 ms, enough to move
the p99 it measures; the array's `tofile` takes 0.1 ms.
"""

import itertools
import time
from array import array
from pathlib import Path

from spouts.sentences import TEXT
from storm_zmq import Spout

#: Topology config keys read by the spout, with their defaults.
RATE_KEY = "loadgen.rate"  # offered words/s over all tasks of the spout; 0 = unpaced
BURST_KEY = "loadgen.burst"  # most sentences emitted per next_tuple() call
LATENCY_DIR_KEY = "loadgen.latency.dir"  # where each task writes its acks' latencies
DEFAULT_RATE = 10_000
DEFAULT_BURST = 100
#: How often a task appends what it measured to its latency file.
LATENCY_WRITE_SECS = 0.5

SENTENCES = [line.strip() for line in TEXT.splitlines()]


class LoadGenSpout(Spout):
    outputs = ["sentence"]

    def initialize(self, storm_conf, context):
        own = context["componentid"]
        tasks = sum(1 for c in context["task->component"].values() if c == own)
        rate = float(storm_conf.get(RATE_KEY, DEFAULT_RATE) or 0)
        self.rate = rate / tasks  # words/s of this task
        self.burst = max(1, int(storm_conf.get(BURST_KEY, DEFAULT_BURST)))
        self.sentences = itertools.cycle([(s, len(s.split())) for s in SENTENCES])
        self.ids = itertools.count()
        self.words = 0  # words emitted since activation
        self.started = None
        directory = storm_conf.get(LATENCY_DIR_KEY)
        self.latency_file = Path(directory) / f"latency-{context['taskid']}.bin" if directory else None
        # with a latency file: tup_id -> (when it was due, when it was emitted), for
        # the tuples in flight (at most topology.max.spout.pending of them, if set;
        # else as many as the message timeout lets be in flight)
        self.in_flight = {}
        self.acks = array("d")  # per ack: its time, ms since due, ms the emit was late
        self.next_write = 0.0

    def activate(self):
        # Pacing starts when the topology does; a re-activation starts afresh.
        self.started = time.monotonic()
        self.words = 0

    def next_tuple(self):
        if self.started is None:
            self.activate()
        if self.rate > 0:
            due = (time.monotonic() - self.started) * self.rate
            if self.words >= due:
                return  # nothing due yet: the executor waits, no spinning
        sentences, emit, ids = self.sentences, self.emit, self.ids
        timed = self.latency_file is not None
        for _ in range(self.burst):
            sentence, words = next(sentences)
            tup_id = next(ids)
            if timed:
                now = time.monotonic()
                due_at = self.started + self.words / self.rate if self.rate > 0 else now
                self.in_flight[tup_id] = (due_at, now)
            emit([sentence], tup_id=tup_id)
            self.words += words
            if self.rate > 0 and self.words >= due:
                return

    def ack(self, tup_id):
        times = self.in_flight.pop(tup_id, None)
        if times is None:
            return
        now = time.monotonic()
        due_at, emitted_at = times
        self.acks.extend((now, (now - due_at) * 1000, (emitted_at - due_at) * 1000))
        if now >= self.next_write:
            self.write_latencies(now)

    def fail(self, tup_id):
        self.in_flight.pop(tup_id, None)

    def deactivate(self):
        self.write_latencies(time.monotonic())

    def cleanup(self):
        self.write_latencies(time.monotonic())

    def write_latencies(self, now):
        """Append the acks measured since the last write to the latency file."""
        self.next_write = now + LATENCY_WRITE_SECS
        if self.latency_file is None or not self.acks:
            return
        with self.latency_file.open("ab") as out:
            self.acks.tofile(out)
        self.acks = array("d")
