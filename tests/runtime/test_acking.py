"""Tests for the pure acking bookkeeping (storm_zmq.runtime.acking).

The centrepiece is a simulation: bolts and spouts built from the helper functions
produce the exact acker messages a real topology would, and hypothesis delivers
them to ``AckerState`` in every order it can think of.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_zmq.runtime.acking import (
    AckerState,
    Outcome,
    PendingTuple,
    RotatingMap,
    SpoutEmitIds,
    SpoutPending,
    ack_messages,
    acker_index,
    anchor_one,
    anchor_roots,
    fail_messages,
    fold_ack,
    new_edge_id,
    new_root_id,
    root_id_for,
    spout_emit_ids,
)

SPOUT_TASK = 7

# --------------------------------------------------------------- simulation kit


@dataclass
class Tup:
    """A minimal stand-in for the runtime's Tuple: just what acking needs."""

    roots: dict[int, int]
    ack_val: int = 0
    done: bool = False


@dataclass
class Sim:
    """Builds tuple trees with the real helpers and records the acker messages."""

    rng: random.Random
    messages: list[tuple] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)

    def spout_emit(self, num_targets: int, task: int = SPOUT_TASK) -> list[Tup]:
        ids = spout_emit_ids(self.rng, num_targets)
        self.roots.append(ids.root_id)
        self.messages.append(("init", ids.root_id, ids.init_xor, task))
        return [Tup({ids.root_id: edge}) for edge in ids.edge_ids]

    def emit(self, anchors: list[Tup], num_targets: int) -> list[Tup]:
        return [Tup(anchor_roots(anchors, self.rng)) for _ in range(num_targets)]

    def ack(self, tup: Tup) -> None:
        assert not tup.done
        tup.done = True
        for root_id, value in ack_messages(tup.roots, tup.ack_val):
            self.messages.append(("ack", root_id, value))

    def fail(self, tup: Tup) -> None:
        assert not tup.done
        tup.done = True
        for root_id in fail_messages(tup.roots):
            self.messages.append(("fail", root_id))


def deliver(acker: AckerState, message: tuple) -> Outcome | None:
    kind = message[0]
    if kind == "init":
        return acker.init(message[1], message[2], message[3])
    if kind == "ack":
        return acker.ack(message[1], message[2])
    if kind == "fail":
        return acker.fail(message[1])
    raise AssertionError(message)


def run(acker: AckerState, messages: list[tuple]) -> list[tuple[int, Outcome]]:
    """Deliver in order; return (index of the message that produced it, outcome)."""
    outcomes = []
    for index, message in enumerate(messages):
        outcome = deliver(acker, message)
        if outcome is not None:
            outcomes.append((index, outcome))
    return outcomes


def small_tree(seed: int) -> Sim:
    """Spout -> 2 bolts; bolt 1 emits 3 tuples anchored to its input; all ack."""
    sim = Sim(random.Random(seed))
    b1_in, b2_in = sim.spout_emit(2)
    children = [sim.emit([b1_in], 1)[0] for _ in range(3)]
    sim.ack(b1_in)
    sim.ack(b2_in)
    for child in children:
        sim.ack(child)
    return sim


# ----------------------------------------------------------------------- ids


def test_new_edge_id_is_64_bit_and_never_zero() -> None:
    class ZeroFirst(random.Random):
        calls = 0

        def getrandbits(self, k: int) -> int:
            self.calls += 1
            return 0 if self.calls == 1 else super().getrandbits(k)

    rng = ZeroFirst(1)
    value = new_edge_id(rng)
    assert value != 0 and rng.calls == 2
    ids = [new_edge_id(random.Random(s)) for s in range(200)] + [new_root_id(random.Random(3))]
    assert all(0 < i < 2**63 for i in ids)  # machine integers on PyPy (acking.py)
    assert len(set(ids[:200])) == 200


def test_new_edge_id_is_deterministic_for_a_seed() -> None:
    a, b = random.Random(42), random.Random(42)
    assert [new_edge_id(a) for _ in range(5)] == [new_edge_id(b) for _ in range(5)]


