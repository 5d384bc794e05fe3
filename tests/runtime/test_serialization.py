"""Tests for the tuple payload codec (storm_zmq.runtime.serialization)."""

from __future__ import annotations

import datetime
import threading

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_zmq.runtime import serialization
from storm_zmq.runtime.acking import fold_ack
from storm_zmq.runtime.serialization import (
    MalformedTuple,
    SerializationError,
    TupleId,
    decode_tuples,
    encode_tuple,
    encode_tuples,
    one_tree_id,
    payload_tuple_count,
    roots_per_tuple,
    wire_roots,
)

U64_MAX = 2**64 - 1


@pytest.fixture(autouse=True, scope="module", params=[False, True], ids=["msgpack", "flat"])
def flat_payloads(request: pytest.FixtureRequest) -> object:
    """Every test twice: payloads through msgpack alone (CPython's path), and
    through `flat_payloads` first (PyPy's), which must not change what any test
    sees. (Module-scoped: hypothesis refuses function-scoped fixtures.)"""
    saved = serialization.FLAT_PAYLOADS
    serialization.FLAT_PAYLOADS = request.param
    yield request.param
    serialization.FLAT_PAYLOADS = saved


def decode_tuple(payload: bytes) -> tuple:
    """The one tuple of a payload, as (source, stream, roots, values)."""
    source, stream, roots, values = decode_tuples(payload)
    assert len(values) == 1
    return source, stream, None if roots is None else roots[0], values[0]


def round_trip(source: int, stream: str, roots: dict[int, int] | None, values: list) -> tuple:
    return decode_tuple(encode_tuple(source, stream, roots, values, "comp"))


# -- round trip ----------------------------------------------------------------------------


def test_round_trip_of_a_plain_tuple() -> None:
    source, stream, roots, values = round_trip(3, "default", {1: 2}, ["dog", 1])
    assert (source, stream, roots, values) == (3, "default", {1: 2}, ["dog", 1])
    assert type(values) is list


def test_untracked_tuple_has_none_roots() -> None:
    assert round_trip(1, "s", None, ["x"]) == (1, "s", None, ["x"])


@pytest.mark.parametrize("task", [0, 1, -1, 2**31 - 1, -(2**31)])
def test_source_task_round_trips(task: int) -> None:
    assert round_trip(task, "default", None, [])[0] == task


def test_u64_root_and_edge_ids_round_trip() -> None:
    roots = {U64_MAX: U64_MAX, 1: 0, 2**63: 2**63 - 1, 12345: U64_MAX - 1}
    assert round_trip(1, "default", roots, [1])[2] == roots


@pytest.mark.parametrize("roots", [{0: 1}, {-1: 1}, {1: -1}, {-(2**63): 5}])
def test_root_ids_out_of_range_are_malformed(roots: dict[int, int]) -> None:
    # root ids are 1..2**64-1 (0 is never a root), edge ids 0..2**64-1
    with pytest.raises(MalformedTuple, match="64-bit ids"):
        decode_tuple(encode_tuple(1, "default", roots, [1], "comp"))


@pytest.mark.parametrize(
    "roots", [{"1": 1}, {1: "2"}, {1: 1.5}, {1.0: 1}, {True: 1}, {1: None}, {1: [2]}, [1, 2], 7]
)
def test_root_ids_of_other_types_are_malformed(roots: object) -> None:
    # an acker or bolt XORs these without looking: anything but an int map is refused
    payload = encode_tuples(1, "default", [{5: 6}, roots], [[1], [2]], "comp")
    with pytest.raises(MalformedTuple, match="64-bit ids"):
        decode_tuples(payload)


def test_scalar_values_round_trip_with_their_types() -> None:
    values = [None, True, False, 0, -1, 2**63, -(2**63), 1.5, -0.0, float("inf"), "",
              "ünïcödé", b"", b"\x00\xff"]
    decoded = round_trip(1, "default", None, values)[3]
    assert decoded == values
    assert type(decoded) is list
    assert [type(v) for v in decoded] == [type(v) for v in values]


def test_nested_containers_round_trip_by_value() -> None:
    values = [{"a": 1, "b": [1, 2, {"c": None}]}, [b"x", 1.25, True], {1: "int key"}]
    _, _, _, decoded = round_trip(1, "default", None, values)
    assert decoded[0]["a"] == 1
    assert list(decoded[0]["b"][:2]) == [1, 2]
    assert decoded[0]["b"][2] == {"c": None}
    assert list(decoded[1]) == [b"x", 1.25, True]
    assert decoded[2] == {1: "int key"}


