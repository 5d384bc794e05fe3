"""A deliberately slow bolt, for checking that a slow consumer bounds memory."""

import time

from storm_zmq import Bolt

#: Topology config key: seconds `SlowBolt` spends on each tuple (sleeping, so the
#: rest of the worker keeps the CPU and the producers run at full speed).
DELAY_KEY = "slow.bolt.delay.secs"
DEFAULT_DELAY = 0.002


class SlowBolt(Bolt):
    """Takes ``slow.bolt.delay.secs`` per input tuple and emits nothing."""

    outputs = []

    def initialize(self, conf, ctx):
        self.delay = float(conf.get(DELAY_KEY, DEFAULT_DELAY))

    def process(self, tup):
        time.sleep(self.delay)
