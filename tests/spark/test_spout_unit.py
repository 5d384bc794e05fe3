"""The Spark spout without Spark: partitions from a `ListFetcher`, driven through
`SpoutHarness` (or a fake collector, for several tasks), and its helpers."""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from typing import Any

import pytest

from storm_zmq.spark import ListFetcher, SparkSpout, SparkSpoutError
from storm_zmq.spark import spout as spout_module
from storm_zmq.spark.session import check_java, spark_conf
from storm_zmq.testing import SpoutHarness
from storm_zmq.topology.stream import Stream

PARTITIONS = [[(p * 100 + r, f"w{p}-{r}") for r in range(size)] for p, size in enumerate([5, 0, 7, 3])]
ALL_ROWS = sorted(row for part in PARTITIONS for row in part)


class MemorySpout(SparkSpout):
    outputs = ["n", "word"]
    progress_secs = 0.0

    def open_source(self, conf, context):
        return lambda: ListFetcher(PARTITIONS)


def drive(harness: SpoutHarness, respond: Any = None, timeout: float = 10.0) -> None:
    """next_tuple until exhausted; `respond(emit)` acks or fails each emit (default:
    ack)."""
    deadline = time.monotonic() + timeout
    while not harness.exhausted:
        assert time.monotonic() < deadline, "the spout never reported exhausted"
        emits = harness.next_tuple()
        for emit in emits:
            if emit.tup_id is None:
                continue
            if respond is None:
                harness.ack(emit.tup_id)
            else:
                respond(emit)
        if not emits:
            time.sleep(0.001)


def test_rows_are_emitted_with_partition_and_row_ids_and_exhaust_after_all_acks() -> None:
    harness = SpoutHarness(MemorySpout)
    drive(harness)
    assert sorted(tuple(e.values) for e in harness.emits) == ALL_ROWS
    ids = [e.tup_id for e in harness.emits]
    assert len(set(ids)) == len(ids) == len(ALL_ROWS)
    for e in harness.emits:
        partition, row = e.tup_id
        assert tuple(e.values) == PARTITIONS[partition][row]
    spout = harness.component
    assert spout._rows == {}, "nothing kept once every partition is done"
    harness.component.cleanup()


def test_failed_rows_are_replayed_and_exhaustion_waits_for_them() -> None:
    harness = SpoutHarness(MemorySpout)
    failed: set[Any] = set()
    held: list[Any] = []

    def respond(emit: Any) -> None:
        if emit.tup_id[1] % 2 == 0 and emit.tup_id not in failed:
            failed.add(emit.tup_id)
            harness.fail(emit.tup_id)
        elif emit.tup_id == (2, 1) and not held:
            held.append(emit.tup_id)  # in flight for a while
        else:
            harness.ack(emit.tup_id)

    deadline = time.monotonic() + 5
    while not held or len(harness.emits) < len(ALL_ROWS) + len(failed):
        assert time.monotonic() < deadline
        for emit in harness.next_tuple():
            respond(emit)
    harness.next_tuple(5)
    assert not harness.exhausted, "a row still in flight keeps the spout going"
    spout = harness.component
    assert spout._rows == {2: {1: PARTITIONS[2][1]}}, "only the outstanding row is kept"
    harness.ack(held[0])
    drive(harness, respond)
    emitted = [e.tup_id for e in harness.emits]
    assert sorted(set(emitted)) == sorted({(p, r) for p, part in enumerate(PARTITIONS) for r in range(len(part))})
    assert len(emitted) == len(ALL_ROWS) + len(failed)
    assert all(emitted.count(i) == 2 for i in failed)
    assert spout._ledger.replayed == len(failed)
    harness.component.cleanup()


def test_a_late_ack_of_a_failed_row_does_not_lose_its_replay() -> None:
    harness = SpoutHarness(MemorySpout)
    deadline = time.monotonic() + 5
    while len(harness.emits) < len(ALL_ROWS):  # every partition emitted whole
        assert time.monotonic() < deadline
        harness.next_tuple()
    harness.fail((0, 2))
    harness.ack((0, 2))  # e.g. the tuple timed out, then its ack came after all
    for emit in list(harness.emits):
        if emit.tup_id != (0, 2):
            harness.ack(emit.tup_id)
    drive(harness)
    assert [tuple(e.values) for e in harness.emits].count(PARTITIONS[0][2]) == 2
    harness.component.cleanup()


