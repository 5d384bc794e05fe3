"""Ages judged by one clock: when the observer last saw a reported value change.

Nimbus decides whether a supervisor or a worker is alive from values those write
into ZooKeeper (a registration's "time", a heartbeat). Subtracting such a value
from nimbus's own clock compares two hosts' clocks, and a host whose clock is an
hour behind looks dead for an hour; one ahead looks alive for an hour after it died.
So, as Storm's nimbus does with its heartbeat cache, nimbus only asks whether the
reported value *changed*, and measures by its own clock how long ago it last saw it
change. The value is opaque: only equality matters, so a reported clock far ahead,
far behind, or going backwards is as good as a correct one.

A key seen for the first time counts as changed at that moment: an observer that
starts (a newly elected leader) gives every key one full timeout before judging it,
as Storm does after a leader change.

`ChangeClock` is pure: no clock reads (``now`` is passed in, from whatever clock
the caller measures with, as long as it is always the same one), no I/O, no threads.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ["ChangeClock"]

K = TypeVar("K", bound=Hashable)


class ChangeClock(Generic[K]):
    """Per key: the last reported value, and the observer's time when it last changed.

    Memory stays bounded by what the caller still watches: `retain` forgets every
    other key (a supervisor that left, a slot no longer assigned), so a key that
    comes back starts afresh.
    """

    def __init__(self) -> None:
        self._seen: dict[K, tuple[object, float]] = {}

    def observe(self, key: K, value: object, now: float) -> None:
        """Record `value` as `key`'s reported value at the observer's time `now`. A
        value different from the last one observed (any difference: a clock that
        went backwards is a change too), or a key not seen before, starts the age
        again at `now`; the same value leaves it running."""
        previous = self._seen.get(key)
        if previous is None or previous[0] != value:
            self._seen[key] = (value, now)

    def age(self, key: K, now: float) -> float:
        """Observer seconds since `key`'s value last changed. `KeyError` for a key
        never observed (or forgotten): observe it first."""
        return now - self._seen[key][1]

    def is_fresh(self, key: K, timeout: float, now: float) -> bool:
        """Whether `key`'s value changed within the last `timeout` seconds
        (inclusive) of the observer's time."""
        return self.age(key, now) <= timeout

    def retain(self, keys: Iterable[K]) -> None:
        """Forget every key but `keys` (those observed this round, typically)."""
        keep = set(keys)
        self._seen = {key: seen for key, seen in self._seen.items() if key in keep}

    def clear(self) -> None:
        """Forget everything: the observer has not been watching meanwhile."""
        self._seen.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._seen

    def __len__(self) -> int:
        return len(self._seen)
