from testparts.components import AppendSinkBolt, NumberSpout, RelayBolt

from storm_zmq import Grouping, Topology


class ClusterIds(Topology):
    numbers = NumberSpout.spec(par=2)
    relay = RelayBolt.spec(inputs={numbers: Grouping.fields("id")}, par=2)
    sink = AppendSinkBolt.spec(inputs=[relay], par=2)
