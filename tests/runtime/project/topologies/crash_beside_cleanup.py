from testparts.components import CleanupBolt, CrashBolt, NumberSpout

from storm_zmq import Topology


class CrashBesideCleanup(Topology):
    """The crash bolt fails at id 5; a cleaner in every worker (par 2), so that a
    worker that survives the crash has a cleanup() to run as the run stops."""

    numbers = NumberSpout.spec()
    crash = CrashBolt.spec(inputs=[numbers])
    cleaner = CleanupBolt.spec(inputs=[numbers], par=2)
