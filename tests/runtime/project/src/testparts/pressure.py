"""Components for the backpressure tests (tests/runtime/test_backpressure_run.py)."""
from __future__ import annotations

import json
import os
import time

from storm_zmq import Bolt, Spout, Stream


class FloodSpout(Spout):
    """Emits (i,) untracked (acking off), starting `test.start_after` seconds after
    activation: as fast as it may, or at most `test.rate` tuples a second."""

    outputs = ["id"]

    def initialize(self, conf, ctx):
        self.i = 0
        self.start_at = time.monotonic() + float(conf.get("test.start_after", 0))
        self.rate = float(conf.get("test.rate", 0))

    def next_tuple(self):
        now = time.monotonic()
        if now < self.start_at:
            return
        due = 100 if not self.rate else min(100, int((now - self.start_at) * self.rate) - self.i)
        for _ in range(due):
            self.emit([self.i])
            self.i += 1


class SleepyBolt(Bolt):
    """`test.sleep_ms` per tuple: far slower than a FloodSpout."""

    outputs = []

    def initialize(self, conf, ctx):
        self.sleep = float(conf.get("test.sleep_ms", 2)) / 1000

    def process(self, tup):
        time.sleep(self.sleep)


class DropBolt(Bolt):
    outputs = []

    def process(self, tup):
        pass


class BounceBolt(Bolt):
    """One end of a cycle: (id, hops) with hops > 0 goes round again, odd hops to
    itself ("again"), even hops to the relay ("loop"); hops == 0 goes to the sink."""

    outputs = [Stream(["id", "hops"]), Stream(["id", "hops"], name="loop"),
               Stream(["id", "hops"], name="again")]

    def process(self, tup):
        i = tup.values[0]
        hops = 6 if tup.component == "numbers" else tup.values[1]  # the spout's is (id, text)
        if hops == 0:
            self.emit([i, 0], anchors=[tup])
        elif hops % 2:
            self.emit([i, hops - 1], stream="again", anchors=[tup])
        else:
            self.emit([i, hops - 1], stream="loop", anchors=[tup])


class RelayBolt(Bolt):
    """The other end of the cycle: straight back to the bounce bolt."""

    outputs = [Stream(["id", "hops"], name="back")]

    def process(self, tup):
        self.emit([tup.values[0], tup.values[1]], stream="back", anchors=[tup])


class OneSlowTaskBolt(Bolt):
    """Sleeps `test.sleep_ms` per tuple in the component's lowest task only; every
    task writes how many tuples it ran to `test.output_dir` at cleanup."""

    outputs = []

    def initialize(self, conf, ctx):
        self.conf, self.task, self.count = conf, ctx["taskid"], 0
        self.port = ctx["worker.port"]
        tasks = sorted(int(t) for t, c in ctx["task->component"].items() if c == ctx["componentid"])
        self.sleep = float(conf.get("test.sleep_ms", 1)) / 1000 if self.task == tasks[0] else 0.0

    def process(self, tup):
        self.count += 1
        if self.sleep:
            time.sleep(self.sleep)

    def cleanup(self):
        path = os.path.join(self.conf["test.output_dir"], f"ran-{self.task}.json")
        with open(path, "w") as out:
            json.dump({"task": self.task, "slow": bool(self.sleep), "ran": self.count,
                       "port": self.port}, out)


class BurnBolt(Bolt):
    """Keeps the interpreter busy for `test.burn_ms` a tuple: behind a FloodSpout,
    a worker short of CPU with a full queue."""

    outputs = []

    def initialize(self, conf, ctx):
        self.burn = float(conf.get("test.burn_ms", 1)) / 1000

    def process(self, tup):
        end = time.perf_counter() + self.burn
        while time.perf_counter() < end:
            pass