def test_tuple_values_round_trip_as_lists() -> None:
    # msgpack has one array type: emitted tuples, nested or not, come back as lists
    decoded = round_trip(1, "default", None, (1, (2, 3)))[3]
    assert decoded == [1, [2, 3]]
    assert type(decoded) is list and type(decoded[1]) is list


def test_nested_lists_round_trip_as_lists() -> None:
    values = [[1, 2], {"k": [3]}]
    decoded = round_trip(1, "default", None, values)[3]
    assert decoded == values
    assert type(decoded) is list and type(decoded[0]) is list and type(decoded[1]["k"]) is list


def test_a_dict_with_tuple_keys_round_trips_with_tuple_keys() -> None:
    """Bug: the array key decoded as a list, which cannot be a key: the whole batch
    was refused as malformed and its tuples lost (a task of the same worker got
    them). Keys come back as tuples, nested ones too; values as lists as ever."""
    values = [{("k", 1): [1, (2, 3)], (1, ("a", 2)): "x", "plain": (4,)}]
    decoded = round_trip(1, "default", None, values)[3]
    assert decoded == [{("k", 1): [1, [2, 3]], (1, ("a", 2)): "x", "plain": [4]}]
    assert_no_tuples(decoded)


def test_a_map_key_that_is_a_map_is_still_malformed() -> None:
    payload = msgpack.packb([[[{"a": 1}]], 1, "s", None])
    payload = payload.replace(msgpack.packb({"a": 1}), b"\x81" + msgpack.packb({"a": 1}) + b"\x01")
    with pytest.raises(MalformedTuple, match="not a batch of tuples"):
        decode_tuples(payload)


# -- batches: the tuples of one task on one stream for one remote task -----------------


def test_a_batch_round_trips_in_order_with_roots_per_tuple() -> None:
    values = [["a", 1], ["b", 2], ["c", 3]]
    roots = [{1: 2}, None, {3: 4, 5: 6}]
    assert decode_tuples(encode_tuples(7, "s", roots, values, "c")) == (7, "s", roots, values)


def test_a_run_of_one_tree_ids_travels_as_root_edge_pairs() -> None:
    """An acking bolt's remote emits: each tuple in one tree, its TupleId buffered
    (no roots dict made); the payload carries [root, edge, ...]."""
    ids = [one_tree_id(1, 2), one_tree_id(U64_MAX, 0), one_tree_id(2**63, U64_MAX)]
    roots = wire_roots(ids)
    assert roots == [1, 2, U64_MAX, 0, 2**63, U64_MAX]
    values = [["a"], ["b"], ["c"]]
    decoded = decode_tuples(encode_tuples(7, "s", roots, values, "c"))
    assert decoded == (7, "s", roots, values)
    assert roots_per_tuple(decoded[2], 3) == [{1: 2}, {U64_MAX: 0}, {2**63: U64_MAX}]


@pytest.mark.parametrize(("entries", "expected"), [
    ([{3: 4}], [3, 4]),  # a spout's tracked emit: a dict of its one root
    ([{1: 2}, {U64_MAX: 0}], [1, 2, U64_MAX, 0]),
    ([one_tree_id(1, 2), {3: 4}], [1, 2, 3, 4]),
    ([{3: 4}, one_tree_id(1, 2)], [3, 4, 1, 2]),
    ([], None),
])
def test_a_run_whose_every_tuple_is_in_one_tree_travels_as_pairs(entries: list, expected: object) -> None:
    roots = wire_roots(entries)
    assert roots == expected
    if entries:
        values = [["v"]] * len(entries)
        decoded = decode_tuples(encode_tuples(7, "s", roots, values, "c"))
        assert roots_per_tuple(decoded[2], len(entries)) == [
            entry.roots if isinstance(entry, TupleId) else entry for entry in entries]


