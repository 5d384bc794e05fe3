"""Throughput against latency (Storm's loadgen idea): the word count fed by a spout
at a fixed offered rate, so that complete latency can be measured below saturation.

The offered rate is ``loadgen.rate`` in words per second (default 10,000; 0 = as
fast as the topology takes it), split over the spout's tasks; sentences are those of
the word count (`spouts.sentences`), each emitted with a tup_id, so that with
acking on the run's summary shows complete latency p50/p99/p99.9:

    storm-zmq run topologies/throughput_vs_latency.py -t 20 -w 2 -o loadgen.rate=50000

Split and count are the word count's own bolts with the same parallelism and
`topology.max.spout.pending` as topologies/wordcount.py, so the work per word is the
same; scripts/bench_topology.py runs it at half of the word count's measured maximum.
The summary's latency is Storm's (from the emit); the benchmark's counts from when
each sentence was due (`spouts.loadgen`, ``loadgen.latency.dir``).
"""

from bolts.wordcount import SplitSentenceBolt, WordCountBolt
from spouts.loadgen import DEFAULT_RATE, RATE_KEY, LoadGenSpout
from storm_zmq import Grouping, Topology


class ThroughputVsLatency(Topology):
    config = {RATE_KEY: DEFAULT_RATE, "topology.max.spout.pending": 1000}
    sentence_spout = LoadGenSpout.spec(par=1)
    split_bolt = SplitSentenceBolt.spec(inputs=[sentence_spout], par=2)
    count_bolt = WordCountBolt.spec(inputs={split_bolt: Grouping.fields("word")}, par=2)
