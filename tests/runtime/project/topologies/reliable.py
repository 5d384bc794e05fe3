from testparts.components import FlakyBolt, NumberSpout, SinkBolt

from storm_zmq import Grouping, Topology


class Reliable(Topology):
    numbers = NumberSpout.spec(par=2)
    flaky = FlakyBolt.spec(inputs={numbers: Grouping.fields("id")}, par=2)
    sink = SinkBolt.spec(inputs=[flaky], par=2)