@pytest.mark.parametrize(("entries", "expected"), [
    ([None, None], None),
    ([one_tree_id(1, 2), None], [{1: 2}, None]),
    ([None, one_tree_id(1, 2)], [None, {1: 2}]),
    ([one_tree_id(1, 2), {3: 4, 5: 6}], [{1: 2}, {3: 4, 5: 6}]),
    ([{3: 4}, {5: 6, 7: 8}], [{3: 4}, {5: 6, 7: 8}]),
    ([one_tree_id(1, 2), TupleId({3: 4, 5: 6})], [{1: 2}, {3: 4, 5: 6}]),
    ([{3: 4}, None], [{3: 4}, None]),
    ([{3: 4}, {}], [{3: 4}, {}]),
    ([one_tree_id(1, 2), TupleId({})], [{1: 2}, {}]),  # an id in no tree: a map, as before
])
def test_a_run_with_any_other_entry_travels_as_a_map_per_tuple(entries: list, expected: object) -> None:
    assert wire_roots(entries) == expected


@pytest.mark.parametrize("pairs", [
    [1, 2, 3],  # not two ids a tuple
    [1, 2],  # two tuples, one pair
    [1, 2, 3, 4, 5, 6],  # two tuples, three pairs
    [1, 2, 0, 4],  # root 0
    [1, 2, -3, 4],
    [1, 2, 3, -4],
    [1, 2, 3, "4"],
    [1, 2, 3, 4.0],
    [1, 2, 3, None],
    [1, 2, {3: 4}, 5],
    [1, 2, 3, False],  # msgpack's booleans are no ids
    [1, True, 3, 4],
])
def test_root_pairs_that_are_not_two_ids_a_tuple_are_malformed(pairs: list) -> None:
    payload = msgpack.packb([[[1], [2]], 1, "default", pairs])
    with pytest.raises(MalformedTuple, match="pairs"):
        decode_tuples(payload)


def test_a_batch_without_tracked_tuples_has_no_roots() -> None:
    payload = encode_tuples(7, "s", None, [["a"], ["b"]], "c")
    assert decode_tuples(payload) == (7, "s", None, [["a"], ["b"]])


@pytest.mark.parametrize("count", [1, 2, 15, 16, 17, 255, 65_535, 65_536, 70_000])
def test_tuple_count_is_read_from_the_payload_header(count: int) -> None:
    # msgpack's fixarray, array 16 and array 32 headers, on both sides of each boundary
    payload = encode_tuples(1, "s", None, [[i] for i in range(count)], "c")
    assert payload_tuple_count(payload) == count == len(decode_tuples(payload)[3])


@pytest.mark.parametrize(
    ("payload", "count"),
    [
        (b"", 1),
        (b"\x94", 1),
        (b"garbage", 1),
        (msgpack.packb(["not values", 1, "s", None]), 1),  # values not an array: counts 1
        (b"\x94\xdd\xff\xff\xff\xff", 6),  # claims 2**32-1 tuples in 6 bytes: counts 6
        (b"\x94\xdc\x01", 1),  # truncated array 16 header
    ],
)
def test_tuple_count_of_a_bad_payload_is_small(payload: bytes, count: int) -> None:
    # the receive thread counts before the executor refuses: never 0, never more
    # tuples than the payload has bytes
    assert payload_tuple_count(payload) == count


def test_a_payload_whose_header_hides_its_tuple_count_is_malformed() -> None:
    """A hostile peer could otherwise send many tuples that the receive thread
    counts as one against the queue bound: the outer array in a longer encoding
    than msgpack's own, so the count is not where it is read."""
    body = b"".join(msgpack.packb(part) for part in ([["a"]] * 1000, 1, "s", None))
    payload = b"\xdc\x00\x04" + body  # a 4-element array 16 instead of a fixarray
    assert payload_tuple_count(payload) == 1
    with pytest.raises(MalformedTuple, match="header does not give its tuple count"):
        decode_tuples(payload)


def test_an_unserializable_value_in_a_batch_names_its_place() -> None:
    with pytest.raises(SerializationError, match=r"'c', stream 's': value 1 .*builtins\.set"):
        encode_tuples(1, "s", None, [["ok", 1], ["ok", {2}]], "c")


def test_encode_after_a_failed_encode_is_clean() -> None:
    with pytest.raises(SerializationError):
        encode_tuple(1, "default", None, [[1, 2, {3}]], "comp")
    # the shared packer must not keep a half-written payload
    payload = encode_tuple(2, "default", None, ["ok"], "comp")
    assert decode_tuple(payload) == (2, "default", None, ["ok"])


def test_encoding_is_thread_safe() -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(n: int) -> None:
        try:
            barrier.wait(5)
            for i in range(2000):
                values = [n, i, "x" * (i % 50), list(range(i % 20))]
                decoded = decode_tuple(encode_tuple(n, f"s{n}", {i + 1: n}, values, "c"))
                assert decoded[0] == n and decoded[1] == f"s{n}" and decoded[2] == {i + 1: n}
                assert decoded[3] == values
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors


