from testparts.components import CountBolt, NumberSpout, SplitBolt

from storm_zmq import Grouping, Topology


class FiniteWordCount(Topology):
    sentences = NumberSpout.spec()
    split = SplitBolt.spec(inputs=[sentences], par=2)
    count = CountBolt.spec(inputs={split: Grouping.fields("word")}, par=3)
