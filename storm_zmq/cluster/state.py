"""Cluster state in ZooKeeper: the one module through which every ZooKeeper access goes.

Storm's layout under ``storm.zookeeper.root`` (values JSON in UTF-8, code raw bytes)::

    /storms/<topology-id>                      topology record (name, status, conf, ...)
    /code/<topology-id>                        {"size", "chunks", "sha256"} of the package
    /code/<topology-id>/<n>                    chunk n of the package, <= 512 KiB each
    /assignments/<topology-id>                 the assignment (Assignment.to_dict())
    /supervisors/<supervisor-id>               EPHEMERAL {host, ports, ...}
    /workerbeats/<topology-id>/<host>-<port>   worker heartbeat {"time", ...}
    /errors/<topology-id>/<component>/e<seq>   newest 10 errors per component
    /nimbuses/<nimbus-id>                      EPHEMERAL nimbus info
    /secrets/<topology-id>                     the topology's transport secrets
    /leader/...                                kazoo Election (leader nimbus)

Access control (docs/security.md): with ``storm.zookeeper.auth.scheme``/``payload``
set, the client authenticates with them and creates every node with the ACL
"creator ALL, world READ" (anyone may look, only holders of the credentials may
change), except ``/secrets/<id>``: creator only, so a client without the
credentials cannot even read it. A topology with its own worker credentials
(``storm.zookeeper.topology.auth.*``, digest) also gets ALL on its own
``/workerbeats/<id>`` and ``/errors/<id>``, which its workers write. Without auth
config, nodes are open as before.

Keeping all of it here means one place knows the paths, the encoding, the retry policy
and the threading rules below, and the daemons only see dicts.

Threading (the rules that make kazoo safe to use, see DESIGN.md section 4):

- kazoo calls state listeners on its connection thread and watch callbacks on its one
  event thread; ZooKeeper calls made from either can deadlock or stall every other
  watch. So `ClusterState`'s listener only records the state (`connected`) and puts
  it on a queue, and its watch functions only put the watch on a queue.
- Thread ``storm-zk-session`` takes session changes off the first queue: after a
  reconnect it re-creates the ephemeral nodes this client registered (they vanish
  with an expired session) and re-arms the watches (kazoo drops every watch when the
  connection drops), then runs the `on_session_change` callbacks.
- Thread ``storm-zk-dispatch`` takes watches off the second queue, reads the watched
  node (setting the next watch) and runs the callback with the current value. Callbacks
  may therefore call ZooKeeper through this class; a slow callback delays other watch
  callbacks, never kazoo itself.

Every ZooKeeper call goes through kazoo's retry with the limits of
``storm.zookeeper.retry.*``; an exhausted retry raises `ClusterUnavailable`. Calls are
bounded even while ZooKeeper is down (kazoo alone would queue them until it is back):
each attempt waits at most ``storm.zookeeper.connection.timeout`` for a connection.
Compound operations (create-or-set, ...) are retried as a whole and are idempotent.
A missing node reads as None (or an empty list/dict) rather than raising.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import queue
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from time import time as _now
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
)
from kazoo.protocol.states import EventType, WatchedEvent
from kazoo.recipe.election import Election
from kazoo.retry import ForceRetryError, KazooRetry, RetryFailedError
from kazoo.security import (
    ACL,
    CREATOR_ALL_ACL,
    READ_ACL_UNSAFE,
    Permissions,
    make_digest_acl,
)

from storm_zmq.cluster.kazoo_log import quiet_repeated_warnings
from storm_zmq.config import DEFAULTS, auth_pair

__all__ = [
    "CODE_CHUNK_SIZE",
    "KINDS",
    "MAX_ERRORS",
    "ClusterState",
    "ClusterStateError",
    "ClusterUnavailable",
    "CodeError",
    "NotAuthorized",
    "VersionConflict",
    "Watch",
    "check_topology_name",
    "worker_zookeeper_conf",
    "zookeeper_auth",
    "zookeeper_hosts",
]

log = logging.getLogger(__name__)

#: The directories directly under the root (``leader`` is the election's own).
KINDS = ("storms", "code", "assignments", "supervisors", "workerbeats", "errors", "nimbuses",
         "secrets")

#: A code chunk: half of ZooKeeper's default 1 MiB node limit (jute.maxbuffer).
CODE_CHUNK_SIZE = 512 * 1024

#: Largest JSON value written; a bigger packet makes the server drop the connection,
#: which kazoo would retry forever-ish, so it is refused up front.
MAX_VALUE_BYTES = 1000 * 1000

#: Errors kept per component (Storm keeps 10).
MAX_ERRORS = 10

#: A %-format field of a log template (kazoo's "use_ssl: %r"), shown as "..."
_FORMAT_FIELD = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[sdrifx]")

#: Attempts at re-creating an ephemeral node that another session keeps re-creating.
_EPHEMERAL_ATTEMPTS = 5

#: Longest wait (s) between attempts to reconnect to ZooKeeper, whatever
#: storm.zookeeper.retry.intervalceiling.millis (which bounds operation retries):
#: every daemon is back within about this long of ZooKeeper (see `_new_client`).
RECONNECT_MAX_DELAY = 2.0

_STOP = object()


class ClusterStateError(Exception):
    """Cluster state is missing, damaged or unusable; the message says which and why."""


class ClusterUnavailable(ClusterStateError):
    """ZooKeeper could not be reached (at start, or when an operation's retries ran
    out). The message names the servers and the time spent, for the CLI to show."""


class CodeError(ClusterStateError):
    """A topology's code package in ZooKeeper is incomplete or fails its sha256."""


class VersionConflict(ClusterStateError):
    """A compare-and-set write found a different znode version (or no node)."""


class NotAuthorized(ClusterStateError):
    """ZooKeeper refused an operation under the node's ACL: this client lacks (or has
    other) credentials (``storm.zookeeper.auth.scheme`` / ``payload``)."""