def as_lists(value: object) -> object:
    """What msgpack gives back for `value`: every array a list."""
    if isinstance(value, (list, tuple)):
        return [as_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: as_lists(v) for k, v in value.items()}
    return value


def assert_no_tuples(value: object) -> None:
    assert type(value) is not tuple
    if isinstance(value, list):
        for v in value:
            assert_no_tuples(v)
    elif isinstance(value, dict):
        for v in value.values():
            assert_no_tuples(v)


json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), U64_MAX) | st.floats(allow_nan=False)
    | st.text() | st.binary(),
    lambda children: st.lists(children, max_size=4)
    | st.lists(children, max_size=4).map(tuple)
    | st.dictionaries(st.text(max_size=5) | st.integers(-5, 5)
                      | st.tuples(st.integers(-5, 5), st.text(max_size=3)), children, max_size=4),
    max_leaves=8,
)


@settings(max_examples=100, deadline=None)
@given(
    source=st.integers(-(2**31), 2**31 - 1),
    stream=st.text(min_size=1, max_size=20),
    roots=st.none() | st.dictionaries(st.integers(1, U64_MAX), st.integers(0, U64_MAX), max_size=5),
    values=st.lists(json_like, max_size=6),
)
def test_round_trip_property(source: int, stream: str, roots: dict[int, int] | None,
                             values: list) -> None:
    # every array (list or tuple, at any depth) decodes as a list
    decoded = round_trip(source, stream, roots, values)
    assert decoded == (source, stream, roots, as_lists(values))
    assert_no_tuples(decoded[3])


@settings(max_examples=200, deadline=None)
@given(
    batch=st.lists(st.tuples(st.none() | st.dictionaries(st.integers(1, U64_MAX),
                                                         st.integers(0, U64_MAX), max_size=2),
                             st.lists(json_like, max_size=3)), min_size=1, max_size=40),
    source=st.integers(-(2**31), 2**31 - 1),
    stream=st.text(max_size=10),
)
def test_batches_round_trip_and_their_count_is_what_they_carry(
    batch: list[tuple[dict[int, int] | None, list]], source: int, stream: str
) -> None:
    roots = [r for r, _ in batch]
    values = [v for _, v in batch]
    payload = encode_tuples(source, stream, roots if any(roots) else None, values, "c")
    decoded = decode_tuples(payload)
    assert decoded == (source, stream, roots if any(roots) else None, as_lists(values))
    assert payload_tuple_count(payload) == len(batch)
    # as an executor sends them: one-tree ids as TupleIds, in whichever form fits
    entries = [one_tree_id(*next(iter(r.items()))) if r and len(r) == 1 else r for r in roots]
    payload = encode_tuples(source, stream, wire_roots(entries), values, "c")
    _, _, sent, _ = decode_tuples(payload)
    assert roots_per_tuple(sent, len(batch)) == (roots if any(roots) else [None] * len(batch))


# -- unserializable values ---------------------------------------------------------------


class Custom:
    pass


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        ({1, 2}, "builtins.set"),
        (object(), "builtins.object"),
        (complex(1, 2), "builtins.complex"),
        (Custom(), f"{__name__}.Custom"),
        (2**64, "the int 18446744073709551616, outside the 64-bit range msgpack carries"),
        ("\ud800", "a str that cannot be encoded as UTF-8 (surrogates not allowed at position 0)"),
    ],
)
def test_unserializable_value_names_component_stream_index_and_type(value: object,
                                                                     type_name: str) -> None:
    with pytest.raises(SerializationError) as info:
        encode_tuple(4, "counts", None, ["fine", 1, value], "count_bolt")
    message = str(info.value)
    assert "'count_bolt'" in message
    assert "'counts'" in message
    assert "value 2 " in message
    assert type_name in message
    assert isinstance(info.value, TypeError)  # SerializationError is a TypeError
    assert info.value.__cause__ is None and info.value.__suppress_context__


class OtherLibrarysZone(datetime.tzinfo):
    def utcoffset(self, dt: object) -> datetime.timedelta:
        return datetime.timedelta(hours=1)


