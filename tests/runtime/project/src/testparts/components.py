from __future__ import annotations

import dataclasses
import enum
import json
import os
import signal
import sys
import time
from collections import Counter

from storm_zmq import BatchingBolt, Bolt, Spout, Stream

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "a stitch in time saves nine",
    "all that glitters is not gold",
    "the early bird catches the worm",
]


def write_output(conf, name: str, data) -> None:
    with open(os.path.join(conf["test.output_dir"], name), "w") as out:
        json.dump(data, out)


class NumberSpout(Spout):
    """Emits ids 0..test.count-1 once each, with the id as tup_id; re-emits failed
    ids; reports exhausted once everything was acked, and once the file
    test.exhausted_after exists when that is set (so that a test can keep the run going
    until what it does beside it is done). With test.text.bytes, each id's text is that
    many characters (so that a few tuples fill a buffer)."""

    outputs = ["id", "text"]

    def initialize(self, conf, ctx):
        self.conf = conf
        self.task = ctx["taskid"]
        tasks = sorted(int(t) for t, c in ctx["task->component"].items() if c == ctx["componentid"])
        # ids of this task: index, index + n, ... below test.count (lazily: a test may
        # ask for an endless supply)
        self.todo = iter(range(tasks.index(self.task), conf["test.count"], len(tasks)))
        self.acked = set()
        self.failures = 0
        self.outstanding = 0
        self.max_outstanding = 0
        self.replay = []
        self.reported = False
        self.drained_at = None  # time.time() when the last fresh id had been emitted
        # test.rate: ids per second per task, so that a test can act mid-run
        self.interval = 1.0 / conf["test.rate"] if conf.get("test.rate") else 0.0
        self.next_at = time.monotonic()
        size = conf.get("test.text.bytes")
        self.texts = [f"{s:<{size}}" for s in SENTENCES] if size else SENTENCES

    def next_tuple(self):
        if self.interval:
            now = time.monotonic()
            if now < self.next_at:
                return
            self.next_at = max(self.next_at + self.interval, now - 1.0)
        if self.replay:
            i = self.replay.pop()
        else:
            i = next(self.todo, None)
        if i is None:
            if self.drained_at is None:
                self.drained_at = time.time()
            if not self.outstanding and not self.reported and self._may_end():
                self.reported = True
                self.report_exhausted()
            return
        self.outstanding += 1
        self.max_outstanding = max(self.max_outstanding, self.outstanding)
        self.emit([i, self.texts[i % len(self.texts)]], tup_id=i)

    def _may_end(self):
        flag = self.conf.get("test.exhausted_after")
        return flag is None or os.path.exists(flag)

    def ack(self, tup_id):
        self.outstanding -= 1
        self.acked.add(tup_id)

    def fail(self, tup_id):
        self.outstanding -= 1
        self.failures += 1
        self.replay.append(tup_id)

    def cleanup(self):
        write_output(self.conf, f"spout-{self.task}.json", {
            "acked": sorted(self.acked), "failures": self.failures,
            "max_outstanding": self.max_outstanding, "drained_at": self.drained_at,
            "python": sys.implementation.name,  # which interpreter ran it (worker.python)
        })


class SplitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup.values.text.split():
            self.emit([word])


class CountBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        self.conf, self.task, self.counts = conf, ctx["taskid"], Counter()

    def process(self, tup):
        self.counts[tup.values.word] += 1

    def cleanup(self):
        write_output(self.conf, f"count-{self.task}.json", self.counts)


class FlakyBolt(Bolt):
    """Fails the first sight of every id divisible by 7, drops (never acks) the
    first sight of every id divisible by 11: replay by fail and by timeout."""

    outputs = ["id"]
    auto_ack = False

    def initialize(self, conf, ctx):
        self.seen = set()

    def process(self, tup):
        i = tup.values.id
        first = i not in self.seen
        self.seen.add(i)
        if first and i % 7 == 0:
            self.fail(tup)
            return
        if first and i % 11 == 0:
            return  # neither acked nor failed: the message timeout replays it
        self.emit([i], anchors=[tup])
        self.ack(tup)


class SinkBolt(Bolt):
    outputs = []

    def initialize(self, conf, ctx):
        self.conf, self.task, self.seen = conf, ctx["taskid"], []

    def process(self, tup):
        self.seen.append(tup.values[0])

    def cleanup(self):
        write_output(self.conf, f"sink-{self.task}.json", self.seen)


class TerminalEmitterBolt(Bolt):
    """Declares no outputs and emits anyway, as the terminal bolt of streamparse's
    kafka-jvm example does (Storm 1.x sent such emits to nobody)."""

    def initialize(self, conf, ctx):
        self.conf, self.task, self.seen = conf, ctx["taskid"], []

    def process(self, tup):
        self.seen.append(tup.values.id)
        self.emit([tup.values.id, len(self.seen)])

    def cleanup(self):
        write_output(self.conf, f"terminal-{self.task}.json", self.seen)