def zookeeper_auth(conf: Mapping[str, Any], prefix: str = "storm.zookeeper.auth."
                   ) -> tuple[str, str] | None:
    """(scheme, payload) from ``<prefix>scheme`` / ``<prefix>payload``, or None when
    unset (`config.auth_pair`, as a ClusterStateError: a conf that skipped
    `config.validate`, a topology's)."""
    try:
        return auth_pair(conf, prefix)
    except ValueError as exc:
        raise ClusterStateError(str(exc)) from None


def worker_zookeeper_conf(conf: Mapping[str, Any]) -> dict[str, Any]:
    """The config a topology's worker connects to ZooKeeper with: its topology's
    credentials (``storm.zookeeper.topology.auth.*``) when set, else the daemons'."""
    conf = dict(conf)
    topology = zookeeper_auth(conf, "storm.zookeeper.topology.auth.")
    if topology is not None:
        conf["storm.zookeeper.auth.scheme"], conf["storm.zookeeper.auth.payload"] = topology
    return conf


#: Marks a conf made by `impatient_zookeeper_conf` (never a user's key).
_IMPATIENT = "_storm_zmq.zookeeper.impatient"


def impatient_zookeeper_conf(conf: Mapping[str, Any], wait_ms: int) -> dict[str, Any]:
    """`conf` for a client whose own loop is the retry and that must not wait out
    an outage inside one call: no retries (``storm.zookeeper.retry.times`` 0) and at
    most `wait_ms` of waiting for a connection (``storm.zookeeper.connection.timeout``)
    per call. Its session still reconnects by itself, as every daemon's does
    (`RECONNECT_MAX_DELAY`)."""
    connect = int(conf.get("storm.zookeeper.connection.timeout",
                           DEFAULTS["storm.zookeeper.connection.timeout"]))
    return {**conf, "storm.zookeeper.retry.times": 0,
            "storm.zookeeper.connection.timeout": min(connect, wait_ms),
            _IMPATIENT: True}  # so its errors do not blame the user's settings


def _digest_acl(auth: tuple[str, str], what: str) -> ACL:
    scheme, payload = auth
    if scheme != "digest":
        raise ClusterStateError(f"{what}: only the digest scheme can be granted access to a "
                                f"topology's nodes, got {scheme!r}")
    user, _, password = payload.partition(":")
    # ALL, ADMIN included: a worker copies its directories' ACL to the component
    # directories it makes (`_ensure_inheriting`), and ZooKeeper shows the digests of
    # an ACL only to a client with ADMIN ("user:x" otherwise, which no one matches)
    return make_digest_acl(user, password, all=True)


def zookeeper_hosts(conf: Mapping[str, Any]) -> str:
    """kazoo's host string ("a:2181,b:2181") from ``storm.zookeeper.servers`` and
    ``storm.zookeeper.port``. A server already written as ``host:port`` (or
    ``[v6]:port``) keeps its port; a bare IPv6 address gets brackets."""
    servers = conf.get("storm.zookeeper.servers", DEFAULTS["storm.zookeeper.servers"])
    port = conf.get("storm.zookeeper.port", DEFAULTS["storm.zookeeper.port"])
    if isinstance(servers, str):
        servers = [s for s in servers.split(",") if s.strip()]
    hosts = []
    for server in servers:
        server = str(server).strip()
        if server.startswith("[") and "]:" in server or server.count(":") == 1:
            hosts.append(server)
        elif ":" in server:
            hosts.append(f"[{server}]:{port}")
        else:
            hosts.append(f"{server}:{port}")
    if not hosts:
        raise ClusterStateError("storm.zookeeper.servers is empty: no ZooKeeper to connect to")
    return ",".join(hosts)


def _segment(value: str, what: str) -> str:
    """Check one path segment (an id, a component name): a '/' would silently create
    a different layout, and ZooKeeper rejects '.', '..' and NUL."""
    if not isinstance(value, str) or not value or value in (".", "..") or "/" in value \
            or "\x00" in value:
        raise ValueError(f"invalid {what} {value!r} for a ZooKeeper path: must be a "
                         "non-empty string without '/' (and not '.' or '..')")
    return value


def check_topology_name(name: str) -> str:
    """A topology name is a path segment of the cluster's ZooKeeper layout."""
    return _segment(name, "topology name")


def _encode(path: str, value: Any) -> bytes:
    try:
        data = json.dumps(value, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"value for {path} is not JSON-serializable: {exc}") from None
    if len(data) > MAX_VALUE_BYTES:
        raise ValueError(f"value for {path} is {len(data)} bytes, over the "
                         f"{MAX_VALUE_BYTES}-byte limit of a ZooKeeper node")
    return data


def _decode(path: str, data: bytes | None) -> Any:
    """JSON of a node; an empty node (made by ensure_path) reads as None."""
    if not data:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ClusterStateError(f"{path} does not hold UTF-8 JSON: {exc}") from None


