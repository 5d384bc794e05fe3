"""Groupings and the per-tuple target choosers (Storm's semantics)."""

from __future__ import annotations

import enum
import json
import math
import os
import random
import subprocess
import sys
import time
import zlib
from collections import Counter

import pytest

from storm_zmq.topology import Grouping, GroupingSpec, TopologyError
from storm_zmq.topology.grouping import fields_hash, make_chooser, validate_direct_task
from storm_zmq.topology.value_types import BUILTIN

WORDS = [f"word{i}" for i in range(500)] + ["", "é", "日本語", "dog", "cat"]

# -- declaration ---------------------------------------------------------------------------


def test_constants() -> None:
    assert Grouping.SHUFFLE == GroupingSpec("shuffle")
    assert Grouping.ALL.kind == "all"
    assert Grouping.GLOBAL.kind == "global"
    assert Grouping.DIRECT.kind == "direct"
    assert Grouping.LOCAL_OR_SHUFFLE.kind == "local_or_shuffle"
    assert Grouping.NONE.kind == "none"
    assert Grouping.SHUFFLE.fields == ()


def test_fields_varargs_list_and_tuple() -> None:
    expected = GroupingSpec("fields", ("a", "b"))
    assert Grouping.fields("a", "b") == expected
    assert Grouping.fields(["a", "b"]) == expected
    assert Grouping.fields(("a", "b")) == expected
    assert Grouping.fields("a").fields == ("a",)


def test_java_custom_groupings_are_refused_naming_the_groupings_there_are() -> None:
    with pytest.raises(TopologyError, match=r"Grouping.custom_object\('com.x.G'\): a Java custom "
                       "stream grouping cannot run in storm-zmq .* shuffle, fields, all"):
        Grouping.custom_object("com.x.G", [1])
    with pytest.raises(TopologyError, match=r"Grouping.custom_serialized\(...\): a Java"):
        Grouping.custom_serialized(b"\xac\xed")


def test_fields_given_a_list_is_stored_as_tuple() -> None:
    spec = GroupingSpec("fields", ["a"])  # type: ignore[arg-type]
    assert spec.fields == ("a",)
    hash(spec)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Grouping.fields(), "Grouping.fields() needs at least one field name"),
        (lambda: Grouping.fields([]), "Grouping.fields() needs at least one field name"),
        (lambda: Grouping.fields("a", 1), "field names must be non-empty str, got 1"),
        (lambda: Grouping.fields(""), "field names must be non-empty str, got ''"),
        (lambda: Grouping.fields("a", "a"), "duplicate field in ['a', 'a']"),
        (lambda: GroupingSpec("random"), "unknown grouping 'random'"),
        (lambda: GroupingSpec("fields"), "fields grouping needs at least one field"),
        (lambda: GroupingSpec("shuffle", ("a",)), "shuffle grouping takes no fields"),
        (lambda: GroupingSpec("fields", "ab"), "grouping fields must be a list of str"),
    ],
)
def test_invalid(make, message: str) -> None:
    with pytest.raises(TopologyError) as info:
        make()
    assert message in str(info.value)


def test_repr() -> None:
    assert repr(Grouping.SHUFFLE) == "Grouping.SHUFFLE"
    assert repr(Grouping.LOCAL_OR_SHUFFLE) == "Grouping.LOCAL_OR_SHUFFLE"
    assert repr(Grouping.fields("a", "b")) == "Grouping.fields('a', 'b')"


# -- choosers ------------------------------------------------------------------------------


def chooser(grouping: GroupingSpec, tasks=(3, 1, 2), fields=("word", "n"), local=(), seed=0):
    return make_chooser(grouping, list(fields), list(tasks), set(local), random.Random(seed))


@pytest.mark.parametrize("grouping", [Grouping.SHUFFLE, Grouping.NONE])
def test_shuffle_is_exactly_even(grouping: GroupingSpec) -> None:
    tasks = [5, 6, 7, 8, 9]
    c = chooser(grouping, tasks)
    counts = Counter(c.choose(("x", 1))[0] for _ in range(len(tasks) * 1000))
    assert counts == {task: 1000 for task in tasks}


def test_shuffle_is_round_robin_over_a_shuffled_order() -> None:
    tasks = list(range(10, 20))
    c = chooser(Grouping.SHUFFLE, tasks)
    first = [c.choose(())[0] for _ in range(10)]
    assert sorted(first) == tasks  # each task once per round
    assert [c.choose(())[0] for _ in range(10)] == first  # then the same order again
    orders = {
        tuple(chooser(Grouping.SHUFFLE, tasks, seed=seed).choose(())[0] for _ in range(10))
        for seed in range(20)
    }
    assert len(orders) > 1  # the order is shuffled, per rng


