"""Storm's reliability bookkeeping as pure classes: no threads, sockets or clocks.

Why pure: the XOR algorithm is easy to get subtly wrong (messages arrive in any
order, a failure can overtake the spout's init, late duplicates must not resurrect
a tree), and such bugs only show under load. Keeping the bookkeeping free of IO
lets the tests feed every delivery order; executors and the ``__acker`` bolt are a
thin shell that routes messages in and out and drives :meth:`rotate` from a timer.

The model is Apache Storm's, message for message:

* A spout emit with a message id picks a random *root id* and, per destination task,
  a random *edge id*; it remembers the root in :class:`SpoutPending` and sends the
  acker ``init(root, xor of those edge ids, spout_task)`` (:func:`spout_emit_ids`).
* A bolt emitting anchored to input tuples gives the new tuple, per destination task
  and per anchor, a fresh edge id that is XORed into the new tuple's entry for every
  root of that anchor and into the anchor's ``ack_val`` (:func:`anchor_roots`).
* Acking an input sends, per root, ``ack(root, edge ^ ack_val)``
  (:func:`ack_messages`); failing it sends ``fail(root)`` (:func:`fail_messages`).
* Every edge id is therefore XORed into the acker's value exactly twice (once when
  created, once when acked), so the value returns to 0 exactly when the whole tree
  is acked — whatever the arrival order, because XOR is commutative.
* Trees that never complete are failed by the *spout* when its pending entry
  expires after ``topology.message.timeout.secs``; the acker merely forgets them.

Ids are drawn in ``[1, 2**63)`` (the wire takes any unsigned 64-bit integer). Storm
uses signed Java longs; the runtime must pick one representation on the wire and
stick to it, since mixing signed and unsigned forms of the same id breaks the
XOR-to-zero test. 63 bits, so that the XORs of ids stay machine integers on PyPy,
whose int is a signed 64-bit word (above it, a bignum: acking ran at 0.3 of its
speed without acking there); on CPython 63 and 64 bits cost the same.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, NamedTuple, Protocol, TypeVar

from storm_zmq.portable import SLOTS

__all__ = [
    "ACKER_COMPONENT_ID",
    "ACKER_ACK_STREAM_ID",
    "ACKER_FAIL_STREAM_ID",
    "ACKER_INIT_STREAM_ID",
    "ACKER_RESET_TIMEOUT_STREAM_ID",
    "MESSAGE_TIMEOUT_KEY",
    "AckerState",
    "Anchorable",
    "Outcome",
    "OutcomeKind",
    "PendingTuple",
    "RotatingMap",
    "SpoutEmitIds",
    "SpoutPending",
    "ack_messages",
    "fold_ack",
    "acker_index",
    "anchor_roots",
    "fail_messages",
    "new_edge_id",
    "new_root_id",
    "spout_emit_ids",
]

# Storm's names for the acker component and its streams, kept so that topology
# definitions, metrics and logs read the same as in Storm.
ACKER_COMPONENT_ID = "__acker"
ACKER_INIT_STREAM_ID = "__ack_init"
ACKER_ACK_STREAM_ID = "__ack_ack"
ACKER_FAIL_STREAM_ID = "__ack_fail"
ACKER_RESET_TIMEOUT_STREAM_ID = "__ack_reset_timeout"

MESSAGE_TIMEOUT_KEY = "topology.message.timeout.secs"
_DEFAULT_MESSAGE_TIMEOUT_SECS = 30  # storm_zmq.config's default; Storm's is 30 too

_ID_BITS = 63

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


# --------------------------------------------------------------------------- ids


def new_edge_id(rng: random.Random) -> int:
    """Return a random id in ``[1, 2**63)``.

    Zero is excluded because it is the XOR identity: a zero edge id would vanish
    from the acker's value, so the tree could complete while that tuple is still
    unprocessed. (Storm's ``MessageId.generateId`` can, with probability 2**-64,
    return 0; excluding it costs nothing.)

    The caller passes the generator so tests are deterministic and so that no lock
    is shared: a worker creates one ``random.Random()`` per executor thread *after*
    the worker process starts (the no-argument constructor seeds from
    ``os.urandom``). A generator inherited across ``fork`` would make two workers
    produce the same ids, and colliding root ids corrupt each other's trees.
    """
    while True:
        value = rng.getrandbits(_ID_BITS)
        if value:
            return value


def new_root_id(rng: random.Random) -> int:
    """Return a random root id; roots and edges are drawn the same way (see :func:`new_edge_id`)."""
    return new_edge_id(rng)


def acker_index(root_id: int, num_ackers: int) -> int:
    """Index of the acker task (0-based, among the topology's acker tasks) that owns ``root_id``.

    Every message about one tree — the spout's init, each bolt's acks and fails —
    must reach the same acker task, or no acker ever sees the value return to 0.
    Storm gets this from a fields grouping on the root id; any fixed function of the
    root id works, and ids are uniformly random, so a modulo spreads load evenly.
    """
    if num_ackers < 1:
        raise ValueError(f"num_ackers must be >= 1, got {num_ackers}")
    return root_id % num_ackers


# ------------------------------------------------------------------ RotatingMap


class RotatingMap(Generic[K, V]):
    """Storm's ``RotatingMap``: a map whose entries expire by bucket rotation.

    Why buckets and not per-entry deadlines: expiring a whole bucket is O(1) per
    rotation with no heap and no clock reads on the hot path (``put``/``remove`` run
    for every tuple). The price is coarse expiry: with ``n`` buckets and one
    :meth:`rotate` every ``I`` seconds, an entry put at a random moment between two
    rotations is dropped by the ``n``-th rotation after it, i.e. between
    ``(n - 1) * I`` (exclusive) and ``n * I`` (inclusive) seconds after the put.
    Choosing ``I = timeout / (n - 1)`` (see :meth:`for_timeout`) makes that window
    ``(timeout, timeout * n / (n - 1)]``: never early, at most ``1/(n-1)`` late.
    More buckets means tighter timeouts and more frequent rotations.

    ``put`` of an existing key moves it to the newest bucket (restarting its
    timeout); ``get``/``contains`` do not. The caller drives :meth:`rotate`; the map
    never looks at a clock.
    """

    __slots__ = ("_buckets", "_rotation_interval_secs")

    def __init__(self, buckets: int = 3, *, rotation_interval_secs: float | None = None) -> None:
        if buckets < 2:
            raise ValueError(f"a RotatingMap needs at least 2 buckets, got {buckets}")
        if rotation_interval_secs is not None and rotation_interval_secs <= 0:
            raise ValueError(f"rotation interval must be > 0, got {rotation_interval_secs}")
        # Index 0 is the newest bucket, the last one is the next to expire.
        self._buckets: deque[dict[K, V]] = deque({} for _ in range(buckets))
        self._rotation_interval_secs = rotation_interval_secs

    @classmethod
    def for_timeout(cls, timeout_secs: float, buckets: int = 3) -> RotatingMap[K, V]:
        """A map whose entries expire between ``timeout_secs`` and ``timeout_secs * buckets / (buckets - 1)``.

        That holds only if the caller calls :meth:`rotate` every
        :attr:`rotation_interval_secs` (``timeout_secs / (buckets - 1)``).
        """
        if timeout_secs <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout_secs}")
        if buckets < 2:
            raise ValueError(f"a RotatingMap needs at least 2 buckets, got {buckets}")
        return cls(buckets, rotation_interval_secs=timeout_secs / (buckets - 1))

    @property
    def buckets(self) -> int:
        """Number of buckets, i.e. rotations an entry survives minus one."""
        return len(self._buckets)

    @property
    def rotation_interval_secs(self) -> float | None:
        """How often the caller must call :meth:`rotate`; ``None`` if built without a timeout."""
        return self._rotation_interval_secs

    @property
    def expiry_window_secs(self) -> tuple[float, float] | None:
        """``(min, max)`` age at which an entry expires, given rotations on schedule."""
        interval = self._rotation_interval_secs
        if interval is None:
            return None
        n = len(self._buckets)
        return ((n - 1) * interval, n * interval)

    def put(self, key: K, value: V) -> None:
        """Insert or replace ``key`` in the newest bucket, restarting its timeout."""
        buckets = self._buckets
        for i in range(1, len(buckets)):
            buckets[i].pop(key, None)
        buckets[0][key] = value

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value for ``key`` (without restarting its timeout), else ``default``."""
        for bucket in self._buckets:
            if key in bucket:
                return bucket[key]
        return default

    def contains(self, key: K) -> bool:
        """Whether ``key`` is present in any bucket."""
        return any(key in bucket for bucket in self._buckets)

    __contains__ = contains

    def remove(self, key: K) -> V | None:
        """Remove ``key`` and return its value, or ``None`` if it is absent."""
        for bucket in self._buckets:
            if key in bucket:
                return bucket.pop(key)
        return None

    def rotate(self) -> dict[K, V]:
        """Drop the oldest bucket and return its entries: the ones that just expired."""
        expired = self._buckets.pop()
        self._buckets.appendleft({})
        return expired

    def __len__(self) -> int:
        return sum(len(bucket) for bucket in self._buckets)

    def __repr__(self) -> str:
        sizes = [len(bucket) for bucket in self._buckets]
        return f"RotatingMap(bucket_sizes={sizes}, rotation_interval_secs={self._rotation_interval_secs})"


def _timeout_from_conf(conf: Mapping[str, Any]) -> float:
    value = conf.get(MESSAGE_TIMEOUT_KEY, _DEFAULT_MESSAGE_TIMEOUT_SECS)
    if value is None:
        return float(_DEFAULT_MESSAGE_TIMEOUT_SECS)
    return float(value)


def message_timeouts_enabled(conf: Mapping[str, Any]) -> bool:
    """topology.enable.message.timeouts, a topology-wide setting as in Storm (a
    topology submitted by an older storm-zmq has no such key)."""
    return bool(conf.get("topology.enable.message.timeouts", True))


# ----------------------------------------------------------------------- acker

OutcomeKind = Literal["ack", "fail", "reset_timeout"]


@dataclass(**SLOTS)
class Outcome:
    """What the acker tells a spout task (Storm: an ``emitDirect`` to ``spout_task``).

    Not frozen, like `PendingTuple`: one is made per tree, and a frozen dataclass's
    ``__init__`` (``object.__setattr__`` per field) costs three to four times a
    plain one's. Nothing keeps or shares one, so nothing needs it immutable.

    ``kind`` is ``"ack"`` (tree complete), ``"fail"`` (some bolt failed a tuple of the
    tree) or ``"reset_timeout"`` (a bolt asked for more time; the spout restarts the
    root's timeout, see :meth:`SpoutPending.reset_timeout`).
    """

    kind: OutcomeKind
    root_id: int
    spout_task: int


class _Tree:
    """One tree's acker entry. ``spout_task is None`` until the spout's init arrived."""

    __slots__ = ("failed", "spout_task", "val")

    def __init__(self) -> None:
        self.val = 0
        self.spout_task: int | None = None
        self.failed = False


class AckerState:
    """The ``__acker`` system bolt's bookkeeping (Storm's ``Acker.java``).

    One entry per root id holds the running XOR of everything reported for the
    tree, the spout task (known once the init arrived) and a failed flag. After each
    message the entry is settled if the spout task is known and either the value is
    0 (``"ack"``) or the flag is set (``"fail"``); the value is checked first, as in
    Storm. Requiring the init is what makes out-of-order delivery safe: acks that
    arrive before the init can momentarily XOR to 0, and a fail that arrives first
    must wait for someone to tell it to; both are settled when the init arrives.

    Messages about a root the acker does not know (already settled, expired, or a
    duplicate) create a fresh entry exactly as Storm does. Such an entry has no
    spout task (or a value that never returns to 0), so it produces no outcome and
    is dropped by :meth:`rotate` after the timeout; it cannot resurrect a tree. A
    *duplicate init for a tree still pending* XORs its value in a second time and
    corrupts that tree — also Storm's behaviour; transports here never duplicate
    messages, and a spout replay always uses a new root id.

    Timeouts: Storm's acker rotates once per ``topology.message.timeout.secs`` with
    3 buckets, so it keeps an idle tree for 2 to 3 timeouts, while the spout fails
    the tree after 1 to 2 (see :class:`SpoutPending`). The spout is the authority
    on timeouts; the acker's own expiry only bounds its memory, and outliving the
    spout means a tree that completes just before the spout's deadline is still
    reported as acked. Here the acker likewise keeps entries for at least twice the
    message timeout: its map is ``RotatingMap.for_timeout(2 * timeout, buckets)``.
    With the default 3 buckets the caller rotates every ``timeout`` seconds, exactly
    Storm's schedule (:attr:`rotation_interval_secs`).
    """

    __slots__ = ("_acked", "_expired", "_failed", "_pending", "_timeout_secs")

    def __init__(self, message_timeout_secs: float, buckets: int = 3) -> None:
        self._timeout_secs = float(message_timeout_secs)
        self._pending: RotatingMap[int, _Tree] = RotatingMap.for_timeout(
            2 * self._timeout_secs, buckets
        )
        self._acked = 0
        self._failed = 0
        self._expired = 0

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any], buckets: int = 3) -> AckerState:
        """Build from a topology conf (``topology.message.timeout.secs``)."""
        return cls(_timeout_from_conf(conf), buckets)

    # -- timing ----------------------------------------------------------------

    @property
    def message_timeout_secs(self) -> float:
        return self._timeout_secs

    @property
    def rotation_interval_secs(self) -> float:
        """Call :meth:`rotate` this often (``message_timeout_secs`` with 3 buckets)."""
        interval = self._pending.rotation_interval_secs
        assert interval is not None
        return interval

    @property
    def expiry_window_secs(self) -> tuple[float, float]:
        """``(min, max)`` time an unsettled tree is kept, given rotations on schedule."""
        window = self._pending.expiry_window_secs
        assert window is not None
        return window

    # -- counters --------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Trees currently tracked (including orphans from late messages)."""
        return len(self._pending)

    @property
    def acked(self) -> int:
        """``"ack"`` outcomes produced so far."""
        return self._acked

    @property
    def failed(self) -> int:
        """``"fail"`` outcomes produced so far."""
        return self._failed

    @property
    def expired(self) -> int:
        """Entries dropped by :meth:`rotate` so far."""
        return self._expired

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, root_id: int) -> bool:
        return root_id in self._pending

    # -- the four streams ------------------------------------------------------

    def init(self, root_id: int, xor_value: int, spout_task: int) -> Outcome | None:
        """ACKER_INIT from a spout: the XOR of the edge ids of the tuples it emitted for ``root_id``."""
        tree = self._pending.get(root_id)
        if tree is None:
            tree = _Tree()
            self._pending.put(root_id, tree)
        tree.val ^= xor_value
        tree.spout_task = spout_task
        return self._settle(root_id, tree)

    def ack(self, root_id: int, xor_value: int) -> Outcome | None:
        """ACKER_ACK from a bolt: its input's edge id XOR the edge ids it anchored to that input."""
        tree = self._pending.get(root_id)
        if tree is None:
            tree = _Tree()
            self._pending.put(root_id, tree)
        tree.val ^= xor_value
        return self._settle(root_id, tree)

    def fail(self, root_id: int) -> Outcome | None:
        """ACKER_FAIL from a bolt; remembered until the init names the spout task."""
        tree = self._pending.get(root_id)
        if tree is None:
            tree = _Tree()
        tree.failed = True
        # Storm re-puts here, which also restarts a known tree's expiry.
        self._pending.put(root_id, tree)
        return self._settle(root_id, tree)

    def reset_timeout(self, root_id: int) -> Outcome | None:
        """ACKER_RESET_TIMEOUT from a bolt (``collector.reset_timeout``).

        Restarts the tree's expiry and, once the spout task is known, forwards a
        ``"reset_timeout"`` outcome so the spout restarts its own timeout too. An
        unknown root is ignored: there is nothing to keep alive.
        """
        tree = self._pending.get(root_id)
        if tree is None:
            return None
        self._pending.put(root_id, tree)
        outcome = self._settle(root_id, tree)
        if outcome is None and tree.spout_task is not None:
            return Outcome("reset_timeout", root_id, tree.spout_task)
        return outcome

    def rotate(self) -> int:
        """Forget trees idle for the whole window; return how many were dropped.

        No outcome is produced: the spout times the tree out on its own.
        """
        return len(self.expire())

    def expire(self) -> dict[int, _Tree]:
        """`rotate`, returning the dropped trees rather than their number: a caller
        that rotates under a lock lets them go after releasing it, since freeing the
        10^5 trees of a topology that times out takes milliseconds."""
        expired = self._pending.rotate()
        self._expired += len(expired)
        return expired

    def _settle(self, root_id: int, tree: _Tree) -> Outcome | None:
        task = tree.spout_task
        if task is None:
            return None
        if tree.val == 0:
            self._pending.remove(root_id)
            self._acked += 1
            return Outcome("ack", root_id, task)
        if tree.failed:
            self._pending.remove(root_id)
            self._failed += 1
            return Outcome("fail", root_id, task)
        return None


