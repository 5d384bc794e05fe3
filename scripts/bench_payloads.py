#!/usr/bin/env python
"""What a tuple costs to cross workers through each payload path, on this interpreter.

For the shapes of tuple most topologies send (the word count's words and sentences,
untracked and tracked by an acking bolt, a word and its count, a row of mixed
scalars), a payload of ``--tuples`` tuples is encoded and decoded as an executor
does for a remote task (`serialization.encode_tuples` / `decode_tuples`), once
through msgpack alone (the baseline: CPython's path) and once through
`flat_payloads` first (PyPy's path, `serialization.FLAT_PAYLOADS`). The table gives
ns a tuple, encode and decode, and the flat path's ratio to msgpack's; best of
``--repeats``. Each payload is checked to be the same bytes both ways and to come
back equal first (exit 1 if not).

Run from the repository root, with the interpreter to measure: ``python
scripts/bench_payloads.py [--tuples N] [--repeats K] [--json FILE]``, e.g.
``.venv-pypy/bin/python scripts/bench_payloads.py`` for PyPy's workers.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storm_zmq.runtime import serialization  # noqa: E402
from storm_zmq.runtime.serialization import decode_tuples, encode_tuples  # noqa: E402

WORDS = ["the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps", "doctor", "away"]
#: (name, one tuple's values from its index, whether an acking bolt tracks them)
SHAPES: list[tuple[str, Any, bool]] = [
    ("word", lambda i: [WORDS[i % len(WORDS)]], False),
    ("word, acking", lambda i: [WORDS[i % len(WORDS)]], True),
    ("sentence", lambda i: [" ".join(WORDS[i % 5:i % 5 + 6])], False),
    ("word and count", lambda i: [WORDS[i % len(WORDS)], 1000 + i], False),
    ("mixed scalars", lambda i: [f"id-{i}", i * 7919, i / 3.0, i % 2 == 0, None], False),
]


def batch(shape: Any, tracked: bool, tuples: int) -> tuple[list[list[Any]], list[int] | None]:
    values = [shape(i) for i in range(tuples)]
    roots = [part for i in range(tuples) for part in (2**63 + 7 * i + 1, 2**40 + i)] if tracked else None
    return values, roots


def ns_per_tuple(values: list[list[Any]], roots: list[int] | None, flat: bool,
                 repeats: int) -> tuple[float, float, bytes]:
    serialization.FLAT_PAYLOADS = flat
    payload = encode_tuples(5, "default", roots, values, "bench")
    decoded = decode_tuples(payload)
    if decoded[3] != values or decoded[2] != roots:
        raise SystemExit(f"a payload came back changed through the {'flat' if flat else 'msgpack'} path")
    number = max(1, 200_000 // len(values))
    encode = min(timeit.repeat(lambda: encode_tuples(5, "default", roots, values, "bench"),
                               number=number, repeat=repeats))
    decode = min(timeit.repeat(lambda: decode_tuples(payload), number=number, repeat=repeats))
    scale = 1e9 / number / len(values)
    return encode * scale, decode * scale, payload


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuples", type=int, default=256, help="tuples a payload (default 256)")
    parser.add_argument("--repeats", type=int, default=7, help="best of (default 7)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    if args.tuples < 1:
        parser.error("--tuples must be at least 1")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    rows = {}
    for name, shape, tracked in SHAPES:
        values, roots = batch(shape, tracked, args.tuples)
        msgpack_encode, msgpack_decode, msgpack_payload = ns_per_tuple(values, roots, False, args.repeats)
        flat_encode, flat_decode, flat_payload = ns_per_tuple(values, roots, True, args.repeats)
        if flat_payload != msgpack_payload:
            print(f"{name}: the flat path wrote other bytes than msgpack", file=sys.stderr)
            return 1
        rows[name] = {
            "msgpack_encode_ns": msgpack_encode, "msgpack_decode_ns": msgpack_decode,
            "flat_encode_ns": flat_encode, "flat_decode_ns": flat_decode,
            "ratio": (flat_encode + flat_decode) / (msgpack_encode + msgpack_decode),
        }
    interpreter = f"{platform.python_implementation()} {platform.python_version()}"
    print(f"{interpreter}, {args.tuples} tuples a payload, ns a tuple (best of {args.repeats})")
    print("| shape | msgpack encode | msgpack decode | flat encode | flat decode | flat / msgpack |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, row in rows.items():
        print(f"| {name} | {row['msgpack_encode_ns']:.0f} | {row['msgpack_decode_ns']:.0f} | "
              f"{row['flat_encode_ns']:.0f} | {row['flat_decode_ns']:.0f} | {row['ratio']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps({"interpreter": interpreter, "tuples": args.tuples,
                                         "repeats": args.repeats, "ns_per_tuple": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
