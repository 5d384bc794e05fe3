"""How tuples travel inside a TaskMessage payload to another worker.

Only tuples for remote tasks are serialized; local ones move as objects. One payload
carries a run of tuples one task emitted on one stream to one remote task since its
executor last flushed (all of them, unless the task switched streams in between or
the run is larger than the transport carries; at most `topology.transfer.batch.size`
tuples): per-message costs (a msgpack call, a TaskMessage, the transport's framing,
the receive thread's routing, the receiver's topology checks) are paid once per
batch instead of once per tuple, which is most of what a tuple crossing workers
costs (docs/benchmarks.md).

A payload is the msgpack array ``[values, source_task, stream, roots]``: `values` an
array with one array of field values per tuple; `roots` nil when no tuple of the
batch is tracked, else one entry per tuple, nil or a map of each root id of the
tuple's trees to this tuple's edge id (Storm's MessageId); or, when every tuple of
the batch is in exactly one tree, the *pairs* form: a flat array ``[root, edge,
root, edge, ...]``, two ints per tuple, told apart by its first entry (an int, never
nil or a map). A receiver takes either form; a sender uses the pairs form for runs
of an acking bolt's emits on one anchor each and of a spout's tracked emits
(`wire_roots`), nearly all of what two acking workers send each other, and the map
form for the rest: against a map per
tuple the pairs save about 0.26 µs a tuple decoding into Tuples and 0.12 µs
encoding (docs/benchmarks.md, session 31). Ids are unsigned 64-bit,
which msgpack carries as is. `values` comes first so that the receive thread can
read the batch's size from the payload's first bytes (`payload_tuple_count`) and
count it against the receiving executor's queue bound without decoding it.
"""

from __future__ import annotations

import operator
import reprlib
from collections.abc import Sequence
from typing import Any, Optional, Union

from storm_zmq.portable import ON_PYPY
from storm_zmq.runtime import flat_payloads
from storm_zmq.runtime.acking import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    fold_ack,
)
from storm_zmq.topology import value_types
from storm_zmq.topology.value_types import BUILTIN, ValueCodec

_U64 = 2**64 - 1

#: A payload's `roots`: None, a nil or a map per tuple, or the pairs form (see above).
WireRoots = Union[Sequence[Optional[dict[int, int]]], list[int], None]  # (3.9 too: no |)
_new_object = object.__new__

#: Whether payloads of flat tuples are written and read by `flat_payloads` before
#: msgpack is asked: on PyPy, where that is three to six times faster than msgpack's
#: pure-Python fallback (on CPython, msgpack's C is faster than any Python;
#: `scripts/bench_payloads.py` measures both on either).
FLAT_PAYLOADS = ON_PYPY


class SerializationError(TypeError):
    """A value in an emitted tuple that msgpack cannot carry."""


class TupleTooLarge(ValueError):
    """An emitted tuple, serialized, larger than the transport carries."""


class MalformedTuple(ValueError):
    """A received payload that is not a tuple of this topology."""


class TupleId:
    """A tuple's place in its tuple trees: `roots` (root id -> this tuple's edge
    id) and `ack_val`, the XOR of the edge ids of tuples anchored to it so far.

    Nearly every tracked tuple is in one tree, and a worker holds thousands of them
    alive (everything in flight under `topology.max.spout.pending`). A one-tree id
    keeps its `root` and `edge` in slots, with `many` None: 64 bytes, where a
    `{root: edge}` dict added 224, and the cache paid for it (session 19 in
    docs/benchmarks.md: a one-worker word count with acking counted 10-22 % more
    words). An id in several trees keeps them in `many`. `roots` is the dict
    either way, made on demand for a one-tree id: for the paths that are not per
    tuple. `ack_into` folds this tuple's ack without it."""

    __slots__ = ("root", "edge", "many", "ack_val")

    def __init__(self, roots: dict[int, int]) -> None:
        if len(roots) == 1:
            ((self.root, self.edge),) = roots.items()
            self.many = None
        else:
            self.root = self.edge = None
            self.many = roots
        self.ack_val = 0

    @property
    def roots(self) -> dict[int, int]:
        many = self.many
        return {self.root: self.edge} if many is None else many

    def ack_into(self, folded: dict[int, int]) -> None:
        """XOR this tuple's ACKER_ACK messages into `folded` (root id -> value):
        `fold_ack` of its roots and ack_val, without a dict for a one-tree id."""
        many = self.many
        if many is None:
            root = self.root
            folded[root] = folded.get(root, 0) ^ self.edge ^ self.ack_val
        else:
            fold_ack(folded, many, self.ack_val)

    def __repr__(self) -> str:
        return "TupleId(" + ", ".join(f"{r:x}:{e:x}" for r, e in self.roots.items()) + ")"

    def __str__(self) -> str:
        """A string id, as pystorm's tuples had (Storm's multilang sends one): the
        tuple's edge id in its first tree, random 64 bits, so unique per tuple in
        practice. For logs, keys and emitting on; `ack`/`fail` take the Tuple or
        this object, not the string."""
        many = self.many
        return str(self.edge if many is None else next(iter(many.values())))


