"""Split sentences into words; count words."""

from collections import Counter

from storm_zmq import Bolt


class SplitSentenceBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup.values.sentence.split():
            self.emit([word.strip(",.").lower()])


class WordCountBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        self.counts = Counter()

    def process(self, tup):
        word = tup.values.word
        self.counts[word] += 1
        self.emit([word, self.counts[word]])