def test_spout_emit_ids() -> None:
    ids = spout_emit_ids(random.Random(0), 3)
    assert isinstance(ids, SpoutEmitIds)
    assert len(ids.edge_ids) == 3 and len(set(ids.edge_ids)) == 3
    assert ids.init_xor == ids.edge_ids[0] ^ ids.edge_ids[1] ^ ids.edge_ids[2]
    none = spout_emit_ids(random.Random(0), 0)
    assert none.edge_ids == () and none.init_xor == 0
    with pytest.raises(ValueError):
        spout_emit_ids(random.Random(0), -1)


def test_acker_index() -> None:
    assert acker_index(10, 3) == 1
    assert acker_index(2**64 - 1, 1) == 0
    with pytest.raises(ValueError):
        acker_index(5, 0)


@given(st.integers(min_value=1, max_value=64), st.data())
def test_root_id_for_draws_a_root_that_acker_owns(num_ackers: int, data: st.DataObject) -> None:
    position = data.draw(st.integers(min_value=0, max_value=num_ackers - 1))
    rng = random.Random(data.draw(st.integers()))
    for _ in range(20):
        root = root_id_for(rng, position, num_ackers)
        assert 0 < root < 2**63 and acker_index(root, num_ackers) == position


def test_root_id_for_stays_random_above_the_ackers_residue() -> None:
    rng = random.Random(3)
    roots = [root_id_for(rng, 1, 2) for _ in range(2000)]
    assert len(set(roots)) == 2000
    high_bits = [root >> 31 for root in roots]  # about uniform in 63 bits: half above the middle
    assert 900 < sum(1 for h in high_bits if h >= 2**31) < 1100
    assert spout_emit_ids(rng, 2, root_id=roots[0]).root_id == roots[0]


# ------------------------------------------------------------ bolt-side helpers


def test_anchor_roots_single_anchor() -> None:
    rng = random.Random(1)
    anchor = Tup({100: 0xAB})
    roots = anchor_roots([anchor], rng)
    (edge,) = roots.values()
    assert list(roots) == [100] and edge != 0
    assert anchor.ack_val == edge


def test_anchor_roots_draws_one_edge_per_anchor_even_for_a_shared_root() -> None:
    # Storm's MessageId semantics: each anchor gets its own edge id, XORed into the
    # new tuple's entry for every root of that anchor.
    rng = random.Random(2)
    a1 = Tup({1: 11, 2: 22})
    a2 = Tup({1: 33})
    roots = anchor_roots([a1, a2], rng)
    e1, e2 = a1.ack_val, a2.ack_val
    assert e1 and e2 and e1 != e2
    assert roots == {1: e1 ^ e2, 2: e1}


def test_anchor_roots_skips_unanchored_inputs_and_unanchored_emit() -> None:
    rng = random.Random(3)
    unanchored = Tup({})
    assert anchor_roots([unanchored], rng) == {}
    assert unanchored.ack_val == 0
    assert anchor_roots([], rng) == {}


def test_anchor_roots_accumulates_ack_val_across_emits() -> None:
    rng = random.Random(4)
    anchor = Tup({9: 5})
    first = anchor_roots([anchor], rng)[9]
    second = anchor_roots([anchor], rng)[9]
    assert anchor.ack_val == first ^ second


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(1, 2**64 - 1), st.integers(0, 2**64 - 1), min_size=1, max_size=4),
       st.integers(0, 2**64 - 1), st.integers(0, 2**32))
def test_anchor_one_is_anchor_roots_of_one_anchor(roots: dict[int, int], ack_val: int, seed: int) -> None:
    by_one, by_roots = Tup(dict(roots)), Tup(dict(roots))
    by_one.ack_val = by_roots.ack_val = ack_val
    assert anchor_one(by_one, random.Random(seed)) == anchor_roots([by_roots], random.Random(seed))
    assert by_one.ack_val == by_roots.ack_val != ack_val


def test_ack_and_fail_messages() -> None:
    assert ack_messages({1: 0b1100, 2: 0b0011}, 0b1010) == [(1, 0b0110), (2, 0b1001)]
    assert ack_messages({}, 5) == []
    assert fail_messages({1: 3, 2: 4}) == [1, 2]
    assert fail_messages({}) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.dictionaries(st.integers(1, 6), st.integers(0, 2**63), max_size=3),
                          st.one_of(st.just(0), st.integers(0, 2**63))), max_size=8))
