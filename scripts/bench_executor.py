#!/usr/bin/env python
"""Executor hot-path benchmark: what the runtime costs per word, without threads.

The word count's split and count bolts (``src/bolts/wordcount.py``, the same classes
`scripts/bench_topology.py` runs) are driven through the real executor code of one
worker in one thread: `BoltExecutor._run_batch` runs each input batch through
`process`, the real collectors emit, choose a task by the fields grouping and buffer
the Tuples, `Executor.flush` hands the batches to the real `BatchQueue`s and the
next executor takes them with `get_all`. What this leaves out is only the threads:
no wake-ups, no GIL hand-offs, no transport (one worker, so every tuple is local).

The baseline, measured in the same run, is the same work with nothing of the runtime
around it: the same bolts' per-word work (split and strip, a `Counter` update, the
count's `[word, count]` list) written as plain Python with one method call for
`process`, one for `emit`, a CRC-32 to pick the count task and a tuple subclass per
word: roughly what any Storm-style API has to do per word in Python. The ratio
(runtime words/s over baseline words/s) is the share of the per-word time that is
the bolts' own work; the rest is the runtime's.

With ``--acking on`` the sentences carry tuple ids as the spout would make them, the
split bolt anchors, and both bolts' acks are folded per batch and applied to the
worker's acker at flush, in the bolts' thread, as a worker does it; the acker's
completions reach the spout's queue, which is drained. The spout's inits are applied
before timing (the spout is not part of this benchmark), so the acker's work on the
bolts' acks is included and completes every tree.

Run from the repository root: ``python scripts/bench_executor.py [--words N]
[--repeats K] [--json FILE]``. Each configuration runs ``--repeats`` times, the
runtime and the baseline taking turns, and the best of each is kept.

``--instructions`` counts instead of timing: every configuration runs under
``valgrind --tool=cachegrind`` on ``--words`` and on twice as many words, and the
difference of the two instruction counts over the difference of the words is the
instructions a word, start-up cancelled. The whole process is counted, so making
the input is too: the sentence Tuples and, with acking, what the spout adds (root
and edge ids, the acker's init), which the timed runs leave out. On this machine
class the wall clock of the same run varies by 20 % and more; the count repeats to
about 1 %, so it shows a change of a few per cent in the per-word path (acking's
share of it above all) that timed runs cannot. ``--words`` defaults to 20,000 there
(about a minute for the four configurations).
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from zlib import crc32

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from spouts.sentences import TEXT  # noqa: E402  (the word count's own sentences)
from storm_zmq.component import Tuple  # noqa: E402
from storm_zmq.config import DEFAULTS  # noqa: E402
from storm_zmq.runtime.acker_executor import AckerExecutor  # noqa: E402
from storm_zmq.runtime.acking import (  # noqa: E402
    ACKER_INIT_STREAM_ID,
    acker_index,
    spout_emit_ids,
)
from storm_zmq.runtime.assignment import ACKER, WorkerSlot, acker_executors, assign  # noqa: E402
from storm_zmq.runtime.bolt_executor import BoltExecutor  # noqa: E402
from storm_zmq.runtime.executor import Executor  # noqa: E402
from storm_zmq.runtime.serialization import TupleId  # noqa: E402
from storm_zmq.runtime.tuning import tune_gc  # noqa: E402
from storm_zmq.runtime.worker import WorkerState  # noqa: E402
from storm_zmq.topology import load_topology  # noqa: E402

TOPOLOGY = REPO / "topologies" / "wordcount.py"
SENTENCES = [line.strip() for line in TEXT.splitlines()]
#: Sentences per input batch of the split bolt (topology.producer.batch.size-like).
SENTENCES_PER_BATCH = 50
DEFAULT_WORDS = 600_000
DEFAULT_REPEATS = 5
#: --instructions: the smaller of the two word counts of each configuration.
DEFAULT_COUNTED_WORDS = 20_000


class Runtime:
    """The word count's bolts in the real executors of one worker, run by hand."""

    def __init__(self, acking: bool) -> None:
        definition = load_topology(TOPOLOGY).definition()
        conf = {**DEFAULTS, "topology.acker.executors": None if acking else 0,
                "topology.stats.sample.rate": 0}
        parallelism = definition.parallelism
        assignment = assign("bench-1", parallelism, [WorkerSlot("127.0.0.1", 6700)],
                            acker_executors(conf, 1))
        self.state = WorkerState(conf, definition, assignment, 0)
        self.executors: dict[int, Executor] = {}
        for executor in assignment.executors:
            if executor.component in ("split_bolt", "count_bolt"):
                runner = BoltExecutor(self.state, executor)
                runner.build_components()
                self.executors[executor.index] = runner
            elif executor.component == ACKER:  # registers itself: acks are applied inline
                AckerExecutor(self.state, executor)
        self.splits = [e for e in self.executors.values() if e.component == "split_bolt"]
        self.counts = [e for e in self.executors.values() if e.component == "count_bolt"]
        self.spout_task = assignment.component_tasks["sentence_spout"][0]
        self.ackers = assignment.ackers
        self.sentences = self.completed = 0  # with acking: trees made, and completed
        self.acking = acking
        self.rng = random.Random(1)

    def sentence_batches(self, words: int) -> tuple[list[tuple[Any, list[Any]]], int]:
        """(split executor, batch of (task, Tuple)) until `words` words, prepared
        before timing, dealt round-robin over the split executors as shuffle would;
        and the number of words in them."""
        values_cls = self.state.values_class("sentence_spout", "default")
        batches: list[tuple[Any, list[Any]]] = []
        cycle = itertools.cycle(SENTENCES)
        total = 0
        while total < words:
            for executor in self.splits:
                task = executor.assignment.tasks[0]
                batch = []
                for sentence in itertools.islice(cycle, SENTENCES_PER_BATCH):
                    tuple_id = None
                    if self.acking:  # the spout's emit to one task, and its init
                        ids = spout_emit_ids(self.rng, 1)
                        tuple_id = TupleId({ids.root_id: ids.edge_ids[0]})
                        acker = self.state.local_ackers[
                            self.ackers[acker_index(ids.root_id, len(self.ackers))]]
                        acker.apply(ACKER_INIT_STREAM_ID, (ids.root_id, ids.init_xor, self.spout_task))
                    batch.append((task, Tuple(tuple_id, "sentence_spout", "default", self.spout_task,
                                              values_cls(sentence))))
                    total += len(sentence.split())
                    self.sentences += 1
                batches.append((executor, batch))
        return batches, total

    def run(self, batches: list[tuple[Any, list[Any]]]) -> int:
        """Every batch through split, flush, count, flush; returns words counted."""
        queues = self.state.queues
        counts = self.counts
        others = [index for index, queue in queues.items() if index not in self.executors]
        before = sum(e.executed for e in counts)
        for split, batch in batches:
            split._run_batch(batch)
            split.flush()
            for count in counts:
                for words in queues[count.index].get_all(timeout=0):
                    count._run_batch(words)
                count.flush()
            for index in others:  # the spout's input (completions): counted and dropped
                self.completed += sum(map(len, queues[index].get_all(timeout=0)))
        return sum(e.executed for e in counts) - before