#: A TupleId's `ack_val` once the tuple was acked by its bolt's own `ack` (the XOR of
#: 64-bit edge ids is never negative, and stays negative when XORed with more): a
#: second ack is told from the first.
SETTLED = -1


def one_tree_id(root: int, edge: int) -> TupleId:
    """``TupleId({root: edge})`` without the dict: an anchored emit's per-tuple path."""
    tuple_id = _new_object(TupleId)
    tuple_id.root = root
    tuple_id.edge = edge
    tuple_id.many = None
    tuple_id.ack_val = 0
    return tuple_id


def encode_tuples(
    source_task: int,
    stream: str,
    roots: WireRoots,
    values: Sequence[Sequence[Any]],
    component: str,
    codec: ValueCodec = BUILTIN,
) -> bytes:
    """One payload for the tuples one task emitted on one stream to one remote task
    since the last flush. `roots` is None when none of them is tracked; `codec`
    carries the topology's own types (`topology.kryo.register`)."""
    try:
        return _pack(values, source_task, stream, roots, codec)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise SerializationError(_explain_batch(values, component, stream, exc, codec)) from None


def encode_tuple(
    source_task: int,
    stream: str,
    roots: dict[int, int] | None,
    values: Sequence[Any],
    component: str,
    codec: ValueCodec = BUILTIN,
) -> bytes:
    """A payload of one tuple."""
    return encode_tuples(source_task, stream, None if roots is None else (roots,), (values,),
                         component, codec)


def check_decodes(
    payload: bytes, component: str, stream: str, codec: ValueCodec = BUILTIN,
) -> tuple[int, str, WireRoots, list[list[Any]]]:
    """Decode a payload just encoded, as the receiving worker would, for
    `topology.testing.always.try.serialize` (a worker's and a harness's): a value
    that encodes but that a receiver would refuse (a registered dict key whose tuple
    field comes back a list) is a `SerializationError` at the emit, naming its
    component and stream, instead of a payload refused by another worker. Returns
    what `decode_tuples` does."""
    try:
        return decode_tuples(payload, codec)
    except MalformedTuple as exc:
        raise SerializationError(f"component {component!r}, stream {stream!r}: another "
                                 f"worker could not decode this tuple: {exc}") from None


def as_received(
    values: Sequence[Any], source_task: int, stream: str, component: str,
    codec: ValueCodec = BUILTIN,
) -> list[Any]:
    """`values` packed and decoded again now, as another worker would receive them:
    a copy nothing done to `values` later reaches, and a `SerializationError` naming
    component and stream for what no worker could receive (the copy at the emit,
    `topology.copy.emitted.values`, a worker's and the test harness's)."""
    payload = encode_tuple(source_task, stream, None, values, component, codec)
    return check_decodes(payload, component, stream, codec)[3][0]


