from testparts.threadparts import AsyncRelayBolt, StreamCountSink, ThreadSpout

from storm_zmq import Grouping, Topology


class ThreadEmits(Topology):
    numbers = ThreadSpout.spec()
    relay = AsyncRelayBolt.spec(inputs=[numbers])
    sink = StreamCountSink.spec(
        inputs={relay: Grouping.SHUFFLE, relay["inline"]: Grouping.SHUFFLE,
                relay["extra"]: Grouping.SHUFFLE},
        par=2)