def test_max_spout_pending_is_held_per_task() -> None:
    harness = SpoutHarness(MemorySpout, {"topology.max.spout.pending": 4})
    deadline = time.monotonic() + 5
    while len(harness.emits) < 4:
        assert time.monotonic() < deadline
        harness.next_tuple()
    harness.next_tuple(3)
    assert len(harness.emits) == 4
    harness.ack(harness.emits[0].tup_id)
    harness.next_tuple(3)
    assert len(harness.emits) == 5
    harness.component.cleanup()


def test_unreliable_mode_emits_without_ids_and_is_done_once_emitted() -> None:
    class Unreliable(MemorySpout):
        reliable = False

    harness = SpoutHarness(Unreliable)
    drive(harness)
    assert [e.tup_id for e in harness.emits] == [None] * len(ALL_ROWS)
    assert sorted(tuple(e.values) for e in harness.emits) == ALL_ROWS
    harness.component.cleanup()


class _Collector:
    def __init__(self) -> None:
        self.emits: list[tuple[Any, Any]] = []
        self.exhausted = False

    def emit(self, values, stream=None, anchors=None, direct_task=None, need_task_ids=False, tup_id=None):  # noqa: ANN001
        self.emits.append((tuple(values), tup_id))

    def report_exhausted(self) -> None:
        self.exhausted = True


def test_tasks_share_the_partitions_p_mod_n() -> None:
    tasks = {"2": "spout", "3": "other", "5": "spout", "9": "spout"}
    seen: dict[int, set[int]] = {}
    for task in (2, 5, 9):
        collector = _Collector()
        spout = MemorySpout(collector=collector, name="spout", task=task)
        spout.initialize({}, {"taskid": task, "componentid": "spout", "task->component": tasks})
        deadline = time.monotonic() + 5
        while not collector.exhausted:
            assert time.monotonic() < deadline
            spout.next_tuple()
            for _, tup_id in collector.emits:
                spout.ack(tup_id)
        seen[task] = {tup_id[0] for _, tup_id in collector.emits}
        spout.cleanup()
    assert seen == {2: {0, 3}, 5: set(), 9: {2}}  # 5 has partition 1, which is empty


def test_progress_is_logged_with_rows_and_partitions(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)

    class Chatty(MemorySpout):
        progress_secs = 1e-9  # a line at every next_tuple

    harness = SpoutHarness(Chatty, name="words")
    drive(harness)
    text = caplog.text
    assert "spark spout 'words' task 1: the DataFrame has 4 partition(s)" in text
    assert "rows and" in text and "/4 partitions done" in text
    assert f"all 4 partition(s) done: {len(ALL_ROWS)} rows" in text
    assert harness.component.progress_line().startswith(f"spark spout 'words' task 1: {len(ALL_ROWS)}/{len(ALL_ROWS)} rows and 4/4 partitions done")
    harness.component.cleanup()
    caplog.clear()
    harness = SpoutHarness(MemorySpout, name="words")  # progress_secs 0: none but the last
    drive(harness)
    assert "partitions done" not in caplog.text, caplog.text  # it logged one a next_tuple
    assert f"all 4 partition(s) done: {len(ALL_ROWS)} rows" in caplog.text
    harness.component.cleanup()


