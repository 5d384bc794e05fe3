"""Stream groupings: what the user declares (:class:`Grouping`, :class:`GroupingSpec`)
and the pure per-tuple target choosers the runtime runs (:func:`make_chooser`).

Why pure choosers: choosing the receiving tasks is on the per-tuple hot path and
its semantics must be exactly Storm's, so it lives here as small classes with no
threads or sockets that the tests can drive directly. The runtime makes one chooser
per (emitting task, subscribed stream) and calls ``chooser.choose(values)`` for
every tuple. Choosers are not thread-safe: an executor owns its choosers.

Semantics (Storm 2):

* ``shuffle`` / ``none``: Storm 2's ``ShuffleGrouping`` — the target tasks are
  shuffled once and then chosen round-robin, which spreads tuples exactly evenly.
  Storm 2 makes shuffles load-aware unless ``topology.disable.loadaware.messaging``
  is set, and so does the runtime: after each flush it calls the chooser's
  ``refresh`` with the targets' loads (``WorkerState.task_loads``), and the
  round-robin then goes over the least loaded targets only (within 5 %, Storm's
  slack), so an emitter does not wait on one busy target while another idles;
  with no load anywhere it is the exact round-robin. Among those targets, each
  task's share follows its worker's weight, which falls while that worker is
  short of CPU (``storm_zmq.runtime.balance``). How this differs from Storm's
  ``LoadAwareShuffleGrouping``: docs/architecture.md, "Load-aware shuffles".
* ``local_or_shuffle``: shuffle among the target tasks in this worker, if there are
  any, else among all of them (load-aware among those the same way).
* ``fields``: a hash of the selected field values, modulo the number of target
  tasks, indexes the *sorted* target task list. The hash is a CRC-32 of a canonical
  encoding (UTF-8 for a str, the bytes themselves, the decimal digits of an int, or
  msgpack of the selected values otherwise, dates, decimals and UUIDs in their
  canonical encoding: ``value_types``), so every process on every machine
  picks the same task for the same key. Python's ``hash()`` cannot be used: it is
  randomised per process for str and bytes. A subclass of str, bytes or int (an
  enum member, a bytearray) is hashed as its base type, which is what it arrives as
  from another worker. Values are grouped by that encoding, so values that are equal in Python but of different types (``1`` and ``1.0``,
  or dicts with different key order) may go to different tasks.
* ``all``: every target task. ``global``: the lowest task id.
* ``direct``: the emitter names the task (``emit(..., direct_task=t)``); the chooser
  refuses to choose, and :func:`validate_direct_task` checks the emitter's choice.
"""

from __future__ import annotations

import itertools
import operator
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol
from zlib import crc32

from storm_zmq.topology import value_types
from storm_zmq.topology.errors import TopologyError

__all__ = [
    "GROUPING_KINDS",
    "Chooser",
    "Grouping",
    "GroupingSpec",
    "fields_hash",
    "make_chooser",
    "validate_direct_task",
]

GROUPING_KINDS: Final = frozenset(
    {"shuffle", "fields", "all", "global", "direct", "local_or_shuffle", "none"}
)


@dataclass(frozen=True, repr=False)
class GroupingSpec:
    """How a subscriber's tasks share a stream: a ``kind`` from
    :data:`GROUPING_KINDS`, and for ``fields`` the (non-empty) field names."""

    kind: str
    fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in GROUPING_KINDS:
            raise TopologyError(
                f"unknown grouping {self.kind!r}; expected one of {sorted(GROUPING_KINDS)}"
            )
        if not isinstance(self.fields, (list, tuple)):
            raise TopologyError(f"grouping fields must be a list of str, got {self.fields!r}")
        fields = tuple(self.fields)
        if self.kind == "fields":
            if not fields:
                raise TopologyError("fields grouping needs at least one field")
            for field in fields:
                if not isinstance(field, str) or not field:
                    raise TopologyError(
                        f"fields grouping: field names must be non-empty str, got {field!r}"
                    )
            if len(set(fields)) != len(fields):
                raise TopologyError(f"fields grouping: duplicate field in {list(fields)!r}")
        elif fields:
            raise TopologyError(f"{self.kind} grouping takes no fields, got {list(fields)!r}")
        object.__setattr__(self, "fields", fields)

    def __repr__(self) -> str:
        if self.kind == "fields":
            return f"Grouping.fields({', '.join(map(repr, self.fields))})"
        return f"Grouping.{self.kind.upper()}"