def test_dates_decimals_and_uuids_travel_as_themselves_even_under_tuple_keys() -> None:
    import decimal
    import uuid

    values = [datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC), datetime.date(2024, 1, 2),
              decimal.Decimal("9.99"), uuid.UUID(int=5), [datetime.timedelta(seconds=1)]]
    assert decode_tuples(encode_tuple(4, "s", None, values, "c"))[3] == [values]
    keyed = [{(1, 2): datetime.time(1, 2)}, datetime.date(2024, 1, 3)]  # the slower decode
    assert decode_tuples(encode_tuple(4, "s", None, keyed, "c"))[3] == [keyed]


def test_a_carried_type_that_cannot_travel_says_why_with_its_place() -> None:
    value = datetime.datetime(2024, 1, 1, tzinfo=OtherLibrarysZone())
    with pytest.raises(SerializationError, match=r"component 'c', stream 'default': value 1 of the "
                       r"tuple at \[0\] is a datetime whose tzinfo is a .*OtherLibrarysZone, whose "
                       r"rules cannot travel \(use datetime.timezone or zoneinfo.ZoneInfo"):
        encode_tuple(4, "default", None, ["fine", [value]], "c")


def test_a_payload_with_an_unknown_or_broken_extension_is_malformed() -> None:
    for ext in (msgpack.ExtType(99, b""), msgpack.ExtType(3, b"2024-13-45")):
        payload = msgpack.packb([[["x", ext]], 4, "default", None])
        with pytest.raises(MalformedTuple, match="not a batch of tuples: .*extension type"):
            decode_tuples(payload)


def test_unserializable_nested_value_names_its_place_down_to_the_item() -> None:
    with pytest.raises(SerializationError, match=r"value 1 of the tuple at \[1\]\['k'\] is a builtins\.set"):
        encode_tuple(4, "default", None, ["fine", [1, {"k": {2}}]], "c")
    with pytest.raises(SerializationError, match=r"a key of value 0 of the tuple is a builtins\.frozenset"):
        encode_tuple(4, "default", None, [{frozenset([1]): 2}], "c")
    deep: list = []
    for _ in range(2000):
        deep = [deep]
    with pytest.raises(SerializationError, match=r"value 0 of the tuple is nested too deeply for msgpack"):
        encode_tuple(4, "default", None, [deep], "c")


def test_a_tuple_id_reads_as_a_string_id_and_emitting_it_says_how() -> None:
    """A porting audit: pystorm's tuples had string ids, which code logs, stores and
    emits on. `str(tup.id)` is one (the tuple's edge id, unique per tuple); emitting
    the id object itself says to emit that instead."""
    from storm_zmq.runtime.serialization import TupleId

    one, two = TupleId({5: 2**63 + 7}), TupleId({5: 11, 6: 12})
    assert str(one) == str(2**63 + 7) and str(two) == "11"
    assert str(TupleId({5: 8})) != str(TupleId({5: 9}))
    with pytest.raises(SerializationError, match=r"value 0 of the tuple is a storm_zmq\.runtime"
                       r"\.serialization\.TupleId, .*; a tuple's id is the runtime's object: "
                       r"emit str\(tup\.id\)"):
        encode_tuple(4, "default", None, [one], "c")
    encode_tuple(4, "default", None, [str(one)], "c")


def test_unserializable_roots_still_name_component_and_stream() -> None:
    with pytest.raises(SerializationError) as info:
        encode_tuple(1, "st", {2**64: 1}, ["ok"], "comp")
    assert "'comp'" in str(info.value) and "'st'" in str(info.value)


# -- malformed payloads ------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\xc1",  # never used in msgpack
        b"\x94\x01",  # truncated array
        msgpack.packb([[[1]], 1, "s", None]) + b"\x00",  # trailing data
        msgpack.packb([[[1]], 1, "s"]),  # three fields
        msgpack.packb([[[1]], 1, "s", None, 5]),  # five fields
        msgpack.packb(7),
        msgpack.packb(None),
        msgpack.packb([[[1]], "1", "s", None]),  # source task not an int
        msgpack.packb([[[1]], True, "s", None]),  # bool is not a task id
        msgpack.packb([[[1]], 1.0, "s", None]),
        msgpack.packb([[[1]], 1, b"s", None]),  # stream not a str
        msgpack.packb([[[1]], 1, 5, None]),
        msgpack.packb([[[1]], 1, "s", [1]]),  # a tuple's roots not a map
        msgpack.packb([[[1]], 1, "s", 3]),  # roots not an array
        msgpack.packb([[[1]], 1, "s", {1: 2}]),
        msgpack.packb([[[1], [2]], 1, "s", [None]]),  # roots for one of two tuples
        msgpack.packb(["values", 1, "s", None]),  # values not an array
        msgpack.packb([{"a": 1}, 1, "s", None]),
        msgpack.packb([None, 1, "s", None]),
        msgpack.packb([[], 1, "s", None]),  # no tuple at all
        msgpack.packb([[[1], "x"], 1, "s", None]),  # a tuple's values not an array
        msgpack.packb([[[1], None], 1, "s", None]),
    ],
)
def test_malformed_payloads_raise_malformed_tuple(payload: bytes) -> None:
    with pytest.raises(MalformedTuple):
        decode_tuples(payload)