@pytest.mark.parametrize(("change", "in_flight", "says"), [
    ((5.0, 100, 2000), 2000, "set topology.max.spout.pending to about 100 "),  # 20 rows/s x 10 s / 2
    ((5.0, 0, 2000), 2000, "set topology.max.spout.pending to about 1 "),
    ((5.0, 3000, 2000), 2000, None),  # more acked than replayed: fine
    ((5.0, 100, 2000), 50, None),  # few in flight: not the queues (a bolt that never acks)
    ((5.0, 100, 0), 2000, None),
])
def test_the_replay_hint_suggests_a_pending_the_rate_and_timeout_can_carry(
        change: tuple[float, int, int], in_flight: int, says: str | None) -> None:
    hint = spout_module.replay_hint(*change, in_flight, 10)
    assert (hint is None) if says is None else (says in hint)  # type: ignore[operator]
    assert spout_module.replay_hint(*change, in_flight, None) is None  # timeouts off


def test_a_spout_whose_replays_outrun_its_acks_says_what_to_set(
        caplog: pytest.LogCaptureFixture) -> None:
    # A Spark audit: 20,000 replays of 2,000 rows in 45 s, and only the progress
    # line's replay count climbing. Every row fails here, as timeouts fail them.
    harness = SpoutHarness(MemorySpout, {"topology.message.timeout.secs": 2}, name="rows")
    spout = harness.component
    for _ in range(50):
        for emit in harness.next_tuple():
            harness.fail(emit.tup_id)
    start = time.monotonic()
    spout.progress_line(start)
    for emit in harness.next_tuple(20):
        harness.fail(emit.tup_id)
    harness.next_tuple(20)  # some in flight, none acked
    with caplog.at_level(logging.WARNING):
        spout.progress_line(start + 5)
        spout._say_replays_outrun_acks(start + 5)
        spout.progress_line(start + 10)
        spout._say_replays_outrun_acks(start + 10)  # once a minute at most
    said = [r.getMessage() for r in caplog.records if "replayed and" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith("spark spout 'rows' task 1: ")
    assert re.search(r": [1-9]\d* rows replayed and 0 acked in the last 5 s, with [1-9]\d* in flight", said[0])
    assert "set topology.max.spout.pending to about 1 " in said[0]
    spout.cleanup()


def test_next_tuple_never_waits_for_a_slow_fetch() -> None:
    release = threading.Event()

    class Slow(ListFetcher):
        def fetch(self, partition):
            release.wait(10)
            return super().fetch(partition)

    class SlowSpout(MemorySpout):
        def open_source(self, conf, context):
            return lambda: Slow(PARTITIONS)

    harness = SpoutHarness(SlowSpout)
    started = time.monotonic()
    harness.next_tuple(50)
    assert time.monotonic() - started < 5 and not harness.emits  # not the fetch's 10 s
    release.set()
    drive(harness)
    assert len(harness.emits) == len(ALL_ROWS)
    harness.component.cleanup()


def test_a_failing_fetch_surfaces_in_next_tuple_naming_spout_and_partition() -> None:
    class Broken(ListFetcher):
        def fetch(self, partition):
            if partition == 2:
                raise OSError("the executor went away")
            return super().fetch(partition)

    class BrokenSpout(MemorySpout):
        def open_source(self, conf, context):
            return lambda: Broken(PARTITIONS)

    harness = SpoutHarness(BrokenSpout, name="lines")
    with pytest.raises(SparkSpoutError, match=r"spark spout 'lines' task 1: fetching partition 2 failed: OSError: the executor went away"):
        drive(harness)
    harness.component.cleanup()


def test_columns_handed_down_by_the_spawning_process_need_no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    class Derived(SparkSpout):
        def source(self, spark):  # pragma: no cover - never called here
            raise AssertionError("source() must not run when the columns are known")

    key = spout_module._class_key(Derived)
    monkeypatch.setenv(spout_module.COLUMNS_ENV, json.dumps({key: ["a", "b"]}))
    spec = Derived.spec()
    assert spec.outputs["default"].fields == ("a", "b")

    class Child(Derived):  # derived for the parent: the child derives its own
        pass

    assert spout_module._declared_fields(Child) is None


def test_classes_one_factory_makes_learn_their_own_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two classes from one factory share module and qualname, the only key the
    # spawned workers can know them by: neither may get the other's columns, here
    # or in a worker that inherits the environment.
    def spout_of(columns: list[str]) -> type[SparkSpout]:
        class FromFactory(SparkSpout):
            wanted = columns

            def source(self, spark):  # pragma: no cover - Spark is stood in for
                raise AssertionError

        return FromFactory

    asked: list[list[str]] = []

    def from_spark(cls, config):
        asked.append(cls.wanted)
        return list(cls.wanted)

    monkeypatch.setattr(spout_module, "_columns_from_spark", from_spark)
    monkeypatch.setenv(spout_module.COLUMNS_ENV, "{}")
    first, second = spout_of(["a", "b"]), spout_of(["x", "y", "z"])
    assert spout_module._class_key(first) == spout_module._class_key(second)
    assert first.spec().outputs["default"].fields == ("a", "b")
    assert second.spec().outputs["default"].fields == ("x", "y", "z")
    key = spout_module._class_key(first)
    assert json.loads(os.environ[spout_module.COLUMNS_ENV])[key] is None

    # a worker: a fresh process (no cache) with the spawning process's environment
    monkeypatch.setattr(spout_module, "_derived_columns", {})
    asked.clear()
    again_first, again_second = spout_of(["a", "b"]), spout_of(["x", "y", "z"])
    assert again_first.spec().outputs["default"].fields == ("a", "b")
    assert again_second.spec().outputs["default"].fields == ("x", "y", "z")
    assert asked == [["a", "b"], ["x", "y", "z"]]


def test_a_topology_loaded_again_learns_its_columns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # `submit` loads the topology file twice: each load makes the spout class anew,
    # in a module of its own. That is the same class, not a factory's second one:
    # the second load must start no Spark and leave the columns to the workers.
    def load(number: int) -> type[SparkSpout]:
        class Loaded(SparkSpout):
            def source(self, spark):  # pragma: no cover - Spark is stood in for
                raise AssertionError

        Loaded.__module__ = f"_storm_zmq_topology_{number}_t"  # as load_topology names it
        return Loaded

    asked: list[str] = []
    monkeypatch.setattr(spout_module, "_columns_from_spark",
                        lambda cls, config: asked.append(cls.__module__) or ["a", "b"])
    monkeypatch.setenv(spout_module.COLUMNS_ENV, "{}")
    first = load(1)
    assert first.spec().outputs["default"].fields == ("a", "b")
    second = load(2)
    assert second.spec().outputs["default"].fields == ("a", "b")
    assert asked == ["_storm_zmq_topology_1_t"]
    key = spout_module._class_key(second)
    assert json.loads(os.environ[spout_module.COLUMNS_ENV])[key] == ["a", "b"]


def test_java_missing_is_a_clear_error(tmp_path: Any) -> None:
    with pytest.raises(SparkSpoutError, match="spark spout 'x': Java not found: .*no java on PATH and no JAVA_HOME"):
        check_java("spark spout 'x'", {"PATH": str(tmp_path)})
    with pytest.raises(SparkSpoutError, match="JAVA_HOME is .* not an executable"):
        check_java("spark spout 'x'", {"JAVA_HOME": str(tmp_path), "PATH": ""})


def test_spark_keys_of_the_storm_conf_go_to_the_session() -> None:
    settings = spark_conf({"spark.master": "spark://h:7077", "spark.executor.memory": "2g",
                           "spark.sql.shuffle.partitions": 4, "spark.eventLog.enabled": True,
                           "topology.workers": 2, "spark.ui.showConsoleProgress": None}, "app")
    assert settings == {"spark.master": "spark://h:7077", "spark.app.name": "app",
                        "spark.executor.memory": "2g", "spark.sql.shuffle.partitions": "4",
                        "spark.eventLog.enabled": "true"}
    assert spark_conf({}, "app")["spark.master"] == "local[*]"


def test_a_list_fetcher_serves_its_partitions_to_every_run() -> None:
    # The spout empties the lists it fetches; a fetcher reused by a second run (or
    # a test) must not hand over the same, now empty, lists.
    fetcher = ListFetcher(PARTITIONS)

    class Reused(MemorySpout):
        def open_source(self, conf, context):
            return lambda: fetcher

    for _ in range(2):
        harness = SpoutHarness(Reused)
        drive(harness)
        assert sorted(tuple(e.values) for e in harness.emits) == ALL_ROWS
        harness.component.cleanup()


def test_column_types_a_tuple_cannot_carry_are_found_from_the_schema() -> None:
    # Decided before any job; the values of the types passed here all convert.
    from pyspark.sql import types as T

    from storm_zmq.spark.session import column_problems

    schema = T.StructType([
        T.StructField("fine", T.MapType(T.StringType(), T.ArrayType(T.LongType()))),
        T.StructField("rows", T.ArrayType(T.StructType([T.StructField("x", T.DoubleType())]))),
        T.StructField("listkeys", T.MapType(T.ArrayType(T.IntegerType()), T.StringType())),
        T.StructField("when", T.ArrayType(T.YearMonthIntervalType())),
        T.StructField("carried", T.StructType([  # storm_zmq.topology.value_types
            T.StructField(name, kind) for name, kind in (
                ("d", T.DateType()), ("t", T.TimestampType()), ("n", T.TimestampNTZType()),
                ("p", T.DecimalType(10, 2)), ("s", T.DayTimeIntervalType()))
        ])),
    ])
    problems = column_problems(schema)
    assert len(problems) == 2
    assert problems[0].startswith("column 'listkeys' has type map<array<int>,string>, whose keys")
    assert problems[1].startswith("column 'when' has type array<interval year to month>: it contains")


@pytest.mark.parametrize(("attribute", "value", "says"), [
    ("emit_batch", -1, "emit_batch must be a whole number of rows, at least 1 (or None), got -1"),
    ("emit_batch", 0, "emit_batch must be a whole number of rows, at least 1"),
    ("emit_batch", 2.5, "emit_batch must be a whole number of rows"),
    ("max_fails", -1, "max_fails must be None (replay until acked) or a count of replays >= 0, got -1"),
    ("fetch", "fast", "fetch must be one of"),
    ("progress_secs", -5, "progress_secs must be a number of seconds, 0 or more (0: none), got -5"),
    ("reliable", "no", "reliable must be True or False, got 'no'"),  # ran as reliable
])
def test_settings_a_spout_cannot_use_stop_the_topology_being_built(
        attribute: str, value: Any, says: str) -> None:
    # emit_batch -1 idled the whole run and exited 0; max_fails -1 gave up every row at once
    spout_class = type("Misset", (MemorySpout,), {attribute: value})
    with pytest.raises(SparkSpoutError, match=rf"^Misset\.{attribute} must"):
        spout_class.spec()
    with pytest.raises(SparkSpoutError) as info:
        spout_class.spec()
    assert says in str(info.value)


def test_a_spout_fed_by_open_source_without_outputs_is_told_to_declare_them() -> None:
    # it started a JVM, then said "source() must return a DataFrame"
    class NoOutputs(MemorySpout):
        outputs = []

    with pytest.raises(SparkSpoutError, match=r"^NoOutputs: define source\(self, spark\) returning "
                                              r"the DataFrame to stream, or declare `outputs`"):
        NoOutputs.spec()


@pytest.mark.parametrize("outputs", [[Stream(["id"], name="rows")], [1], ["id", ("x",)]])
def test_outputs_a_spark_spout_cannot_have_are_refused_not_replaced_by_the_columns(
        outputs: list[Any]) -> None:
    # (a Spark audit: they were replaced by the DataFrame's columns on the default stream)
    spout_class = type("Odd", (MemorySpout,), {"outputs": outputs})
    with pytest.raises(SparkSpoutError, match=r"^Odd: outputs .*: a SparkSpout emits its rows on "
                                              r"the default stream, so its outputs are field names"):
        spout_class.spec()


def test_the_settings_a_spout_may_use_are_accepted() -> None:
    for attributes in ({"emit_batch": 1, "max_fails": 0, "progress_secs": 0},
                       {"emit_batch": None, "max_fails": None, "fetch": "rows"}):
        type("Fine", (MemorySpout,), attributes).spec()