class Grouping:
    """streamparse's ``Grouping``: ``Grouping.SHUFFLE``, ``Grouping.fields("word")``...

    An input listed without a grouping is ``SHUFFLE``, or ``DIRECT`` when the
    stream is declared direct (streamparse's rule).
    """

    __slots__ = ()

    SHUFFLE: Final = GroupingSpec("shuffle")
    ALL: Final = GroupingSpec("all")
    GLOBAL: Final = GroupingSpec("global")
    DIRECT: Final = GroupingSpec("direct")
    LOCAL_OR_SHUFFLE: Final = GroupingSpec("local_or_shuffle")
    NONE: Final = GroupingSpec("none")

    @staticmethod
    def fields(*fields: str | list[str] | tuple[str, ...]) -> GroupingSpec:
        """Partition the stream by the given fields: ``fields("a", "b")`` or
        ``fields(["a", "b"])`` (streamparse accepts both)."""
        if len(fields) == 1 and isinstance(fields[0], (list, tuple)):
            names: tuple[Any, ...] = tuple(fields[0])
        else:
            names = fields
        if not names:
            raise TopologyError("Grouping.fields() needs at least one field name")
        return GroupingSpec("fields", names)

    @staticmethod
    def custom_object(java_class_name: str, arg_list: Any = None) -> GroupingSpec:
        """streamparse's Java `CustomStreamGrouping`: refused (there is no JVM here)."""
        raise TopologyError(f"Grouping.custom_object({java_class_name!r}): {_NO_CUSTOM}")

    @staticmethod
    def custom_serialized(java_serialized: Any) -> GroupingSpec:
        """streamparse's serialized Java `CustomStreamGrouping`: refused, as
        `custom_object`."""
        raise TopologyError(f"Grouping.custom_serialized(...): {_NO_CUSTOM}")


_NO_CUSTOM = ("a Java custom stream grouping cannot run in storm-zmq (Python components "
              "only); use one of shuffle, fields, all, global, direct, local_or_shuffle, none")


# -- choosers ----------------------------------------------------------------------------


class Chooser(Protocol):
    """Picks the target tasks of one tuple. The result may be a shared cached tuple:
    callers must not mutate it."""

    def choose(self, values: Sequence[Any]) -> Sequence[int]: ...


def _value_hash(value: Any, pack: Callable[[Any], bytes] = value_types.BUILTIN.packb) -> int:
    """The stable hash of one grouping value (see the module docstring)."""
    kind = type(value)
    if kind is str:
        return crc32(value.encode("utf-8", "surrogatepass"))
    if kind is bytes:
        return crc32(value)
    if kind is int:
        return crc32(b"%d" % value)
    # A subclass (an enum.StrEnum or IntEnum member, a bytearray) hashes as its base
    # type: that is what it arrives as from another worker (msgpack carries the
    # base), and one key must go to one task wherever it was emitted.
    if isinstance(value, str):
        return crc32(str.encode(value, "utf-8", "surrogatepass"))
    if isinstance(value, (bytes, bytearray)):
        return crc32(bytes(value))
    if isinstance(value, int) and kind is not bool:  # a bool arrives as a bool
        return crc32(b"%d" % int(value))
    return _packed_hash((value,), pack)


def _packed_hash(key: tuple[Any, ...], pack: Callable[[Any], bytes] = value_types.BUILTIN.packb) -> int:
    try:
        return crc32(pack(key))
    except (TypeError, ValueError, OverflowError) as exc:
        types = ", ".join(type(v).__name__ for v in key)
        raise TypeError(
            f"fields grouping: cannot hash values of type ({types}): {exc}; grouping "
            f"values must be what a tuple carries ({value_types.CARRIED}, and the types "
            "of topology.kryo.register)"
        ) from exc


def fields_hash(key: Sequence[Any], codec: value_types.ValueCodec = value_types.BUILTIN) -> int:
    """The stable, process-independent hash of the selected field values ``key``
    (an unsigned 32-bit int). The fields chooser picks ``sorted_tasks[h % n]``."""
    if len(key) == 1:
        return _value_hash(key[0], codec.packb)
    return _packed_hash(tuple(key), codec.packb)