def test_fold_ack_is_the_xor_of_the_ack_messages(acks: list[tuple[dict[int, int], int]]) -> None:
    folded: dict[int, int] = {}
    expected: dict[int, int] = {}
    for roots, ack_val in acks:
        fold_ack(folded, roots, ack_val)
        for root_id, value in ack_messages(roots, ack_val):
            expected[root_id] = expected.get(root_id, 0) ^ value
    assert folded == expected  # one message per root, the acker ends the same


# ------------------------------------------------------------------ AckerState


def test_small_tree_in_emit_order_acks_once_on_last_message() -> None:
    sim = small_tree(0)
    acker = AckerState(30)
    outcomes = run(acker, sim.messages)
    assert outcomes == [(len(sim.messages) - 1, Outcome("ack", sim.roots[0], SPOUT_TASK))]
    assert (acker.pending, acker.acked, acker.failed, acker.expired) == (0, 1, 0, 0)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32), data=st.data())
def test_small_tree_any_delivery_order(seed: int, data: st.DataObject) -> None:
    sim = small_tree(seed)
    order = data.draw(st.permutations(sim.messages))
    acker = AckerState(30)
    outcomes = run(acker, order)
    # Exactly one outcome, an ack for the right spout task, and only when the very
    # last message arrived (never on a transient zero before the init).
    assert outcomes == [(len(order) - 1, Outcome("ack", sim.roots[0], SPOUT_TASK))]
    assert acker.pending == 0


@st.composite
def random_forest(draw: st.DrawFn) -> tuple[Sim, dict[int, int], set[int]]:
    """Random trees over 1-3 roots with multi-anchoring (also across roots).

    Returns the sim, the spout task of each root, and the roots in which some
    tuple was failed rather than acked.
    """
    sim = Sim(random.Random(draw(st.integers(0, 2**32))))
    live: list[Tup] = []
    task_of: dict[int, int] = {}
    for _ in range(draw(st.integers(1, 3))):
        task = draw(st.integers(0, 50))
        live += sim.spout_emit(draw(st.integers(1, 3)), task)
        task_of[sim.roots[-1]] = task
    failed_roots: set[int] = set()
    made = len(live)
    while live:
        tup = live.pop(draw(st.integers(0, len(live) - 1)))
        if made < 25:
            extras = draw(st.lists(st.sampled_from(live), max_size=2, unique_by=id)) if live else []
            for _ in range(draw(st.integers(0, 3))):
                children = sim.emit([tup, *extras], draw(st.integers(1, 2)))
                made += len(children)
                live += children
        if draw(st.integers(0, 9)) == 0:
            failed_roots.update(tup.roots)
            sim.fail(tup)
        else:
            sim.ack(tup)
    return sim, task_of, failed_roots


@settings(max_examples=300, deadline=None)
@given(forest=random_forest(), data=st.data())
def test_random_forests_any_delivery_order(forest, data: st.DataObject) -> None:
    sim, task_of, failed_roots = forest
    order = data.draw(st.permutations(sim.messages))
    acker = AckerState(30)
    outcomes = run(acker, order)

    by_root: dict[int, list[tuple[int, Outcome]]] = {}
    for index, outcome in outcomes:
        by_root.setdefault(outcome.root_id, []).append((index, outcome))
    assert set(by_root) == set(task_of)
    for root_id, settled in by_root.items():
        assert len(settled) == 1, "a tree must settle exactly once"
        index, outcome = settled[0]
        assert outcome.spout_task == task_of[root_id]
        mine = [i for i, m in enumerate(order) if m[1] == root_id]
        init_at = next(i for i in mine if order[i][0] == "init")
        if root_id in failed_roots:
            first_fail = min(i for i in mine if order[i][0] == "fail")
            assert outcome.kind == "fail"
            assert index == max(init_at, first_fail)
        else:
            assert outcome.kind == "ack"
            assert index == max(mine), "acked before every message of the tree arrived"
    assert acker.acked == len(task_of) - len(failed_roots)
    assert acker.failed == len(failed_roots)
    # Whatever arrived after a failed tree settled is an orphan that just times out.
    for _ in range(3):
        acker.rotate()
    assert acker.pending == 0


