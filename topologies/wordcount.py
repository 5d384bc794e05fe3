"""Word count, the streamparse quickstart topology: sentences are split into words,
words are counted by a fields grouping so that one task owns each word.

    storm-zmq run topologies/wordcount.py -t 20 -w 2
"""

from bolts.wordcount import SplitSentenceBolt, WordCountBolt
from spouts.sentences import SentenceSpout
from storm_zmq import Grouping, Topology


class WordCount(Topology):
    config = {"topology.max.spout.pending": 1000}
    sentence_spout = SentenceSpout.spec(par=1)
    split_bolt = SplitSentenceBolt.spec(inputs=[sentence_spout], par=2)
    count_bolt = WordCountBolt.spec(inputs={split_bolt: Grouping.fields("word")}, par=2)