# ----------------------------------------------------------------------- spout


@dataclass(**SLOTS)
class PendingTuple:
    """A spout's record of one in-flight tuple tree (Storm's ``TupleInfo``).

    ``values`` is optional: Storm keeps them only for debugging and event logging,
    and holding every in-flight tuple's values costs memory. ``task_id`` lets one
    executor running several spout tasks share one :class:`SpoutPending`, as Storm's
    spout executor does. Not frozen, for the cost of a frozen ``__init__`` on every
    reliable emit (see :class:`Outcome`); only :class:`SpoutPending` holds one.
    """

    root_id: int
    msg_id: Any
    stream: str
    start_time_ns: int
    values: tuple[Any, ...] | None = None
    task_id: int | None = None

    def complete_latency_ms(self, now_ns: int) -> float:
        """Milliseconds from the spout's emit to ``now_ns`` (same clock as ``start_time_ns``)."""
        return (now_ns - self.start_time_ns) / 1_000_000


class SpoutPending:
    """A spout executor's in-flight trees, keyed by root id (Storm's spout ``pending`` map).

    The executor adds a tree on each reliable emit, removes it on the acker's
    ack/fail, and fails whatever :meth:`rotate` returns with reason "timeout". With
    Storm's 2 buckets and one rotation per ``topology.message.timeout.secs``, a tree
    is timed out between 1 and 2 timeouts after its emit; more buckets tighten that
    (see :class:`RotatingMap`), at the cost of more frequent rotations.

    Unknown root ids (a late ack for a tree that already timed out, a duplicate)
    return ``None`` and are otherwise ignored: at-least-once means the spout has
    already replayed, so a late ack must not be acked to the user spout twice.

    ``topology.max.spout.pending`` is enforced by the executor: it calls
    ``next_tuple`` only while :meth:`can_emit` is true. Storm's limit is per task, so
    an executor running ``k`` tasks over one ``SpoutPending`` passes ``k * max``.
    """

    __slots__ = ("_acked", "_failed", "_pending", "_timed_out")

    def __init__(self, message_timeout_secs: float, buckets: int = 2) -> None:
        self._pending: RotatingMap[int, PendingTuple] = RotatingMap.for_timeout(
            message_timeout_secs, buckets
        )
        self._acked = 0
        self._failed = 0
        self._timed_out = 0

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any], buckets: int = 2) -> SpoutPending:
        """Build from a topology conf (``topology.message.timeout.secs``)."""
        return cls(_timeout_from_conf(conf), buckets)

    @property
    def rotation_interval_secs(self) -> float:
        """Call :meth:`rotate` this often (the message timeout itself with 2 buckets)."""
        interval = self._pending.rotation_interval_secs
        assert interval is not None
        return interval

    @property
    def expiry_window_secs(self) -> tuple[float, float]:
        """``(min, max)`` age at which a tree is timed out, given rotations on schedule."""
        window = self._pending.expiry_window_secs
        assert window is not None
        return window

    @property
    def acked(self) -> int:
        return self._acked

    @property
    def failed(self) -> int:
        """Trees failed by the acker (timeouts are counted in :attr:`timed_out`)."""
        return self._failed

    @property
    def timed_out(self) -> int:
        return self._timed_out

    def add(
        self,
        root_id: int,
        msg_id: Any,
        stream: str,
        start_time_ns: int,
        values: tuple[Any, ...] | None = None,
        task_id: int | None = None,
    ) -> PendingTuple:
        """Record a reliable emit; returns the stored entry."""
        entry = PendingTuple(root_id, msg_id, stream, start_time_ns, values, task_id)
        self._pending.put(root_id, entry)
        return entry

    def ack(self, root_id: int) -> PendingTuple | None:
        """The acker reported the tree complete: remove and return it, ``None`` if unknown."""
        entry = self._pending.remove(root_id)
        if entry is not None:
            self._acked += 1
        return entry

    def fail(self, root_id: int) -> PendingTuple | None:
        """The acker reported a failure: remove and return the entry, ``None`` if unknown."""
        entry = self._pending.remove(root_id)
        if entry is not None:
            self._failed += 1
        return entry

    def reset_timeout(self, root_id: int) -> bool:
        """Restart the root's timeout (acker's ``"reset_timeout"`` outcome); False if unknown."""
        entry = self._pending.get(root_id)
        if entry is None:
            return False
        self._pending.put(root_id, entry)
        return True

    def rotate(self) -> list[PendingTuple]:
        """Expire the oldest bucket; the caller fails each returned entry (reason: timeout)."""
        expired = list(self._pending.rotate().values())
        self._timed_out += len(expired)
        return expired

    def can_emit(self, max_pending: int | None) -> bool:
        """Whether ``next_tuple`` may be called: ``None`` or 0 means unbounded (Storm: 0)."""
        return not max_pending or len(self._pending) < max_pending

    def get(self, root_id: int) -> PendingTuple | None:
        return self._pending.get(root_id)

    def __contains__(self, root_id: int) -> bool:
        return root_id in self._pending

    def __len__(self) -> int:
        return len(self._pending)