def decode_tuples(
    payload: bytes, codec: ValueCodec = BUILTIN,
) -> tuple[int, str, WireRoots, list[list[Any]]]:
    """Decode and check a payload. Values decode as lists (msgpack has one array
    type), which is what a bolt sees from a local emitter of lists too."""
    try:
        decoded = _unpack(payload, codec)
    except RecursionError:
        raise MalformedTuple("payload is nested too deeply") from None
    except Exception as exc:  # msgpack raises many kinds; all mean "not a tuple"
        raise MalformedTuple(f"payload is not a batch of tuples: {exc!r}") from None
    if type(decoded) is not list or len(decoded) != 4:
        raise MalformedTuple("payload is not a 4-element array")
    values, source_task, stream, roots = decoded
    if type(source_task) is not int or type(stream) is not str or type(values) is not list:
        if type(values) is int and type(source_task) is str and type(roots) is list:
            raise MalformedTuple(
                "payload of one tuple, [source_task, stream, roots, values]: the format of "
                "storm-zmq workers older than the batched one; every worker of a topology "
                "must run the same storm-zmq"
            )
        raise MalformedTuple("payload fields have the wrong types")
    if not values:
        raise MalformedTuple("payload carries no tuple")
    if payload[0] != 0x94 or payload_tuple_count(payload) != len(values):
        # what the receive thread counted against the queue bound must be what it holds
        raise MalformedTuple("payload header does not give its tuple count")
    for tuple_values in values:
        if type(tuple_values) is not list:
            raise MalformedTuple("a tuple's values are not an array")
    if roots is not None:
        if type(roots) is list and roots and type(roots[0]) is int:
            _check_root_pairs(roots, len(values))
            return source_task, stream, roots, values
        if type(roots) is not list or len(roots) != len(values):
            raise MalformedTuple("tuple roots are not one entry per tuple")
        # Every tracked remote tuple passes here, so the check is plain loops (half
        # the cost of an all() over a generator). No upper bounds: msgpack decodes no
        # int above 2**64 - 1. (bool is not int here: msgpack's true is a bool.)
        for tuple_roots in roots:
            if tuple_roots is None:
                continue
            if type(tuple_roots) is not dict:
                raise MalformedTuple("tuple roots are not a map of 64-bit ids")
            for root, edge in tuple_roots.items():
                if type(root) is not int or type(edge) is not int or root <= 0 or edge < 0:
                    raise MalformedTuple("tuple roots are not a map of 64-bit ids")
    return source_task, stream, roots, values


def _pack(values: Sequence[Sequence[Any]], source_task: int, stream: str, roots: WireRoots,
          codec: ValueCodec) -> bytes:
    """`flat_payloads` first where `FLAT_PAYLOADS`; whatever it refuses (or fails
    at: msgpack is the authority either way) goes through the codec's msgpack, which
    also says what is wrong with what cannot be packed at all."""
    if FLAT_PAYLOADS:
        try:
            return flat_payloads.pack_payload(values, source_task, stream, roots)
        except Exception:  # not flat, or not packable at all: msgpack says which
            pass
    return codec.pack((values, source_task, stream, roots))


def _unpack(payload: bytes, codec: ValueCodec) -> Any:
    """`_pack`'s reverse: `flat_payloads` first where `FLAT_PAYLOADS`, msgpack for
    what it refuses, malformed payloads included (msgpack's error is the one seen)."""
    if FLAT_PAYLOADS:
        try:
            return flat_payloads.unpack_payload(payload)
        except Exception:  # not flat, or not msgpack at all: msgpack says which
            pass
    return codec.unpackb(payload)


def are_root_pairs(roots: list[Any]) -> bool:
    """Whether decoded `roots` (not None) are in the pairs form (see the module's
    docstring): ``[root, edge, ...]``, rather than one nil or map per tuple."""
    return type(roots[0]) is int


def wire_roots(
    entries: list[dict[int, int] | TupleId | None],
) -> WireRoots:
    """A run's `roots` for its payload, from one entry per tuple (None, a roots
    dict, or a `TupleId`): None when no tuple is tracked; the pairs form when every
    entry is in exactly one tree, a one-tree `TupleId` (an acking bolt's emits) or
    a dict of one root (a spout's); else a nil or map per tuple.

    A plain loop: on CPython 3.11 it took 53 ns an entry where operator.attrgetter
    chains in C loops took 158, and on PyPy, whose attrgetter is Python code, 21
    against 360 (docs/benchmarks.md, session 40)."""
    pairs: list[int] = []
    append = pairs.append
    for entry in entries:
        kind = type(entry)
        if kind is TupleId:
            if entry.many is not None:  # (an empty `many` is no tree: a map)
                break
            append(entry.root)
            append(entry.edge)
        elif kind is dict and len(entry) == 1:
            for root, edge in entry.items():
                append(root)
                append(edge)
        else:
            break
    else:
        return pairs if pairs else None
    if not any(entries):
        return None
    return [entry.roots if type(entry) is TupleId else entry for entry in entries]


