"""The Spark side of the Spark spout: finding Java, building the SparkSession from
the storm conf, checking column types against what a tuple can carry, and turning
Spark values into plain msgpack-able Python values.

pyspark is imported lazily (it takes a while and needs nothing until a spout starts).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from storm_zmq.runtime.tuning import unpinned

__all__ = [
    "SparkSpoutError",
    "build_session",
    "check_java",
    "component_session",
    "short_error",
    "column_problems",
    "check_master",
    "master_addresses",
    "spark_conf",
    "stop_session",
    "value_fixer",
]

DEFAULT_MASTER = "local[*]"

#: The port of a ``spark://`` master address that names none (the standalone
#: master's default).
DEFAULT_MASTER_PORT = 7077

#: Seconds each address of a ``spark://`` master gets to accept a TCP connection
#: before the session is asked for. Spark itself gives an unreachable standalone
#: master about a minute (3 registration attempts, 20 s each) before it fails, and
#: then with a message buried in its log; a master that is up accepts a connection in
#: milliseconds, even across a WAN, so 3 s fails only a master that is down,
#: misnamed or firewalled, and fails it in seconds.
MASTER_CONNECT_TIMEOUT = 3.0

#: Spark settings the spout sets unless the conf does: no console progress bars in
#: the worker's log.
DEFAULT_SPARK_CONF = {"spark.ui.showConsoleProgress": "false"}


class SparkSpoutError(RuntimeError):
    """A Spark spout cannot go on; the message names the spout and the cause."""


# -- Java ------------------------------------------------------------------------------


def check_java(who: str, environ: Mapping[str, str] | None = None) -> str:
    """The java Spark's launcher will run (``$JAVA_HOME/bin/java``, else ``java`` on
    PATH), or a `SparkSpoutError` saying what is missing."""
    env = os.environ if environ is None else environ
    if env.get("PYSPARK_GATEWAY_PORT"):  # a gateway someone else started: no launch
        return "(external gateway)"
    java_home = env.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if os.path.isfile(java) and os.access(java, os.X_OK):
            return java
        raise SparkSpoutError(
            f"{who}: Java not found: JAVA_HOME is {java_home!r} but {java} is not an "
            "executable; Spark needs a Java runtime (17 or 21): fix JAVA_HOME or unset it "
            "and put java on PATH"
        )
    java = shutil.which("java", path=env.get("PATH"))
    if java is None:
        raise SparkSpoutError(
            f"{who}: Java not found: Spark needs a Java runtime (17 or 21) and there is no "
            "java on PATH and no JAVA_HOME; install one (e.g. apt-get install "
            "openjdk-17-jre-headless) or set JAVA_HOME"
        )
    return java


# -- the session -------------------------------------------------------------------------


def _conf_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value)


def spark_conf(conf: Mapping[str, Any], app_name: str) -> dict[str, str]:
    """Every ``spark.*`` key of the storm conf as a Spark setting, with
    ``spark.master`` defaulting to ``local[*]`` and ``spark.app.name`` to
    `app_name`. A key set to null is left out."""
    settings = dict(DEFAULT_SPARK_CONF)
    settings["spark.master"] = DEFAULT_MASTER
    settings["spark.app.name"] = app_name
    for key, value in conf.items():
        if isinstance(key, str) and key.startswith("spark."):
            if value is None:
                settings.pop(key, None)
            else:
                settings[key] = _conf_value(value)
    return settings


def short_error(exc: BaseException, limit: int = 600) -> str:
    """``Type: the message's first line`` (a Python UDF's: and its own error, the last
    line): py4j errors carry whole Java stacks. For every message naming a cause."""
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    head = lines[0] if lines else ""
    if type(exc).__name__ == "PythonException" and len(lines) > 1:
        head = f"{head.rstrip(':')}: {lines[-1].strip()}"  # the Python worker's own error
    elif type(exc).__name__ == "Py4JJavaError":  # "An error occurred while calling ...": why
        cause = _java_root_cause(exc, lines)
        if cause:
            head = f"{head.rstrip('.')}: {cause}"
    if len(head) > limit:
        head = head[:limit] + " …"
    return f"{type(exc).__name__}: {head}" if head else type(exc).__name__


def _java_root_cause(exc: BaseException, lines: list[str]) -> str:
    """The innermost Java exception of a py4j error (an OutOfMemoryError, a corrupt
    file: the first line said only which call failed). From the JVM if it still
    answers, else the message's second line (``: org.apache...Exception: ...``)."""
    try:
        throwable = exc.java_exception  # type: ignore[attr-defined]
        for _ in range(20):  # a cause chain is short; never a cycle's length
            cause = throwable.getCause()
            if cause is None:
                break
            throwable = cause
        return str(throwable.toString())
    except Exception:
        second = lines[1].strip() if len(lines) > 1 else ""
        return second.removeprefix(":").strip()


