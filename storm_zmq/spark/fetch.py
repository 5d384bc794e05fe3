"""Bringing one partition of a DataFrame to the driver as a list of Python tuples.

Three ways, measured on this machine class with ``scripts/bench_spark.py`` (its
fetch-mode comparison, which ``--no-fetch`` skips)
(docs/spark.md has the numbers):

``arrow`` (the default when pyarrow is installed)
    The DataFrame's Arrow batch RDD (``Dataset.toArrowBatchRdd``, the RDD behind
    ``toArrow()``) is built once; each partition is one Spark job over *that
    partition only* (``PythonRDD.runJob`` with one partition index), whose Arrow
    record batches come over pyspark's local socket and are turned into tuples
    column-wise (``to_pylist`` + ``zip``). Only the partition asked for is computed,
    and the driver holds one partition.
``rows`` (the fallback without pyarrow)
    The same single-partition job over the pickled-rows RDD (``javaToPython``, what
    ``df.rdd`` and ``toLocalIterator`` use); rows unpickle as tuples.
``filter`` (public API only)
    ``df.where(spark_partition_id() == p).toArrow()`` (``collect()`` without
    pyarrow): no private API, but every such job runs *all* partitions of the plan
    and throws away all but one, so a DataFrame of P partitions is computed P times.

``arrow`` and ``rows`` use pyspark internals (``_jdf``, ``toArrowBatchRdd``,
``javaToPython``, ``PythonRDD.runJob``, ``_load_from_socket``), present from
Spark 3.x to 4.x;
``auto`` falls back to ``filter`` when they are missing (e.g. Spark Connect).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from storm_zmq.spark.session import value_fixer

__all__ = ["FETCH_MODES", "make_fetcher"]

log = logging.getLogger(__name__)

FETCH_MODES = ("auto", "arrow", "rows", "filter")


def have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def make_fetcher(spark: Any, df: Any, mode: str = "auto") -> Any:
    """A fetcher (``name``, ``num_partitions``, ``fetch(p) -> list[tuple]``) for `df`.
    Creating it plans the query, which may run Spark jobs (adaptive query execution
    runs the shuffle stages before the final partitioning is known)."""
    if mode not in FETCH_MODES:
        raise ValueError(f"fetch mode must be one of {FETCH_MODES}, got {mode!r}")
    unreadable = arrow_unreadable(df.schema)
    if mode == "arrow" and unreadable:
        raise ValueError(f"fetch='arrow' cannot read column(s) {unreadable}: an empty array or map "
                         "literal has no element type (array<void>); cast it in source(), "
                         "CAST(array() AS ARRAY<STRING>), or use fetch='rows'")
    if mode == "auto":
        internal = hasattr(df, "_jdf")
        if internal:
            try:
                arrow = have_pyarrow() and not unreadable
                return ArrowFetcher(spark, df) if arrow else RowsFetcher(spark, df)
            except Exception as exc:  # py4j: the private API is not there, or Spark failed
                # said, not swallowed: a real planning failure would otherwise show
                # only as the slower filter fetch (which then meets it again)
                log.warning("fetch=auto: the single-partition fetch is not available (%s: %s); "
                            "using fetch=filter, which computes the DataFrame once per "
                            "partition", type(exc).__name__, exc)
        return FilterFetcher(spark, df)
    return {"arrow": ArrowFetcher, "rows": RowsFetcher, "filter": FilterFetcher}[mode](spark, df)


@contextmanager
def _socket_stream(sock_info: Any, serializer: Any) -> Iterator[Any]:
    """What the JVM serves on pyspark's local socket, as an iterator (pyspark 4
    returns a context manager, 3.5 a plain iterator)."""
    try:
        from pyspark.util import _load_from_socket
    except ImportError:  # pyspark < 4
        from pyspark.rdd import _load_from_socket  # type: ignore[attr-defined,no-redef]
    stream = _load_from_socket(sock_info, serializer)
    if hasattr(stream, "__enter__"):
        with stream as items:
            yield items
    else:
        yield stream


def _arrow_schema(df: Any, spark: Any) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    large = str(spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false"))
    # Spark 4 asks for a time zone for timestamp columns. The batches hold UTC
    # microseconds and the zone only says how pyarrow shows them: UTC, which it
    # shows without a time zone database and for every year (the session's zone
    # failed for "Z", "PST" and year 1); value_fixer makes them UTC datetimes anyway.
    try:
        return to_arrow_schema(df.schema, timezone="UTC", prefers_large_types=large.lower() == "true")
    except TypeError:  # pyspark 3.5: no large types, timestamps always UTC
        return to_arrow_schema(df.schema)


def arrow_unreadable(schema: Any) -> list[str]:
    """The columns Arrow cannot carry: a NullType inside an array, map or struct (an
    empty ``array()`` or ``map()`` literal is ``array<void>``), which pyspark's Arrow
    schema refuses ("A null type field may not be non-nullable"). Pickled rows
    carry them: ``[]`` and ``{}``."""
    from pyspark.sql.types import ArrayType, MapType, NullType, StructType

    def nested_null(data_type: Any) -> bool:
        """A NullType where its container says it cannot be null (what Arrow refuses)."""
        if isinstance(data_type, ArrayType):
            inner = [(data_type.elementType, data_type.containsNull)]
        elif isinstance(data_type, MapType):
            inner = [(data_type.keyType, False), (data_type.valueType, data_type.valueContainsNull)]
        elif isinstance(data_type, StructType):
            inner = [(field.dataType, field.nullable) for field in data_type.fields]
        else:
            return False
        return any((isinstance(t, NullType) and not nullable) or nested_null(t)
                   for t, nullable in inner)

    return [field.name for field in schema.fields if nested_null(field.dataType)]


def _fixers(df: Any, source: str) -> list[Any]:
    return [value_fixer(field.dataType, source) for field in df.schema.fields]


class _RunJobFetcher:
    """A JavaRDD of byte arrays built once; `fetch(p)` runs a job on partition p."""

    name = ""

    def __init__(self, spark: Any, df: Any, jrdd: Any) -> None:
        self._sc = spark.sparkContext
        self._jrdd = jrdd
        self.num_partitions = int(jrdd.getNumPartitions())

    def _run_job(self, partition: int) -> Any:
        jvm = self._sc._jvm
        indexes = jvm.java.util.ArrayList()
        indexes.add(int(partition))
        return jvm.org.apache.spark.api.python.PythonRDD.runJob(self._sc._jsc.sc(), self._jrdd, indexes)


class ArrowFetcher(_RunJobFetcher):
    name = "arrow"

    def __init__(self, spark: Any, df: Any) -> None:
        import pyarrow as pa
        from pyspark.serializers import NoOpSerializer

        super().__init__(spark, df, df._jdf.toArrowBatchRdd().toJavaRDD())
        self._schema = _arrow_schema(df, spark)
        self._pa = pa
        self._serializer = NoOpSerializer()
        self._fixers = _fixers(df, "arrow")

    def fetch(self, partition: int) -> list[tuple[Any, ...]]:
        pa, schema, fixers = self._pa, self._schema, self._fixers
        rows: list[tuple[Any, ...]] = []
        with _socket_stream(self._run_job(partition), self._serializer) as stream:
            for message in stream:
                batch = pa.ipc.read_record_batch(pa.py_buffer(message), schema)
                rows.extend(zip(*_python_columns(batch, fixers), strict=True))
        return rows


class RowsFetcher(_RunJobFetcher):
    name = "rows"

    def __init__(self, spark: Any, df: Any) -> None:
        from pyspark.serializers import BatchedSerializer, CPickleSerializer

        super().__init__(spark, df, df._jdf.javaToPython())
        self._serializer = BatchedSerializer(CPickleSerializer())
        self._fixers = _fixers(df, "rows")

    def fetch(self, partition: int) -> list[tuple[Any, ...]]:
        with _socket_stream(self._run_job(partition), self._serializer) as stream:
            rows = [tuple(row) for row in stream]
        return _fix_rows(rows, self._fixers)


def _python_columns(table: Any, fixers: list[Any]) -> list[list[Any]]:
    """The columns of an Arrow batch or table as Python values, each made what the
    spout emits by its fixer. A value Python cannot hold (a timestamp of year 10000:
    `9999-12-31 23:59:59` of a zone west of UTC, in UTC) is said with its column;
    the spout's error named only an OverflowError."""
    columns = []
    for name, column, fix in zip(table.schema.names, table.columns, fixers, strict=True):
        try:
            values = column.to_pylist()
            columns.append(values if fix is None else [fix(v) for v in values])
        except (OverflowError, ValueError) as exc:
            raise ValueError(f"column {name!r} holds a value Python cannot (as a {column.type}): "
                             f"{exc}; cast or clamp it in source()") from exc
    return columns