def roots_per_tuple(roots: list[Any] | None, count: int) -> list[dict[int, int] | None]:
    """Decoded `roots` of `count` tuples as one entry per tuple (nil or a map), the
    pairs form included: for the paths that are not per tuple."""
    if roots is None:
        return [None] * count
    if are_root_pairs(roots):
        pair = iter(roots)
        return [{root: edge} for root, edge in zip(pair, pair)]  # pairs: iter twice
    return roots


def _check_root_pairs(pairs: list[Any], count: int) -> None:
    """The pairs form: a root id in [1, 2**64) and an edge id in [0, 2**64) for
    each of `count` tuples. Plain loops: every tracked remote tuple passes here."""
    if len(pairs) != 2 * count:
        raise MalformedTuple("tuple root pairs are not two ids per tuple")
    pair = iter(pairs)
    for root, edge in zip(pair, pair):  # the same iterator twice: pairs
        if type(root) is not int or type(edge) is not int or root <= 0 or edge < 0:
            raise MalformedTuple("tuple root pairs are not 64-bit ids")


def payload_tuple_count(payload: bytes) -> int:
    """How many tuples a payload carries, read from its first bytes (the header of
    its `values` array) without decoding it. A payload that does not start like
    one counts as 1 (its executor refuses it when it decodes it), and no payload
    counts as more tuples than it has bytes, whatever its header claims."""
    if len(payload) < 2 or payload[0] != 0x94:  # a 4-element fixarray
        return 1
    head = payload[1]
    if 0x90 <= head <= 0x9F:  # fixarray
        count = head - 0x90
    elif head == 0xDC:  # array 16
        count = int.from_bytes(payload[2:4], "big")
    elif head == 0xDD:  # array 32
        count = int.from_bytes(payload[2:6], "big")
    else:
        return 1
    return max(1, min(count, len(payload)))


# What each system stream carries between workers: the acker protocol is the only
# system traffic that crosses workers (ticks come from each executor's own clock).
# "root" is a root id in [1, 2**64), "xor" a 64-bit XOR of edge ids, "task" the
# sending spout task.
_TO_ACKER: dict[str, tuple[str, ...]] = {
    ACKER_INIT_STREAM_ID: ("root", "xor", "task"),
    ACKER_ACK_STREAM_ID: ("root", "xor"),
    ACKER_FAIL_STREAM_ID: ("root",),
}
_TO_SPOUT: dict[str, tuple[str, ...]] = {
    ACKER_ACK_STREAM_ID: ("root",),
    ACKER_FAIL_STREAM_ID: ("root",),
}


#: The values each kind of system field may take (a "task" is the sender's own).
_SYSTEM_BOUNDS = {"root": (1, _U64), "xor": (0, _U64)}


def check_system_tuples(
    stream: str, source: int, batch: Sequence[Any], *, from_acker: bool, to_acker: bool
) -> None:
    """`check_system_tuple` for every tuple of a decoded batch, as a receiver runs
    it: the stream's direction and shape looked up once, then each field checked for
    the whole batch at once, its types and its least and greatest value, in C loops
    (the `__ack_ack`s one worker sends another's acker are most of what crosses to
    it: 0.3 µs a message, 0.9 through `check_system_tuple` each). A batch this does
    not admit goes through `check_system_tuple`, the one authority, tuple by tuple:
    its error names the first tuple that is wrong and what is wrong with it."""
    shape = _system_shape(stream, from_acker, to_acker)
    if not batch:
        return
    if set(map(type, batch)) <= {list} and set(map(len, batch)) <= {len(shape)}:
        for index, kind in enumerate(shape):
            low, high = (source, source) if kind == "task" else _SYSTEM_BOUNDS[kind]
            field = list(map(operator.itemgetter(index), batch))
            if not set(map(type, field)) <= {int} or min(field) < low or max(field) > high:
                break
        else:
            return
    for values in batch:
        check_system_tuple(stream, source, values, from_acker=from_acker, to_acker=to_acker)