def master_addresses(master: str) -> list[tuple[str, int]]:
    """The ``(host, port)`` pairs of a standalone master URL: ``spark://h:7077`` or an
    HA list ``spark://h1:7077,h2:7077`` (``[::1]:7077`` for IPv6; the port defaults
    to `DEFAULT_MASTER_PORT`). ``[]`` for any other master (``local[*]``, ``yarn``,
    ``k8s://...``). A `ValueError` says what is wrong with a malformed one."""
    if not master.startswith("spark://"):
        return []
    addresses = []
    for part in master[len("spark://"):].split(","):
        address = part.strip()
        if address.startswith("["):  # [IPv6]:port
            host, bracket, rest = address[1:].partition("]")
            if not bracket or (rest and not rest.startswith(":")):
                raise ValueError(f"{address!r} is not [host]:port")
            has_port, port = bool(rest), rest[1:]
        else:
            host, colon, port = address.partition(":")
            has_port = bool(colon)
            if ":" in port:
                raise ValueError(f"{address!r} is not host:port (an IPv6 host goes in [])")
        if not host or "/" in host or "/" in port:
            raise ValueError(f"{address!r} is not host:port")
        if not has_port:
            addresses.append((host, DEFAULT_MASTER_PORT))
        elif port.isdigit() and 0 < int(port) < 65536:
            addresses.append((host, int(port)))
        else:
            raise ValueError(f"{address!r} has no valid port")
    return addresses


def _session_error(who: str, master: str, cause: str) -> SparkSpoutError:
    return SparkSpoutError(f"{who}: cannot start a Spark session (spark.master={master}): {cause}")


def check_master(master: str, who: str, timeout: float = MASTER_CONNECT_TIMEOUT) -> None:
    """For a ``spark://`` `master` (other masters are not checked): return once one of
    its addresses accepts a TCP connection within `timeout` seconds; else raise the
    `SparkSpoutError` of a session that cannot start, naming each address's cause,
    at once rather than after Spark's own minute (so too for a malformed URL)."""
    try:
        addresses = master_addresses(master)
    except ValueError as exc:
        raise _session_error(who, master, f"invalid master URL: {exc}") from None
    causes = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            causes.append(f"{host}:{port}: {short_error(exc)}")
    if causes:
        raise _session_error(
            who, master,
            f"no master accepts connections ({'; '.join(causes)}); check that a Spark "
            "master runs there and that this host can reach it (host name, port, "
            "firewall)",
        )


def build_session(conf: Mapping[str, Any], app_name: str, who: str) -> tuple[Any, bool]:
    """``(spark, created)``: the SparkSession for `conf` (getOrCreate, so tasks of one
    worker share it), and whether this call created it. Raises `SparkSpoutError`
    naming `who` when Java is missing, a ``spark://`` master accepts no connection,
    or the session cannot start."""
    check_java(who)
    settings = spark_conf(conf, app_name)
    master = settings["spark.master"]
    if "spark.pyspark.python" not in settings:
        # Python workers (UDFs in source()) must run this interpreter, not whatever
        # python3 is first on PATH.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # a dependency, but not of every worker.python (PyPy's)
        raise SparkSpoutError(
            f"{who}: pyspark is not installed for {sys.executable}, the workers' interpreter "
            f"({exc}); a SparkSpout runs on CPython workers (docs/pypy.md)") from exc
    existed = getattr(SparkSession, "_instantiatedSession", None) is not None
    if not existed:  # a running session is handed back as it is: no master is asked
        check_master(master, who)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _ctrl_c_held() as interrupted:
        try:
            with unpinned():  # a local Spark's JVM gets every core, not the worker's one
                spark = builder.getOrCreate()
        except Exception as exc:
            raise _session_error(who, master, f"{short_error(exc)}; Spark's log above has the details") from exc
    if interrupted:
        if not existed:
            stop_session(spark, shutdown_gateway=True)
        raise KeyboardInterrupt
    return spark, not existed