class WaitingSpout(Spout):
    """Its first `next_tuple` waits `test.block_secs` (a spout waiting for its first
    client), then it emits nothing more and reports exhausted."""

    outputs = ["id", "text"]

    def initialize(self, conf, ctx):
        self.conf, self.returned_at = conf, None

    def next_tuple(self):
        if self.returned_at is None:
            time.sleep(self.conf["test.block_secs"])
            self.returned_at = time.time()
            self.report_exhausted()

    def cleanup(self):
        write_output(self.conf, "waiting-spout.json", {"returned_at": self.returned_at})


class ClockedSinkBolt(Bolt):
    """Writes when (time.time()) each id arrived."""

    def initialize(self, conf, ctx):
        self.conf, self.task, self.arrived = conf, ctx["taskid"], {}

    def process(self, tup):
        self.arrived[tup.values.id] = time.time()

    def cleanup(self):
        write_output(self.conf, f"clocked-{self.task}.json", self.arrived)


class DocSpout(Spout):
    """Emits `test.count` dicts (and a tuple) with their id as tup_id, then changes
    each dict in place after its emit, as a spout reusing a buffer would."""

    outputs = ["doc", "pair"]

    def initialize(self, conf, ctx):
        self.todo, self.outstanding = iter(range(conf["test.count"])), 0

    def next_tuple(self):
        i = next(self.todo, None)
        if i is None:
            if not self.outstanding:
                self.report_exhausted()
            return
        doc = {"id": i, "tags": [i]}
        self.outstanding += 1
        self.emit([doc, (i, i)], tup_id=i)
        doc["changed_after_emit"] = True

    def ack(self, tup_id):
        self.outstanding -= 1


class EnrichingBolt(Bolt):
    """Changes its input in place, as streamparse bolts could (each had its own copy)."""

    def process(self, tup):
        tup.values.doc["enriched"] = True
        tup.values.doc["tags"].append(-1)


class AuditingBolt(Bolt):
    """Writes what its inputs looked like: changed by someone else, and the pair's type."""

    def initialize(self, conf, ctx):
        self.conf, self.task = conf, ctx["taskid"]
        self.seen, self.changed, self.pair_types = 0, [], set()

    def process(self, tup):
        doc = tup.values.doc
        self.seen += 1
        if set(doc) != {"id", "tags"} or doc["tags"] != [doc["id"]]:
            self.changed.append(doc)
        self.pair_types.add(type(tup.values.pair).__name__)

    def cleanup(self):
        write_output(self.conf, f"audit-{self.task}.json", {
            "seen": self.seen, "changed": self.changed[:5], "changed_count": len(self.changed),
            "pair_types": sorted(self.pair_types)})


class CrashBolt(Bolt):
    outputs = []

    def process(self, tup):
        if tup.values.id == 5:
            raise ZeroDivisionError("the bolt divided by zero on purpose")


class DyingBolt(Bolt):
    """Its worker process goes away at id 5, as test.death says: "exit0" (os._exit(0),
    no error anywhere) or "sigkill" (what the kernel's OOM killer does)."""

    outputs = []

    def initialize(self, conf, ctx):
        self.death = conf["test.death"]

    def process(self, tup):
        if tup.values.id == 5:
            if self.death == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(0)


class BurstSpout(Spout):
    """Emits test.count ids in its first next_tuple() (a file read whole, say), then
    reports exhausted."""

    outputs = ["id"]

    def initialize(self, conf, ctx):
        self.count, self.done = conf["test.count"], False

    def next_tuple(self):
        if not self.done:
            self.done = True
            for i in range(self.count):
                self.emit([i])
            self.report_exhausted()


class SetSpout(Spout):
    outputs = ["value"]

    def next_tuple(self):
        self.emit([{1, 2, 3}])


class TickBatchBolt(BatchingBolt):
    """Batches ids by parity; flushes on tick tuples."""

    outputs = ["id"]

    def initialize(self, conf, ctx):
        self.conf, self.task, self.batches = conf, ctx["taskid"], 0

    def group_key(self, tup):
        return tup.values.id % 2

    def process_batch(self, key, tups):
        self.batches += 1
        for tup in tups:
            self.emit([tup.values.id])

    def cleanup(self):
        write_output(self.conf, f"batches-{self.task}.json", self.batches)


class DirectSpout(NumberSpout):
    """Sends every id straight to one chosen task of the consumer (direct stream)."""

    outputs = [Stream(["id", "text"], name="default", direct=True)]

    def initialize(self, conf, ctx):
        super().initialize(conf, ctx)
        self.targets = sorted(int(t) for t, c in ctx["task->component"].items() if c == "chosen")

    def next_tuple(self):
        i = next(self.todo, None)
        if i is not None:
            self.emit([i, "x"], direct_task=self.targets[i % len(self.targets)])
        elif not self.reported:
            self.reported = True
            self.report_exhausted()


