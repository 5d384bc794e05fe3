"""Configuration: built-in defaults, storm.yaml loading and validation.

Keys and meanings are Apache Storm's own (``topology.workers``,
``supervisor.slots.ports``, ``storm.zookeeper.servers``, ...) so that a Storm user's
knowledge and storm.yaml carry over; the transport knobs live under
``storm.messaging.zmq.*`` and ``storm.messaging.tcp.*`` the way Storm's Netty
transport uses ``storm.messaging.netty.*``.

Precedence, lowest first: built-in defaults < ``~/.storm/storm.yaml`` < one of
(``-c FILE``, else ``$STORM_CONF``, else ``conf/storm.yaml`` in the working
directory) < ``-o key=value`` overrides. Every error names the place the bad value
came from, because a config error is always fixed by editing that place.

Unknown keys pass through (Storm hands arbitrary keys to topologies), except those
that look like a typo of a known key: a misspelt setting silently keeping its default
is the hardest config bug to find.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from storm_zmq.topology.definition import TopologyDefinition

__all__ = [
    "DEFAULTS",
    "ORDERED_PAIRS",
    "PER_COMPONENT_KEYS",
    "SCHEMA",
    "ConfigError",
    "Setting",
    "check_value",
    "closest_key",
    "component_may_set",
    "load_config",
    "load_config_with_origins",
    "parse_override",
    "read_yaml_file",
    "validate",
    "validate_topology_conf",
]

#: Origin recorded for a value that nobody set.
DEFAULT_ORIGIN = "default"

#: Value kinds a `Setting` can have.
KINDS = ("int", "float", "str", "bool", "list[int]", "list[str]", "registrations")


class ConfigError(Exception):
    """A configuration the user wrote is wrong; the message names the file (or ``-o``
    option) and the key, so it can be shown as is, without a traceback."""


@dataclass(frozen=True)
class Setting:
    """Schema entry for one known key: plain data, so docs can be generated from it.

    `minimum`/`maximum` bound numbers (and each item of a ``list[int]``); `nullable`
    allows ``null`` (meaning "decide at run time", as in Storm).
    """

    default: Any
    kind: str
    doc: str
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None

    @property
    def type_name(self) -> str:
        """Human-readable type, e.g. ``int or null``."""
        return f"{self.kind} or null" if self.nullable else self.kind


_PORT = {"minimum": 1, "maximum": 65535}

#: The knobs both socket transports have, with one meaning: written once, each
#: transport gets them under its own prefix (``storm.messaging.zmq.min_wait_ms``).
_SOCKET_TRANSPORT_SETTINGS: dict[str, Setting] = {
    "min_wait_ms": Setting(100, "int", "Reconnect backoff, first wait.", minimum=1),
    "max_wait_ms": Setting(1000, "int", "Reconnect backoff cap.", minimum=1),
    "keepalive.secs": Setting(
        60, "int", "A connection idle this long gets TCP keepalive probes (4, a quarter "
        "of this apart), and one with data in flight is given that long twice for it to "
        "be acknowledged (TCP_USER_TIMEOUT), so that one whose peer's host vanished "
        "without closing it is dropped in about twice this time instead of held for "
        "ever (idle) or about 15 minutes (sending); 0 turns both off. At most 32767 "
        "(Linux's bound).", minimum=0, maximum=32767),
    "transfer.batch.size": Setting(
        262144, "int", "Target frame size in bytes; larger batches are split.",
        minimum=1),
    "max.frame.size": Setting(
        16777216, "int", "Hard frame size limit in bytes; bigger frames are refused "
        "on both ends.", minimum=1),
    "send.timeout.ms": Setting(
        -1, "int", "How long send() blocks while the peer applies backpressure before "
        "raising SendTimeout; -1 blocks, 0 sends only what needs no wait.", minimum=-1),
}


def _socket_transport_settings(transport: str) -> dict[str, Setting]:
    return {f"storm.messaging.{transport}.{suffix}": setting
            for suffix, setting in _SOCKET_TRANSPORT_SETTINGS.items()}


SCHEMA: dict[str, Setting] = {
    # --- transport selection -------------------------------------------------------
    "storm.messaging.transport": Setting(
        "storm_zmq.messaging.zmq.Context", "str",
        "Worker-to-worker transport: dotted path of any importable class with the "
        "Context shape, or an alias zmq / tcp / local."),
    # --- ZeroMQ transport ----------------------------------------------------------
    "storm.messaging.zmq.threads": Setting(
        1, "int", "ZeroMQ I/O threads per worker process.", minimum=1),
    "storm.messaging.zmq.hwm": Setting(
        256, "int",
        "High-water mark in batches (frames) per socket and direction; bounds memory "
        "and turns a slow peer into backpressure (0, unlimited in ZeroMQ, is refused).",
        minimum=1),
    **_socket_transport_settings("zmq"),
    "storm.messaging.zmq.linger.millis": Setting(
        500, "int", "How long close() may keep flushing unsent frames; finite so that "
        "shutdown is bounded.", minimum=0),
    "storm.messaging.zmq.heartbeat.ivl.ms": Setting(
        0, "int", "Interval between ZMTP heartbeats that detect dead peers; 0, the "
        "default, sends none: with them libzmq 4.3 can abort a worker that stalled past "
        "heartbeat.timeout.ms while its receive queue was full (docs/operations.md).",
        minimum=0),
    "storm.messaging.zmq.heartbeat.timeout.ms": Setting(
        10000, "int", "A peer silent this long is considered dead and reconnected "
        "(ZeroMQ caps it at 6553500).", minimum=1, maximum=6553500),
    "storm.messaging.zmq.curve": Setting(
        False, "bool", "Encrypt and authenticate worker-to-worker traffic with CURVE; "
        "the key pair is made per topology at submit and reaches workers through "
        "ZooKeeper (local runs make one per run)."),
    # --- plain TCP transport -------------------------------------------------------
    "storm.messaging.tcp.buffer_size": Setting(
        4194304, "int", "Socket send/receive buffer in bytes; 0 keeps the OS default. "
        "Keep it at 64 KiB or more: below loopback's segment size (about 64 KiB) TCP "
        "crawls at tens of KB/s between workers of one host.",
        minimum=0),
    **_socket_transport_settings("tcp"),
    "storm.messaging.tcp.connect.timeout.ms": Setting(
        2000, "int", "Bound on one connection attempt before backing off and retrying.",
        minimum=1),
    "storm.messaging.tcp.authentication": Setting(
        False, "bool", "Mutual challenge-response (HMAC-SHA256) with the topology's "
        "secret before a tcp connection carries frames (the idea of Storm's "
        "storm.messaging.netty.authentication)."),
    # --- in-process transport -----------------------------------------------------
    "storm.messaging.local.hwm": Setting(
        256, "int", "Batches queued per bound port of the in-process transport before "
        "senders block.", minimum=1),
    "storm.messaging.local.send.timeout.ms": Setting(
        -1, "int", "How long send() blocks on a full or unbound in-process port before "
        "raising SendTimeout (-1 = block, 0 = send only what needs no wait).", minimum=-1),
    # --- node ----------------------------------------------------------------------
    "supervisor.slots.ports": Setting(
        [6700, 6701, 6702, 6703], "list[int]",
        "Worker slots of this node: one worker process per port, which it binds for "
        "incoming tuples.", **_PORT),
    "storm.local.dir": Setting(
        "storm-local", "str", "Directory for shipped code, worker state and pid files."),
    "storm.local.hostname": Setting(
        None, "str", "Host name other workers use to reach this node; null detects it.",
        nullable=True),
    # --- ZooKeeper -----------------------------------------------------------------
    "storm.zookeeper.auth.scheme": Setting(
        None, "str", "ZooKeeper auth scheme of the daemons and clients (\"digest\"); "
        "with it, cluster state is created under ACLs only its holders may change, "
        "and topology secrets only they may read.", nullable=True),
    "storm.zookeeper.auth.payload": Setting(
        None, "str", "Credentials for storm.zookeeper.auth.scheme (\"user:password\" "
        "for digest).", nullable=True),
    "storm.zookeeper.topology.auth.scheme": Setting(
        None, "str", "ZooKeeper auth scheme a topology's workers use; null: the "
        "daemons' storm.zookeeper.auth.scheme.", nullable=True),
    "storm.zookeeper.topology.auth.payload": Setting(
        None, "str", "Credentials for storm.zookeeper.topology.auth.scheme.",
        nullable=True),
    "storm.zookeeper.servers": Setting(
        ["localhost"], "list[str]", "ZooKeeper ensemble hosts (cluster mode only)."),
    "storm.zookeeper.port": Setting(2181, "int", "ZooKeeper client port.", **_PORT),
    "storm.zookeeper.root": Setting(
        "/storm", "str", "ZooKeeper path under which all cluster state lives, so "
        "several clusters can share one ensemble."),
    "storm.zookeeper.session.timeout": Setting(
        20000, "int", "ZooKeeper session timeout (ms): how long a dead node keeps its "
        "ephemeral nodes.", minimum=1),
    "storm.zookeeper.connection.timeout": Setting(
        15000, "int", "Bound on establishing a ZooKeeper connection (ms).", minimum=1),
    "storm.zookeeper.retry.times": Setting(
        5, "int", "Retries of a failed ZooKeeper operation.", minimum=0),
    "storm.zookeeper.retry.interval": Setting(
        1000, "int", "First wait between ZooKeeper retries (ms).", minimum=0),
    "storm.zookeeper.retry.intervalceiling.millis": Setting(
        30000, "int", "Cap of the exponential wait between ZooKeeper retries (ms).",
        minimum=0),
    # --- topology ------------------------------------------------------------------
    "nimbus.monitor.freq.secs": Setting(
        5, "int", "How often the leader nimbus checks supervisors and worker heartbeats "
        "and repairs assignments (Storm's default is 10).", minimum=1),
    "nimbus.task.timeout.secs": Setting(
        30, "int", "A worker whose ZooKeeper heartbeat nimbus has not seen change for "
        "this long (by nimbus's clock) is dead to nimbus, which moves it to another "
        "slot.", minimum=1),
    "nimbus.task.launch.secs": Setting(
        120, "int", "Grace for a newly assigned worker before nimbus expects its first "
        "heartbeat, from when nimbus sees the placement.", minimum=1),
    "nimbus.inbox.jar.expiration.secs": Setting(
        3600, "int", "Code and secrets a submit uploaded but never wrote its topology for "
        "(it was interrupted) are removed this long after nimbus first sees them "
        "(Storm's key for uploaded jars; at least a minute, so that a submit in "
        "progress is never taken for one).",
        minimum=60),
    "nimbus.supervisor.timeout.secs": Setting(
        60, "int", "A supervisor whose registration nimbus has not seen refreshed for "
        "this long (by nimbus's clock) is dead to nimbus (a lost ZooKeeper session "
        "removes it at once): it gets no new workers, and those placed on it that never "
        "heartbeat move. Its workers that heartbeat run on: they outlive their "
        "supervisor, as Storm's do.", minimum=1),
    "supervisor.monitor.frequency.secs": Setting(
        3, "int", "How often a supervisor reconciles its worker processes with the "
        "assignments.", minimum=1),
    "supervisor.worker.timeout.secs": Setting(
        30, "int", "A worker whose local heartbeat is older than this is killed and "
        "restarted by its supervisor.", minimum=1),
    "supervisor.worker.start.timeout.secs": Setting(
        120, "int", "Grace for a starting worker before its supervisor expects a "
        "heartbeat; in local mode how long `run` waits for every worker's components to "
        "initialize.", minimum=1),
    "supervisor.worker.shutdown.sleep.secs": Setting(
        5, "int", "How long a supervisor waits after asking a worker to stop before "
        "killing it (Storm 2's default is 3; a stop here drains and runs every "
        "component's cleanup() first).", minimum=0),
    "worker.cpu.pinning": Setting(
        True, "bool", "Pin each worker process to a CPU of its own: the position of its "
        "port among the host's worker ports (supervisor.slots.ports; in local mode the "
        "run's) in the CPUs the process may use. Nothing is pinned on a host with more "
        "worker ports than CPUs. A worker runs Python one thread at a time, and on one "
        "CPU its threads hand tuples over in a warm cache instead of moving between "
        "cores (docs/operations.md); turn it off on a host shared with other busy "
        "processes."),
    "worker.shared.executor.thread": Setting(
        True, "bool", "Run all executors of a worker in one thread, taking turns, instead "
        "of a thread each (Storm's model): a worker runs Python one thread at a time "
        "anyway, and in one thread a batch reaches its consumer without a thread "
        "hand-off. Backpressure then holds output instead of waiting, and an executor "
        "whose turns wait (I/O, sleep) more than half their time moves to a thread of "
        "its own (docs/architecture.md, \"Shared executor thread\"; "
        "storm_zmq/runtime/shared.py)."),
    "worker.python": Setting(
        None, "str", "The Python interpreter that runs the topology's workers: a path, or "
        "a command on PATH; null is the one running storm-zmq. PyPy 3.9 or later runs "
        "the per-tuple path of the runtime and of your components several times faster "
        "(bash scripts/pypy-env.sh makes .venv-pypy/bin/python with what a worker "
        "imports); your components' own dependencies must be installed for it too "
        "(docs/pypy.md).", nullable=True),
    "worker.pypy.jit.trace_limit": Setting(
        1000, "int", "PyPy workers: the most operations PyPy's JIT records in one trace "
        "(its --jit trace_limit, whose own default is 6000); null keeps PyPy's. A "
        "compile holds every thread of the worker, and a shorter trace compiles in "
        "fewer milliseconds: with 1000, two PyPy workers' p99 complete latency at half "
        "load was 10-17 ms where 6000 gave 37-42 ms, at the same throughput "
        "(docs/pypy.md). CPython workers ignore it.", nullable=True, minimum=1),
    "worker.log.max.bytes": Setting(
        10485760, "int", "A worker's log file is rotated when it reaches this size.",
        minimum=1024),
    "worker.log.backups": Setting(
        5, "int", "Rotated log files kept per worker.", minimum=0),
    "logviewer.port": Setting(
        8000, "int", "HTTP port on which a supervisor serves its workers' logs "
        "(storm-zmq logs reads them from there); 0 turns it off.", minimum=0,
        maximum=65535),
    "ui.host": Setting(
        "127.0.0.1", "str", "Interface the web UI and its Prometheus endpoint bind "
        "(Storm binds 0.0.0.0; this one is private unless asked)."),
    "ui.port": Setting(
        8080, "int", "Port of the web UI (storm-zmq ui, storm-zmq run --ui); it "
        "serves Prometheus metrics at /metrics.", **_PORT),
    "ui.actions.enabled": Setting(
        True, "bool", "Whether the cluster UI's buttons (and POST requests) activate, "
        "deactivate, rebalance and kill topologies, as Storm's UI does; false makes it "
        "read-only. Anyone who reaches ui.host:ui.port can use them."),
    "worker.heartbeat.frequency.secs": Setting(
        1, "int", "How often a worker of a cluster syncs with ZooKeeper: writes its "
        "heartbeat (with its newest stats report) and reads its assignment, its "
        "topology's status and log-level requests. Its local heartbeat file, which its "
        "supervisor reads, is written with every stats report (0.5 s) regardless.",
        minimum=1),
    "topology.workers": Setting(
        1, "int", "Worker processes the topology is spread over.", minimum=1),
    "topology.acker.executors": Setting(
        None, "int", "Acker executors; null means one per worker, 0 disables acking.",
        nullable=True, minimum=0),
    "topology.max.spout.pending": Setting(
        None, "int", "Bound on un-acked tuples per spout task (null or 0 = unbounded, "
        "as in Storm); the flow control of at-least-once topologies.", nullable=True,
        minimum=0),
    "topology.tasks": Setting(
        None, "int", "A component's number of tasks (Storm's setNumTasks writes it to the "
        "component's config; spec(num_tasks=) is the same); in the topology's config, that "
        "of every component that sets none, as in Storm; null = its par.",
        nullable=True, minimum=1),
    "topology.max.task.parallelism": Setting(
        None, "int", "Cap on every component's number of tasks (Storm's; a component's "
        "config may set its own); null = no cap.", nullable=True, minimum=1),
    "topology.message.timeout.secs": Setting(
        30, "int", "A tuple tree not completed within this time is failed and replayed.",
        minimum=1),
    "topology.enable.message.timeouts": Setting(
        True, "bool", "false: tuple trees never time out (Storm's key): a tree lost to a "
        "dead worker stays pending for ever, holding a place of topology.max.spout.pending."),
    "topology.executor.receive.buffer.size": Setting(
        None, "int", "Capacity of each executor's receive queue in tuples; a full queue "
        "is backpressure. null: chosen by the workers' interpreter "
        "(`tuning.receive_buffer_size`): 4096 on CPython, where tuples wait as Python "
        "objects and a few batches' worth keeps them in the CPU caches and the garbage "
        "collector's passes short while leaving room for what peers send before a "
        "throttle reaches them; Storm's 32768 on PyPy, which runs a queue's worth about "
        "four times as fast, so 4096 drained before a throttle's round trip between "
        "workers ended (docs/pypy.md).", nullable=True, minimum=1),
    "topology.transfer.buffer.size": Setting(
        1000, "int", "Capacity of each worker's outbound transfer queue.", minimum=1),
    "topology.transfer.batch.size": Setting(
        1000, "int", "Output tuples an executor buffers at most before publishing them "
        "mid-batch (Storm's default is 1; batches are what make Python fast, and "
        "topology.batch.flush.interval.millis bounds the latency they add).",
        minimum=1),
    "topology.producer.batch.size": Setting(
        100, "int", "Tuples a spout executor emits per round before publishing them "
        "(Storm's default is 1; see topology.transfer.batch.size).", minimum=1),
    "topology.batch.flush.interval.millis": Setting(
        1, "int", "The longest a spout's round of emits lasts before its output is "
        "flushed (with topology.producer.batch.size), bounding the latency batching adds "
        "at the spout; bolts flush once per input batch whatever this says. 0 is taken "
        "as 1 (in Storm 2, 0 turns the flush tuples off).", minimum=0),
    "topology.sleep.spout.wait.strategy.time.ms": Setting(
        1, "int", "How long a spout task whose next_tuple() emitted nothing waits (taking "
        "acks and fails meanwhile) before it is called again: Storm's sleep spout wait "
        "strategy, the only one here. Raise it to spend less CPU on an idle spout; 0 "
        "calls it again at once, a busy loop (as Storm's sleep of 0). A component may set "
        "its own.", minimum=0),
    "topology.tick.tuple.freq.secs": Setting(
        None, "int", "Send tick tuples to every bolt this often; null = never.",
        nullable=True, minimum=1),
    "topology.disable.loadaware.messaging": Setting(
        False, "bool", "true: shuffle and local-or-shuffle groupings spread tuples "
        "exactly evenly; false (Storm 2's default): they go round their least loaded "
        "target tasks, so that an emitter does not wait on one busy task while another "
        "idles, and send less to tasks of a worker short of CPU (docs/architecture.md, "
        "\"Load-aware shuffles\", \"CPU-aware weights\")."),
    "topology.debug": Setting(False, "bool", "Log every emitted tuple."),
    "topology.error.throttle.interval.secs": Setting(
        10, "int", "The interval of topology.max.error.report.per.interval.", minimum=1),
    "topology.max.error.report.per.interval": Setting(
        5, "int", "Errors a task reports (raise_exception, exit_on_exception off) that are "
        "logged with their traceback and shown in stats and the UI, per "
        "topology.error.throttle.interval.secs; the rest are counted (errors_reported) "
        "and said once per interval, as Storm throttles them.", minimum=1),
    "topology.name": Setting(
        None, "str", "The topology's name, as Storm sets it: `submit` (its -n, else the "
        "topology's name) and `run` set it; a component reads it as "
        "storm_conf[\"topology.name\"] or pystorm's self.topology_name.", nullable=True),
    "topology.kryo.register": Setting(
        None, "registrations", "Your own types that tuples carry between workers (Storm's "
        "Kryo registrations): a list whose items are a class's dotted name (its fields "
        "travel; an Enum's member name) or a one-entry map of a class's name to its "
        "serializer's (serialize(value) / deserialize(data)). Imported from the "
        "project's src/ when the topology starts; every worker must read the same list, "
        "in the same order (docs/architecture.md, \"What a tuple carries\").",
        nullable=True),
    "topology.skip.missing.kryo.registrations": Setting(
        False, "bool", "Skip, with a warning, a topology.kryo.register item whose class or "
        "serializer is not found, instead of refusing to start (Storm's key)."),
    "topology.copy.emitted.values": Setting(
        True, "bool", "Copy an emit's values at the emit when one of them is not a str, "
        "bytes, number, bool, None, date, time, Decimal or UUID (a list, a dict, a set, an "
        "object): packed and unpacked as another worker would receive them. So a list "
        "emitted and then cleared or reused (a buffer) arrives as it was at the emit, as "
        "under pystorm, in every worker; and such a value no other worker could receive "
        "(a set, an unregistered object) is an error at the emit, naming the component, "
        "stream and type, in a one-worker run too (a str, int or datetime is not copied, "
        "so an int beyond 64 bits or a zone of pytz is still found only between "
        "workers). Tuples arrive as lists, as from another worker. false skips the copy, "
        "as Java Storm does (faster for large values; the emitter must then never change "
        "what it emitted). Per component too."),
    "topology.testing.always.try.serialize": Setting(
        False, "bool", "Serialize every emitted tuple, and decode it again, also those "
        "delivered inside the worker, so that a value a tuple cannot carry fails in a "
        "one-worker run as it would between workers, and each target gets its own decoded "
        "copy, as from another worker (costs a msgpack pack and unpack per emit and an "
        "unpack per target; storm_zmq.testing's harnesses turn it on)."),
    "topology.stats.sample.rate": Setting(
        0.05, "float", "Fraction of a bolt's tuples followed to their ack for its "
        "process latency, when the bolt acks them itself; a bolt acked as process() "
        "returns (pystorm's auto_ack) is timed per batch, every tuple. 0 turns process "
        "latency off.", minimum=0, maximum=1),
}

#: Built-in default of every known key.
DEFAULTS: dict[str, Any] = {key: s.default for key, s in SCHEMA.items()}

#: (low, high) pairs of keys where the low value must not exceed the high one.
ORDERED_PAIRS: tuple[tuple[str, str], ...] = (
    ("storm.messaging.zmq.min_wait_ms", "storm.messaging.zmq.max_wait_ms"),
    ("storm.messaging.zmq.heartbeat.ivl.ms", "storm.messaging.zmq.heartbeat.timeout.ms"),
    ("storm.messaging.zmq.transfer.batch.size", "storm.messaging.zmq.max.frame.size"),
    ("storm.messaging.tcp.min_wait_ms", "storm.messaging.tcp.max_wait_ms"),
    ("storm.messaging.tcp.transfer.batch.size", "storm.messaging.tcp.max.frame.size"),
    ("storm.zookeeper.retry.interval", "storm.zookeeper.retry.intervalceiling.millis"),
)

#: Known keys a component's own ``config`` may set: its executors read them with the
#: component's config on top (`WorkerState.component_conf`). Storm honours the same
#: few (its executor drops every other Storm key from a component's config) but for
#: the error throttle's and topology.copy.emitted.values, which are ours. Every other
#: known key is read once per worker or topology, so a component's value of it is not
#: used (`validate_topology_conf` says so) unless it joins the topology's
#: (`JOINS_THE_TOPOLOGYS`); unknown (user) keys reach the component's `initialize` as
#: they are.
PER_COMPONENT_KEYS = frozenset({
    "topology.debug", "topology.max.spout.pending", "topology.max.task.parallelism",
    "topology.tasks", "topology.tick.tuple.freq.secs",
    "topology.sleep.spout.wait.strategy.time.ms", "topology.max.error.report.per.interval",
    "topology.error.throttle.interval.secs", "topology.copy.emitted.values",
})


#: Known keys whose component values Storm's nimbus adds to the topology's
#: (`Nimbus.normalizeConf`): `topology_registrations` does it here.
JOINS_THE_TOPOLOGYS = frozenset({"topology.kryo.register"})


_SPOUT_WAITS = ("a spout with nothing to emit sleeps topology.sleep.spout.wait.strategy.time.ms "
                "(Storm's sleep strategy), the only spout wait strategy here")
_JVM = "a JVM setting: the workers are Python processes (worker.python chooses the interpreter)"
_MULTILANG = ("components run inside the Python worker process, not as multilang "
              "subprocesses: there is no serializer or shell queue between them")

#: Storm keys (a trailing "." stands for every key under it) that a Storm or
#: streamparse project may carry and nothing here reads, with what a user should know
#: instead. Their values are accepted, as user keys are, and `validate_topology_conf`
#: warns about each one set, so that a setting that changes nothing is not taken for
#: one that works.
NOT_IMPLEMENTED: dict[str, str] = {
    "topology.spout.wait.": _SPOUT_WAITS,  # .strategy, .progressive.level1.count, ...
    "topology.bolt.wait.": "an idle bolt executor waits on its input queue: no bolt wait "
                           "strategy applies",
    "topology.backpressure.wait.": "backpressure here is the bounded queues and the throttle "
                                   "between workers: no wait strategy applies",
    "topology.environment": "not implemented: a worker inherits the environment of its "
                            "runner (storm-zmq run) or supervisor",
    "topology.worker.childopts": _JVM,
    "topology.worker.gc.childopts": _JVM,
    "topology.worker.logwriter.childopts": _JVM,
    "topology.worker.max.heap.size.mb": _JVM,
    "worker.childopts": _JVM,
    "worker.gc.childopts": _JVM,
    "worker.heap.memory.mb": _JVM,
    "topology.fall.back.on.java.serialization": "tuples cross workers as msgpack; "
                                                "topology.kryo.register adds your own types",
    "topology.multilang.serializer": _MULTILANG,
    "topology.shellbolt.max.pending": _MULTILANG,
}


def not_implemented(key: str) -> str | None:
    """What a user should know about Storm key `key`, which nothing here reads; None
    for every other key."""
    if key in NOT_IMPLEMENTED:
        return NOT_IMPLEMENTED[key]
    return next((why for prefix, why in NOT_IMPLEMENTED.items()
                 if prefix.endswith(".") and key.startswith(prefix)), None)


def component_may_set(key: str) -> bool:
    """Whether a component's own ``config`` counts for `key`: a per-component key,
    or a key of the user's (Storm drops every other known key from it)."""
    return key in PER_COMPONENT_KEYS or key not in SCHEMA