class _ShuffleChooser:
    """Storm 2's ShuffleGrouping: shuffle once, then cycle (exactly even spread);
    load-aware when its executor calls `refresh` (see the module docstring)."""

    __slots__ = ("tasks", "_rng", "_even", "_shares", "_next")

    def __init__(self, tasks: Sequence[int], rng: random.Random) -> None:
        self.tasks = tuple(tasks)
        self._rng = rng
        self._even = tuple((task, 1) for task in self.tasks)  # the plain round-robin's shares
        self._cycle(self._even)

    def _cycle(self, shares: tuple[tuple[int, int], ...]) -> None:
        """Cycle over a shuffle of (task, times it appears in the cycle) pairs."""
        self._shares = shares
        choices = [(task,) for task, times in shares for _ in range(times)]
        self._rng.shuffle(choices)
        self._next = itertools.cycle(choices).__next__

    def choose(self, values: Sequence[Any]) -> Sequence[int]:
        return self._next()

    def refresh(self, loads: Mapping[int, float], weights: Mapping[int, float] | None = None) -> None:
        """Choose among the least loaded targets from now on: those whose load
        (a task missing from `loads` has 0) is within `LOAD_SLACK` of the lowest.
        Among those, a task's share follows its weight (`weights`, from how busy
        its worker is: `storm_zmq.runtime.balance`; missing means 1), in steps of
        1/`WEIGHT_STEPS` of the heaviest. The cycle is kept while that set and
        those shares stay the same, so equal targets still get exactly even shares."""
        tasks = self.tasks
        if loads:
            task_loads = [loads.get(task, 0.0) for task in tasks]
            ceiling = min(task_loads) + LOAD_SLACK
            eligible = tuple(
                task for task, load in zip(tasks, task_loads) if load <= ceiling
            ) or tasks  # (none only if a load were NaN)
        else:  # nothing loaded anywhere, the common case at low load
            eligible = tasks
        if weights:
            task_weights = [weights.get(task, 1.0) for task in eligible]
            heaviest = max(task_weights)
            times = [max(1, round(WEIGHT_STEPS * w / heaviest)) for w in task_weights]
            if len(set(times)) == 1:
                times = [1] * len(eligible)
            shares = tuple(zip(eligible, times))
        elif eligible is tasks:  # every target, evenly: nothing to build per flush
            shares = self._even
        else:
            shares = tuple((task, 1) for task in eligible)
        if shares != self._shares:
            self._cycle(shares)


class _ConstantChooser:
    """``all`` and ``global``: the same targets for every tuple."""

    __slots__ = ("_targets",)

    def __init__(self, targets: tuple[int, ...]) -> None:
        self._targets = targets

    def choose(self, values: Sequence[Any]) -> Sequence[int]:
        return self._targets


#: Targets whose load is within this of the lowest count as least loaded (Storm's 5 %).
LOAD_SLACK = 0.05
#: A weighted shuffle's shares are multiples of 1/WEIGHT_STEPS of the heaviest target's.
WEIGHT_STEPS = 10

#: A fields chooser's memo remembers the choice for at most this many short str keys,
#: and the memos of a process hold four times as many in all...
MEMO_ENTRIES = 16_384
#: ...of at most this many characters each: a full memo holds about 2 MiB (ASCII keys).
MEMO_KEY_CHARS = 32


class _ChoiceMemos:
    """The memos of a process's fields choosers: one per set of targets, shared by
    every chooser that sends to it (the tasks of an upstream component, each of its
    streams), each bounded, and one bound for them all. A memo per chooser made the
    bound one per emitting task, stream and subscriber: +27 MB in a worker of 16
    choosers fed unique keys (a soak audit). The total is counted down as entries
    are added, so the lookup of a known key costs what it did; threads adding at
    once may overshoot it by a few entries (a bound on memory, not an exact count)."""

    def __init__(self, per_memo: int, total: int) -> None:
        self.per_memo = per_memo
        self.room = total
        self._by_targets: dict[tuple[tuple[int], ...], dict[str, tuple[int]]] = {}

    def for_targets(self, choices: tuple[tuple[int], ...]) -> dict[str, tuple[int]]:
        return self._by_targets.setdefault(choices, {})


_MEMOS = _ChoiceMemos(MEMO_ENTRIES, 4 * MEMO_ENTRIES)