@contextlib.contextmanager
def _ctrl_c_held() -> Iterator[list[int]]:
    """In the main thread, a first Ctrl-C while a session starts waits for the start
    to end (the list it yields then holds the signal): pyspark's launch of the JVM,
    interrupted, loses its process, which ran on after the command (a Spark audit).
    A second Ctrl-C interrupts at once."""
    before = signal.getsignal(signal.SIGINT)
    if (threading.current_thread() is not threading.main_thread()
            or before is not signal.default_int_handler):  # a handler of the caller's own
        yield []
        return
    interrupted: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        if interrupted:
            signal.default_int_handler(signum, frame)
        interrupted.append(signum)
        print("stopping once Spark has started, so that its JVM stops too (Ctrl-C again "
              "to stop at once)", file=sys.stderr, flush=True)

    try:
        signal.signal(signal.SIGINT, hold)
    except ValueError:  # not the main interpreter
        yield []
        return
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, before)


def component_session(base: Any, conf: Mapping[str, Any], app_name: str) -> tuple[Any, list[str]]:
    """``(session, ignored)``: a session of its own for one spout task, sharing the
    worker's Spark context, with the runtime (SQL) settings of `conf` applied to it
    alone. Every spout of a worker shares one context, and `getOrCreate` writes each
    caller's settings onto the shared session: two spouts with different
    ``spark.sql.shuffle.partitions`` then planned their DataFrames with whichever
    had started last, and the tasks of one spout partitioned differently, losing and
    duplicating rows. `ignored` names the static settings `conf` sets that the
    running context has otherwise (``spark.master``, memory, ...): one context per
    worker, so the first spout's stand."""
    session = base.newSession()
    context_conf = base.sparkContext.getConf()
    ignored = []
    for key, value in spark_conf(conf, app_name).items():
        if session.conf.isModifiable(key):
            session.conf.set(key, value)
        elif key in conf and context_conf.get(key, None) != value:
            # unset in the context is Spark's default, not this spout's value: a
            # connector in one spout's spark.jars.packages vanished without a word
            # when another spout had started the context without it
            have = context_conf.get(key, None)
            has = "it unset: Spark's default" if have is None else have
            ignored.append(f"{key}={value} (the context has {has})")
    return session, ignored


def stop_session(spark: Any, shutdown_gateway: bool = False) -> None:
    """Stop `spark`; with `shutdown_gateway` also end the JVM pyspark started, so that
    this process holds no JVM afterwards and a later session launches a fresh one."""
    try:
        spark.stop()
    except Exception:  # already stopped, or the JVM is gone
        pass
    if not shutdown_gateway:
        return
    try:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        if gateway is None:
            return
        proc = getattr(gateway, "proc", None)
        try:
            gateway.shutdown()
        except Exception:
            pass
        if proc is not None:
            try:
                proc.stdin.close()  # the gateway JVM exits when its stdin closes
                proc.wait(10)
            except Exception:
                proc.kill()
        SparkContext._gateway = None
        SparkContext._jvm = None
    except Exception:  # private API moved: the JVM stays until the process exits
        pass


# -- types ---------------------------------------------------------------------------------

_CAST_HINTS = {
    "YearMonthIntervalType": "a tuple has no year-month interval; cast it in source() to a "
    "number of months or a string",
}


