"""Components that emit, ack and fail from threads of their own, as pystorm allowed
(tests/runtime/test_local_mode.py: test_emits_and_acks_from_a_components_own_threads...)."""

from __future__ import annotations

import queue
import threading
from collections import Counter

from storm_zmq import Bolt, Spout, Stream
from testparts.components import write_output


class ThreadSpout(Spout):
    """A thread of its own emits ids 0..test.count-1, tracked; ends once all are acked."""

    outputs = ["id"]

    def initialize(self, conf, ctx):
        self.conf = conf
        self.count = conf["test.count"]
        self.acked = set()
        self.failed = 0
        self.sent = 0
        self.reported = False
        threading.Thread(target=self._emit_all, name="spout-own-thread", daemon=True).start()

    def _emit_all(self):
        for i in range(self.count):
            self.emit([i], tup_id=i)
            self.sent += 1

    def next_tuple(self):
        if len(self.acked) == self.count and not self.reported:
            self.reported = True
            self.report_exhausted()

    def ack(self, tup_id):
        self.acked.add(tup_id)

    def fail(self, tup_id):
        self.failed += 1
        self.emit([tup_id], tup_id=tup_id)  # replayed (in the executor's thread)

    def cleanup(self):
        write_output(self.conf, "threadspout.json", {"acked": len(self.acked), "failed": self.failed})


class AsyncRelayBolt(Bolt):
    """pystorm's async bolt: `process` hands each input to a worker thread, which
    emits it anchored and acks it; `process` itself emits a copy on 'inline' at the
    same time, and the thread emits test.count more values, unanchored, on 'extra'
    (so both threads emit at once, every run)."""

    auto_ack = False
    outputs = [Stream(["id"]), Stream(["id"], name="inline"), Stream(["id"], name="extra")]

    def initialize(self, conf, ctx):
        self.count = conf["test.count"]
        self.inbox = queue.Queue()
        threading.Thread(target=self._relay, name="relay-own-thread", daemon=True).start()

    def process(self, tup):
        self.emit([tup.values.id], stream="inline")
        self.inbox.put(tup)

    def _relay(self):
        extra = iter(range(self.count))
        while True:
            tup = self.inbox.get()
            self.emit([tup.values.id], anchors=[tup])
            self.ack(tup)
            for i in [next(extra, None) for _ in range(3)]:
                if i is not None:
                    self.emit([i], stream="extra")


class StreamCountSink(Bolt):
    """Counts each id per stream; writes them in cleanup."""

    outputs = []

    def initialize(self, conf, ctx):
        self.conf = conf
        self.task = ctx["taskid"]
        self.seen = {"default": Counter(), "inline": Counter(), "extra": Counter()}

    def process(self, tup):
        self.seen[tup.stream][tup.values[0]] += 1

    def cleanup(self):
        write_output(self.conf, f"streamcount-{self.task}.json",
                     {stream: dict(counts) for stream, counts in self.seen.items()})
