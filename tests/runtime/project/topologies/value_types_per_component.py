from testparts.components import NumberSpout, TypedBolt, TypedSinkBolt

from storm_zmq import Grouping, Topology


class ValueTypesPerComponent(Topology):
    """value_types.py's registrations, made by the components that need them (Storm
    adds a component's to the topology's), the topology's own last."""

    config = {"topology.kryo.register": ["testparts.components.Side"]}
    numbers = NumberSpout.spec()
    typed = TypedBolt.spec(inputs=[numbers], par=2, config={"topology.kryo.register": [
        "testparts.components.Point",
        {"testparts.components.Money": "testparts.components.MoneySerializer"},
    ]})
    sink = TypedSinkBolt.spec(inputs={typed: Grouping.fields("day", "side")}, par=2,
                              config={"topology.kryo.register": ["testparts.components.Side"]})