class _SingleFieldChooser:
    """Fields grouping on one field, with the str fast path inlined (word count).

    Short str keys that repeat (words, user ids, country codes) are looked up in a
    bounded memo before they are hashed: a dict lookup costs less than encoding the
    key and running CRC-32 over it, and the choice is the same by construction.
    Once the process's memos are full (`_ChoiceMemos`), new keys are hashed every
    time."""

    __slots__ = ("_index", "_choices", "_n", "_pack", "_memo", "_memos")

    def __init__(self, index: int, tasks: Sequence[int], codec: value_types.ValueCodec) -> None:
        self._index = index
        self._choices = tuple((task,) for task in tasks)
        self._n = len(tasks)
        self._pack = codec.packer()  # its own: a Packer must not be shared between threads
        self._memos = _MEMOS
        self._memo = _MEMOS.for_targets(self._choices)

    def choose(self, values: Sequence[Any]) -> Sequence[int]:
        value = values[self._index]
        if type(value) is str:
            memo = self._memo
            choice = memo.get(value)
            if choice is not None:
                return choice
            try:
                choice = self._choices[crc32(value.encode()) % self._n]
            except UnicodeEncodeError:  # lone surrogates: fall through to the slow path
                pass
            else:
                memos = self._memos
                if memos.room > 0 and len(value) <= MEMO_KEY_CHARS and len(memo) < memos.per_memo:
                    memos.room -= 1
                    memo[value] = choice
                return choice
        return self._choices[_value_hash(value, self._pack) % self._n]


class _MultiFieldChooser:
    """Fields grouping on several fields: msgpack of the selected values, CRC-32."""

    __slots__ = ("_select", "_choices", "_n", "_pack")

    def __init__(self, indexes: Sequence[int], tasks: Sequence[int], codec: value_types.ValueCodec) -> None:
        self._select = operator.itemgetter(*indexes)  # returns a tuple for >= 2 indexes
        self._choices = tuple((task,) for task in tasks)
        self._n = len(tasks)
        self._pack = codec.packer()

    def choose(self, values: Sequence[Any]) -> Sequence[int]:
        return self._choices[_packed_hash(self._select(values), self._pack) % self._n]


class _DirectChooser:
    """Direct streams: the emitter names the task, so there is nothing to choose."""

    __slots__ = ()

    def choose(self, values: Sequence[Any]) -> Sequence[int]:
        raise ValueError(
            "cannot do a regular emit to a direct stream: emit with direct_task=<task id>"
        )


def make_chooser(
    spec: GroupingSpec,
    output_fields: Sequence[str],
    target_tasks: Sequence[int],
    local_tasks: Collection[int],
    rng: random.Random,
    codec: value_types.ValueCodec = value_types.BUILTIN,
) -> Chooser:
    """The chooser of one (emitting task, subscribed stream).

    ``output_fields`` are the stream's declared fields, ``target_tasks`` the
    subscriber's task ids (any order: fields and global work on the sorted list),
    ``local_tasks`` the task ids running in this worker (for local_or_shuffle), and
    ``rng`` seeds the shuffle order (pass a per-task Random so runs can be replayed),
    ``codec`` encodes the values a fields grouping hashes (the topology's types).
    """
    tasks = tuple(sorted(set(target_tasks)))
    if not tasks:
        raise ValueError(f"{spec!r}: no target tasks")
    kind = spec.kind
    if kind in ("shuffle", "none"):
        return _ShuffleChooser(tasks, rng)
    if kind == "local_or_shuffle":
        local = [task for task in tasks if task in local_tasks]
        return _ShuffleChooser(local or tasks, rng)
    if kind == "all":
        return _ConstantChooser(tasks)
    if kind == "global":
        return _ConstantChooser(tasks[:1])
    if kind == "direct":
        return _DirectChooser()
    # fields
    output_fields = list(output_fields)
    missing = [field for field in spec.fields if field not in output_fields]
    if missing:
        raise ValueError(f"{spec!r}: no field {missing[0]!r} in stream fields {output_fields!r}")
    indexes = [output_fields.index(field) for field in spec.fields]
    if len(indexes) == 1:
        return _SingleFieldChooser(indexes[0], tasks, codec)
    return _MultiFieldChooser(indexes, tasks, codec)


def validate_direct_task(
    task: int,
    target_tasks: Collection[int],
    component: str | None = None,
    stream: str | None = None,
) -> None:
    """Check an emitter's ``direct_task`` against the tasks of a subscriber that uses
    a direct grouping (pass a set or frozenset for speed). Raises ValueError naming
    the task and the component."""
    if type(task) is int and task in target_tasks:
        return
    who = f"component {component!r}" if component is not None else "the direct subscribers"
    on = f" on stream {stream!r}" if stream is not None else ""
    raise ValueError(
        f"direct emit{on} to task {task!r}, which is not a task of {who} "
        f"(its tasks: {sorted(target_tasks)})"
    )