def test_a_payload_of_older_workers_says_so() -> None:
    """Workers of two storm-zmq versions refuse each other's tuples: the refusal
    (counted, logged once per interval) names the likely cause."""
    old_format = msgpack.packb([3, "default", {1: 2}, ["dog"]])  # one tuple per payload
    with pytest.raises(MalformedTuple, match="every worker of a topology must run the same"):
        decode_tuples(old_format)


def test_a_map_payload_is_malformed() -> None:
    with pytest.raises(MalformedTuple):
        decode_tuples(msgpack.packb({1: 0, "s": 0, None: 0, (): 0}))


@pytest.mark.parametrize("roots", [{"a": "b"}, {1: "x"}, {1: None}, {1.5: 2}, {1: [2]}])
def test_roots_with_non_integer_ids_are_malformed(roots: dict) -> None:
    with pytest.raises(MalformedTuple):
        decode_tuples(msgpack.packb([[[]], 1, "s", [roots]]))


def test_malformed_tuple_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        decode_tuples(b"garbage")


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_never_raise_anything_but_malformed_tuple(payload: bytes) -> None:
    try:
        result = decode_tuples(payload)
    except MalformedTuple:
        return
    source, stream, roots, values = result
    assert type(source) is int and type(stream) is str and type(values) is list and values
    assert payload_tuple_count(payload) == len(values), "the queue bound counts what it holds"
    assert all(type(v) is list for v in values)
    assert roots is None or (len(roots) == len(values) and all(
        r is None or type(r) is dict for r in roots))


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.data())
def test_corrupted_valid_payloads_never_raise_anything_but_malformed_tuple(
    noise: bytes, data: st.DataObject
) -> None:
    payload = bytearray(encode_tuple(7, "default", {2**40: 3}, ["abc", [1, 2], {"k": 1.5}], "c"))
    at = data.draw(st.integers(0, len(payload)))
    mutated = bytes(payload[:at] + noise + payload[at + len(noise):])
    try:
        decode_tuples(mutated)
    except MalformedTuple:
        pass


# -- TupleId -----------------------------------------------------------------------------


def test_tuple_id_repr_is_hex_root_edge_pairs() -> None:
    tid = TupleId({255: 16, U64_MAX: 1})
    assert repr(tid) == "TupleId(ff:10, ffffffffffffffff:1)"
    assert repr(TupleId({})) == "TupleId()"


def test_tuple_id_starts_with_zero_ack_val_and_keeps_its_roots() -> None:
    roots = {1: 2}
    tid = TupleId(roots)
    assert tid.ack_val == 0
    assert tid.roots == roots and (tid.root, tid.edge, tid.many) == (1, 2, None)  # no dict
    several = {1: 2, 3: 4}
    assert TupleId(several).roots is several and TupleId(several).many is several
    tid.ack_val ^= 5
    assert tid.ack_val == 5
    with pytest.raises(AttributeError):
        tid.other = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("roots", [{7: 0x70}, {7: 0x70, 8: 0x80}, {}], ids=["one tree", "two", "none"])
def test_ack_into_folds_as_fold_ack_does_for_either_form(roots: dict[int, int]) -> None:
    tid = TupleId(dict(roots))
    tid.ack_val = 0x5
    folded, expected = {7: 0x1}, {7: 0x1}
    tid.ack_into(folded)
    fold_ack(expected, roots, 0x5)
    assert folded == expected


def test_a_one_tree_id_is_the_id_of_its_roots_dict() -> None:
    made = one_tree_id(7, 0x70)
    assert (made.roots, made.ack_val, made.many) == ({7: 0x70}, 0, None)
    assert repr(made) == repr(TupleId({7: 0x70})) == "TupleId(7:70)"