class TaskSinkBolt(SinkBolt):
    """Records (own task, id) so a test can check where each tuple went."""

    def process(self, tup):
        self.seen.append([self.task, tup.values[0]])


class RelayBolt(Bolt):
    """Passes ids on, anchored (auto_anchor) and acked (auto_ack)."""

    outputs = ["id"]

    def process(self, tup):
        self.emit([tup.values.id])


class SlowRelayBolt(Bolt):
    """Passes ids on after test.sleep_secs each: a bolt whose every tuple takes long."""

    outputs = ["id"]

    def initialize(self, conf, ctx):
        self.seconds = float(conf["test.sleep_secs"])

    def process(self, tup):
        time.sleep(self.seconds)  # the work this bolt stands for
        self.emit([tup.values.id])


class AppendSinkBolt(Bolt):
    """Appends each id to a file as it arrives: a SIGKILLed worker never runs
    cleanup(), and a test watching a running cluster needs to see progress."""

    outputs = []

    def initialize(self, conf, ctx):
        name = f"sink-{ctx['taskid']}-{os.getpid()}.log"
        self.out = open(os.path.join(conf["test.output_dir"], name), "a", buffering=1)

    def process(self, tup):
        self.out.write(f"{tup.values[0]}\n")


class BigValueSpout(Spout):
    """Emits one value of `test.value.bytes` characters (default 5000) per call."""

    outputs = ["value"]

    def initialize(self, conf, ctx):
        self.value = "x" * int(conf.get("test.value.bytes", 5000))

    def next_tuple(self):
        self.emit([self.value])


class InterleavingBolt(Bolt):
    """Relays each id on stream "a" when it is a multiple of 3, else on "b", and
    records what it emitted, in order."""

    outputs = [Stream(["id"], name="a"), Stream(["id"], name="b")]

    def initialize(self, conf, ctx):
        self.conf, self.task, self.port, self.sent = conf, ctx["taskid"], ctx["worker.port"], []

    def process(self, tup):
        stream = "a" if tup.values.id % 3 == 0 else "b"
        self.emit([tup.values.id], stream=stream)
        self.sent.append([stream, tup.values.id])

    def cleanup(self):
        write_output(self.conf, f"relay-{self.task}.json", {"port": self.port, "sent": self.sent})


class OrderSinkBolt(Bolt):
    """Records, per source task, the streams and ids in the order they arrived."""

    outputs = []

    def initialize(self, conf, ctx):
        self.conf, self.task, self.port, self.seen = conf, ctx["taskid"], ctx["worker.port"], {}

    def process(self, tup):
        self.seen.setdefault(str(tup.task), []).append([tup.stream, tup.values.id])

    def cleanup(self):
        write_output(self.conf, f"order-{self.task}.json", {"port": self.port, "seen": self.seen})


class CleanupBolt(Bolt):
    """What a bolt may do as the run stops: with test.cleanup "raise" its cleanup()
    raises, with "emit" it emits its count there, with "slow" it says it started,
    takes `test.cleanup_secs` and then writes its count (a cleanup saving state);
    test.hold keeps every input un-acked, so that the stop's drain waits for the
    message timeout."""

    outputs = ["count"]

    def initialize(self, conf, ctx):
        self.conf, self.task = conf, ctx["taskid"]
        self.mode = conf.get("test.cleanup")
        self.auto_ack = not conf.get("test.hold", False)
        self.count = 0

    def process(self, tup):
        self.count += 1

    def cleanup(self):
        if self.mode == "raise":
            raise RuntimeError("cleanup failed on purpose")
        if self.mode == "slow":
            print("cleaner's cleanup started", flush=True)
            time.sleep(float(self.conf["test.cleanup_secs"]))  # the user's slow work, not a wait
            write_output(self.conf, f"cleaner-{self.task}.json", self.count)
        if self.mode == "emit":
            print(f"cleaner counted {self.count} in {self.topology_name}")
            sys.stderr.write(f"cleaner's stderr:\n  {self.count} tuples\n")
            self.emit([self.count])


class CarryOnBolt(Bolt):
    """Raises on the first sight of every id divisible by 7, with pystorm's
    exit_on_exception off: each is reported and failed (then replayed by the spout),
    and the bolt goes on."""

    outputs = ["id"]
    exit_on_exception = False

    def initialize(self, conf, ctx):
        self.seen = set()

    def process(self, tup):
        i = tup.values.id
        first = i not in self.seen
        self.seen.add(i)
        if first and i % 7 == 0:
            raise ValueError(f"id {i} raised on purpose")
        self.emit([i])