def test_shuffle_returns_cached_tuples() -> None:
    c = chooser(Grouping.SHUFFLE, [1, 2])
    a, b, a2 = c.choose(()), c.choose(()), c.choose(())
    assert a is a2 and a is not b and len(a) == 1


def test_local_or_shuffle_prefers_local_tasks() -> None:
    c = chooser(Grouping.LOCAL_OR_SHUFFLE, [1, 2, 3, 4], local={2, 4, 99})
    counts = Counter(c.choose(())[0] for _ in range(1000))
    assert counts == {2: 500, 4: 500}


def test_local_or_shuffle_falls_back_to_all() -> None:
    c = chooser(Grouping.LOCAL_OR_SHUFFLE, [1, 2, 3], local={7, 8})
    counts = Counter(c.choose(())[0] for _ in range(300))
    assert counts == {1: 100, 2: 100, 3: 100}


def test_a_load_aware_shuffle_goes_over_the_least_loaded_targets() -> None:
    c = chooser(Grouping.SHUFFLE, [1, 2, 3])
    c.refresh({1: 1.0, 2: 0.5})  # 3 is missing: load 0
    assert {c.choose(())[0] for _ in range(30)} == {3}
    c.refresh({1: 0.30, 2: 0.35, 3: 0.9})  # within LOAD_SLACK (0.05) of the least: both
    assert Counter(c.choose(())[0] for _ in range(100)) == {1: 50, 2: 50}
    c.refresh({1: 0.30, 2: 0.36, 3: 0.9})  # just beyond it
    assert {c.choose(())[0] for _ in range(30)} == {1}
    c.refresh({2: math.inf, 3: math.inf})  # throttled by their worker: never while 1 is not
    assert {c.choose(())[0] for _ in range(30)} == {1}
    c.refresh(dict.fromkeys([1, 2, 3], math.inf))  # every target equally busy: all of them
    assert Counter(c.choose(())[0] for _ in range(300)) == {1: 100, 2: 100, 3: 100}
    c.refresh({})
    assert Counter(c.choose(())[0] for _ in range(300)) == {1: 100, 2: 100, 3: 100}


def test_a_load_aware_shuffle_never_runs_out_of_targets() -> None:
    c = chooser(Grouping.SHUFFLE, [1, 2])
    c.refresh({1: math.nan, 2: math.nan})  # no load compares: all targets, not none
    assert Counter(c.choose(())[0] for _ in range(10)) == {1: 5, 2: 5}


def test_a_refresh_that_changes_nothing_keeps_the_exact_round_robin() -> None:
    c = chooser(Grouping.SHUFFLE, [1, 2, 3])
    chosen = []
    for _ in range(100):
        chosen += [c.choose(())[0] for _ in range(7)]  # 7: refreshes fall mid-round
        c.refresh({1: 0.01, 3: 0.02})
    assert sorted(chosen[:3]) == [1, 2, 3]
    assert all(chosen[i] == chosen[i + 3] for i in range(len(chosen) - 3)), "one order throughout"


def test_a_weighted_shuffle_gives_each_target_its_share() -> None:
    c = chooser(Grouping.SHUFFLE, [1, 2, 3])
    c.refresh({}, {1: 0.2, 2: 1.0})  # 3 is missing: weight 1
    assert Counter(c.choose(())[0] for _ in range(2200)) == {1: 200, 2: 1000, 3: 1000}
    c.refresh({2: 1.0}, {1: 0.2, 2: 1.0})  # the loaded target is out; the rest keep their shares
    assert Counter(c.choose(())[0] for _ in range(1200)) == {1: 200, 3: 1000}
    c.refresh({}, {1: 0.01, 2: 0.5, 3: 0.5})  # a share is never below one step
    assert Counter(c.choose(())[0] for _ in range(2100)) == {1: 100, 2: 1000, 3: 1000}
    c.refresh({}, {1: 0.3, 2: 0.3, 3: 0.3})  # equal weights: the exact round-robin again
    assert Counter(c.choose(())[0] for _ in range(300)) == {1: 100, 2: 100, 3: 100}
    assert sorted(c.choose(())[0] for _ in range(3)) == [1, 2, 3]


