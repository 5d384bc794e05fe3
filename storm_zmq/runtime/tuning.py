"""Process-wide settings a worker applies once at start.

The data path allocates one small GC-tracked object per message (a TaskMessage, a
Tuple). With CPython's default generation-0 threshold of 700 that is several
thousand collector passes per second, each re-examining every batch still alive;
a threshold of 10,000 made decoding 22% cheaper (docs/benchmarks.md). Freezing what
exists after start-up (imports, the topology, components) keeps it out of every
later full collection. Reference cycles are still collected, only less often.
"""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 10_000
GEN1_THRESHOLD = 20
GEN2_THRESHOLD = 20


def tune_gc() -> None:
    """Apply the worker's garbage-collector settings; call once after start-up."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, GEN1_THRESHOLD, GEN2_THRESHOLD)
