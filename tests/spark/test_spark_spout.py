"""The Spark spout in-process on a real local SparkSession (the shared one of
conftest.py), through `SpoutHarness`: every fetch mode, derived outputs, the values
of nested types, and the errors a user can make."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from storm_zmq.spark import SparkSpout, SparkSpoutError
from storm_zmq.spark.fetch import have_pyarrow
from storm_zmq.testing import SpoutHarness

pytestmark = pytest.mark.slow

MODES = ["rows", "filter"] + (["arrow"] if have_pyarrow() else [])


def drive(harness: SpoutHarness, fail_first: set[Any] = frozenset(), timeout: float = 60) -> None:
    """next_tuple until exhausted, acking everything except the first emit of the
    ids in `fail_first`, which fails."""
    failed: set[Any] = set()
    deadline = time.monotonic() + timeout
    while not harness.exhausted:
        assert time.monotonic() < deadline, "the spout never reported exhausted"
        emits = harness.next_tuple()
        for emit in emits:
            if emit.tup_id in fail_first and emit.tup_id not in failed:
                failed.add(emit.tup_id)
                harness.fail(emit.tup_id)
            elif emit.tup_id is not None:
                harness.ack(emit.tup_id)
        if not emits:
            time.sleep(0.002)


@pytest.mark.parametrize("mode", MODES)
def test_every_row_once_with_replays_in_each_fetch_mode(spark: Any, mode: str) -> None:
    from pyspark.sql import functions as F

    class Numbers(SparkSpout):
        fetch = mode
        outputs = ["n", "square"]

        def source(self, spark):
            return spark.range(0, 500, 1, 5).select(F.col("id").alias("n"), (F.col("id") ** 2).cast("long").alias("square"))

    harness = SpoutHarness(Numbers, {"topology.max.spout.pending": 64})
    drive(harness, fail_first={(0, 3), (4, 99), (2, 0)})
    firsts = {}
    for emit in harness.emits:
        firsts.setdefault(emit.tup_id, emit.values)
        assert emit.values == firsts[emit.tup_id], "a replay emits the same values"
    assert sorted(v[0] for v in firsts.values()) == list(range(500))
    assert all(v[1] == v[0] ** 2 for v in firsts.values())
    assert {p for p, _ in firsts} == set(range(5)), "ids are (partition, row)"
    assert len(harness.emits) == 503
    assert harness.component._ledger.replayed == 3
    harness.component.cleanup()


def test_outputs_default_to_the_columns_and_may_select_or_rename(spark: Any) -> None:
    from pyspark.sql import functions as F

    def frame(spark):
        return spark.range(3).select(F.col("id").alias("a"), (F.col("id") + 10).alias("b"), F.lit("x").alias("c"))

    class Columns(SparkSpout):
        def source(self, spark):
            return frame(spark)

    class Selected(Columns):
        outputs = ["c", "a"]

    class Renamed(Columns):
        outputs = ["x", "y", "z"]

    assert Columns.spec().outputs["default"].fields == ("a", "b", "c")  # from source()
    results = {}
    for cls in (Columns, Selected, Renamed):
        harness = SpoutHarness(cls)
        drive(harness)
        results[cls.__name__] = (harness.output_fields["default"], sorted(tuple(e.values) for e in harness.emits))
        harness.component.cleanup()
    assert results["Columns"] == (("a", "b", "c"), [(0, 10, "x"), (1, 11, "x"), (2, 12, "x")])
    assert results["Selected"] == (("c", "a"), [("x", 0), ("x", 1), ("x", 2)])
    assert results["Renamed"] == (("x", "y", "z"), [(0, 10, "x"), (1, 11, "x"), (2, 12, "x")])

    class Wrong(Columns):
        outputs = ["a", "nope"]

    with pytest.raises(SparkSpoutError, match=r"outputs \['a', 'nope'\] are neither columns .* \['a', 'b', 'c'\]"):
        SpoutHarness(Wrong, name="wrong")

    class Moved(Columns):  # meant ["c", "a", "b"] or a rename: "c" would hold a's values
        outputs = ["c", "x", "y"]

    with pytest.raises(SparkSpoutError, match=r"by position, but \['c'\] is a column at another position"):
        SpoutHarness(Moved, name="moved")

    # Spark's names have no case: these select by name, as Spark would (they were
    # taken for new names and swapped the values)
    class OtherCase(Columns):
        outputs = ["C", "A"]

    harness = SpoutHarness(OtherCase)
    drive(harness)
    assert sorted(tuple(e.values) for e in harness.emits) == [("x", 0), ("x", 1), ("x", 2)]
    harness.component.cleanup()

    class MovedOtherCase(Columns):
        outputs = ["C", "x", "y"]

    with pytest.raises(SparkSpoutError, match=r"by position, but \['C'\] is a column at another position"):
        SpoutHarness(MovedOtherCase, name="moved")

    class Joined(SparkSpout):  # two columns named "a": a select by name is ambiguous
        outputs = ["a", "b"]

        def source(self, spark):
            left, right = frame(spark).alias("l"), frame(spark).alias("r")
            return left.join(right, "b").select("l.a", "b", "r.a")

    with pytest.raises(SparkSpoutError, match=r"spark spout 'joined' task 1: selecting outputs "
                                              r"\['a', 'b'\] from the columns \['a', 'b', 'a'\] failed: "):
        SpoutHarness(Joined, name="joined")

    class ByConfig(SparkSpout):  # its columns depend on its component's config
        def source(self, spark):
            return frame(spark).select(*self.storm_conf["test.columns"])

    assert ByConfig.spec(config={"test.columns": ["a", "b"]}).outputs["default"].fields == ("a", "b")
    # a second component of the class, other columns: an error, not relabelled values
    with pytest.raises(SparkSpoutError, match=r"the DataFrame's columns \['b', 'c'\] are not those "
                                              r"learned when the topology was loaded, \['a', 'b'\]"):
        SpoutHarness(ByConfig, name="other", conf={"test.columns": ["b", "c"]})


def test_learned_columns_of_one_name_are_said_as_the_dataframes_not_as_outputs(spark: Any) -> None:
    # (a Spark audit: "outputs: Stream 'default': duplicate field name 'a'", for a
    # spout that declares no outputs)
    from pyspark.sql import functions as F

    class Joined(SparkSpout):
        def source(self, spark):
            left = spark.range(2).select(F.col("id").alias("a"), F.col("id").alias("k"))
            right = spark.range(2).select(F.col("id").alias("A"), F.col("id").alias("k"))
            return left.join(right, "k")

    with pytest.raises(SparkSpoutError, match=r"the DataFrame from source\(\) has more than one "
                                              r"column named 'A', 'a' \(its columns: \['k', 'a', 'A'\]"):
        Joined.spec()

    class NotAFrame(SparkSpout):
        def source(self, spark):
            return [(1, "a")]

    with pytest.raises(SparkSpoutError, match=r"must return a Spark DataFrame, got builtins.list"):
        NotAFrame.spec()


def test_columns_named_with_a_dot_or_a_backtick_stream_as_named(spark: Any) -> None:
    # A Spark audit: a CSV header "user.id,user.name" stopped the spout, its select
    # reading "user.id" as field id of a struct user
    from pyspark.sql import functions as F

    class Dotted(SparkSpout):
        def source(self, spark):
            return spark.range(2).select(F.col("id").alias("user.id"), F.lit("x").alias("a`b"))

    class Selected(Dotted):
        outputs = ["a`b", "USER.ID"]

    emitted = {}
    for cls in (Dotted, Selected):
        harness = SpoutHarness(cls)
        drive(harness)
        emitted[cls.__name__] = (harness.output_fields["default"],
                                 sorted(tuple(e.values) for e in harness.emits))
        harness.component.cleanup()
    assert emitted == {"Dotted": (("user.id", "a`b"), [(0, "x"), (1, "x")]),
                       "Selected": (("a`b", "USER.ID"), [("x", 0), ("x", 1)])}


@pytest.mark.parametrize("mode", MODES)
def test_nested_values_arrive_as_plain_python(spark: Any, mode: str) -> None:
    class Nested(SparkSpout):
        fetch = mode

        def source(self, spark):
            return spark.sql(
                "SELECT CAST(1 AS INT) AS i, 2.5D AS d, true AS b, 'é' AS s, X'00FF' AS raw, "
                "array(1, 2) AS arr, map('k', 1) AS m, named_struct('x', 1, 'y', array('a')) AS st, "
                "CAST(NULL AS STRING) AS nothing"
            )

    harness = SpoutHarness(Nested)
    drive(harness)
    assert [e.values for e in harness.emits] == [
        [1, 2.5, True, "é", b"\x00\xff", [1, 2], {"k": 1}, {"x": 1, "y": ["a"]}, None]
    ]
    assert type(harness.emits[0].values[4]) is bytes
    harness.component.cleanup()


@pytest.mark.parametrize("mode", ["auto", *MODES])
def test_empty_array_and_map_literals_arrive_as_empty(spark: Any, mode: str) -> None:
    # array() is array<void>, which Arrow refuses: auto and filter fetch rows then
    class Empty(SparkSpout):
        fetch = mode

        def source(self, spark):
            return spark.sql("SELECT 1 AS id, array() AS tags, map() AS attrs")

    harness = SpoutHarness(Empty, name="empty")
    if mode == "arrow":
        with pytest.raises(SparkSpoutError, match=r"fetch='arrow' cannot read column\(s\) "
                                                  r"\['tags', 'attrs'\]: an empty array or map literal"):
            drive(harness)
    else:
        drive(harness)
        assert [e.values for e in harness.emits] == [[1, [], {}]]
    harness.component.cleanup()


@pytest.mark.parametrize("mode", [m for m in MODES if m != "rows"])  # rows: pyspark's own error
def test_a_value_python_cannot_hold_names_its_column(spark: Any, mode: str) -> None:
    # "the end of time" of a zone west of UTC is year 10000 in UTC: said as an
    # OverflowError, no column named
    class EndOfTime(SparkSpout):
        fetch = mode

        def source(self, spark):
            return spark.sql("SELECT 1 AS id, TIMESTAMP'9999-12-31 23:59:59' AS valid_to")

    harness = SpoutHarness(EndOfTime, name="end",
                           conf={"spark.sql.session.timeZone": "America/Los_Angeles"})
    with pytest.raises(SparkSpoutError, match=r"fetching partition \d+ failed: ValueError: column "
                                              r"'valid_to' holds a value Python cannot \(as a "
                                              r"timestamp\[us, tz=UTC\]\): .*; cast or clamp it"):
        drive(harness)
    harness.component.cleanup()


@pytest.mark.parametrize("mode", MODES)
def test_dates_timestamps_and_decimals_arrive_as_python_values_in_utc(
        spark: Any, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fetch mode gives a timestamp its own way (pyarrow in the session's time
    zone, pickled rows naive in the process's local time): all arrive as the same
    aware datetime in UTC, inside arrays and structs too, and survive serialization
    (the harness packs every emit)."""
    import datetime
    import decimal

    monkeypatch.setenv("TZ", "America/New_York")  # the rows' local time is not UTC
    time.tzset()
    try:
        class Typed(SparkSpout):
            fetch = mode

            def source(self, spark):
                return spark.sql(
                    "SELECT DATE'2024-03-10' AS day, TIMESTAMP'2024-03-10 01:30:00+05:00' AS at, "
                    "TIMESTAMP_NTZ'2024-03-10 02:30:00' AS wall, CAST('12.340' AS DECIMAL(10,3)) AS price, "
                    "INTERVAL '1 02:03:04.5' DAY TO SECOND AS span, "
                    "array(named_struct('t', TIMESTAMP'2024-01-01 00:00:00Z')) AS nested, "
                    "CAST(NULL AS TIMESTAMP) AS never"
                )

        # a session time zone Spark takes and pyarrow could not resolve
        harness = SpoutHarness(Typed, conf={"spark.sql.session.timeZone": "PST"})
        drive(harness)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    utc = datetime.UTC
    (emit,) = harness.emits
    assert emit.values == [
        datetime.date(2024, 3, 10),
        datetime.datetime(2024, 3, 9, 20, 30, tzinfo=utc),
        datetime.datetime(2024, 3, 10, 2, 30),
        decimal.Decimal("12.340"),
        datetime.timedelta(days=1, seconds=7384, microseconds=500000),
        [{"t": datetime.datetime(2024, 1, 1, tzinfo=utc)}],
        None,
    ]
    assert emit.values[1].tzinfo is utc and str(emit.values[3]) == "12.340"
    harness.component.cleanup()