def test_ack_before_init_transient_zero_waits_for_init() -> None:
    acker = AckerState(30)
    # Two acks cancelling out (as random ids could) make the value 0 before the
    # init; without the spout task this must not settle anything.
    assert acker.ack(1, 0x55) is None
    assert acker.ack(1, 0x55) is None
    assert acker.pending == 1
    assert acker.ack(1, 0x0F) is None
    assert acker.init(1, 0x0F, 3) == Outcome("ack", 1, 3)
    assert acker.pending == 0


def test_ack_before_init_completes_on_init() -> None:
    sim = small_tree(5)
    init, *acks = sim.messages
    acker = AckerState(30)
    assert run(acker, acks) == []
    assert acker.init(*init[1:]) == Outcome("ack", sim.roots[0], SPOUT_TASK)


def test_fail_after_init() -> None:
    acker = AckerState(30)
    assert acker.init(1, 0xF0, 4) is None
    assert acker.ack(1, 0x10) is None
    assert acker.fail(1) == Outcome("fail", 1, 4)
    assert (acker.pending, acker.failed) == (0, 1)


def test_fail_before_init_is_reported_when_init_arrives() -> None:
    acker = AckerState(30)
    assert acker.fail(1) is None
    assert acker.ack(1, 0x10) is None
    assert acker.pending == 1
    assert acker.init(1, 0xF0, 4) == Outcome("fail", 1, 4)
    assert (acker.pending, acker.acked, acker.failed) == (0, 0, 1)


def test_zero_value_wins_over_failed_flag_like_storm() -> None:
    # Storm checks val == 0 before the failed flag; replicate the order.
    acker = AckerState(30)
    assert acker.fail(1) is None
    assert acker.ack(1, 0x33) is None
    assert acker.init(1, 0x33, 2) == Outcome("ack", 1, 2)


def test_duplicate_init_after_completion_does_not_resurrect() -> None:
    acker = AckerState(30)
    assert acker.init(1, 0xAA, 2) is None
    assert acker.ack(1, 0xAA) == Outcome("ack", 1, 2)
    # The duplicate creates a fresh entry that can never reach 0 ...
    assert acker.init(1, 0xAA, 2) is None
    assert acker.ack(1, 0xBB) is None
    assert acker.pending == 1
    # ... and simply times out, with no outcome at all.
    assert [acker.rotate() for _ in range(3)] == [0, 0, 1]
    assert (acker.pending, acker.acked, acker.failed, acker.expired) == (0, 1, 0, 1)


def test_late_messages_after_completion_become_orphans_that_expire() -> None:
    acker = AckerState(30)
    acker.init(1, 0xAA, 2)
    assert acker.ack(1, 0xAA) is not None
    assert acker.ack(1, 0xAA) is None  # late duplicate ack: no spout task, no outcome
    assert acker.fail(1) is None  # late fail: the same
    assert acker.pending == 1
    assert sum(acker.rotate() for _ in range(3)) == 1
    assert acker.pending == 0


def test_timeout_drops_tree_after_two_to_three_rotations() -> None:
    acker = AckerState(10)
    assert acker.rotation_interval_secs == 10
    assert acker.expiry_window_secs == (20, 30)
    acker.init(1, 0xF0, 1)
    acker.ack(1, 0x10)  # never completes
    assert acker.rotate() == 0
    assert acker.rotate() == 0
    assert 1 in acker
    assert acker.rotate() == 1
    assert 1 not in acker
    assert (acker.pending, acker.expired, acker.acked, acker.failed) == (0, 1, 0, 0)
    # The rest of the tree arriving late: new orphan entry, no outcome.
    assert acker.ack(1, 0xE0) is None
    assert acker.pending == 1


def test_ack_does_not_refresh_expiry_but_fail_and_reset_do() -> None:
    acker = AckerState(10)
    acker.init(1, 0xF0, 1)
    acker.init(2, 0xF0, 1)
    acker.rotate()
    acker.rotate()
    acker.ack(1, 0x10)  # Storm: acks do not restart the timeout
    assert acker.reset_timeout(2) == Outcome("reset_timeout", 2, 1)
    assert acker.rotate() == 1
    assert 1 not in acker and 2 in acker


def test_reset_timeout_of_unknown_root_or_before_init() -> None:
    acker = AckerState(10)
    assert acker.reset_timeout(1) is None
    assert acker.pending == 0
    acker.ack(1, 5)
    assert acker.reset_timeout(1) is None  # spout task not known yet
    assert acker.pending == 1


