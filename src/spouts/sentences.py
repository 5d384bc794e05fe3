"""Sentences from a small public-domain text, emitted reliably, forever."""

import itertools

from storm_zmq import Spout

# The opening of "A Tale of Two Cities" (Charles Dickens, 1859; public domain).
TEXT = """It was the best of times, it was the worst of times, it was the age of wisdom,
it was the age of foolishness, it was the epoch of belief, it was the epoch of incredulity,
it was the season of Light, it was the season of Darkness, it was the spring of hope,
it was the winter of despair, we had everything before us, we had nothing before us,
we were all going direct to Heaven, we were all going direct the other way"""


class SentenceSpout(Spout):
    outputs = ["sentence"]

    def initialize(self, storm_conf, context):
        self.sentences = itertools.cycle(line.strip() for line in TEXT.splitlines())
        self.ids = itertools.count()

    def next_tuple(self):
        self.emit([next(self.sentences)], tup_id=next(self.ids))