@pytest.mark.parametrize("column", ["INTERVAL '1-2' YEAR TO MONTH AS span",
                                    "array(INTERVAL '3' MONTH) AS spans"])
def test_a_column_a_tuple_cannot_carry_is_refused_up_front(spark: Any, column: str) -> None:
    name = column.rsplit(" ", 1)[1]
    kind = "year-month interval"

    class Typed(SparkSpout):
        outputs = ["ok", name]

        def source(self, spark):
            return spark.sql(f"SELECT 1 AS ok, {column}")

    with pytest.raises(SparkSpoutError, match=rf"spark spout 'typed' task 1: column '{name}' has .*a tuple has no {kind}; cast it in source\(\)"):
        SpoutHarness(Typed, name="typed")

    class Undeclared(Typed):  # the columns are learned when the topology is declared
        outputs = ()

    with pytest.raises(SparkSpoutError, match=rf"spark spout Undeclared: column '{name}' has .*a tuple has no {kind}"):
        Undeclared.spec()

    class Renamed(Typed):  # named as in source(), where it can be cast, not as renamed
        outputs = ["first", "second"]

    with pytest.raises(SparkSpoutError, match=rf"column '{name}' has .*a tuple has no {kind}; cast "
                       rf"it in source\(\).* \(outputs rename the columns \['ok', '{name}'\] to "
                       r"\['first', 'second'\]\)"):
        SpoutHarness(Renamed, name="renamed")