class Side(enum.Enum):
    """Registered by value_types.py's topology.kryo.register: travels by name."""

    BUY = 1
    SELL = 2


@dataclasses.dataclass(frozen=True)
class Point:
    """Registered without a serializer: its fields travel (a tuple in one as a list,
    as everywhere)."""

    x: int
    y: float
    tags: list = dataclasses.field(default_factory=list)


class Money:
    """Registered with MoneySerializer."""

    def __init__(self, cents, currency):
        self.cents, self.currency = cents, currency

    def __eq__(self, other):
        return isinstance(other, Money) and (self.cents, self.currency) == (other.cents, other.currency)

    def __repr__(self):
        return f"Money({self.cents}, {self.currency!r})"


class MoneySerializer:
    def serialize(self, money):
        return [money.cents, money.currency]

    def deserialize(self, data):
        cents, currency = data
        return Money(cents, currency)


def typed_values(i: int) -> list:
    """The values TypedBolt emits for id i: one of each type a tuple carries beyond
    msgpack's own (storm_zmq.topology.value_types), nested ones too, and the
    topology's own types (topology.kryo.register)."""
    import datetime
    import decimal
    import uuid
    from zoneinfo import ZoneInfo

    day = datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 7)
    return [
        i,
        day,
        Side.BUY if i % 3 else Side.SELL,
        Point(i, i / 4, ["a", i]),
        [Money(i, "EUR"), {"at": Point(0, 0.5)}],
        datetime.datetime(2024, 11, 3, 1, 30, i % 60, fold=i % 2, tzinfo=ZoneInfo("America/New_York")),
        datetime.datetime(2024, 1, 1, 12, 0, i % 60, tzinfo=datetime.timezone(datetime.timedelta(hours=5, minutes=30))),
        datetime.time(23, 59, i % 60, 999),
        datetime.timedelta(days=-i, microseconds=i),
        decimal.Decimal(f"{i}.{i:03d}0"),
        uuid.UUID(int=i * 2**64 + i),
        {"nested": [day, decimal.Decimal("-0")]},
    ]


class TypedBolt(Bolt):
    """Emits `typed_values(id)` for each id it gets."""

    outputs = ["id", "day", "side", "point", "money", "zoned", "offset", "at", "span", "amount",
               "key", "nested"]

    def process(self, tup):
        self.emit(typed_values(tup.values.id))


class TypedSinkBolt(Bolt):
    """Records, per id, the repr and the type names of the values it got, and the
    worker port it got them in."""

    outputs = []

    def initialize(self, conf, ctx):
        self.conf, self.task, self.port, self.seen = conf, ctx["taskid"], ctx["worker.port"], {}

    def process(self, tup):
        values = list(tup.values)
        self.seen[values[0]] = [repr(values), [type(v).__name__ for v in values]]

    def cleanup(self):
        write_output(self.conf, f"typed-{self.task}.json", {"port": self.port, "seen": self.seen})


@dataclasses.dataclass(frozen=True)
class Cell:
    """A registered dict key whose tuple field arrives as a list: unhashable there."""

    at: tuple


class CellKeySpout(Spout):
    outputs = ["value"]

    def next_tuple(self):
        self.emit([{Cell((1, 2)): "x"}])


class BufferingBolt(Bolt):
    """Collects ids in a list it emits every 10 and then clears and reuses: a
    buffer, as pystorm bolts kept them (pystorm serialized at the emit)."""

    outputs = ["ids"]

    def initialize(self, conf, ctx):
        self.buffer = []

    def process(self, tup):
        self.buffer.append(tup.values.id)
        if len(self.buffer) == 10:
            self.emit([self.buffer])
            self.buffer.clear()


class ListSinkBolt(Bolt):
    """Writes every id of the lists it received."""

    def initialize(self, conf, ctx):
        self.conf, self.task, self.ids = conf, ctx["taskid"], []

    def process(self, tup):
        self.ids.extend(tup.values.ids)

    def cleanup(self):
        write_output(self.conf, f"lists-{self.task}.json", self.ids)


class IdleSpout(Spout):
    """Never emits: counts its next_tuple() calls and when the first and the last
    came (Storm's spout wait strategy spaces them)."""

    outputs = ["n"]

    def initialize(self, conf, ctx):
        self.conf, self.name, self.task = conf, ctx["componentid"], ctx["taskid"]
        self.calls, self.first, self.last = 0, None, None

    def next_tuple(self):
        now = time.monotonic()
        self.calls += 1
        self.first = now if self.first is None else self.first
        self.last = now

    def cleanup(self):
        write_output(self.conf, f"idle-{self.name}-{self.task}.json",
                     {"calls": self.calls, "first": self.first, "last": self.last})
