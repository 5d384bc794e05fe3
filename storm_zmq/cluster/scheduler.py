"""Which supervisor slots a topology's workers run in: pure, no ZooKeeper.

Executors are assigned to worker *indexes* once (`runtime.assignment.assign`), and
worker indexes to slots here. Repairing a dead worker moves only that index to a
free slot, so every other worker keeps its executors and its connections (Storm's
even scheduler reassigns only what died, too).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Slot:
    """One worker port of one supervisor."""

    supervisor: str
    host: str
    port: int


class NotEnoughSlots(Exception):
    """Fewer free slots than the topology needs workers."""


def free_slots(all_slots: Iterable[Slot], used: Iterable[Slot]) -> list[Slot]:
    """The slots no worker uses, one per address: two supervisors of one host that
    list the same port (a configuration mistake their logs warn of) offer one slot,
    not two, since only one worker can bind it (a cluster audit: a worker placed on
    the second failed to bind every 3 s, for ever)."""
    taken = set(used)
    addresses = {(s.host, s.port) for s in taken}
    free: dict[tuple[str, int], Slot] = {}
    for slot in sorted(set(all_slots)):
        if slot not in taken and (slot.host, slot.port) not in addresses:
            free.setdefault((slot.host, slot.port), slot)
    return sorted(free.values())


def choose_slots(count: int, free: list[Slot]) -> list[Slot]:
    """`count` slots spread over supervisors as evenly as possible: round-robin over
    supervisors, each supervisor's ports in order."""
    by_supervisor: dict[str, list[Slot]] = {}
    for slot in sorted(free):
        by_supervisor.setdefault(slot.supervisor, []).append(slot)
    if sum(len(s) for s in by_supervisor.values()) < count:
        raise NotEnoughSlots(
            f"need {count} worker slots, {sum(len(s) for s in by_supervisor.values())} free"
        )
    chosen: list[Slot] = []
    while len(chosen) < count:
        for supervisor in sorted(by_supervisor):
            if by_supervisor[supervisor] and len(chosen) < count:
                chosen.append(by_supervisor[supervisor].pop(0))
    return chosen


def repair(current: list[Slot], alive: set[Slot], free: list[Slot]) -> list[Slot]:
    """Replace every slot of `current` that is not alive by a free slot, preferring
    supervisors that run fewest of this topology's workers. A dead slot stays when
    nothing is free (the topology runs degraded until a slot frees up)."""
    result = list(current)
    available = sorted(set(free) - set(current))
    load = Counter(s.supervisor for s in current if s in alive)
    for index, slot in enumerate(current):
        if slot in alive or not available:
            continue
        replacement = min(available, key=lambda s: (load[s.supervisor], s))
        available.remove(replacement)
        load[replacement.supervisor] += 1
        result[index] = replacement
    return result
