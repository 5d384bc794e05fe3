"""A slow consumer behind a fast producer: does memory stay bounded?

A `LoadGenSpout` offering ``loadgen.rate`` words/s (default 1,700,000, i.e. 100,000
sentences/s: 100 x what the bolts take, far more than the spout can emit) feeds two
`SlowBolt` tasks that take ``slow.bolt.delay.secs`` (2 ms) per sentence, 1,000
sentences/s together, shuffled over the workers so that with two workers half of the
tuples cross the transport. Run it with acking off, where only the bounded queues
(executor receive queues, the transfer queue, the transport's high-water marks or
socket buffers) hold the spout back; every worker's RSS must level off:

    storm-zmq run topologies/slow_consumer.py -t 30 -w 2 -o topology.acker.executors=0

scripts/bench_topology.py --slow-bolt samples the workers' RSS over such a run.
"""

from bolts.loadgen import DELAY_KEY, SlowBolt
from spouts.loadgen import RATE_KEY, LoadGenSpout
from storm_zmq import Topology


class SlowConsumer(Topology):
    config = {RATE_KEY: 1_700_000, DELAY_KEY: 0.002}
    sentence_spout = LoadGenSpout.spec(par=1)
    slow_bolt = SlowBolt.spec(inputs=[sentence_spout], par=2)
