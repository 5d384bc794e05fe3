from testparts.components import NumberSpout, SinkBolt

from storm_zmq import Grouping, Topology


class Invalid(Topology):
    numbers = NumberSpout.spec()
    sink = SinkBolt.spec(inputs={numbers: Grouping.fields("number")})
