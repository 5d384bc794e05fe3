#!/usr/bin/env python
"""The word count of topologies/wordcount.py on Bytewax, as a baseline.

Same input and the same work per word as the storm-zmq word count:

* input: the sentences of ``src/spouts/sentences.py`` (imported, not copied),
  cycled, ``--sentences`` of them, from a `TestingSource` (``--batch-size``
  sentences per batch: Bytewax's counterpart of ``topology.producer.batch.size``);
* split: ``flat_map`` of ``sentence.split()`` with ``word.strip(",.").lower()``,
  exactly `SplitSentenceBolt`;
* count: ``key_on`` the word, then ``stateful_map`` keeping the word's running
  count and producing ``(word, count)`` for every word, like `WordCountBolt`
  (which emits ``[word, count]`` for every word it counts);
* sink: counts the ``(word, count)`` items and drops them (the storm-zmq count
  bolt's output has no subscriber either).

One process, one Bytewax worker (``bytewax.testing.run_main``: the dataflow runs on
the calling thread), so it is compared with one storm-zmq worker process.

Measured like the storm-zmq side, in steady state: the sink notes the clock when it
has written ``--warmup`` of the expected words (start-up excluded) and when it has
written the last one; words/s is the words between the two over the time between
them. The whole run's wall time, CPU time and peak RSS are reported as well.
Prints one JSON object on stdout.

    python scripts/bytewax_wordcount.py --sentences 300000
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.outputs import DynamicSink, StatelessSinkPartition
from bytewax.testing import TestingSource, run_main

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spouts.sentences import TEXT  # noqa: E402  (the word count's own sentences)

SENTENCES = [line.strip() for line in TEXT.splitlines()]


def words_in(count: int) -> int:
    """Words in the first `count` sentences of the cycled text."""
    per_cycle = sum(len(s.split()) for s in SENTENCES)
    full, rest = divmod(count, len(SENTENCES))
    return full * per_cycle + sum(len(s.split()) for s in SENTENCES[:rest])


class _Clock:
    """Shared by the sink partition and the caller: counts and two timestamps."""

    def __init__(self, mark_at: int) -> None:
        self.mark_at = mark_at
        self.written = 0
        self.mark_time: float | None = None
        self.mark_written = 0
        self.last_time: float | None = None
        self.first_time: float | None = None


class _CountingPartition(StatelessSinkPartition[Any]):
    def __init__(self, clock: _Clock) -> None:
        self.clock = clock

    def write_batch(self, items: list[Any]) -> None:
        clock = self.clock
        now = time.perf_counter()
        if clock.first_time is None:
            clock.first_time = now
        clock.written += len(items)
        if clock.mark_time is None and clock.written >= clock.mark_at:
            clock.mark_time, clock.mark_written = now, clock.written
        clock.last_time = now


class CountingSink(DynamicSink[Any]):
    def __init__(self, clock: _Clock) -> None:
        self.clock = clock

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _CountingPartition:
        return _CountingPartition(self.clock)


def split(sentence: str) -> list[str]:
    return [word.strip(",.").lower() for word in sentence.split()]


def count(total: int | None, word: str) -> tuple[int, tuple[str, int]]:
    total = (total or 0) + 1
    return total, (word, total)


def build_flow(sentences: int, batch_size: int, clock: _Clock) -> Dataflow:
    flow = Dataflow("wordcount")
    lines = op.input("sentences", flow, TestingSource(
        itertools.islice(itertools.cycle(SENTENCES), sentences), batch_size=batch_size))
    words = op.flat_map("split", lines, split)
    keyed = op.key_on("key", words, lambda word: word)
    counts = op.stateful_map("count", keyed, count)
    op.output("sink", counts, CountingSink(clock))
    return flow


def run(sentences: int, batch_size: int, warmup: float) -> dict[str, Any]:
    expected = words_in(sentences)
    clock = _Clock(max(1, int(expected * warmup)))
    flow = build_flow(sentences, batch_size, clock)
    cpu0 = time.process_time()
    start = time.perf_counter()
    run_main(flow)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    if clock.written != expected:
        raise SystemExit(f"bytewax word count: expected {expected} counted words, got {clock.written}")
    assert clock.mark_time is not None and clock.last_time is not None
    span = clock.last_time - clock.mark_time
    steady_words = clock.written - clock.mark_written
    return {
        "bytewax": version("bytewax"),
        "sentences": sentences,
        "words": expected,
        "batch_size": batch_size,
        "warmup_fraction": warmup,
        "words_per_s": steady_words / span if span > 0 else None,
        "steady_seconds": span,
        "steady_words": steady_words,
        "wall_seconds": wall,
        "words_per_s_wall": expected / wall,
        "cpu_seconds": cpu,
        "cpu_percent": 100 * cpu / wall,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=300_000,
                        help="sentences to count (default 300000)")
    parser.add_argument("--batch-size", type=int, default=100,
                        help="sentences per input batch (default 100, the storm-zmq spout's "
                             "topology.producer.batch.size)")
    parser.add_argument("--warmup", type=float, default=0.2,
                        help="fraction of the words left out of the steady-state rate (default 0.2)")
    args = parser.parse_args(argv)
    if args.sentences < 1 or args.batch_size < 1 or not 0 <= args.warmup < 1:
        parser.error("--sentences and --batch-size must be positive, 0 <= --warmup < 1")
    print(json.dumps(run(args.sentences, args.batch_size, args.warmup)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
