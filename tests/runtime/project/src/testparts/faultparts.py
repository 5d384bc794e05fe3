"""Components for the fault and bad-input tests (tests/cli/test_bad_input.py)."""
from __future__ import annotations

import signal
import time

from storm_zmq import Bolt


class InitFailBolt(Bolt):
    """Raises in initialize() on one of its tasks only, so that the other worker
    starts fine: a run that is half started when the failure shows."""

    outputs = []

    def initialize(self, conf, ctx):
        tasks = sorted(int(t) for t, c in ctx["task->component"].items() if c == ctx["componentid"])
        if ctx["taskid"] == tasks[-1]:
            if conf.get("test.init_failure") == "signal":  # as pystorm's own process could
                signal.signal(signal.SIGTERM, lambda signum, frame: None)
            raise RuntimeError("initialize failed on purpose")

    def process(self, tup):
        pass


class SlowInitBolt(Bolt):
    """Takes `test.init_sleep_secs` in initialize() on one of its tasks only, as a
    component that starts Spark or connects to a slow service does."""

    outputs = []

    def initialize(self, conf, ctx):
        tasks = sorted(int(t) for t, c in ctx["task->component"].items() if c == ctx["componentid"])
        if ctx["taskid"] == tasks[-1]:
            time.sleep(float(conf["test.init_sleep_secs"]))

    def process(self, tup):
        pass


class QuickBolt(Bolt):
    """Initializes at once and does nothing: starts after a SlowInitBolt."""

    outputs = []

    def process(self, tup):
        pass