def _fix_rows(rows: list[tuple[Any, ...]], fixers: list[Any]) -> list[tuple[Any, ...]]:
    if all(f is None for f in fixers):
        return rows
    return [tuple(v if f is None else f(v) for f, v in zip(fixers, row, strict=True)) for row in rows]


class FilterFetcher:
    name = "filter"

    def __init__(self, spark: Any, df: Any) -> None:
        self._df = df
        # DataFrame.toArrow() came with Spark 4.0; before, collect() it is
        self._arrow = have_pyarrow() and hasattr(df, "toArrow") and not arrow_unreadable(df.schema)
        try:
            self.num_partitions = int(df.rdd.getNumPartitions())
        except Exception:  # no RDD API (Spark Connect): the highest partition id + 1
            from pyspark.sql import functions as F

            top = df.select(F.max(F.spark_partition_id())).first()[0]
            self.num_partitions = 0 if top is None else int(top) + 1
        self._fixers = _fixers(df, "arrow" if self._arrow else "rows")

    def fetch(self, partition: int) -> list[tuple[Any, ...]]:
        from pyspark.sql import functions as F

        part = self._df.where(F.spark_partition_id() == partition)
        if not self._arrow:
            return _fix_rows([tuple(row) for row in part.collect()], self._fixers)
        return list(zip(*_python_columns(part.toArrow(), self._fixers), strict=True))
