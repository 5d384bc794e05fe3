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
"""

import itertools
import time

from spouts.sentences import TEXT
from storm_zmq import Spout

#: Topology config keys read by the spout, with their defaults.
RATE_KEY = "loadgen.rate"  # offered words/s over all tasks of the spout; 0 = unpaced
BURST_KEY = "loadgen.burst"  # most sentences emitted per next_tuple() call
DEFAULT_RATE = 10_000
DEFAULT_BURST = 100

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
        for _ in range(self.burst):
            sentence, words = next(sentences)
            emit([sentence], tup_id=next(ids))
            self.words += words
            if self.rate > 0 and self.words >= due:
                return
