"""Slot scheduling: even spread, and repair that moves only what died."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storm_zmq.cluster.scheduler import NotEnoughSlots, Slot, choose_slots, free_slots, repair


def slots(supervisor: str, *ports: int) -> list[Slot]:
    return [Slot(supervisor, f"host-{supervisor}", p) for p in ports]


def test_workers_spread_round_robin_over_supervisors() -> None:
    free = slots("a", 6700, 6701, 6702) + slots("b", 6700, 6701)
    assert choose_slots(4, free) == [
        Slot("a", "host-a", 6700), Slot("b", "host-b", 6700),
        Slot("a", "host-a", 6701), Slot("b", "host-b", 6701),
    ]


def test_not_enough_slots_says_how_many() -> None:
    with pytest.raises(NotEnoughSlots, match="need 3 worker slots, 2 free$"):
        choose_slots(3, slots("a", 1, 2))


def test_free_slots_excludes_used() -> None:
    everything = slots("a", 1, 2) + slots("b", 1)
    assert free_slots(everything, [Slot("a", "host-a", 2)]) == [
        Slot("a", "host-a", 1), Slot("b", "host-b", 1)]


def test_two_supervisors_listing_one_port_of_one_host_offer_one_slot() -> None:
    # A cluster audit: both were scheduled onto, and the second worker could never bind
    first, second = Slot("s1", "h", 6700), Slot("s2", "h", 6700)
    other = Slot("s2", "h", 6701)
    assert free_slots([first, second, other], []) == [first, other]
    assert free_slots([first, second, other], [first]) == [other]  # used by s1's worker
    assert free_slots([first, second, other], [second]) == [other]


def test_repair_moves_only_dead_workers_to_the_least_loaded_supervisor() -> None:
    a1, a2 = slots("a", 1, 2)
    b1, b2 = slots("b", 1, 2)
    c1, = slots("c", 1)
    current = [a1, b1, a2]
    alive = {a1, a2, b2, c1}  # the worker in b1 died; a runs two workers, b and c none
    assert repair(current, alive, free=[b2, c1]) == [a1, b2, a2]
    assert repair(current, alive - {b2}, free=[c1]) == [a1, c1, a2]


def test_repair_keeps_a_dead_slot_when_nothing_is_free() -> None:
    a1, b1 = slots("a", 1) + slots("b", 1)
    assert repair([a1, b1], alive={a1}, free=[]) == [a1, b1]


@given(
    st.integers(min_value=1, max_value=6),
    st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=4),
    st.data(),
)
def test_repair_invariants(workers: int, ports_per_supervisor: list[int], data) -> None:
    everything = [s for i, n in enumerate(ports_per_supervisor)
                  for s in slots(f"s{i}", *range(6700, 6700 + n))]
    if len(everything) < workers:
        return
    current = choose_slots(workers, everything)
    dead = set(data.draw(st.lists(st.sampled_from(everything), max_size=len(everything))))
    alive = set(everything) - dead
    repaired = repair(current, alive, free_slots([s for s in everything if s in alive], current))
    assert len(repaired) == workers
    assert len(set(repaired)) == workers, "two workers in one slot"
    for before, after in zip(current, repaired, strict=True):
        if before in alive:
            assert after == before, "a live worker was moved"