def _system_shape(stream: str, from_acker: bool, to_acker: bool) -> tuple[str, ...]:
    """The fields of a system stream between these ends, or `MalformedTuple`."""
    if from_acker == to_acker:
        raise MalformedTuple(
            f"system stream {stream!r} "
            + ("between two ackers" if to_acker else "that neither comes from nor goes to an acker")
        )
    shape = (_TO_ACKER if to_acker else _TO_SPOUT).get(stream)
    if shape is None:
        raise MalformedTuple(
            f"system stream {stream!r} is not sent {'to' if to_acker else 'from'} an acker"
        )
    return shape


def check_system_tuple(
    stream: str, source: int, values: Sequence[Any], *, from_acker: bool, to_acker: bool
) -> None:
    """Check a decoded remote tuple on a system stream (``__...``), or raise
    `MalformedTuple`.

    Why: user streams are checked against the topology (declared stream, arity),
    but the acker and spout executors index and XOR system tuples' values without
    looking, so a well-formed payload with the wrong values (``__ack_ack`` with no
    values, a string where an id belongs, an init naming another task) would raise
    inside the executor and kill the worker. Only the acker protocol crosses workers:
    spouts and bolts send ``__ack_init`` / ``__ack_ack`` / ``__ack_fail`` to an
    acker, the acker sends ``__ack_ack`` / ``__ack_fail`` to a spout. `to_acker`
    False means the receiver is a spout task (the caller refuses system tuples for
    a bolt task before asking).
    """
    shape = _system_shape(stream, from_acker, to_acker)
    if len(values) != len(shape):
        raise MalformedTuple(
            f"{len(values)} values on system stream {stream!r}, which carries {len(shape)}"
        )
    for value, kind in zip(values, shape):
        if type(value) is not int:
            raise MalformedTuple(f"system stream {stream!r}: {kind} is not an integer")
        if kind == "root" and not 0 < value <= _U64:
            raise MalformedTuple(f"system stream {stream!r}: root id {value} is out of range")
        if kind == "xor" and not 0 <= value <= _U64:
            raise MalformedTuple(f"system stream {stream!r}: ack value {value} is out of range")
        if kind == "task" and value != source:
            raise MalformedTuple(
                f"system stream {stream!r}: names spout task {value} but comes from task {source}"
            )


def _explain_batch(
    batch: Sequence[Sequence[Any]], component: str, stream: str, exc: Exception, codec: ValueCodec
) -> str:
    for values in batch:
        for index, value in enumerate(values):
            top = f"value {index} of the tuple"
            try:
                why = _why_unpackable(value, top, "", codec)
            except RecursionError:  # msgpack's own limit is about as deep
                why = f"{top} is nested too deeply for msgpack (about 1,000 levels at most)"
            if why is not None:
                return f"component {component!r}, stream {stream!r}: {why}"
    return f"component {component!r}, stream {stream!r}: tuple cannot be serialized: {exc}"


_CARRIES = (f"a tuple carries {value_types.CARRIED}; register your own types in "
            "topology.kryo.register")


def _why_unpackable(value: Any, top: str, path: str, codec: ValueCodec) -> str | None:
    """What in `value` msgpack refuses, named by its place (`top`, then the
    subscripts down to the innermost item) and why; None if it packs. Off the hot
    path: only once an encode failed."""
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            why = _why_unpackable(item, top, f"{path}[{index}]", codec)
            if why is not None:
                return why
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            why = (_why_unpackable(key, f"a key of {top}", path, codec)
                   or _why_unpackable(item, top, f"{path}[{reprlib.repr(key)}]", codec))
            if why is not None:
                return why
        return None
    where = f"{top}{' at ' + path if path else ''}"
    try:
        codec.packb(value)
    except value_types.UnsupportedValue as exc:
        return f"{where} is {exc}"
    except OverflowError:
        return (f"{where} is the int {reprlib.repr(value)}, outside the 64-bit range msgpack "
                "carries (-2**63 to 2**64 - 1)")
    except UnicodeEncodeError as exc:
        return f"{where} is a str that cannot be encoded as UTF-8 ({exc.reason} at position {exc.start})"
    except Exception:
        kind = type(value)
        hint = "; a tuple's id is the runtime's object: emit str(tup.id)" if kind is TupleId else ""
        return (f"{where} is a {kind.__module__}.{kind.__qualname__}, which cannot be serialized "
                f"({_CARRIES}){hint}")
    return None