def test_a_source_that_raises_names_the_spout_and_the_cause(spark: Any) -> None:
    class Broken(SparkSpout):
        outputs = ["x"]

        def source(self, spark):
            return spark.read.parquet("/nonexistent/storm-zmq/data.parquet")

    with pytest.raises(SparkSpoutError, match=r"spark spout 'broken' task 1: source\(\) raised AnalysisException: .*PATH_NOT_FOUND") as info:
        SpoutHarness(Broken, name="broken")
    assert info.value.__cause__ is not None, "the original exception is chained"


def test_a_job_that_fails_mid_stream_stops_the_spout_with_a_clear_error(spark: Any) -> None:
    from pyspark.sql import functions as F

    class Failing(SparkSpout):
        def source(self, spark):
            return spark.range(0, 40, 1, 4).select(
                F.when(F.col("id") == 25, F.raise_error(F.lit("row 25 is poisoned"))).otherwise(F.col("id")).alias("id")
            )

    harness = SpoutHarness(Failing, name="failing")
    with pytest.raises(SparkSpoutError, match="spark spout 'failing' task 1: fetching partition 2 failed: .*row 25 is poisoned"):
        drive(harness)
    assert sorted(e.values[0] for e in harness.emits) == list(range(20)), "partitions 0 and 1 came through"
    harness.component.cleanup()