class Watch:
    """A watch set through `ClusterState`; `cancel()` stops further callbacks.

    Persistent watches (`watch_children`, `watch_assignment`) are level-triggered: the
    callback gets the current value each time something may have changed, including
    after every reconnect, so it may see an unchanged value; it must be idempotent.
    One-shot watches (`get_assignment(watch=...)`) fire once, possibly spuriously after
    a reconnect, and the callback re-reads (and re-watches) what it needs.
    """

    def __init__(self, state: ClusterState, kind: str, path: str, callback: Callable[..., Any],
                 arg: Any = None) -> None:
        self._state = state
        self.kind = kind  # "children" | "data" | "once"
        self.path = path
        self._callback = callback
        self._arg = arg
        self._active = True
        self._pending = False

    @property
    def active(self) -> bool:
        return self._active

    def cancel(self) -> None:
        """No callback runs after this returns (except one already running)."""
        self._active = False
        self._state._forget(self)

    def _trigger(self, event: WatchedEvent) -> None:
        """kazoo's watch function, run on kazoo's event thread: enqueue, nothing else."""
        if not self._active:
            return
        if event.type == EventType.NONE:
            # The connection dropped and kazoo discarded its watches: wait for the
            # reconnect (the session thread re-arms) instead of reading while offline.
            self._state._defer(self)
            return
        self._schedule()

    def _schedule(self) -> None:
        # Coalesce bursts: one queued read covers every event before it runs, since
        # `_run` clears the flag before reading.
        if self._active and not self._pending:
            self._pending = True
            self._state._dispatch_queue.put(self)

    def _run(self) -> None:
        """On the dispatcher thread: read (setting the next watch), then call back."""
        self._pending = False
        if not self._active:
            return
        if self.kind == "once":
            self._active = False
            self._state._forget(self)
            self._callback(self._arg)
            return
        value = self._state._read_watched(self)
        if value is not _STOP and self._active:
            self._callback(value)


