"""Components written as streamparse's examples write those with state of their
own: an ``__init__`` without arguments that calls ``super().__init__()`` (streamparse
makes each component with ``cls()``), keeping its things in attributes whose names
pystorm leaves free, ``_collector`` among them."""

from __future__ import annotations

from collections import Counter

from storm_zmq import Bolt
from testparts.components import NumberSpout, write_output


class PlainInitSpout(NumberSpout):
    def __init__(self):
        super().__init__()
        self._collector = Counter()  # the spout's own: acks counted

    def ack(self, tup_id):
        self._collector["acked"] += 1
        super().ack(tup_id)

    def cleanup(self):
        super().cleanup()
        write_output(self.conf, f"plain-spout-{self.task}.json", dict(self._collector))


class PlainInitBolt(Bolt):
    outputs = ["id"]

    def __init__(self):
        super().__init__()
        self._collector = []  # the bolt's own: the ids it saw

    def initialize(self, conf, ctx):
        self.conf, self.task = conf, ctx["taskid"]

    def process(self, tup):
        self._collector.append(tup.values.id)
        self.emit([tup.values.id])

    def cleanup(self):
        write_output(self.conf, f"plain-bolt-{self.task}.json", self._collector)