def test_an_error_of_the_jvm_is_said_with_its_root_cause(spark: Any) -> None:
    # an OutOfMemoryError or a corrupt file failed the job with only "An error occurred
    # while calling z:...runJob."
    from storm_zmq.spark.session import short_error

    with pytest.raises(Exception) as raised:
        spark._jvm.java.lang.Class.forName("no.such.Thing")  # an error pyspark leaves as py4j's
    said = short_error(raised.value)
    assert said.startswith("Py4JJavaError: An error occurred while calling "), said
    assert said.endswith(": java.lang.ClassNotFoundException: no.such.Thing"), said


def test_java_missing_stops_initialize(spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    class Any_(SparkSpout):
        outputs = ["x"]

        def source(self, spark):  # pragma: no cover - never reached
            return spark.range(1)

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SparkSpoutError, match="spark spout 'lines' task 1: Java not found"):
        SpoutHarness(Any_, name="lines")


def test_spouts_of_one_worker_plan_with_their_own_sql_settings(spark: Any) -> None:
    """Two Spark spouts in one process (a worker) share its Spark context. Each
    task plans with its own component's runtime settings, whatever the other set
    since: with a shared session, the second spout's shuffle partitions were the
    first's tasks' too, and a spout's tasks disagreed on the partitioning."""
    from pyspark.sql import functions as F

    class Keys(SparkSpout):
        outputs = ["k", "n"]

        def source(self, spark):
            return spark.range(0, 2000, 1, 4).groupBy((F.col("id") % 100).alias("k")).count()

    def task(shuffle: int, index: int) -> SpoutHarness:
        conf = {"spark.sql.shuffle.partitions": shuffle, "spark.sql.adaptive.enabled": False}
        return SpoutHarness(Keys, conf, name=f"keys{shuffle}", task=index + 1)

    first = task(3, 0)
    other = task(7, 0)
    first_again = task(3, 1)  # a second task of the first spout, after the other started
    counts = {}
    for name, harness in (("first", first), ("other", other), ("first_again", first_again)):
        drive(harness)
        counts[name] = harness.component._num_partitions
        assert sorted(e.values[0] for e in harness.emits) == list(range(100)), name
        harness.component.cleanup()
    assert counts == {"first": 3, "other": 7, "first_again": 3}


