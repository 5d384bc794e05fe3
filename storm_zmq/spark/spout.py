"""`SparkSpout`: stream the partitions of a Spark DataFrame into a topology.

    class WordsSpout(SparkSpout):
        def source(self, spark):
            return spark.read.text("data/*.txt")      # outputs: ["value"]

Each task of the spout builds (or shares, within a worker) a SparkSession from the
``spark.*`` keys of its conf, calls `source`, and streams the partitions p with
``p mod n == index`` (index: this task's position among the component's n tasks),
one partition at a time: a background thread fetches the next partition while the
current one is emitted, so `next_tuple` never waits for Spark, and the driver holds
about two partitions plus the rows still in flight. Rows are emitted with
``tup_id=(partition, row)``; acked rows are forgotten, failed or timed-out rows are
emitted again, a partition is done when all its rows are acked, and when every
partition is done the spout calls `report_exhausted()`, which ends `storm-zmq run`.
See docs/spark.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from storm_zmq.component import Spout, new_component
from storm_zmq.spark.fetch import FETCH_MODES, make_fetcher
from storm_zmq.spark.ledger import (
    PartitionLedger,
    describe_partitions,
    partitions_for_task,
    task_index,
)
from storm_zmq.spark.session import (
    SparkSpoutError,
    build_session,
    column_problems,
    component_session,
    short_error,
    stop_session,
)
from storm_zmq.topology.spec import ComponentSpec
from storm_zmq.topology.stream import DEFAULT_STREAM, Stream, is_attribute_name

__all__ = ["ListFetcher", "SparkSpout", "SparkSpoutError"]

#: Columns derived from `source()` at topology load, handed to the worker processes
#: that `storm-zmq run` spawns (they inherit the environment) so that they do not
#: start a JVM just to learn them again.
COLUMNS_ENV = "STORM_ZMQ_SPARK_COLUMNS"

#: Class key -> (the class that derived it, its columns). Two classes with one key
#: (made by one factory function: same module and qualname) must not share columns.
_derived_columns: dict[str, tuple[weakref.ref[type], list[str]]] = {}

# Tasks of this process using the session, and whether a spout created it: the last
# task to clean up stops a session a spout created (never one the process had).
_session_lock = threading.Lock()
log = logging.getLogger(__name__)
_session_users = 0
_session_created = False


class ListFetcher:
    """Partitions already in memory (lists of row tuples): what `open_source` may
    return instead of Spark, for tests and for the benchmark's in-memory baseline."""

    name = "memory"

    def __init__(self, partitions: Sequence[Sequence[tuple[Any, ...]]]) -> None:
        self._partitions = [list(p) for p in partitions]
        self.num_partitions = len(self._partitions)

    def fetch(self, partition: int) -> list[tuple[Any, ...]]:
        return list(self._partitions[partition])  # the spout empties what it gets