class SpoutEmitIds(NamedTuple):
    """Ids for one reliable spout emit: see :func:`spout_emit_ids`."""

    root_id: int
    edge_ids: tuple[int, ...]
    init_xor: int


def root_id_for(rng: random.Random, position: int, num_ackers: int) -> int:
    """A random root id owned by the acker at `position` (``acker_index`` of it is
    `position`): a spout with an acker in its own worker draws its roots for that
    acker, so a tree's init and completion never cross workers. The id stays
    uniformly random among that acker's ids, 63 bits less log2(ackers)."""
    while True:
        root = new_root_id(rng)
        root += position - root % num_ackers
        if 0 < root < 1 << _ID_BITS:
            return root


def spout_emit_ids(rng: random.Random, num_targets: int, root_id: int | None = None) -> SpoutEmitIds:
    """Draw the root id and one edge id per destination task for a reliable spout emit.

    The tuple sent to the ``i``-th destination carries roots ``{root_id: edge_ids[i]}``;
    the spout then sends ``init(root_id, init_xor, its_task)`` to the acker. With no
    destination at all (``num_targets == 0``) there is no tree: Storm sends no init and
    acks the message to the spout immediately, and the caller should do the same.
    """
    if num_targets < 0:
        raise ValueError(f"num_targets must be >= 0, got {num_targets}")
    if root_id is None:
        root_id = new_root_id(rng)
    edge_ids = tuple(new_edge_id(rng) for _ in range(num_targets))
    init_xor = 0
    for edge in edge_ids:
        init_xor ^= edge
    return SpoutEmitIds(root_id, edge_ids, init_xor)


