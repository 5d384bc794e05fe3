from testparts.components import NumberSpout, TypedBolt, TypedSinkBolt

from storm_zmq import Grouping, Topology


class ValueTypes(Topology):
    numbers = NumberSpout.spec()
    typed = TypedBolt.spec(inputs=[numbers], par=2)
    sink = TypedSinkBolt.spec(inputs={typed: Grouping.fields("day")}, par=2)
