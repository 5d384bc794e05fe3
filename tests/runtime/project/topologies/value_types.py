from testparts.components import NumberSpout, TypedBolt, TypedSinkBolt

from storm_zmq import Grouping, Topology


class ValueTypes(Topology):
    config = {"topology.kryo.register": [
        "testparts.components.Side",
        "testparts.components.Point",
        {"testparts.components.Money": "testparts.components.MoneySerializer"},
    ]}
    numbers = NumberSpout.spec()
    typed = TypedBolt.spec(inputs=[numbers], par=2)
    sink = TypedSinkBolt.spec(inputs={typed: Grouping.fields("day", "side")}, par=2)