def test_the_same_weights_keep_the_cycle() -> None:
    c = chooser(Grouping.SHUFFLE, [1, 2])
    c.refresh({}, {1: 0.5, 2: 1.0})
    chosen = []
    for _ in range(50):
        chosen += [c.choose(())[0] for _ in range(7)]
        c.refresh({}, {1: 0.52, 2: 1.0})  # rounds to the same shares
    assert all(chosen[i] == chosen[i + 15] for i in range(len(chosen) - 15)), "one order throughout"


def test_a_load_aware_local_or_shuffle_stays_local() -> None:
    c = chooser(Grouping.LOCAL_OR_SHUFFLE, [1, 2, 3, 4], local={2, 4})
    c.refresh({2: 1.0})  # 1 and 3 have no load, but they are not local
    assert {c.choose(())[0] for _ in range(30)} == {4}


def test_all_and_global() -> None:
    assert tuple(chooser(Grouping.ALL, [3, 1, 2]).choose(("a", 1))) == (1, 2, 3)
    assert tuple(chooser(Grouping.GLOBAL, [3, 1, 2]).choose(("a", 1))) == (1,)
    c = chooser(Grouping.ALL)
    assert c.choose(()) is c.choose(())


def test_direct_chooser_refuses() -> None:
    with pytest.raises(ValueError, match="direct_task"):
        chooser(Grouping.DIRECT).choose(("a", 1))


def test_validate_direct_task() -> None:
    validate_direct_task(2, {1, 2, 3}, "count")
    validate_direct_task(2, [1, 2, 3])
    with pytest.raises(ValueError) as info:
        validate_direct_task(7, frozenset({3, 1}), "count", "s")
    assert str(info.value) == (
        "direct emit on stream 's' to task 7, which is not a task of component 'count' "
        "(its tasks: [1, 3])"
    )
    with pytest.raises(ValueError, match="task True"):
        validate_direct_task(True, {1}, "count")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="the direct subscribers"):
        validate_direct_task(5, {1})


def test_make_chooser_errors() -> None:
    with pytest.raises(ValueError, match="no target tasks"):
        chooser(Grouping.SHUFFLE, [])
    with pytest.raises(ValueError, match="no field 'x'"):
        chooser(Grouping.fields("x"))


def test_fields_single_str_is_crc32_of_utf8_over_sorted_tasks() -> None:
    tasks = [40, 10, 30, 20]
    c = chooser(Grouping.fields("word"), tasks)
    for word in WORDS:
        expected = sorted(tasks)[zlib.crc32(word.encode()) % 4]
        assert c.choose((word, 0)) == (expected,)


def test_fields_same_key_same_task_and_spread() -> None:
    c = chooser(Grouping.fields("word"), range(1, 9))
    first = {w: c.choose((w, 1)) for w in WORDS}
    assert all(c.choose((w, 2)) == first[w] for w in WORDS)  # other fields don't matter
    counts = Counter(task for (task,) in first.values())
    assert set(counts) == set(range(1, 9))
    assert min(counts.values()) > len(WORDS) / 8 / 2


def test_fields_independent_of_target_order_and_rng() -> None:
    a = chooser(Grouping.fields("word"), [1, 2, 3, 4], seed=1)
    b = chooser(Grouping.fields("word"), [4, 3, 2, 1], seed=2)
    assert all(a.choose((w, 0)) == b.choose((w, 0)) for w in WORDS)


def test_fields_on_second_field_and_on_several() -> None:
    one = chooser(Grouping.fields("n"), range(8))
    assert one.choose(("a", 5)) == one.choose(("b", 5))
    several = chooser(Grouping.fields("word", "n"), range(8))
    picks = {several.choose((w, n)) for w in WORDS[:50] for n in range(3)}
    assert len(picks) == 8
    assert several.choose(("a", 1)) == several.choose(("a", 1))
    reordered = chooser(Grouping.fields("n", "word"), range(8))
    key = ("a", 1)
    assert several.choose(key)[0] == fields_hash(["a", 1]) % 8
    assert reordered.choose(key)[0] == fields_hash([1, "a"]) % 8


@pytest.mark.parametrize(
    "value", [b"bytes", 7, -3, 2**80, 1.5, None, True, ("t", 1), ["l"], {"k": 1}, "\udcff"]
)
def test_fields_value_types_match_fields_hash(value) -> None:
    c = chooser(Grouping.fields("word"), range(16))
    assert c.choose((value, 0)) == (fields_hash([value]) % 16,)
    assert c.choose((value, 0)) == c.choose((value, 1))


class Region(enum.StrEnum):
    EU = "eu"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


class Blob(bytes):
    pass