class ClusterState:
    """All cluster state in ZooKeeper, through one kazoo client (see module docstring).

    ``ClusterState(conf)`` builds its own `KazooClient` from the ``storm.zookeeper.*``
    keys of `conf` (missing keys take the built-in defaults) and stops it in `stop()`;
    with ``client=`` the caller owns that client: it is used, never stopped, and its
    session (with any ephemeral nodes) outlives `stop()`.
    """

    def __init__(self, conf: Mapping[str, Any], *, client: KazooClient | None = None) -> None:
        self.conf = {**{k: v for k, v in DEFAULTS.items() if k.startswith("storm.zookeeper.")},
                     **conf}
        root = str(self.conf["storm.zookeeper.root"])
        if not root.startswith("/"):
            raise ClusterStateError(
                f"storm.zookeeper.root must be an absolute path starting with '/', got {root!r}")
        self.root = root.rstrip("/")
        self.hosts = zookeeper_hosts(self.conf)
        self._retries = int(self.conf["storm.zookeeper.retry.times"])
        self._connect_wait = int(self.conf["storm.zookeeper.connection.timeout"]) / 1000
        self._reply_timeout = int(self.conf["storm.zookeeper.session.timeout"]) / 1000
        self._running = False
        self._owns_client = client is None
        self.auth = zookeeper_auth(self.conf)
        #: ACL of ordinary nodes, and of secret ones (None: kazoo's default, open).
        self._acl = [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE] if self.auth else None
        self._secret_acl = list(CREATOR_ALL_ACL) if self.auth else None
        self._client = client if client is not None else self._new_client()
        #: Set while the session is connected; cleared on SUSPENDED and LOST. Daemons
        #: wait on it, or poll it before acting on possibly stale state.
        self.connected = threading.Event()
        self._lock = threading.Lock()
        self._ephemerals: dict[str, bytes] = {}
        self._watches: set[Watch] = set()
        self._deferred: set[Watch] = set()
        self._session_callbacks: list[Callable[[str], Any]] = []
        self._session_queue: queue.Queue[Any] = queue.Queue()
        self._dispatch_queue: queue.Queue[Any] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle

    def _new_client(self) -> KazooClient:
        quiet_repeated_warnings()  # kazoo's warning per reconnect attempt: one a minute
        interval = int(self.conf["storm.zookeeper.retry.interval"]) / 1000
        ceiling = int(self.conf["storm.zookeeper.retry.intervalceiling.millis"]) / 1000
        return KazooClient(
            hosts=self.hosts,
            timeout=int(self.conf["storm.zookeeper.session.timeout"]) / 1000,
            # Reconnecting never gives up: a daemon outlives a ZooKeeper outage. The
            # floor keeps a 0 interval from spinning on a dead server. The cap is
            # short, not the retry ceiling: ZooKeeper's own client (Storm's) tries a
            # server again within a second, and a worker that took up to the ceiling
            # (30 s) to notice ZooKeeper back wrote no heartbeat while a nimbus that
            # reconnected at once counted nimbus.task.timeout.secs (30 s) and moved it.
            connection_retry=KazooRetry(
                max_tries=-1, delay=max(min(interval, RECONNECT_MAX_DELAY), 0.05),
                max_delay=max(min(ceiling, RECONNECT_MAX_DELAY), 0.05)),
            # KazooRetry counts attempts, Storm's retry.times counts retries.
            command_retry=KazooRetry(max_tries=self._retries + 1, delay=interval,
                                     max_delay=max(ceiling, interval), ignore_expire=True),
            # Re-sent by kazoo on every (re)connect; the ACLs of the nodes we create.
            auth_data=[self.auth] if self.auth else None,
            default_acl=self._acl,
        )

    def start(self, timeout: float | None = None) -> ClusterState:
        """Connect (waiting at most `timeout` s, default
        ``storm.zookeeper.connection.timeout``), create the layout's directories and
        start the session and dispatcher threads. Raises `ClusterUnavailable` naming
        the servers when no server answers in time."""
        if self._stopped:
            raise ClusterStateError("this ClusterState was stopped; make a new one")
        if timeout is None:
            timeout = int(self.conf["storm.zookeeper.connection.timeout"]) / 1000
        self._client.add_listener(self._on_kazoo_state)
        try:
            self._client.start(timeout=timeout)
        except self._client.handler.timeout_exception:
            self._client.remove_listener(self._on_kazoo_state)
            if self._owns_client:  # kazoo stopped and closed it; allow another start()
                self._client = self._new_client()
            raise ClusterUnavailable(
                f"cannot reach ZooKeeper at {self.hosts} within {timeout:g} s "
                "(storm.zookeeper.servers / storm.zookeeper.port; is it running?)") from None
        if self._client.connected:
            self.connected.set()
        self._running = True
        if not self._threads:
            for name, target in (("storm-zk-session", self._session_loop),
                                 ("storm-zk-dispatch", self._dispatch_loop)):
                thread = threading.Thread(target=target, name=name, daemon=True)
                thread.start()
                self._threads.append(thread)
        for kind in KINDS:
            self._call(self._zensure, self._path(kind))
        return self

    def stop(self) -> None:
        """Close the session (an owned client's ephemeral nodes vanish at once) and end
        the threads. Callbacks do not run after this; it may be called from one."""
        if self._stopped:
            return
        self._stopped = True
        self._running = False
        self._client.remove_listener(self._on_kazoo_state)
        self.connected.clear()
        with self._lock:
            for watch in self._watches | self._deferred:
                watch._active = False
            self._watches.clear()
            self._deferred.clear()
        if self._owns_client:
            try:
                self._client.stop()
                self._client.close()
            except Exception:  # already stopped/closed: nothing left to release
                log.debug("stopping the ZooKeeper client", exc_info=True)
        self._session_queue.put(_STOP)
        self._dispatch_queue.put(_STOP)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=10)

    def __enter__(self) -> ClusterState:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def session_id(self) -> int | None:
        """The ZooKeeper session id while connected (owner of our ephemeral nodes)."""
        client_id = self._client.client_id
        return client_id[0] if client_id else None

    # ------------------------------------------------------------ session handling

    def on_session_change(self, callback: Callable[[str], Any]) -> Callable[[str], Any]:
        """Call `callback(state)` with "SUSPENDED", "LOST" or "CONNECTED" on every
        session change, on thread ``storm-zk-session`` (so it may call ZooKeeper).
        On CONNECTED, ephemeral nodes and watches are already restored. A leader must
        treat SUSPENDED/LOST as losing leadership: its election node may be gone."""
        with self._lock:
            self._session_callbacks.append(callback)
        return callback

    def _on_kazoo_state(self, state: str) -> None:
        """kazoo's state listener, on kazoo's connection thread: calling ZooKeeper
        here would deadlock, so record and hand over to the session thread."""
        if state == KazooState.CONNECTED:
            self.connected.set()
        else:
            self.connected.clear()
        self._session_queue.put(state)

    def _session_loop(self) -> None:
        previous: str | None = KazooState.CONNECTED
        while True:
            state = self._session_queue.get()
            if state is _STOP:
                return
            if state == KazooState.CONNECTED and previous != KazooState.CONNECTED:
                self._say_held_warnings()
                self._restore()
            previous = state
            with self._lock:
                callbacks = list(self._session_callbacks)
            for callback in callbacks:
                if self._stopped:
                    return
                try:
                    callback(str(state))
                except Exception:
                    log.exception("session callback %r failed on %s", callback, state)

    @staticmethod
    def _say_held_warnings() -> None:
        held = quiet_repeated_warnings().flush()
        if held:
            log.info("connected to ZooKeeper again; while it was away kazoo also warned: %s",
                     "; ".join(f"{_FORMAT_FIELD.sub('...', kind)!r} {n} more time{'s' * (n != 1)}"
                               for kind, n in held.items()))

    def _restore(self) -> None:
        """After a reconnect: re-create our ephemeral nodes (gone if the session
        expired, harmlessly rewritten if not) and re-arm every watch."""
        with self._lock:
            ephemerals = dict(self._ephemerals)
            watches = self._watches | self._deferred
            self._deferred.clear()
        for path, data in ephemerals.items():
            try:
                self._call(self._ensure_ephemeral, path, data)
            except Exception:  # a new drop: the next CONNECTED tries again
                log.warning("could not re-create ephemeral node %s", path, exc_info=True)
        for watch in watches:
            watch._schedule()

    # --------------------------------------------------------------------- watches

    def watch_children(self, path_kind: str, callback: Callable[[list[str]], Any]) -> Watch:
        """Call `callback(sorted children)` of ``<root>/<path_kind>`` now and on every
        change, on thread ``storm-zk-dispatch``. `path_kind` is one of `KINDS`, or a
        deeper path under one ("workerbeats/<topology-id>"); a missing node has no
        children and is watched for its creation."""
        parts = path_kind.strip("/").split("/")
        if parts[0] not in KINDS:
            raise ValueError(f"unknown path kind {path_kind!r}: expected one of {KINDS}")
        for part in parts[1:]:
            _segment(part, "path segment")
        return self._add_watch(Watch(self, "children", self._path(*parts), callback))

    def watch_assignment(self, topology_id: str,
                         callback: Callable[[dict[str, Any] | None], Any]) -> Watch:
        """Call `callback(assignment or None)` now and whenever the assignment of
        `topology_id` is created, changed or removed, on thread ``storm-zk-dispatch``."""
        path = self._path("assignments", _segment(topology_id, "topology id"))
        return self._add_watch(Watch(self, "data", path, callback))

    def _add_watch(self, watch: Watch) -> Watch:
        with self._lock:
            self._watches.add(watch)
        watch._schedule()
        return watch

    def _forget(self, watch: Watch) -> None:
        with self._lock:
            self._watches.discard(watch)
            self._deferred.discard(watch)

    def _defer(self, watch: Watch) -> None:
        with self._lock:
            self._deferred.add(watch)

    def _dispatch_loop(self) -> None:
        while True:
            watch = self._dispatch_queue.get()
            if watch is _STOP:
                return
            if self._stopped:
                continue
            try:
                watch._run()
            except Exception:
                if not self._stopped:
                    log.exception("watch callback for %s failed", watch.path)

    def _read_watched(self, watch: Watch) -> Any:
        """Current value of a persistent watch, setting the next kazoo watch; a missing
        node gets an exists-watch so its creation fires. `_STOP` if it raced."""
        try:
            if watch.kind == "children":
                return sorted(self._call(self._zchildren, watch.path, watch=watch._trigger))
            data, _ = self._call(self._zget, watch.path, watch=watch._trigger)
            return _decode(watch.path, data)
        except NoNodeError:
            if self._call(self._zexists, watch.path, watch=watch._trigger) is not None:
                watch._schedule()  # created between the two calls: read it again
                return _STOP
            return [] if watch.kind == "children" else None
        except ClusterUnavailable:
            self._defer(watch)  # offline: re-armed by the next reconnect
            raise

    # ---------------------------------------------------------------- primitives

    def _path(self, *parts: str) -> str:
        return self.root + "/" + "/".join(parts)

    def _call(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `func` under kazoo's retry with the configured limits.

        kazoo queues a request made while disconnected until the connection is back,
        however long that takes; so each attempt first waits at most
        ``storm.zookeeper.connection.timeout`` for a connection (as Curator does for
        Storm) and each request waits at most the session timeout for its reply.
        Either failing counts as a retryable connection loss, so a call is bounded
        by about (retry.times + 1) x connection.timeout plus the retry backoff."""
        if not self._running:
            raise ClusterStateError(
                "the ZooKeeper client is not running (start() not called, or stopped)")

        def attempt() -> Any:
            if not self.connected.wait(self._connect_wait):
                if not self._running:
                    raise ConnectionClosedError("stopped")
                raise ConnectionLoss("not connected to ZooKeeper")
            return func(*args, **kwargs)

        try:
            return self._client.retry(attempt)
        except RetryFailedError:
            limits = ("this client's own short limits: its loop is the retry" if
                      self.conf.get(_IMPATIENT) else
                      "storm.zookeeper.retry.times, storm.zookeeper.connection.timeout")
            raise ClusterUnavailable(
                f"ZooKeeper at {self.hosts} did not answer: gave up after {self._retries} "
                f"retries, waiting up to {self._connect_wait:g} s for a connection each time "
                f"({limits})") from None
        except ConnectionClosedError:
            raise ClusterStateError(
                "the ZooKeeper client is not running (start() not called, or stopped)"
            ) from None
        except NoAuthError:
            raise NotAuthorized(
                f"ZooKeeper at {self.hosts} refused access under the nodes' ACL: this client "
                f"{'has other' if self.auth else 'has no'} credentials "
                "(storm.zookeeper.auth.scheme / storm.zookeeper.auth.payload)") from None

    # The kazoo requests themselves, each bounded by the session timeout (see _call);
    # always called inside _call.

    def _wait(self, result: Any) -> Any:
        try:
            return result.get(timeout=self._reply_timeout)
        except self._client.handler.timeout_exception:
            raise OperationTimeoutError(
                f"no reply from ZooKeeper within {self._reply_timeout:g} s") from None

    def _zget(self, path: str, watch: Callable[..., Any] | None = None) -> tuple[bytes, Any]:
        return self._wait(self._client.get_async(path, watch))

    def _zchildren(self, path: str, watch: Callable[..., Any] | None = None) -> list[str]:
        return self._wait(self._client.get_children_async(path, watch))

    def _zexists(self, path: str, watch: Callable[..., Any] | None = None) -> Any:
        return self._wait(self._client.exists_async(path, watch))

    def _zset(self, path: str, data: bytes, version: int = -1) -> Any:
        return self._wait(self._client.set_async(path, data, version))

    def _zcreate(self, path: str, data: bytes, acl: list[ACL] | None = None,
                 **flags: bool) -> str:
        return self._wait(self._client.create_async(path, data, acl=acl, **flags))

    def _zdelete(self, path: str, version: int = -1) -> None:
        self._wait(self._client.delete_async(path, version))

    def _zensure(self, path: str) -> None:
        self._wait(self._client.ensure_path_async(path))

    def close_open_nodes(self) -> list[str]:
        """With daemon credentials (nimbus): give every node under the root that lets
        anyone write (world ALL, as nodes made before `storm.zookeeper.auth.*` was
        switched on keep) this client's ACL: creator ALL and world READ, creator ALL
        under secrets. Without this, auth switched on for a cluster that ran without
        it protected new nodes only: anyone could still add a topology and code
        there, which supervisors run. The paths changed (none without auth)."""
        if self._acl is None:
            return []
        closed = []
        stack = [self.root]
        secrets = self._path("secrets")
        while stack:
            path = stack.pop()
            try:
                acls, _ = self._call(lambda p: self._wait(self._client.get_acls_async(p)), path)
                if any(acl.id.scheme == "world" and acl.perms & ~Permissions.READ for acl in acls):
                    secret = path.startswith(secrets + "/")
                    acl = self._secret_acl if secret else self._acl
                    self._call(lambda p, a: self._wait(self._client.set_acls_async(p, a)), path, acl)
                    closed.append(path)
                stack.extend(f"{path}/{child}" for child in self._call(self._zchildren, path))
            except (NoNodeError, NotAuthorized):
                continue  # gone meanwhile, or not this client's to read: not world-open
        if closed:
            log.warning("%d ZooKeeper node(s) under %s let anyone write (made before "
                        "storm.zookeeper.auth was switched on): now creator ALL, world READ "
                        "(%s%s)", len(closed), self.root, ", ".join(closed[:5]),
                        ", ..." if len(closed) > 5 else "")
        return closed

    def _get(self, path: str) -> Any:
        try:
            data, _ = self._call(self._zget, path)
        except NoNodeError:
            return None
        return _decode(path, data)

    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self._call(self._zchildren, path))
        except NoNodeError:
            return []

    def _read_all(self, path: str) -> dict[str, Any]:
        """Child name -> decoded value; children vanishing meanwhile are skipped."""
        result = {}
        for child in self._children(path):
            value = self._get(f"{path}/{child}")
            if value is not None:
                result[child] = value
        return result

    def _upsert(self, path: str, data: bytes, acl: list[ACL] | None = None) -> int:
        """Set or create (with parents; `acl` for the node itself, else the client's
        default); idempotent, so safe to retry. New version."""
        try:
            return self._zset(path, data).version
        except NoNodeError:
            pass
        try:
            self._zcreate(path, data, acl=acl, makepath=True)
            return 0
        except NodeExistsError:
            return self._zset(path, data).version

    def _ensure_inheriting(self, path: str) -> None:
        """Create `path` (if missing) with its parent's ACL, not this client's: a
        worker's error directory must stay deletable by the daemons that granted the
        worker access to the parent."""
        if self._zexists(path) is not None:
            return
        parent = path.rsplit("/", 1)[0]
        try:
            acl, _ = self._wait(self._client.get_acls_async(parent))
        except NoNodeError:
            acl = self._acl
        try:
            self._zcreate(path, b"", acl=list(acl), makepath=True)
        except NodeExistsError:
            pass

    def _delete_tree(self, path: str) -> None:
        """Delete `path` and everything under it; a missing node is already deleted."""

        def delete(node: str) -> None:
            try:
                children = self._zchildren(node)
            except NoNodeError:
                return
            for child in children:
                delete(f"{node}/{child}")
            try:
                self._zdelete(node)
            except NoNodeError:
                pass
            except NotEmptyError:  # a child appeared meanwhile (a heartbeat): again
                raise ForceRetryError() from None

        self._call(delete, path)

    def _ensure_ephemeral(self, path: str, data: bytes) -> None:
        """Make `path` an ephemeral node of *this* session holding `data`. A node left
        by another session (our previous process, or an expired session not yet
        reaped) is replaced, so the node disappears when we do, not when it does."""
        for _ in range(_EPHEMERAL_ATTEMPTS):
            try:
                self._zcreate(path, data, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                pass
            stat = self._zexists(path)
            if stat is None:
                continue
            if stat.ephemeralOwner == self.session_id:
                try:
                    self._zset(path, data)
                    return
                except NoNodeError:
                    continue
            try:
                self._zdelete(path, version=stat.version)
            except (NoNodeError, BadVersionError):
                pass
        raise ClusterStateError(
            f"{path} keeps being re-created by another ZooKeeper session: are two "
            "daemons running with the same id?")

    def _register(self, path: str, info: Mapping[str, Any]) -> None:
        data = _encode(path, dict(info))
        with self._lock:
            # Remembered first: if this call fails offline, the reconnect restores it.
            self._ephemerals[path] = data
        self._call(self._ensure_ephemeral, path, data)

    def _unregister(self, path: str) -> None:
        with self._lock:
            self._ephemerals.pop(path, None)
        self._delete_tree(path)

    # ------------------------------------------------------------------ topologies

    @contextlib.contextmanager
    def name_claimed(self, name: str) -> Iterator[None]:
        """Hold topology name `name` while one submit checks that it is free and
        stores its topology: a second submit of that name meanwhile is refused,
        where both used to pass the check and run side by side (Storm's nimbus
        checks and stores in one process). The claim is an ephemeral node, so a
        submitter that dies midway releases it with its session."""
        path = self._path("submitting", _segment(name, "topology name"))
        try:
            self._call(self._zcreate, path, b"", ephemeral=True, makepath=True)
        except NodeExistsError:
            stat = self._call(self._zexists, path)
            if stat is None or stat.ephemeralOwner != self.session_id:  # not ours (a retry)
                raise ClusterStateError(
                    f"another submit of a topology named {name!r} is under way; try again "
                    "once it has ended (storm-zmq list)") from None
        try:
            yield
        finally:
            try:  # ours only: a session that expired meanwhile lost it, maybe to another
                stat = self._call(self._zexists, path)
                if stat is not None and stat.ephemeralOwner == self.session_id:
                    self._call(self._zdelete, path, stat.version)
            except (NoNodeError, BadVersionError, ClusterStateError):  # gone, or offline
                pass

    def set_topology(self, topology_id: str, record: Mapping[str, Any]) -> None:
        """Store the topology record (name, status, conf, num_workers, ...) as given."""
        path = self._path("storms", _segment(topology_id, "topology id"))
        self._call(self._upsert, path, _encode(path, dict(record)))

    def get_topology(self, topology_id: str) -> dict[str, Any] | None:
        return self._get(self._path("storms", _segment(topology_id, "topology id")))

    def update_topology(self, topology_id: str,
                        change: Callable[[dict[str, Any]], dict[str, Any] | None],
                        attempts: int = 10) -> dict[str, Any] | None:
        """Read-modify-write of a topology record, compare-and-set: `change(record)`
        gives the new record (None: leave it as it is), and runs again on the record
        as it is then when another writer came in between (nimbus ending a rebalance
        while a user kills, say: neither write may undo the other). `change` must
        be safe to run more than once. Returns the record as written (as found when
        `change` gave None); None when there is no such topology."""
        path = self._path("storms", _segment(topology_id, "topology id"))
        for _ in range(attempts):
            try:
                data, stat = self._call(self._zget, path)
            except NoNodeError:
                return None
            record = _decode(path, data)
            updated = change(record)
            if updated is None:
                return record
            try:
                self._call(self._zset, path, _encode(path, dict(updated)), version=stat.version)
            except BadVersionError:
                continue
            except NoNodeError:
                return None
            return updated
        raise VersionConflict(f"topology {topology_id} changed {attempts} times while "
                              "it was being updated; try again")

    def topologies(self) -> list[str]:
        """Ids of all stored topologies, sorted."""
        return self._children(self._path("storms"))

    def remove_topology(self, topology_id: str) -> None:
        self._delete_tree(self._path("storms", _segment(topology_id, "topology id")))

    # --------------------------------------------------------------------- secrets

    def set_secrets(self, topology_id: str, secrets: Mapping[str, Any], *,
                    topology_auth: tuple[str, str] | None = None) -> None:
        """Store a topology's secrets (`TopologySecrets.to_dict()`, plus anything the
        supervisor must hand its workers) in a node only holders of this client's
        credentials can read. With `topology_auth` (the workers' own digest
        credentials), also create the topology's heartbeat and error directories
        writable by them. Raises `ClusterStateError` when this client has no
        credentials but `topology_auth` is given (nothing would protect the nodes)."""
        tid = _segment(topology_id, "topology id")
        path = self._path("secrets", tid)
        self._call(self._upsert, path, _encode(path, dict(secrets)), self._secret_acl)
        if topology_auth is None:
            return
        if self._acl is None:
            raise ClusterStateError(
                "storm.zookeeper.topology.auth.* is set but storm.zookeeper.auth.* is not: "
                "the daemons need credentials of their own for the ACLs to mean anything")
        acl = [*self._acl, _digest_acl(topology_auth, "storm.zookeeper.topology.auth.scheme")]
        for kind in ("workerbeats", "errors"):
            node = self._path(kind, tid)
            try:
                self._call(self._zcreate, node, b"", acl=acl, makepath=True)
            except NodeExistsError:
                pass

    def get_secrets(self, topology_id: str) -> dict[str, Any] | None:
        """The stored secrets, or None. `NotAuthorized` without the credentials."""
        return self._get(self._path("secrets", _segment(topology_id, "topology id")))

    def remove_secrets(self, topology_id: str) -> None:
        self._delete_tree(self._path("secrets", _segment(topology_id, "topology id")))

    # ------------------------------------------------------------------------ code

    def put_code(self, topology_id: str, data: bytes) -> None:
        """Store the code package in `CODE_CHUNK_SIZE` chunks. The header is written
        last, so a reader never takes a half-written package for a whole one."""
        path = self._path("code", _segment(topology_id, "topology id"))
        data = bytes(data)
        self._delete_tree(path)
        self._call(self._upsert, path, b"")  # empty header: upload in progress
        chunks = range(0, len(data), CODE_CHUNK_SIZE)
        for n, offset in enumerate(chunks):
            self._call(self._upsert, f"{path}/{n}", data[offset:offset + CODE_CHUNK_SIZE])
        header = {"size": len(data), "chunks": len(chunks),
                  "sha256": hashlib.sha256(data).hexdigest()}
        self._call(self._upsert, path, _encode(path, header))

    def get_code(self, topology_id: str) -> bytes | None:
        """The code package, or None if none was stored. Raises `CodeError` when the
        upload did not finish, a chunk is missing, or the sha256 does not match."""
        path = self._path("code", _segment(topology_id, "topology id"))
        header = self._get(path)
        if header is None:
            if self._call(self._zexists, path) is None:
                return None
            raise CodeError(f"code of topology {topology_id} is incomplete: its upload "
                            "has not finished (no header in " + path + ")")
        try:
            size, count, digest = int(header["size"]), int(header["chunks"]), header["sha256"]
        except (KeyError, TypeError, ValueError):
            raise CodeError(f"code header of topology {topology_id} is malformed: "
                            f"{header!r}") from None
        parts = []
        for n in range(count):
            try:
                chunk, _ = self._call(self._zget, f"{path}/{n}")
            except NoNodeError:
                raise CodeError(f"code of topology {topology_id} is incomplete: chunk "
                                f"{n} of {count} is missing") from None
            parts.append(chunk or b"")
        data = b"".join(parts)
        actual = hashlib.sha256(data).hexdigest()
        if len(data) != size or actual != digest:
            raise CodeError(f"code of topology {topology_id} is corrupt: {len(data)} bytes "
                            f"with sha256 {actual}, expected {size} bytes with {digest}")
        return data

    def uploads(self) -> dict[str, float]:
        """Topology id -> when its code or secrets were first written (unix seconds,
        ZooKeeper's clock; the older of the two), for every id that has either."""
        created: dict[str, float] = {}
        for kind in ("code", "secrets"):
            base = self._path(kind)
            for child in self._children(base):
                stat = self._call(self._zexists, f"{base}/{child}")
                if stat is not None:  # (gone meanwhile otherwise)
                    when = stat.ctime / 1000
                    created[child] = min(when, created.get(child, when))
        return created

    def remove_code(self, topology_id: str) -> None:
        self._delete_tree(self._path("code", _segment(topology_id, "topology id")))

    # ----------------------------------------------------------------- assignments

    def set_assignment(self, topology_id: str, assignment: Mapping[str, Any], *,
                       expected_version: int | None = None) -> int:
        """Store the assignment dict and return the znode's new version. With
        `expected_version`, write only if the node is at that version (compare-and-set),
        else raise `VersionConflict` (also, rarely, when a retried write had in fact
        succeeded: re-read and decide again)."""
        path = self._path("assignments", _segment(topology_id, "topology id"))
        data = _encode(path, dict(assignment))
        if expected_version is None:
            return self._call(self._upsert, path, data)
        try:
            return self._call(self._zset, path, data, version=expected_version).version
        except (BadVersionError, NoNodeError):
            raise VersionConflict(f"assignment of {topology_id} is no longer at version "
                                  f"{expected_version}") from None

    def get_assignment(self, topology_id: str,
                       watch: Callable[[str], Any] | None = None) -> dict[str, Any] | None:
        """The assignment dict, or None. With `watch`, `watch(topology_id)` runs once on
        thread ``storm-zk-dispatch`` when the node is next created, changed or removed
        (or after a reconnect, when a change may have been missed)."""
        found = self.get_assignment_with_version(topology_id, watch)
        return None if found is None else found[0]

    def get_assignment_with_version(self, topology_id: str,
                                    watch: Callable[[str], Any] | None = None,
                                    ) -> tuple[dict[str, Any], int] | None:
        """(assignment, znode version) for `set_assignment(expected_version=...)`."""
        path = self._path("assignments", _segment(topology_id, "topology id"))
        trigger = None
        if watch is not None:
            one_shot = Watch(self, "once", path, watch, topology_id)
            with self._lock:
                self._watches.add(one_shot)
            trigger = one_shot._trigger
        try:
            try:
                data, stat = self._call(self._zget, path, watch=trigger)
            except NoNodeError:
                if trigger is not None:
                    self._call(self._zexists, path, watch=trigger)
                return None
        except Exception:
            if trigger is not None:  # the watch was not set: do not fire it later
                one_shot.cancel()
            raise
        return _decode(path, data), stat.version

    def assignments(self) -> list[str]:
        return self._children(self._path("assignments"))

    def remove_assignment(self, topology_id: str) -> None:
        self._delete_tree(self._path("assignments", _segment(topology_id, "topology id")))

    # ------------------------------------------------------- supervisors / nimbuses

    def register_supervisor(self, supervisor_id: str, info: Mapping[str, Any]) -> None:
        """Create (or update) this supervisor's EPHEMERAL node; it is re-created after
        a session expiry, with the latest `info` given here."""
        self._register(self._path("supervisors", _segment(supervisor_id, "supervisor id")),
                       info)

    def unregister_supervisor(self, supervisor_id: str) -> None:
        self._unregister(self._path("supervisors", _segment(supervisor_id, "supervisor id")))

    def supervisors(self) -> dict[str, dict[str, Any]]:
        """Live supervisors: id -> info."""
        return self._read_all(self._path("supervisors"))

    def register_nimbus(self, nimbus_id: str, info: Mapping[str, Any]) -> None:
        """Create (or update) this nimbus's EPHEMERAL node, kept across expiries."""
        self._register(self._path("nimbuses", _segment(nimbus_id, "nimbus id")), info)

    def unregister_nimbus(self, nimbus_id: str) -> None:
        self._unregister(self._path("nimbuses", _segment(nimbus_id, "nimbus id")))

    def nimbuses(self) -> dict[str, dict[str, Any]]:
        return self._read_all(self._path("nimbuses"))

    # ------------------------------------------------------------------ heartbeats

    def heartbeat(self, topology_id: str, host: str, port: int,
                  data: Mapping[str, Any]) -> None:
        """Write a worker's heartbeat (the caller sets "time" and any stats)."""
        node = f"{_segment(host, 'host')}-{int(port)}"
        path = self._path("workerbeats", _segment(topology_id, "topology id"), node)
        self._call(self._upsert, path, _encode(path, dict(data)))

    def worker_beat_topologies(self) -> list[str]:
        """Ids of the topologies with worker heartbeats, sorted."""
        return self._children(self._path("workerbeats"))

    def worker_beats(self, topology_id: str) -> dict[str, dict[str, Any]]:
        """"<host>-<port>" -> last heartbeat of each worker of the topology."""
        return self._read_all(self._path("workerbeats", _segment(topology_id, "topology id")))

    def remove_worker_beats(self, topology_id: str) -> None:
        self._delete_tree(self._path("workerbeats", _segment(topology_id, "topology id")))

    # ---------------------------------------------------------------------- errors

    def report_error(self, topology_id: str, component: str, text: str, *, host: str,
                     port: int, task: int | None = None, time: float | None = None) -> None:
        """Append an error of `component` and drop all but its newest `MAX_ERRORS`.
        (A retry after a lost reply may record the error twice; harmless.)"""
        directory = self._path("errors", _segment(topology_id, "topology id"),
                               _segment(component, "component"))
        record = {"time": _now() if time is None else time, "host": host,
                  "port": port, "task": task, "text": text}
        if self._acl is not None:
            self._call(self._ensure_inheriting, directory)
        self._call(self._zcreate, directory + "/e", _encode(directory, record),
                   sequence=True, makepath=True)
        for old in self._children(directory)[:-MAX_ERRORS]:
            try:
                self._call(self._zdelete, f"{directory}/{old}")
            except NoNodeError:  # pruned concurrently by another reporter
                pass

    def error_topologies(self) -> list[str]:
        """Ids of the topologies with recorded errors, sorted."""
        return self._children(self._path("errors"))

    def errors(self, topology_id: str) -> dict[str, list[dict[str, Any]]]:
        """component -> its kept errors, newest first (as Storm shows them)."""
        base = self._path("errors", _segment(topology_id, "topology id"))
        return {component: list(reversed(self._read_all(f"{base}/{component}").values()))
                for component in self._children(base)}

    def remove_errors(self, topology_id: str) -> None:
        self._delete_tree(self._path("errors", _segment(topology_id, "topology id")))

    # ---------------------------------------------------------------- leadership

    def leader_election(self, identifier: str) -> Election:
        """A kazoo `Election` at ``<root>/leader``: ``.run(func)`` blocks until this
        contender leads, then runs `func`; leading ends when `func` returns. The
        election node is ephemeral: on SUSPENDED/LOST (`on_session_change`) the
        leader must stop acting as one."""
        return self._client.Election(self._path("leader"), identifier)

    def run_as_leader(self, identifier: str, func: Callable[..., Any], *args: Any,
                      **kwargs: Any) -> None:
        """Block until elected, run `func(*args, **kwargs)`, then give up leadership."""
        self.leader_election(identifier).run(func, *args, **kwargs)

    def leader(self) -> str | None:
        """Identifier of the current leader (first contender), or None."""
        contenders = self._call(self._client.Election(self._path("leader")).contenders)
        return contenders[0] if contenders else None