#: Namespaces in which an unknown key close to a known one is taken for a typo.
_CHECKED_PREFIXES = ("storm.", "topology.", "supervisor.", "nimbus.", "worker.", "ui.",
                     "logviewer.")

_HOME_LABEL = "~/.storm/storm.yaml"
_CWD_LABEL = "conf/storm.yaml"


# --------------------------------------------------------------------------- loading


def load_config(
    conf_file: str | None = None,
    overrides: Iterable[str] | None = None,
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Return the effective configuration: every known key, plus any extra keys set.

    `conf_file` is ``-c FILE`` (relative to `cwd`); without it ``$STORM_CONF`` is
    used, and without that ``conf/storm.yaml`` in `cwd` if it exists. `overrides` are
    ``-o key=value`` strings, values parsed as YAML. `home`, `cwd` and `env` default
    to the real ones and exist so that tests need not touch them.
    Raises `ConfigError`.
    """
    conf, _ = load_config_with_origins(conf_file, overrides, home=home, cwd=cwd, env=env)
    return conf


def load_config_with_origins(
    conf_file: str | None = None,
    overrides: Iterable[str] | None = None,
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    read: list[str] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Like `load_config`, also returning where each key was set: a file label,
    ``-o key=value`` or ``default`` (what ``storm-zmq config --origins`` shows).
    `read`, if given, gets the label of each file read, in order (`config_sources`)."""
    home = Path.home() if home is None else home
    cwd = Path.cwd() if cwd is None else cwd
    env = os.environ if env is None else env

    conf: dict[str, Any] = copy.deepcopy(DEFAULTS)
    origins: dict[str, str] = dict.fromkeys(conf, DEFAULT_ORIGIN)

    def merge(settings: Mapping[str, Any], origin: str) -> None:
        for key, value in settings.items():
            conf[key] = value
            origins[key] = origin

    read = [] if read is None else read
    home_file = home / ".storm" / "storm.yaml"
    if home_file.is_file():
        merge(read_yaml_file(home_file, _HOME_LABEL), _HOME_LABEL)
        read.append(_HOME_LABEL)

    explicit = conf_file or env.get("STORM_CONF")
    if explicit:
        path, label = _resolve(explicit, cwd), explicit
        why = "given with -c" if conf_file else "named by STORM_CONF"
    else:
        path, label, why = cwd / "conf" / "storm.yaml", _CWD_LABEL, None
    if why is not None and not path.exists():
        raise ConfigError(f"{label}: no such file ({why})")
    if path.exists():
        merge(read_yaml_file(path, label), label)
        read.append(label)

    for text in overrides or ():
        key, value = parse_override(text)
        merge({key: value}, f"-o {text}")

    validate(conf, origins)
    for key, setting in SCHEMA.items():  # a float setting given as 1 reads back as 1.0
        if setting.kind == "float" and isinstance(conf[key], int):
            conf[key] = float(conf[key])
    return conf, origins


def config_sources(read: Sequence[str], options: int, topology_file: str | None = None,
                   cwd: Path | None = None) -> str:
    """What a run says it runs with: the files read (`load_config_with_origins`'s
    `read`) and how many -o options. One from another directory reads no
    conf/storm.yaml, and its ports surprised: the topology's own project's
    conf/storm.yaml (next to its topologies/), when that is not the one read, is
    named as not read."""
    said = ", ".join(read) or f"built-in defaults (no {_CWD_LABEL} in this directory)"
    said += f", {options} -o option(s)" if options else ""
    if topology_file is not None:
        here = (cwd or Path.cwd()).resolve()
        folder = Path(topology_file).resolve().parent
        project = folder.parent if folder.name == "topologies" else folder
        unread = project / "conf" / "storm.yaml"
        taken = {(here / Path(label).expanduser()).resolve() for label in read}
        if project != here and unread.is_file() and unread.resolve() not in taken:
            said += (f"; not read: {unread} (the topology's project's: run from "
                     f"{project}, or give -c {unread})")
    return said


def _resolve(name: str, cwd: Path) -> Path:
    path = Path(name).expanduser()
    return path if path.is_absolute() else cwd / path


def read_yaml_file(path: Path, label: str) -> dict[str, Any]:
    """Parse one storm.yaml into a mapping of string keys; `label` names it in errors.

    An empty file is an empty mapping. Duplicate top-level keys are refused: YAML
    would silently keep the last one, hiding the edit that was meant to count.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{label}: cannot read: {exc.strerror or exc}") from exc
    loader = yaml.SafeLoader(data)
    try:
        node = loader.get_single_node()
        if node is None:
            return {}
        if isinstance(node, yaml.MappingNode):
            _check_duplicate_keys(node)
        settings = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_error(label, exc)) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{label}: invalid YAML: {exc}") from exc
    finally:
        loader.dispose()
    if settings is None:
        return {}
    if not isinstance(settings, dict):
        raise ConfigError(
            f"{label}: top level must be a mapping of key: value, got {_describe(settings)}"
        )
    for key in settings:
        if not isinstance(key, str):
            raise ConfigError(
                f"{label}: key {key!r} ({type(key).__name__}) is not a string; keys are "
                f"dotted names such as topology.workers"
            )
    return settings


def _check_duplicate_keys(node: yaml.MappingNode) -> None:
    first: dict[str, yaml.Node] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
            continue
        if key_node.value in first:
            line = first[key_node.value].start_mark.line + 1
            raise yaml.MarkedYAMLError(
                problem=f"duplicate key {key_node.value!r} (first set on line {line})",
                problem_mark=key_node.start_mark,
            )
        first[key_node.value] = key_node


def _yaml_error(label: str, exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"{label}, line {mark.line + 1}, column {mark.column + 1}" if mark else label
    problem = exc.problem or str(exc)
    if exc.context:
        problem += f" ({exc.context})"
    return f"{where}: invalid YAML: {problem}"


def parse_override(text: str) -> tuple[str, Any]:
    """Split ``key=value`` and parse the value as YAML, so that ``topology.workers=2``
    gives the int 2 and ``supervisor.slots.ports=[7000,7001]`` a list, just as the
    same line would in storm.yaml."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"-o {text}: expected key=value")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"-o {text}: invalid YAML value: {problem}") from exc
    return key, value


# ------------------------------------------------------------------------ validation


def validate(conf: Mapping[str, Any], origins: Mapping[str, str] | None = None) -> None:
    """Check every known key's type and range, ordered pairs, typos among unknown keys
    and that the transport class imports. `origins` maps key -> where it was set
    (missing keys count as ``default``). Raises `ConfigError` on the first problem."""
    origins = origins or {}

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(_where(key, origins) + message)

    for key in conf:
        if not isinstance(key, str):
            raise ConfigError(f"config key {key!r} ({origins.get(key, DEFAULT_ORIGIN)}) is not a "
                              "string: keys are dotted names such as topology.workers")
        if key not in SCHEMA and not_implemented(key) is None:  # (those are warned about)
            value = conf[key]
            if isinstance(value, Mapping) and any(k.startswith(f"{key}.") for k in SCHEMA):
                # YAML nesting (`topology:` then `message.timeout.secs: 5`) is one
                # user key holding a dict: every setting under it was ignored
                flat = [f"{key}.{sub}: {inner!r}" for sub, inner in list(value.items())[:3]]
                raise fail(key, "a nested mapping, where Storm's keys are flat dotted names: "
                                f"write {'; '.join(flat) or f'{key}.NAME: VALUE'} at the top level")
            suggestion = closest_key(key)
            if suggestion is not None:
                raise fail(key, f"unknown key; did you mean {suggestion}?")
            transport = _own_transport_prefix(key)
            if transport is not None:  # nothing would read it: a user key it cannot be
                known = sorted(k[len(transport):] for k in SCHEMA if k.startswith(transport))
                raise fail(key, f"unknown key; {transport}* has {', '.join(known)}")
    for key, setting in SCHEMA.items():
        if key not in conf:
            raise fail(key, "missing (no default filled in)")
        problem = check_value(setting, conf[key])
        if problem is not None:
            raise fail(key, problem)
    for low, high in ORDERED_PAIRS:
        if conf[low] is not None and conf[high] is not None and conf[low] > conf[high]:
            low_is_default = origins.get(low, DEFAULT_ORIGIN) == DEFAULT_ORIGIN
            blame, other = (high, low) if low_is_default else (low, high)
            relation = "<=" if blame == low else ">="
            raise fail(
                blame,
                f"must be {relation} {other} ({conf[other]!r}, from "
                f"{origins.get(other, DEFAULT_ORIGIN)}), got {conf[blame]!r}",
            )
    if not conf["storm.zookeeper.root"].startswith("/"):
        raise fail("storm.zookeeper.root", "must be an absolute ZooKeeper path starting with '/'")
    for key in ("storm.local.dir", "storm.messaging.transport"):
        if not conf[key].strip():
            raise fail(key, "must not be empty")
    for prefix in AUTH_PREFIXES:
        try:
            auth_pair(conf, prefix)
        except ValueError as exc:  # (blamed on the key that was set, where it was set)
            key = prefix + ("scheme" if conf[prefix + "payload"] is None else "payload")
            raise fail(key, str(exc)) from None
    ports = conf["supervisor.slots.ports"]
    duplicates = sorted({p for p in ports if ports.count(p) > 1})
    if duplicates:
        raise fail("supervisor.slots.ports", f"duplicate ports {duplicates}")

    from storm_zmq.messaging import TransportError, transport_class

    try:
        transport_class(conf["storm.messaging.transport"])
    except TransportError as exc:
        raise fail("storm.messaging.transport", str(exc)) from exc


def validate_topology_conf(conf: Mapping[str, Any], definition: TopologyDefinition,
                           overridden: Iterable[str] = ()) -> list[str]:
    """Validate `conf` (the topology's config already merged in) and, for each component
    with its own ``config``, that conf with the component's config on top: what its
    executors will read (`WorkerState.component_conf`). Both `storm-zmq run` and
    `storm-zmq submit` call this, so a bad component key fails before any worker starts,
    named by its component, instead of as a TypeError inside the runtime.
    `overridden`: the keys given with ``-o``, whose values are blamed on it.

    Returns warnings for the caller to show: known keys a component's config sets
    that are not read per component (`PER_COMPONENT_KEYS`), whose value would
    otherwise be dropped without a word, as Storm's executor drops it; and Storm keys
    set anywhere that nothing here reads (`NOT_IMPLEMENTED`)."""
    def at(what: str) -> str:
        return f" at {definition.sources[what]}" if what in definition.sources else ""

    origins = dict.fromkeys(definition.config, f"topology {definition.name} config{at('config')}")
    origins.update((key, f"-o {key}") for key in overridden)  # -o wins over the topology's
    validate(conf, origins)
    for name, component in definition.components.items():
        if component.config:
            component_origins = dict.fromkeys(component.config,
                                              f"component {name!r} config{at(name)}")
            validate({**conf, **component.config}, {**origins, **component_origins})
    set_where = [(key, origins.get(key, "storm.yaml")) for key in conf]
    set_where += [(key, f"component {name!r} config{at(name)}")
                  for name, component in definition.components.items() for key in component.config]
    return [f"{key} ({where}) is Storm's, and not used here: {why}"
            for key, where in set_where if (why := not_implemented(key)) is not None] + [
        f"component {name!r} config{at(name)} sets {', '.join(unused)}, which "
        f"{'is' if len(unused) == 1 else 'are'} read for the whole worker or topology, not "
        "per component: the component's value is not used (set it in the topology's config; "
        f"a component may set {', '.join(sorted(PER_COMPONENT_KEYS))})"
        for name, component in definition.components.items()
        if (unused := sorted(key for key in component.config
                             if not component_may_set(key) and key not in JOINS_THE_TOPOLOGYS
                             and not_implemented(key) is None))
    ]


def check_value(setting: Setting, value: Any) -> str | None:
    """Return what is wrong with `value` for `setting`, or None if it is fine."""
    if value is None:
        return None if setting.nullable else f"expected {_EXPECTED[setting.kind]}, got null"
    if setting.kind == "registrations":
        return _check_registrations(value)
    if setting.kind.startswith("list["):
        if not isinstance(value, list):
            return f"expected {_EXPECTED[setting.kind]}, got {value!r} ({type(value).__name__})"
        item_kind = setting.kind[5:-1]
        for index, item in enumerate(value):
            problem = _check_scalar(setting, item_kind, item)
            if problem is not None:
                return f"item {index}: {problem}"
        if setting.kind == "list[str]" and not value:
            return "must not be empty"
        return None
    return _check_scalar(setting, setting.kind, value)


def _check_registrations(value: Any) -> str | None:
    """topology.kryo.register's shape: names are imported when the topology starts."""
    if not isinstance(value, list):
        return f"expected {_EXPECTED['registrations']}, got {value!r} ({type(value).__name__})"
    for index, item in enumerate(value):
        if isinstance(item, dict):
            if len(item) != 1 or not all(isinstance(v, str) and v.strip() for kv in item.items()
                                         for v in kv):
                return (f"item {index}: a map must be one class name to its serializer's "
                        f"name, got {item!r}")
        elif not isinstance(item, str) or not item.strip():
            return f"item {index}: expected a class name or {{class: serializer}}, got {item!r}"
    return None


_EXPECTED = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "list[int]": "a list of integers",
    "list[str]": "a list of strings",
    "registrations": "a list of class names, each alone or as {class: serializer}",
}