def test_acker_buckets_and_conf() -> None:
    acker = AckerState(10, buckets=5)
    assert acker.rotation_interval_secs == 5
    assert acker.expiry_window_secs == (20, 25)
    assert AckerState.from_conf({"topology.message.timeout.secs": 7}).rotation_interval_secs == 7
    assert AckerState.from_conf({}).message_timeout_secs == 30
    with pytest.raises(ValueError):
        AckerState(0)
    with pytest.raises(ValueError):
        AckerState(10, buckets=1)


def test_many_roots_interleaved_are_independent() -> None:
    sims = [small_tree(seed) for seed in range(20)]
    messages = [m for sim in sims for m in sim.messages]
    random.Random(9).shuffle(messages)
    acker = AckerState(30)
    outcomes = run(acker, messages)
    assert sorted(o.root_id for _, o in outcomes) == sorted(s.roots[0] for s in sims)
    assert all(o.kind == "ack" for _, o in outcomes)
    assert acker.acked == 20 and acker.pending == 0


# ----------------------------------------------------------------- RotatingMap


def test_rotating_map_basics() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    assert m.buckets == 3 and len(m) == 0
    assert m.rotation_interval_secs is None and m.expiry_window_secs is None
    m.put("a", 1)
    m.put("b", 2)
    assert len(m) == 2 and m.get("a") == 1 and m.get("zz") is None and m.get("zz", 5) == 5
    assert m.contains("a") and "b" in m and "zz" not in m
    assert m.remove("a") == 1 and m.remove("a") is None
    assert len(m) == 1
    assert "RotatingMap" in repr(m)


def test_rotating_map_rotate_returns_expired_after_n_rotations() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    m.put("a", 1)
    assert m.rotate() == {}
    m.put("b", 2)
    assert m.rotate() == {}
    assert m.rotate() == {"a": 1}
    assert m.rotate() == {"b": 2}
    assert len(m) == 0


def test_rotating_map_put_refreshes_and_get_does_not() -> None:
    m: RotatingMap[str, int] = RotatingMap(2)
    m.put("a", 1)
    m.put("b", 2)
    m.rotate()
    m.put("a", 10)  # moves to the newest bucket, removed from the older one
    assert m.get("b") == 2  # no refresh
    assert len(m) == 2
    assert m.rotate() == {"b": 2}
    assert m.rotate() == {"a": 10}


def test_rotating_map_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        RotatingMap(1)
    with pytest.raises(ValueError):
        RotatingMap(3, rotation_interval_secs=0)
    with pytest.raises(ValueError):
        RotatingMap.for_timeout(0)
    with pytest.raises(ValueError):
        RotatingMap.for_timeout(10, buckets=1)


def test_rotating_map_for_timeout() -> None:
    m: RotatingMap[int, int] = RotatingMap.for_timeout(30, buckets=4)
    assert m.buckets == 4
    assert m.rotation_interval_secs == 10
    assert m.expiry_window_secs == (30, 40)


@settings(max_examples=300, deadline=None)
@given(
    timeout=st.integers(1, 600),
    buckets=st.integers(2, 10),
    phase=st.fractions(min_value=0, max_value=1).filter(lambda f: f < 1),
)
def test_rotating_map_expiry_window(timeout: int, buckets: int, phase: Fraction) -> None:
    """Rotating every timeout/(n-1), an entry expires in (timeout, timeout*n/(n-1)]."""
    m: RotatingMap[str, int] = RotatingMap.for_timeout(timeout, buckets)
    interval = Fraction(timeout, buckets - 1)
    inserted_at = phase * interval  # somewhere between rotation 0 and rotation 1
    m.put("x", 1)
    k = 0
    while True:
        k += 1
        expired = m.rotate()  # rotation at time k * interval
        if expired:
            break
    age = k * interval - inserted_at
    assert k == buckets
    assert Fraction(timeout) < age <= Fraction(timeout * buckets, buckets - 1)


# ----------------------------------------------------------------- SpoutPending


