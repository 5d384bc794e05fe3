from testparts.components import InterleavingBolt, NumberSpout, OrderSinkBolt

from storm_zmq import Grouping, Topology


class StreamOrder(Topology):
    numbers = NumberSpout.spec()
    relay = InterleavingBolt.spec(inputs=[numbers], par=2)
    sink = OrderSinkBolt.spec(inputs={relay["a"]: Grouping.GLOBAL, relay["b"]: Grouping.GLOBAL})