@pytest.mark.parametrize("value", [Region.EU, Name("ann"), Level.HIGH, bytearray(b"raw"),
                                   Blob(b"blob")])
def test_a_subclass_goes_where_the_base_value_it_arrives_as_from_another_worker_goes(value) -> None:
    """Bug (a semantics audit): a StrEnum key emitted in this worker went to another
    task than the same key relayed from another worker, where msgpack made it a str."""
    arrived = BUILTIN.unpackb(BUILTIN.packb([value]))[0]
    assert type(arrived) in (str, bytes, int) and arrived == value
    assert all(c.choose((value, 0)) == c.choose((arrived, 0)) for c in
               (chooser(Grouping.fields("word"), range(n)) for n in (2, 3, 5, 7, 16)))
    assert fields_hash([value]) == fields_hash([arrived])
    assert fields_hash([value, 1]) == fields_hash([arrived, 1])  # several fields: msgpack
    assert fields_hash([True]) != fields_hash([1])  # a bool stays a bool across workers


def test_fields_hash_known_values() -> None:
    # pinned: a change here would re-route every fields-grouped key of running topologies
    assert fields_hash(["hello"]) == zlib.crc32(b"hello")
    assert fields_hash([b"hello"]) == zlib.crc32(b"hello")
    assert fields_hash([42]) == zlib.crc32(b"42")
    assert fields_hash(["a", 1]) == zlib.crc32(b"\x92\xa1a\x01")


def test_fields_unhashable_value() -> None:
    c = chooser(Grouping.fields("word", "n"), range(4))
    with pytest.raises(TypeError, match=r"cannot hash values of type \(object, int\)"):
        c.choose((object(), 1))
    assert c.choose(("a", 1)) == (fields_hash(["a", 1]) % 4,)  # the packer was reset


CHILD = """
import json, random, sys
from storm_zmq.topology.grouping import Grouping, make_chooser
words = json.loads(sys.argv[1])
one = make_chooser(Grouping.fields("word"), ["word", "n"], range(1, 13), (), random.Random())
two = make_chooser(Grouping.fields("word", "n"), ["word", "n"], range(1, 13), (), random.Random())
print(json.dumps([[one.choose((w, i))[0], two.choose((w, i))[0]] for i, w in enumerate(words)]))
"""


def test_fields_deterministic_across_processes() -> None:
    words = WORDS[:100] + ["é", "日本語"]
    results = []
    for seed in ("1", "987654"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(words)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        results.append(json.loads(out))
    one = chooser(Grouping.fields("word"), range(1, 13))
    two = chooser(Grouping.fields("word", "n"), range(1, 13))
    here = [[one.choose((w, i))[0], two.choose((w, i))[0]] for i, w in enumerate(words)]
    assert results[0] == results[1] == here


def test_fields_single_str_is_fast() -> None:
    c = chooser(Grouping.fields("word"), range(1, 9))
    values = [(w, 1) for w in WORDS[:100]]
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(100):
            for v in values:
                c.choose(v)
        best = min(best, (time.perf_counter() - start) / 10_000)
    assert best < 2e-6, f"{best * 1e9:.0f} ns per tuple"  # ~0.15 µs here; loose for CI


def test_fields_memo_gives_the_hashed_choice_and_stays_bounded(monkeypatch) -> None:
    from storm_zmq.topology import grouping

    monkeypatch.setattr(grouping, "_MEMOS", grouping._ChoiceMemos(per_memo=50, total=60))
    c = chooser(Grouping.fields("word"), [40, 10, 30, 20])
    long_word = "x" * (grouping.MEMO_KEY_CHARS + 1)
    for _ in range(2):  # first pass fills the memo, second reads it
        for word in [*WORDS, long_word, "\udcff"]:
            assert c.choose((word, 0)) == (fields_hash([word]) % 4 * 10 + 10,)
    assert len(c._memo) == 50  # full: later keys were hashed, not remembered
    assert long_word not in c._memo and "\udcff" not in c._memo
    # Found by a soak audit: a memo per chooser made the bound one per emitting
    # task, stream and subscriber. Choosers of the same targets share a memo, each
    # memo has its bound, and the memos of the process one more.
    same, other = (chooser(Grouping.fields("word"), tasks) for tasks in ([40, 10, 30, 20], [1, 2, 3]))
    for word in WORDS[::-1]:
        assert same.choose((word, 0)) == c.choose((word, 0))
        assert other.choose((word, 0)) == (fields_hash([word]) % 3 + 1,)
    assert same._memo is c._memo and len(c._memo) == 50 and len(other._memo) == 10