def test_spout_pending_ack_fail_and_latency() -> None:
    sp = SpoutPending(30)
    entry = sp.add(1, "m1", "default", start_time_ns=1_000_000_000, values=("x",), task_id=4)
    sp.add(2, "m2", "s2", start_time_ns=5)
    assert len(sp) == 2 and 1 in sp and sp.get(1) == entry
    acked = sp.ack(1)
    assert acked == PendingTuple(1, "m1", "default", 1_000_000_000, ("x",), 4)
    assert acked.complete_latency_ms(1_250_000_000) == 250.0
    failed = sp.fail(2)
    assert failed is not None and failed.msg_id == "m2" and failed.values is None
    assert len(sp) == 0
    assert (sp.acked, sp.failed, sp.timed_out) == (1, 1, 0)


def test_spout_pending_late_and_unknown_ids_return_none() -> None:
    sp = SpoutPending(30)
    sp.add(1, "m1", "default", 0)
    assert sp.ack(1) is not None
    assert sp.ack(1) is None  # duplicate ack
    assert sp.fail(1) is None  # late fail
    assert sp.ack(999) is None and sp.fail(999) is None
    assert sp.reset_timeout(999) is False
    assert (sp.acked, sp.failed) == (1, 0)


def test_spout_pending_timeout_then_late_ack() -> None:
    sp = SpoutPending(30)
    assert sp.rotation_interval_secs == 30
    assert sp.expiry_window_secs == (30, 60)
    sp.add(1, "m1", "default", 0)
    assert sp.rotate() == []
    sp.add(2, "m2", "default", 0)
    expired = sp.rotate()
    assert [e.msg_id for e in expired] == ["m1"]
    assert sp.ack(1) is None  # the acker's late ack after the spout timed it out
    assert sp.timed_out == 1 and len(sp) == 1


def test_spout_pending_reset_timeout_restarts_expiry() -> None:
    sp = SpoutPending(30)
    sp.add(1, "m1", "default", 0)
    sp.rotate()
    assert sp.reset_timeout(1) is True
    assert sp.rotate() == []
    assert [e.root_id for e in sp.rotate()] == [1]


def test_spout_pending_max_pending() -> None:
    sp = SpoutPending(30)
    max_pending = 3
    emitted = 0
    # The executor's loop: call next_tuple only while below the bound.
    while sp.can_emit(max_pending):
        emitted += 1
        sp.add(emitted, f"m{emitted}", "default", 0)
    assert emitted == 3 and len(sp) == 3
    assert sp.ack(2) is not None
    assert sp.can_emit(max_pending)
    sp.add(4, "m4", "default", 0)
    assert not sp.can_emit(max_pending)
    assert sp.can_emit(None) and sp.can_emit(0)  # unbounded
    assert len(sp.rotate()) == 0
    assert len(sp.rotate()) == 3  # all timed out ...
    assert sp.can_emit(max_pending)  # ... which frees the budget


def test_spout_pending_from_conf_and_buckets() -> None:
    sp = SpoutPending.from_conf({"topology.message.timeout.secs": 10}, buckets=11)
    assert sp.rotation_interval_secs == 1
    assert sp.expiry_window_secs == (10, 11)


# ------------------------------------------------------------------ end to end


def test_end_to_end_spout_acker_and_replay_with_new_root() -> None:
    """A spout's reliable emit, a lost tuple, a timeout and a replay under a fresh root."""
    rng = random.Random(11)
    sp = SpoutPending(10)
    acker = AckerState(10)
    sim = Sim(rng)

    b_in = sim.spout_emit(1)[0]
    first_root = sim.roots[0]
    sp.add(first_root, "msg-1", "default", 0)
    deliver(acker, sim.messages[0])  # init; the bolt's tuple is then lost (worker killed)
    assert sp.rotate() == []
    (timed_out,) = sp.rotate()
    assert timed_out.msg_id == "msg-1"

    # Replay: same msg id, new root id.
    sim.messages.clear()
    b_in = sim.spout_emit(1)[0]
    second_root = sim.roots[1]
    assert second_root != first_root
    sp.add(second_root, "msg-1", "default", 0)
    sim.ack(b_in)
    outcomes = run(acker, sim.messages)
    assert [o for _, o in outcomes] == [Outcome("ack", second_root, SPOUT_TASK)]
    entry = sp.ack(second_root)
    assert entry is not None and entry.msg_id == "msg-1"
    # The acker forgets the abandoned first tree within its longer window.
    assert sum(acker.rotate() for _ in range(3)) == 1
    assert acker.pending == 0 and len(sp) == 0