class SparkSpout(Spout):
    """A spout whose data is the DataFrame `source(spark)` returns.

    Class attributes (set them on the subclass):

    ``outputs``
        Field names. Empty (the default): the DataFrame's columns, learned at
        topology load by calling `source` in a small local session (declare them to
        skip that). Names that are all columns of the DataFrame select those columns
        in that order; otherwise as many names as it has columns rename them.
    ``reliable``
        True (default): rows are emitted with ``tup_id=(partition, row)`` and
        replayed until acked. False: no ids, no replay, a partition is done once
        emitted: faster, at-most-once.
    ``max_fails``
        None (default): replay a row until it is acked. An int n: replay a failed
        row at most n times, giving up when it fails once more (pystorm's rule;
        logged; the row counts as settled).
    ``fetch``
        How a partition comes to the driver: "auto" (default: "arrow" with pyarrow,
        else "rows"), "arrow", "rows" or "filter"; see `storm_zmq.spark.fetch`.
    ``emit_batch``
        Rows emitted per `next_tuple` call at most (default:
        ``topology.producer.batch.size``); ``topology.max.spout.pending`` is held.
    ``progress_secs``
        How often a progress line is logged (rows and partitions done of total);
        0 logs none (the last line, at the end, is logged all the same).

    In `source`, ``self.storm_conf`` is the conf (at topology load, when the columns
    are derived, only the component's ``config``: the columns must not depend on
    anything else) and ``self.task_index`` / ``self.task_count`` say which task this
    is. `source` must give every task the same partitioning (be deterministic).
    """

    outputs: Sequence[Any] = ()
    reliable = True
    max_fails: int | None = None
    fetch = "auto"
    emit_batch: int | None = None
    progress_secs = 5.0
    _initialized = False  # SparkSpout.initialize ran (a subclass's must call it)

    # -- the user's part -------------------------------------------------------------

    def source(self, spark: Any) -> Any:
        """Return the DataFrame to stream."""
        raise NotImplementedError(f"{type(self).__name__}.source(self, spark) must return a DataFrame")

    # -- topology declaration -------------------------------------------------------------

    @classmethod
    def spec(
        cls, name: str | None = None, par: int | None = None, config: dict[str, Any] | None = None,
        num_tasks: int | None = None,
    ) -> ComponentSpec:
        problem = _attribute_problem(cls)
        if problem:
            raise SparkSpoutError(f"{cls.__name__}.{problem}")
        if _declared_fields(cls) is None:
            if cls.source is SparkSpout.source:  # fed by its own open_source(): no DataFrame
                raise SparkSpoutError(
                    f"{cls.__name__}: define source(self, spark) returning the DataFrame to "
                    "stream, or declare `outputs` (a spout fed by its own open_source() has no "
                    "DataFrame to learn its columns from)")
            cls.outputs = _derive_columns(cls, config if config is not None else getattr(cls, "config", None))
            cls._outputs_from_source = True
        return super().spec(name=name, par=par, config=config, num_tasks=num_tasks)

    # -- lifecycle ------------------------------------------------------------------------

    def initialize(self, storm_conf: dict[str, Any], context: dict[str, Any]) -> None:
        global _session_users
        self.storm_conf = storm_conf
        self.task_index, self.task_count = task_index(context)
        name = self.component_name or context.get("componentid") or type(self).__name__
        self.who = f"spark spout {name!r} task {context.get('taskid', self.task_id)}"
        problem = _attribute_problem(self)
        if problem:
            raise SparkSpoutError(f"{self.who}: {problem}")
        max_pending = storm_conf.get("topology.max.spout.pending")
        self._max_pending: int | None = int(max_pending) if max_pending else None
        if self.reliable and self._max_pending is None:
            self.logger.warning(
                "%s: topology.max.spout.pending is not set: the spout emits whole partitions "
                "at once, and rows a slow topology does not ack within "
                "topology.message.timeout.secs are replayed, again and again; set it (for "
                "example to a few thousand) to keep what is in flight bounded", self.who)
        self._emit_batch = int(self.emit_batch or storm_conf.get("topology.producer.batch.size") or 100)
        self._stormid = context.get("stormid", "")
        # what the fetch thread hands over (deque: append/popleft are atomic)
        self._inbox: deque[tuple[Any, ...]] = deque()
        self._demand = threading.Semaphore(1)  # partitions the thread may fetch ahead
        self._wake = threading.Event()  # demand, trash or stop for the fetch thread
        self._stopping = threading.Event()
        self._ledger: PartitionLedger | None = None
        self._rows: dict[int, Any] = {}  # partition -> list of rows, or {row: values}
        self._trash: deque[Any] = deque()  # rows of finished partitions, to be freed
        self._ready: deque[tuple[int, list[tuple[Any, ...]]]] = deque()
        self._current: int | None = None
        self._reported = False
        self._fetch_name = ""
        self._num_partitions = 0
        self.first_emit_at: float | None = None
        self.done_at: float | None = None
        self._started_at = time.monotonic()
        # (when, rows acked, rows replayed) at the last progress line, and what
        # changed since the one before: (seconds, acked, replayed)
        self._last_progress: tuple[float, int, int] | None = None
        self._progress_change: tuple[float, int, int] | None = None
        self._next_replay_hint = 0.0
        plan = self.open_source(storm_conf, context)
        self._next_progress = time.monotonic() + self.progress_secs
        with _session_lock:
            _session_users += 1
        self._thread = threading.Thread(
            target=self._fetch_loop, args=(plan,), name=f"spark-fetch-{name}-{self.task_id}", daemon=True
        )
        self._thread.start()
        self._initialized = True

    def _guarantee(self) -> str:
        if not self.reliable:
            return "unreliable: at most once"
        if self.storm_conf.get("topology.acker.executors") == 0:
            return "reliable, but acking is off (topology.acker.executors: 0): at most once"
        return "reliable"

    def open_source(self, conf: dict[str, Any], context: dict[str, Any]) -> Any:
        """Start Spark, call `source`, check the columns (in `initialize`, so that a
        mistake stops the run at once); return what the fetch thread calls to plan
        the partitions: a fetcher (``name``, ``num_partitions``, ``fetch(p)``).
        Override to feed the spout from somewhere else: return a fetcher such as
        `ListFetcher`, or a callable that makes one in the fetch thread."""
        global _session_created
        app_name = f"storm-zmq {self._stormid or self.component_name}".strip()
        base, created = build_session(conf, app_name, self.who)
        if created:
            with _session_lock:
                _session_created = True
        self.spark, ignored = component_session(base, conf, app_name)
        if ignored:
            self.logger.warning(
                "%s: ignoring static Spark setting(s) %s: the tasks of a worker share one Spark "
                "context, started with the first spout's settings; set them alike for every "
                "Spark spout of the topology (its config or storm.yaml)", self.who, ", ".join(ignored))
        df = _call_source(self, self.spark, self.who)
        learned = bool(vars(type(self)).get("_outputs_from_source"))
        df = shape_dataframe(df, _declared_fields(type(self)) or [], self.who, learned=learned)
        self.columns = list(df.columns)
        spark, mode = self.spark, self.fetch
        return lambda: make_fetcher(spark, df, mode)

    def cleanup(self) -> None:
        global _session_users, _session_created
        thread = getattr(self, "_thread", None)
        if thread is None:  # initialize() did not get that far
            return
        self._stopping.set()
        self._demand.release()
        self._wake.set()
        thread.join(2.0)
        ledger = self._ledger
        if ledger is not None and not ledger.all_done:
            # stopped before the end (-t, Ctrl-C, kill): what got through, since a new
            # run starts again from the first row (there is no resume)
            done = [p for p in ledger.partitions if ledger.is_done(p)]
            progress = self.progress_line().removeprefix(f"{self.who}: ")
            self.logger.warning(
                "%s: stopped before the end: %s; partitions done: %s; a new run starts from "
                "the first row", self.who, progress, describe_partitions(done) or "none")
        with _session_lock:
            _session_users -= 1
            last = _session_users == 0 and _session_created
            if last:
                _session_created = False
        spark = getattr(self, "spark", None)
        if last and spark is not None:
            stop_session(spark)

    # -- the fetch thread -------------------------------------------------------------------

    def _fetch_loop(self, plan: Callable[[], Any]) -> None:
        """The fetch thread: plan, then fetch this task's partitions one ahead of the
        executor thread, then free what it is done with until the spout stops."""
        doing = "planning the DataFrame"
        try:
            fetcher = plan() if callable(plan) else plan
            mine = partitions_for_task(fetcher.num_partitions, self.task_index, self.task_count)
            self._inbox.append(("plan", fetcher.name, fetcher.num_partitions, mine))
            for partition in mine:
                doing = "freeing rows"
                while not self._demand.acquire(blocking=False):
                    self._idle()
                    if self._stopping.is_set():
                        return
                if self._stopping.is_set():
                    return
                doing = f"fetching partition {partition}"
                started = time.monotonic()
                rows = fetcher.fetch(partition)
                self._inbox.append(("rows", partition, rows, time.monotonic() - started))
            doing = "freeing rows"
            while not self._stopping.is_set():
                self._idle()
        except BaseException as exc:
            if self._stopping.is_set():
                return
            error = SparkSpoutError(f"{self.who}: {doing} failed: {short_error(exc)}")
            error.__cause__ = exc
            self._inbox.append(("error", error))

    def _idle(self) -> None:
        """Sleep until the executor thread wants something (no polling: every wake-up
        would take the GIL from the threads moving tuples), then free the rows of
        finished partitions a slice at a time, so that the GIL passes to the
        executor thread in between (freeing takes ~0.1 s per million rows)."""
        self._wake.wait(1.0)
        self._wake.clear()
        trash = self._trash
        while trash:
            rows = trash.popleft()
            if isinstance(rows, list):
                while rows:
                    del rows[-8192:]

    # -- the executor thread --------------------------------------------------------------

    def _take_inbox(self) -> None:
        inbox = self._inbox
        while inbox:
            message = inbox.popleft()
            kind = message[0]
            if kind == "rows":
                _, partition, rows, secs = message
                self.logger.debug("%s: fetched partition %d: %d rows in %.2f s",
                                  self.who, partition, len(rows), secs)
                self._ready.append((partition, rows))
            elif kind == "plan":
                _, self._fetch_name, self._num_partitions, mine = message
                self._ledger = PartitionLedger(mine, self.max_fails)
                self.logger.info(
                    "%s: the DataFrame has %d partition(s); this task (%d of %d) streams %s "
                    "(fetch: %s, %s)", self.who, self._num_partitions, self.task_index + 1,
                    self.task_count, describe_partitions(mine) or "none", self._fetch_name,
                    self._guarantee(),
                )
            else:
                raise message[1]

    def _advance(self) -> bool:
        """Make the next fetched partition current; False when none is there yet."""
        ledger = self._ledger
        assert ledger is not None
        while self._ready:
            partition, rows = self._ready.popleft()
            self._demand.release()  # the thread may fetch the one after
            self._wake.set()
            if ledger.open(partition, len(rows)):
                continue  # empty partition: done at once
            self._rows[partition] = rows
            self._current = partition
            return True
        return False

    def _finish_current(self) -> None:
        """The current partition was emitted whole: keep only its outstanding rows."""
        ledger = self._ledger
        assert ledger is not None and self._current is not None
        partition, self._current = self._current, None
        rows = self._rows.pop(partition)
        if not ledger.is_done(partition):
            self._rows[partition] = {r: rows[r] for r in ledger.outstanding(partition)}
        self._trash.append(rows)  # the fetch thread frees them
        self._wake.set()

    def next_tuple(self) -> None:
        if not self._initialized:
            raise SparkSpoutError(
                f"{type(self).__name__}: SparkSpout.initialize() did not run: an initialize() "
                "of a subclass must call super().initialize(storm_conf, context), after "
                "setting what source() needs")
        if self._inbox:
            self._take_inbox()
        ledger = self._ledger
        if ledger is None:
            return
        emit = self.emit
        budget = self._emit_batch
        if self.reliable:
            if self._max_pending is not None:
                budget = min(budget, self._max_pending - ledger.in_flight)
            while budget > 0:
                item = ledger.take_replay()
                if item is None:
                    break
                emit(self._rows[item[0]][item[1]], tup_id=item)
                budget -= 1
        while budget > 0 and (self._current is not None or self._advance()):
            partition = self._current
            assert partition is not None
            rows = self._rows[partition]
            taken = ledger.take_new(partition, budget, track=self.reliable)
            if self.first_emit_at is None and taken:
                self.first_emit_at = time.monotonic()
            if self.reliable:
                for row in taken:
                    emit(rows[row], tup_id=(partition, row))
            else:
                for row in taken:
                    emit(rows[row])
            budget -= len(taken)
            if ledger.fully_emitted(partition):
                self._finish_current()
        now = time.monotonic()
        if now >= self._next_progress and self.progress_secs:  # 0: none (it flooded the log)
            self._next_progress = now + self.progress_secs
            self.logger.info("%s", self.progress_line(now))
            self._say_replays_outrun_acks(now)
        if ledger.all_done and not self._reported:
            self._reported = True
            self.done_at = now
            self.logger.info("%s", self.summary_line(now))
            self.report_exhausted()

    def ack(self, tup_id: Any) -> None:
        ledger = self._ledger
        if ledger is None:
            return
        partition = tup_id[0]
        acked = ledger.rows_acked
        if ledger.ack(partition, tup_id[1]):
            self._rows.pop(partition, None)
        elif ledger.rows_acked != acked and partition != self._current:
            # emitted whole: only its outstanding rows are kept, and this one is not
            rows = self._rows.get(partition)
            if rows is not None:
                rows.pop(tup_id[1], None)

    def fail(self, tup_id: Any) -> None:
        ledger = self._ledger
        if ledger is None:
            return
        partition, row = tup_id[0], tup_id[1]
        given_up = ledger.given_up
        ledger.fail(partition, row)
        if ledger.given_up != given_up:
            self.logger.warning("%s: giving up on row %d of partition %d after %d failures",
                                self.who, row, partition, ledger.max_fails + 1)
            if ledger.is_done(partition):
                self._rows.pop(partition, None)
            elif partition != self._current:
                self._rows.get(partition, {}).pop(row, None)

    # -- progress -----------------------------------------------------------------------------

    def progress_line(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        ledger = self._ledger
        if ledger is None:
            return f"{self.who}: planning the DataFrame ({now - self._started_at:.0f} s)"
        estimate = ledger.rows_estimate()
        total = "?" if estimate is None else (
            f"{estimate}" if ledger.partitions_opened == ledger.partitions_total else f"~{estimate}"
        )
        rate = ""
        self._progress_change = None
        if self._last_progress is not None:
            then, done_then, replayed_then = self._last_progress
            if now > then:
                rate = f", {(ledger.rows_acked - done_then) / (now - then):.0f} rows/s"
                self._progress_change = (now - then, ledger.rows_acked - done_then,
                                         ledger.replayed - replayed_then)
        self._last_progress = (now, ledger.rows_acked, ledger.replayed)
        extra = ""
        if self.reliable:
            extra = f", {ledger.in_flight} in flight, {ledger.replayed} replayed"
            if ledger.given_up:
                extra += f", {ledger.given_up} given up"
        return (
            f"{self.who}: {ledger.rows_acked}/{total} rows and "
            f"{ledger.partitions_done}/{ledger.partitions_total} partitions done{extra}{rate}"
        )

    def _say_replays_outrun_acks(self, now: float) -> None:
        """A warning, at most once a minute, while more rows are replayed than acked
        (`replay_hint`): the progress line alone showed the replays climb, and the
        run made no progress without a word of why (a Spark audit)."""
        change, ledger = self._progress_change, self._ledger
        if change is None or ledger is None or now < self._next_replay_hint:
            return
        hint = replay_hint(*change, ledger.in_flight,
                           self.storm_conf.get("topology.message.timeout.secs"))
        if hint is not None:
            self._next_replay_hint = now + 60.0
            self.logger.warning("%s: %s", self.who, hint)

    def summary_line(self, now: float) -> str:
        ledger = self._ledger
        assert ledger is not None
        start = self.first_emit_at or self._started_at
        secs = max(now - start, 1e-9)
        extra = f", {ledger.replayed} replayed" if self.reliable else ""
        if ledger.given_up:
            extra += f", {ledger.given_up} given up"
        return (
            f"{self.who}: all {ledger.partitions_total} partition(s) done: {ledger.rows_acked} rows "
            f"in {secs:.1f} s ({ledger.rows_acked / secs:.0f} rows/s){extra}"
        )


# -- helpers ------------------------------------------------------------------------------------


def _call_source(spout: SparkSpout, spark: Any, who: str) -> Any:
    try:
        df = spout.source(spark)
    except Exception as exc:
        raise SparkSpoutError(f"{who}: source() raised {short_error(exc)}") from exc
    if not hasattr(df, "schema") or not hasattr(df, "columns"):
        kind = type(df)
        raise SparkSpoutError(f"{who}: source() must return a Spark DataFrame, got "
                              f"{kind.__module__}.{kind.__qualname__}")
    return df


def replay_hint(secs: float, acked: int, replayed: int, in_flight: int,
                timeout: float | None) -> str | None:
    """What to do when, over `secs`, more rows were replayed than acked with
    `in_flight` rows out: they wait in the queues longer than the message `timeout`,
    time out, and their replays queue behind the stale copies (docs/spark.md). None
    when that is not what the numbers say."""
    if not timeout or secs <= 0 or replayed <= acked:
        return None
    suggested = max(1, int(acked / secs * float(timeout) / 2))
    if suggested >= in_flight:  # not too many in flight: a bolt that never acks, say
        return None
    return (f"{replayed} rows replayed and {acked} acked in the last {secs:.0f} s, with "
            f"{in_flight} in flight: rows wait in the topology's queues longer than "
            f"topology.message.timeout.secs ({float(timeout):g} s), time out, and their replays "
            f"queue behind the stale copies; set topology.max.spout.pending to about "
            f"{suggested} (rows acked per second x timeout / 2, per spout task) or raise "
            "the timeout")


def quoted_column(name: str) -> str:
    """`name` as a Spark column reference to the column of exactly that name, even
    one with a dot or a backtick in it (from a CSV header, say)."""
    return "`" + name.replace("`", "``") + "`"


def shape_dataframe(df: Any, fields: Sequence[str], who: str, learned: bool = False) -> Any:
    """`df` with the spout's output fields as its columns, its column types checked.
    No fields: the columns as they are. Fields that are all columns: those, in that
    order. As many fields as columns: the columns renamed. Names compare as Spark
    compares them, without case (`spark.sql.caseSensitive` is off by default): an
    ``outputs`` of ``["name", "id"]`` for columns ``ID, NAME`` was taken for new
    names and swapped the values. Fields `learned` from `source()` at topology load
    must be the columns exactly: the same class used for two components, or columns
    that depend on more than the component's config, relabelled values silently."""
    columns = list(df.columns)
    if not columns:
        raise SparkSpoutError(f"{who}: the DataFrame from source() has no columns")
    if learned and list(fields) != columns:
        raise SparkSpoutError(
            f"{who}: the DataFrame's columns {columns} are not those learned when the topology "
            f"was loaded, {list(fields)} (learned once per spout class, from its first "
            "component's config: another component of the class, or columns that depend on "
            "other settings, differ); declare `outputs`")
    if fields:
        folded = [c.casefold() for c in columns]
        if all(f.casefold() in folded for f in fields):
            try:
                if list(fields) != columns:
                    # each name quoted: a bare "user.id" is field id of a struct user
                    from pyspark.sql.functions import col
                    df = df.select(*(col(quoted_column(f)) for f in fields))
                df = df.toDF(*fields)  # the outputs' spelling
            except Exception as exc:  # two columns of one name (a join), say
                raise SparkSpoutError(f"{who}: selecting outputs {list(fields)} from the columns "
                                      f"{columns} failed: {short_error(exc)}") from None
        elif len(fields) == len(columns):
            moved = [f for i, f in enumerate(fields)
                     if f.casefold() in folded and folded[i] != f.casefold()]
            if moved:
                raise SparkSpoutError(
                    f"{who}: outputs {list(fields)} rename the columns {columns} by position, "
                    f"but {moved} {'is a column' if len(moved) == 1 else 'are columns'} at "
                    "another position: name columns to select them, or new names to rename all"
                )
            # types are checked under source()'s names, the ones the user can cast
            problems = column_problems(df.schema)
            if problems:
                raise SparkSpoutError(f"{who}: " + "; ".join(problems) + f" (outputs rename "
                                      f"the columns {columns} to {list(fields)})")
            df = df.toDF(*fields)
        else:
            raise SparkSpoutError(
                f"{who}: outputs {list(fields)} are neither columns of the DataFrame nor one "
                f"name per column; its columns are {columns}"
            )
    problems = column_problems(df.schema)
    if problems:
        raise SparkSpoutError(f"{who}: " + "; ".join(problems))
    unreachable = [c for c in df.columns if not is_attribute_name(c)]
    if unreachable:
        log.warning("%s: field(s) %s are not Python attribute names: tup.values.<name> cannot "
                    "reach them (by position it can); alias them in source() or declare "
                    "`outputs`", who, unreachable)
    return df


def _attribute_problem(spout: Any) -> str | None:
    """What is wrong with a spout's settings (class attributes), or None. Checked when
    the topology is built, so that a mistake stops `run`/`submit` with one line
    instead of a run that idles (``emit_batch = -1`` emitted nothing, silently) or
    gives up on every row at once (``max_fails = -1``)."""
    if spout.fetch not in FETCH_MODES:
        return f"fetch must be one of {FETCH_MODES}, got {spout.fetch!r}"
    emit_batch = spout.emit_batch
    if emit_batch is not None and (type(emit_batch) is not int or emit_batch < 1):
        return f"emit_batch must be a whole number of rows, at least 1 (or None), got {emit_batch!r}"
    max_fails = spout.max_fails
    if max_fails is not None and (type(max_fails) is not int or max_fails < 0):
        return f"max_fails must be None (replay until acked) or a count of replays >= 0, got {max_fails!r}"
    progress = spout.progress_secs
    if isinstance(progress, bool) or not isinstance(progress, (int, float)) or not progress >= 0:
        return f"progress_secs must be a number of seconds, 0 or more (0: none), got {progress!r}"
    if not isinstance(spout.reliable, bool):  # "no" ran as reliable
        return f"reliable must be True or False, got {spout.reliable!r}"
    return None


def _declared_fields(cls: type) -> list[str] | None:
    """The default stream's fields `cls` declares, or None when it leaves them to
    the DataFrame (no outputs, or outputs derived for a parent class)."""
    for klass in cls.__mro__:
        if "outputs" in vars(klass):
            if vars(klass).get("_outputs_from_source") and klass is not cls:
                return None
            outputs = vars(klass)["outputs"]
            break
    else:  # pragma: no cover - Component defines outputs
        return None
    if not outputs:
        return None
    fields: list[str] = []
    for output in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
        if isinstance(output, str):
            fields.append(output)
        elif isinstance(output, Stream) and output.name == DEFAULT_STREAM:
            fields.extend(output.fields)
        else:  # (was replaced by the DataFrame's columns, without a word: an audit)
            raise SparkSpoutError(
                f"{cls.__name__}: outputs {outputs!r}: a SparkSpout emits its rows on the default "
                f"stream, so its outputs are field names (or Stream(fields) without a name), not "
                f"{output!r}")
    return fields or None


def _class_key(cls: type) -> str:
    module = re.sub(r"^_storm_zmq_topology_\d+_", "", cls.__module__)
    return hashlib.sha1(f"{module}:{cls.__qualname__}".encode()).hexdigest()[:16]


def _derive_columns(cls: type[SparkSpout], config: dict[str, Any] | None) -> list[str]:
    """The columns of `cls`'s DataFrame, for a topology that does not declare them:
    from the environment (`COLUMNS_ENV`, set by the process that spawned this one),
    or by calling `source` in a local session, which is stopped again unless the
    process already had one.

    The environment knows a class by module and qualname, the only name it has in
    every process. Classes that one factory function makes share that name, so once
    a second class of the same module object asks under a name, the name is marked
    ambiguous (null) there and each such class learns its own columns from Spark in
    every process. The same file loaded again (`submit` loads it twice) makes new
    classes in a new module object: those are the same classes, not ambiguous."""
    key = _class_key(cls)
    try:
        inherited = json.loads(os.environ.get(COLUMNS_ENV, "{}"))
    except ValueError:
        inherited = {}
    if not isinstance(inherited, dict):
        inherited = {}
    known = _derived_columns.get(key)
    earlier = known[0]() if known is not None else None
    if earlier is cls:
        return known[1]  # type: ignore[index]
    ambiguous = earlier is not None and earlier.__module__ == cls.__module__
    columns = None if ambiguous else inherited.get(key)
    if not (isinstance(columns, list) and columns and all(isinstance(c, str) for c in columns)):
        columns = _columns_from_spark(cls, dict(config or {}))
    _derived_columns[key] = (weakref.ref(cls), columns)
    inherited[key] = None if ambiguous or (key in inherited and inherited[key] is None) else columns
    os.environ[COLUMNS_ENV] = json.dumps(inherited)
    return columns


def _columns_from_spark(cls: type[SparkSpout], config: dict[str, Any]) -> list[str]:
    who = f"spark spout {cls.__name__}"
    conf = {**config, "spark.master": "local[1]", "spark.ui.enabled": False}
    spark, created = build_session(conf, f"storm-zmq columns of {cls.__name__}", who)
    try:
        spout = new_component(cls, None, cls.__name__, 0)
        spout.storm_conf = config
        spout.task_index, spout.task_count = 0, 1
        df = _call_source(spout, spark, f"{who} (learning its output fields; declare `outputs` "
                                        "to skip this)")
        df = shape_dataframe(df, [], who)
        columns = list(df.columns)
        folded = [c.casefold() for c in columns]  # as Spark compares them
        repeated = sorted({c for c in columns if folded.count(c.casefold()) > 1})
        if repeated:  # (said as a duplicate field of `outputs`, which the user never wrote)
            raise SparkSpoutError(
                f"{who}: the DataFrame from source() has more than one column named "
                f"{', '.join(map(repr, repeated))} (its columns: {columns}; after a join, say): "
                "alias them in source(), or declare `outputs` to name them by position")
        return columns
    finally:
        if created:
            stop_session(spark, shutdown_gateway=True)