_ACCEPTS: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
}


def _check_scalar(setting: Setting, kind: str, value: Any) -> str | None:
    if not isinstance(value, _ACCEPTS[kind]) or (kind != "bool" and isinstance(value, bool)):
        return f"expected {_EXPECTED[kind]}, got {value!r} ({type(value).__name__})"
    if kind == "str" and setting.kind == "list[str]" and not value.strip():
        return "must not be empty"
    if kind in ("int", "float"):
        low, high = setting.minimum, setting.maximum
        in_range = (low is None or value >= low) and (high is None or value <= high)
        if not in_range:  # also catches NaN
            if low is not None and high is not None:
                return f"must be between {low} and {high}, got {value!r}"
            if low is not None:
                return f"must be >= {low}, got {value!r}"
            return f"must be <= {high}, got {value!r}"
    return None


#: Our transports' key prefixes: every key under them is in SCHEMA, so any other is a
#: mistake (``storm.messaging.tcp.hwm``: the tcp transport has no high-water mark).
_OWN_TRANSPORT_PREFIXES = ("storm.messaging.zmq.", "storm.messaging.tcp.", "storm.messaging.local.")


def _own_transport_prefix(key: str) -> str | None:
    return next((p for p in _OWN_TRANSPORT_PREFIXES if key.startswith(p)), None)


