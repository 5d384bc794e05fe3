from testparts.components import CellKeySpout, SinkBolt

from storm_zmq import Topology


class CellKeys(Topology):
    config = {"topology.kryo.register": ["testparts.components.Cell"]}
    values = CellKeySpout.spec()
    sink = SinkBolt.spec(inputs=[values], par=2)