# ------------------------------------------------------------------------ bolt


class Anchorable(Protocol):
    """What the bolt-side helpers need from the runtime's input tuple.

    ``roots`` is Storm's ``MessageId.anchorsToIds``: root id -> this tuple's edge
    value for that root (empty for an unanchored tuple). ``ack_val`` starts at 0
    and accumulates the edge ids of every tuple anchored to this one.
    """

    @property
    def roots(self) -> Mapping[int, int]: ...

    ack_val: int


def anchor_roots(anchors: Iterable[Anchorable], rng: random.Random) -> dict[int, int]:
    """The ``roots`` of a new tuple anchored to ``anchors``, for ONE destination task.

    Exactly Storm's ``BoltOutputCollectorImpl``: call it once per destination task
    (each copy is its own edge in the tree). For every anchor that belongs to at
    least one tree, draw a fresh edge id ``e``, XOR it into the anchor's ``ack_val``
    and into the new tuple's entry for each of the anchor's roots. Two anchors of
    the same root thus contribute two different ids to that root's entry; they must
    differ, or ``e ^ e`` would erase the new tuple from the tree. Anchors with no
    roots (unanchored inputs) get no edge id. An empty result means an unanchored
    tuple.
    """
    roots: dict[int, int] = {}
    for anchor in anchors:
        anchor_tree = anchor.roots
        if not anchor_tree:
            continue
        edge = new_edge_id(rng)
        anchor.ack_val ^= edge
        for root_id in anchor_tree:
            roots[root_id] = roots.get(root_id, 0) ^ edge
    return roots