#: The prefixes of the ZooKeeper credentials' key pairs (docs/security.md)
AUTH_PREFIXES = ("storm.zookeeper.auth.", "storm.zookeeper.topology.auth.")


def auth_pair(conf: Mapping[str, Any], prefix: str) -> tuple[str, str] | None:
    """(scheme, payload) from ``<prefix>scheme`` / ``<prefix>payload``, or None when
    unset. One without the other is a ValueError naming both keys; so is a digest
    payload that is not ``user:password``."""
    scheme, payload = conf.get(prefix + "scheme"), conf.get(prefix + "payload")
    if scheme is None and payload is None:
        return None
    if not scheme or payload is None:
        raise ValueError(f"{prefix}scheme and {prefix}payload must be set together "
                         f"(got scheme {scheme!r} and {'a' if payload else 'no'} payload)")
    if scheme == "digest" and ":" not in str(payload):
        raise ValueError(f'{prefix}payload must be "user:password" for the digest scheme')
    return str(scheme), str(payload)


def closest_key(key: str) -> str | None:
    """The known key `key` is probably a typo of, or None.

    Only keys under storm. / topology. / supervisor. / nimbus. / worker. / ui. /
    logviewer. are checked, and only
    up to edit distance 2 after treating ``_`` as ``.`` and ``millis`` as ``ms`` (so
    ``linger.ms`` for ``linger.millis`` counts too). A plain difflib ratio would also
    flag real Apache Storm keys such as ``storm.messaging.netty.min_wait_ms`` or
    ``topology.executor.send.buffer.size``, which must pass through untouched.
    """
    wanted = _normalize(key)
    if key in SCHEMA or not wanted.startswith(_CHECKED_PREFIXES):  # TOPOLOGY_WORKERS too
        return None
    words = sorted(wanted.split("."))
    best: tuple[int, str] | None = None
    for known in SCHEMA:
        normal = _normalize(known)
        distance = _edit_distance(wanted, normal, limit=2)
        if distance > 2 and (sorted(normal.split(".")) == words  # topology.spout.max.pending
                             or normal in (f"{wanted}.{unit}" for unit in _UNITS)):  # no .secs
            distance = 2
        if distance <= 2 and (best is None or distance < best[0]):
            best = (distance, known)
    return None if best is None else best[1]


#: The last word of many keys, which a typo may leave out.
_UNITS = ("secs", "ms", "size", "bytes")


def _normalize(key: str) -> str:
    return key.lower().replace("_", ".").replace("-", ".").replace("millis", "ms")


def _edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment distance (an adjacent swap counts 1); strings whose
    lengths alone differ by more than `limit` return `limit` + 1 without the work."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def _where(key: str, origins: Mapping[str, str]) -> str:
    origin = origins.get(key, DEFAULT_ORIGIN)
    if origin.startswith("-o "):  # the option text already names the key
        return f"{origin}: "
    return f"{origin}: {key}: "


def _describe(value: Any) -> str:
    names = {
        list: "a list", str: "a string", int: "an integer", float: "a number", bool: "a boolean"
    }
    return names.get(type(value), f"a {type(value).__name__}")
