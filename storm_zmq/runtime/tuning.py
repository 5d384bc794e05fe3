"""How a worker process runs Python's cyclic garbage collector.

The data path allocates a few small GC-tracked objects per tuple (Tuples, their
values, queue pairs), and a worker's queues can hold 10^5 of them alive. CPython's
automatic collector starts a pass every N allocations and each pass walks every
young object still alive: with full queues that was a third of a worker's time
(docs/benchmarks.md). So a worker freezes what exists after start-up (imports, the
topology, the components: never scanned again), turns automatic passes off, and
collects on a clock instead from its main thread: the young generations every
10 seconds and everything every 60 seconds. A pass costs what is alive, not what
died: with acking on and `topology.max.spout.pending` bounding the tuples in flight
(the word count) a young pass finds 3-20k objects and takes 2 ms; with acking off
and full queues (32,768 tuples per executor, three objects each) it finds 600-700k
and holds the interpreter for 0.44-0.53 s, once every 10 s. Once a second would cost
that every second. Reference cycles made by user code are still freed, at most that
late; everything else is freed by reference counting as always.
"""

from __future__ import annotations

import gc
import time

YOUNG_COLLECTION_INTERVAL = 10.0
FULL_COLLECTION_INTERVAL = 60.0


def tune_gc() -> None:
    """Call once after start-up, before the data starts moving."""
    gc.collect()
    gc.freeze()
    gc.disable()


class CollectionClock:
    """Runs the collections `tune_gc` turned off; `tick()` from one thread, often."""

    def __init__(self, clock: type[time.monotonic] | None = None) -> None:  # type: ignore[valid-type]
        self._clock = clock or time.monotonic
        now = self._clock()
        self._next_young = now + YOUNG_COLLECTION_INTERVAL
        self._next_full = now + FULL_COLLECTION_INTERVAL

    def tick(self) -> None:
        now = self._clock()
        if now >= self._next_full:
            gc.collect()
            self._next_full = now + FULL_COLLECTION_INTERVAL
            self._next_young = now + YOUNG_COLLECTION_INTERVAL
        elif now >= self._next_young:
            gc.collect(1)
            self._next_young = now + YOUNG_COLLECTION_INTERVAL
