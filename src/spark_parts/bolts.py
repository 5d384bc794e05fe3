"""Split lines into words (failing some lines once, on purpose), count words."""

from __future__ import annotations

import json
import os
from collections import Counter

from storm_zmq import Bolt


class SplitLinesBolt(Bolt):
    """Emits each word of a line, anchored to it. With ``spark_wordcount.fail_every``
    = k > 0, fails the first sight of every line whose id is a multiple of k, so
    that the spout must replay it (lines are grouped by id: a replay comes back
    here, where it was seen). Records what it failed in
    ``<spark_wordcount.output>.split-<task>.json``."""

    outputs = ["word"]
    auto_ack = False

    def initialize(self, conf, ctx):
        self.output = conf.get("spark_wordcount.output")
        self.task = ctx["taskid"]
        self.fail_every = int(conf.get("spark_wordcount.fail_every") or 0)
        self.failed_ids = set()
        self.lines = 0

    def process(self, tup):
        ident, line = tup.values.id, tup.values.line
        if self.fail_every and ident % self.fail_every == 0 and ident not in self.failed_ids:
            self.failed_ids.add(ident)
            self.fail(tup)
            return
        self.lines += 1
        for word in line.split():
            self.emit([word], anchors=[tup])
        self.ack(tup)

    def cleanup(self):
        if self.output:
            with open(f"{self.output}.split-{self.task}.json", "w") as out:
                json.dump({"failed": len(self.failed_ids), "lines": self.lines}, out)


class CountWordsBolt(Bolt):
    """Counts words; writes the final counts as JSON to ``spark_wordcount.output``
    in cleanup() (one task: the whole count)."""

    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        self.output = conf.get("spark_wordcount.output")
        self.counts = Counter()

    def process(self, tup):
        self.counts[tup.values.word] += 1

    def cleanup(self):
        if self.output:
            os.makedirs(os.path.dirname(os.path.abspath(self.output)), exist_ok=True)
            with open(self.output, "w") as out:
                json.dump(dict(sorted(self.counts.items())), out, indent=0)
            self.logger.info("wrote %d words (%d in all) to %s", len(self.counts),
                             sum(self.counts.values()), self.output)