def anchor_one(anchor: Anchorable, rng: random.Random) -> dict[int, int]:
    """`anchor_roots` of the commonest case, one anchor that belongs to a tree
    (auto-anchoring to the input): every root gets the same fresh edge id, so the
    new tuple's roots are one ``dict.fromkeys`` instead of a loop. The caller checks
    that ``anchor.roots`` is not empty (`anchor_roots` skips such anchors)."""
    return dict.fromkeys(anchor.roots, anchor_edge(anchor, rng))


def anchor_edge(anchor: Anchorable, rng: random.Random) -> int:
    """The fresh edge id of one tuple anchored to `anchor` alone, XORed into the
    anchor's ``ack_val``: the new tuple's edge in each of the anchor's trees."""
    edge = rng.getrandbits(_ID_BITS) or new_edge_id(rng)  # new_edge_id's draw, inlined
    anchor.ack_val ^= edge
    return edge


def ack_messages(roots: Mapping[int, int], ack_val: int) -> list[tuple[int, int]]:
    """``(root_id, xor_value)`` ACKER_ACK messages for acking a tuple with these roots and ``ack_val``."""
    return [(root_id, edge ^ ack_val) for root_id, edge in roots.items()]


def fold_ack(folded: dict[int, int], roots: Mapping[int, int], ack_val: int) -> None:
    """XOR the `ack_messages` of one tuple into ``folded`` (root id -> value).

    XOR is associative and commutative, so the acks of a batch of tuples can be
    sent as one ACKER_ACK per root with the XOR of their values: the acker ends in
    the same state. This is the executor's per-tuple path, hence no list, and no
    XOR with a zero ``ack_val`` (a leaf's): each XOR of 64-bit ints allocates."""
    if ack_val:
        for root_id, edge in roots.items():
            folded[root_id] = folded.get(root_id, 0) ^ edge ^ ack_val
    else:
        for root_id, edge in roots.items():
            folded[root_id] = folded.get(root_id, 0) ^ edge


def fail_messages(roots: Mapping[int, int]) -> list[int]:
    """Root ids to send ACKER_FAIL (or ACKER_RESET_TIMEOUT) for a tuple with these roots."""
    return list(roots)
