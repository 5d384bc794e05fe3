from testparts.components import CleanupBolt, NumberSpout, SinkBolt

from storm_zmq import Topology


class Cleanup(Topology):
    numbers = NumberSpout.spec()
    cleaner = CleanupBolt.spec(inputs=[numbers])
    sink = SinkBolt.spec(inputs=[cleaner])