def _type_problem(dtype: Any) -> str | None:
    """Why values of Spark type `dtype` cannot travel in a tuple, or None."""
    from pyspark.sql import types as T

    plain = (
        T.NullType, T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType,
        T.FloatType, T.DoubleType, T.StringType, T.BinaryType,
        # datetime.date, datetime.datetime (UTC / naive), Decimal, timedelta: carried
        # by tuples (storm_zmq.topology.value_types)
        T.DateType, T.TimestampType, T.DecimalType,
        *(getattr(T, name) for name in ("CharType", "VarcharType", "TimestampNTZType",
                                        "DayTimeIntervalType") if hasattr(T, name)),
    )
    if isinstance(dtype, plain):
        return None
    if isinstance(dtype, T.ArrayType):
        return _nested_problem(dtype.elementType)
    if isinstance(dtype, T.MapType):
        if isinstance(dtype.keyType, (T.ArrayType, T.MapType, T.StructType)):
            # a Python dict's keys must be hashable: these arrive as lists and dicts
            return (f"type {dtype.simpleString()}, whose keys a tuple cannot carry (map keys "
                    "must be plain values; cast them, e.g. to_json(), in source())")
        return _nested_problem(dtype.keyType) or _nested_problem(dtype.valueType)
    if isinstance(dtype, T.StructType):
        for field in dtype.fields:
            problem = _nested_problem(field.dataType)
            if problem:
                return problem
        return None
    name = type(dtype).__name__
    hint = _CAST_HINTS.get(name, "a tuple carries null, boolean, integer, float, string, "
                                 "binary, decimal, date, timestamp, timestamp_ntz, day-time "
                                 "interval, and arrays/maps/structs of those; cast it in source()")
    return f"type {dtype.simpleString()}, which a tuple cannot carry ({hint})"


def _nested_problem(dtype: Any) -> str | None:
    problem = _type_problem(dtype)
    if problem is None or problem.startswith("it contains "):
        return problem
    return f"it contains {problem}"


def column_problems(schema: Any) -> list[str]:
    """One line per top-level column whose values a tuple cannot carry."""
    problems = []
    for field in schema.fields:
        problem = _type_problem(field.dataType)
        if problem:
            if problem.startswith("it contains "):
                problem = f"type {field.dataType.simpleString()}: {problem}"
            problems.append(f"column {field.name!r} has {problem}")
    return problems


# -- values ----------------------------------------------------------------------------------

Fixer = Callable[[Any], Any]


def value_fixer(dtype: Any, source: str) -> Fixer | None:
    """A function making the values of Spark type `dtype`, as `source` ("arrow":
    ``pyarrow`` ``to_pylist``; "rows": pickled Rows) delivers them, plain: structs
    as dicts, maps as dicts, binary as bytes, timestamps as aware datetimes in UTC.
    None when they already are."""
    from pyspark.sql import types as T

    if isinstance(dtype, T.TimestampType):
        # An instant, which each source gives its own way: pyarrow with the UTC
        # zone the Arrow schema names (maybe as a pytz zone, which tuples refuse),
        # pickled Rows naive in this process's local time (the same instant;
        # astimezone reads a naive one as local time, fold included)
        return _in_utc
    if isinstance(dtype, T.BinaryType) and source == "rows":
        return lambda v: None if v is None else bytes(v)
    if isinstance(dtype, T.ArrayType):
        fe = value_fixer(dtype.elementType, source)
        if fe is None:
            return None
        return lambda v: None if v is None else [fe(x) for x in v]
    if isinstance(dtype, T.MapType):
        fk = value_fixer(dtype.keyType, source) or _same
        fv = value_fixer(dtype.valueType, source) or _same
        if source == "arrow":  # pyarrow gives a map as a list of (key, value) pairs
            return lambda v: None if v is None else {fk(k): fv(x) for k, x in v}
        if fk is _same and fv is _same:
            return None
        return lambda v: None if v is None else {fk(k): fv(x) for k, x in v.items()}
    if isinstance(dtype, T.StructType):
        names = [f.name for f in dtype.fields]
        fixers = [value_fixer(f.dataType, source) or _same for f in dtype.fields]
        if source == "rows":  # a Row (a tuple): make it a dict like pyarrow's
            return lambda v: None if v is None else {
                n: f(x) for n, f, x in zip(names, fixers, v, strict=True)
            }
        if all(f is _same for f in fixers):
            return None
        return lambda v: None if v is None else {n: f(v[n]) for n, f in zip(names, fixers, strict=True)}
    return None


def _same(value: Any) -> Any:
    return value


def _in_utc(value: Any) -> Any:
    return None if value is None else value.astimezone(datetime.UTC)