def baseline_sentences(words: int) -> list[str]:
    """The baseline's input for about `words` words (the text averages 17 a sentence)."""
    return list(itertools.islice(itertools.cycle(SENTENCES), words // 17 + 1))


def baseline(sentences: list[str]) -> int:
    """The same per-word work with only the calls any Storm-style API needs."""

    class Tup(tuple):
        __slots__ = ()

    class Split:
        def __init__(self) -> None:
            self.out: list[list[Any]] = [[], []]

        def process(self, sentence: str) -> None:
            for word in sentence.split():
                self.emit([word.strip(",.").lower()])

        def emit(self, values: list[Any]) -> None:
            self.out[crc32(values[0].encode()) % 2].append(
                Tup((None, "split_bolt", "default", 1, tuple(values))))

    class Count:
        def __init__(self) -> None:
            self.counts: Counter[str] = Counter()

        def process(self, tup: Tup) -> None:
            word = tup[4][0]
            self.counts[word] += 1
            self.emit([word, self.counts[word]])

        def emit(self, values: list[Any]) -> None:
            pass

    split = Split()
    counts = [Count(), Count()]
    done = 0
    for start in range(0, len(sentences), SENTENCES_PER_BATCH):
        for sentence in sentences[start:start + SENTENCES_PER_BATCH]:
            split.process(sentence)
        for index, count in enumerate(counts):
            batch, split.out[index] = split.out[index], []
            process = count.process
            for tup in batch:
                process(tup)
            done += len(batch)
    return done


def timed(fn: Any, *args: Any) -> tuple[int, float]:
    tune_gc()  # as a worker runs: no automatic collections (runtime/tuning.py)
    started = time.perf_counter()
    words = fn(*args)
    return words, time.perf_counter() - started


def measure(acking: bool, words: int, repeats: int) -> dict[str, Any]:
    runtime_rates, baseline_rates = [], []
    sentences = baseline_sentences(words)
    for _ in range(repeats):
        runtime = Runtime(acking)
        batches, expected = runtime.sentence_batches(words)
        counted, seconds = timed(runtime.run, batches)
        if counted != expected:
            raise SystemExit(f"the runtime counted {counted:,} of {expected:,} words")
        if acking and runtime.completed != runtime.sentences:
            raise SystemExit(f"the acker completed {runtime.completed:,} of {runtime.sentences:,} trees")
        runtime_rates.append(counted / seconds)
        counted, seconds = timed(baseline, sentences)
        baseline_rates.append(counted / seconds)
    best, floor = max(runtime_rates), max(baseline_rates)
    return {
        "acking": acking,
        "runtime_words_per_s": best,
        "baseline_words_per_s": floor,
        "ratio": best / floor,
        "runtime_us_per_word": 1e6 / best,
        "baseline_us_per_word": 1e6 / floor,
        "runtime_all": runtime_rates,
        "baseline_all": baseline_rates,
    }


def run_once(side: str, acking: bool, words: int) -> None:
    """What ``--instructions`` counts: one configuration, once, untimed."""
    if side == "runtime":
        runtime = Runtime(acking)
        batches, expected = runtime.sentence_batches(words)
        tune_gc()
        counted = runtime.run(batches)
        if counted != expected:
            raise SystemExit(f"the runtime counted {counted:,} of {expected:,} words")
    else:
        tune_gc()
        baseline(baseline_sentences(words))


_I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def parse_instructions(valgrind_stderr: str) -> int:
    """The total instruction count of cachegrind's summary (``==PID== I refs: N``)."""
    match = _I_REFS.search(valgrind_stderr)
    if match is None:
        raise ValueError("no 'I refs' line in valgrind's output")
    return int(match.group(1).replace(",", ""))


def count_instructions(side: str, acking: bool, words: int) -> int:
    """Instructions of one `run_once` under cachegrind, in a child process."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, __file__, "--run-once", side, "on" if acking else "off", str(words)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    return parse_instructions(result.stderr)


def words_in(side: str, words: int) -> int:
    """How many words `run_once` counts for `words` (whole batches of sentences)."""
    if side == "runtime":
        return Runtime(False).sentence_batches(words)[1]
    return sum(len(sentence.split()) for sentence in baseline_sentences(words))


def measure_instructions(acking: bool, words: int) -> dict[str, Any]:
    row: dict[str, Any] = {"acking": acking}
    for side in ("runtime", "baseline"):
        small, large = words_in(side, words), words_in(side, 2 * words)
        counts = count_instructions(side, acking, words), count_instructions(side, acking, 2 * words)
        row[f"{side}_instructions_per_word"] = (counts[1] - counts[0]) / (large - small)
        row[f"{side}_instructions"] = counts
        row[f"{side}_words"] = (small, large)
    row["ratio"] = row["runtime_instructions_per_word"] / row["baseline_instructions_per_word"]
    return row


#: The columns after "acking" of each mode's table: (header, row key, format).
TIMED_COLUMNS = (
    ("runtime words/s", "runtime_words_per_s", ",.0f"),
    ("baseline words/s", "baseline_words_per_s", ",.0f"),
    ("ratio", "ratio", ".2f"),
    ("runtime µs/word", "runtime_us_per_word", ".2f"),
    ("baseline µs/word", "baseline_us_per_word", ".2f"),
)
INSTRUCTION_COLUMNS = (
    ("runtime instructions/word", "runtime_instructions_per_word", ",.0f"),
    ("baseline instructions/word", "baseline_instructions_per_word", ",.0f"),
    ("runtime/baseline", "ratio", ".2f"),
)


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str, str]]) -> str:
    lines = ["| acking | " + " | ".join(header for header, _, _ in columns) + " |",
             "| --- |" + " ---: |" * len(columns)]
    for row in rows:
        cells = [format(row[key], spec) for _, key, spec in columns]
        lines.append(f"| {'on' if row['acking'] else 'off'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, help=f"words per run (default {DEFAULT_WORDS:,}; "
                        f"{DEFAULT_COUNTED_WORDS:,} with --instructions)")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="runs per configuration")
    parser.add_argument("--acking", default="off,on", help="comma-separated subset of off,on")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions a word under valgrind's cachegrind instead of timing")
    parser.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    parser.add_argument("--run-once", nargs=3, metavar=("SIDE", "ACKING", "WORDS"),
                        help=argparse.SUPPRESS)  # what --instructions runs under valgrind
    args = parser.parse_args(argv)
    if args.run_once:
        side, acking, words = args.run_once
        run_once(side, acking == "on", int(words))
        return 0
    modes = [m.strip() for m in args.acking.split(",") if m.strip()]
    if not modes or any(m not in ("off", "on") for m in modes):
        parser.error(f"--acking: expected a subset of off,on, got {args.acking!r}")
    words = args.words or (DEFAULT_COUNTED_WORDS if args.instructions else DEFAULT_WORDS)
    if words < 1000 or args.repeats < 1:
        parser.error("--words must be >= 1000 and --repeats >= 1")
    if args.instructions:
        if shutil.which("valgrind") is None:
            parser.error("--instructions needs valgrind on the PATH (Debian: apt-get install valgrind)")
        rows = [measure_instructions(mode == "on", words) for mode in modes]
        print(table(rows, INSTRUCTION_COLUMNS))
        print(f"instructions a word: cachegrind's count for {2 * words:,} words less its count for "
              f"{words:,}, over the difference in words; runtime/baseline as in the timed table")
        if len(rows) == 2:
            print(f"acking on / off: {rows[1]['runtime_instructions_per_word'] / rows[0]['runtime_instructions_per_word']:.2f} "
                  "times the instructions a word")
    else:
        rows = [measure(mode == "on", words, args.repeats) for mode in modes]
        print(table(rows, TIMED_COLUMNS))
        print("ratio: runtime words/s over the plain-Python baseline's, best of "
              f"{args.repeats} alternating runs of {words:,} words each")
    if args.json:
        report = {"python": platform.python_version(), "words": words,
                  "repeats": args.repeats, "instructions": args.instructions, "rows": rows}
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