def test_a_python_udf_that_raises_is_named_by_its_own_error(spark: Any) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    def poisoned(i):
        if i == 7:
            raise ZeroDivisionError("udf fails on row 7")
        return i

    class Udf(SparkSpout):
        outputs = ["id"]
        fetch = "rows"

        def source(self, spark):
            return spark.range(0, 10, 1, 1).select(F.udf(poisoned, LongType())("id").alias("id"))

    harness = SpoutHarness(Udf, name="udf")
    with pytest.raises(SparkSpoutError, match=r"fetching partition 0 failed: PythonException: .*"
                                              r"ZeroDivisionError: udf fails on row 7"):
        drive(harness)
    harness.component.cleanup()


def test_an_initialize_that_skips_super_is_told_so(spark: Any) -> None:
    class Forgetful(SparkSpout):
        outputs = ["id"]

        def initialize(self, conf, ctx):
            self.limit = 5

        def source(self, spark):  # pragma: no cover - never reached
            return spark.range(self.limit)

    harness = SpoutHarness(Forgetful, name="forgetful")
    with pytest.raises(SparkSpoutError, match=r"must call super\(\).initialize\(storm_conf, context\)"):
        harness.next_tuple()


def test_open_source_may_return_a_fetcher(spark: Any) -> None:
    from storm_zmq.spark.spout import ListFetcher

    class InMemory(SparkSpout):
        outputs = ["id"]

        def open_source(self, conf, context):
            return ListFetcher([[(1,), (2,)], [(3,)]])

    harness = SpoutHarness(InMemory, {"topology.max.spout.pending": 10}, name="mem")
    drive(harness)
    assert sorted(e.values[0] for e in harness.emits) == [1, 2, 3]
    harness.component.cleanup()


def test_what_would_go_wrong_quietly_is_warned_about(spark: Any, caplog: pytest.LogCaptureFixture) -> None:
    from pyspark.sql import functions as F

    class Loose(SparkSpout):  # reliable, no max pending; a column named by Spark
        def source(self, spark):
            return spark.range(3).select(F.col("id"), F.col("id") + 1)

    with caplog.at_level("WARNING"):
        harness = SpoutHarness(Loose, name="loose")
        drive(harness)
        harness.component.cleanup()
    text = caplog.text
    assert "topology.max.spout.pending is not set" in text
    assert "['(id + 1)'] are not Python attribute names" in text
    assert [tuple(e.values) for e in harness.emits] == [(0, 1), (1, 2), (2, 3)]


def test_a_spout_stopped_before_the_end_says_what_got_through(
        spark: Any, caplog: pytest.LogCaptureFixture) -> None:
    class Numbers(SparkSpout):
        outputs = ["id"]

        def source(self, spark):
            return spark.range(0, 30, 1, 3)

    harness = SpoutHarness(Numbers, {"topology.max.spout.pending": 100}, name="numbers")
    deadline = time.monotonic() + 60
    while not harness.component._ledger or not harness.component._ledger.partitions_done:
        assert time.monotonic() < deadline, "no partition done"
        for emit in harness.next_tuple():
            harness.ack(emit.tup_id)
        time.sleep(0.002)
    with caplog.at_level("WARNING"):
        harness.component.cleanup()  # as a run stopped by -t does
    assert re.search(r"spark spout 'numbers' task 1: stopped before the end: .*partitions done: 0"
                     r".*a new run starts from the first row", caplog.text), caplog.text
    assert caplog.text.count("spark spout 'numbers' task 1") == 1, "the task named once"


def test_static_settings_the_running_context_does_not_have_are_named(spark: Any) -> None:
    # a package one spout needs, missing from the context another spout started,
    # vanished without a word (only settings the context had set otherwise were named)
    from storm_zmq.spark.session import component_session

    before = spark.conf.get("spark.sql.shuffle.partitions")
    session, ignored = component_session(spark, {
        "spark.master": "local[2]",  # what the context has: not named
        "spark.jars.packages": "org.example:connector:1.0",  # the context has none
        "spark.executor.memory": "3g",
        "spark.sql.shuffle.partitions": 7,  # a session's own: applied, not named
    }, "app")
    assert ignored == [
        "spark.jars.packages=org.example:connector:1.0 (the context has it unset: Spark's default)",
        "spark.executor.memory=3g (the context has it unset: Spark's default)",
    ]
    assert session.conf.get("spark.sql.shuffle.partitions") == "7"
    assert spark.conf.get("spark.sql.shuffle.partitions") == before  # the others' untouched
