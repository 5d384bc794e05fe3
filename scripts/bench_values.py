#!/usr/bin/env python
"""What a value of each type a tuple carries costs to cross workers.

For each type (`storm_zmq/topology/value_types.py`, and a registered dataclass and
Enum as `topology.kryo.register` carries them), a payload of 64 tuples
``["w", value]`` is encoded and decoded as an executor does for a remote task
(`serialization.encode_tuples` / `decode_tuples`, with the codec of a topology that
registers the two classes). The baseline, measured in the same run, is the same
payload with the value as a str of about the same size, a type msgpack carries
itself; the table gives ns a tuple and the ratio to it. Best of ``--repeats``. Each
value is checked to come back equal and of its type first (exit 1 if not).

Run from the repository root: ``python scripts/bench_values.py [--repeats K]
[--json FILE]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import decimal
import enum
import json
import sys
import timeit
import uuid
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storm_zmq.runtime.serialization import decode_tuples, encode_tuples  # noqa: E402
from storm_zmq.topology.registrations import load_codec  # noqa: E402

TUPLES = 64


class Side(enum.Enum):
    BUY = 1
    SELL = 2


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: float


NOW = datetime.datetime(2024, 5, 1, 12, 30, 15, 123456)
CASES: dict[str, Any] = {
    "str (baseline)": NOW.isoformat(),
    "datetime, naive": NOW,
    "datetime, UTC": NOW.replace(tzinfo=datetime.UTC),
    "datetime, ZoneInfo": NOW.replace(tzinfo=ZoneInfo("Europe/Paris")),
    "date": NOW.date(),
    "time": NOW.time(),
    "timedelta": datetime.timedelta(days=3, seconds=7, microseconds=9),
    "Decimal": decimal.Decimal("1234.5678"),
    "UUID": uuid.UUID(int=12345678901234567890),
    "Enum (registered)": Side.SELL,
    "dataclass (registered)": Point(3, 4.5),
}


def per_value_ns(value: Any, codec: Any, repeats: int) -> float:
    values = [["w", value] for _ in range(TUPLES)]
    _, _, _, back = decode_tuples(encode_tuples(5, "default", None, values, "bench", codec), codec)
    if back != values or type(back[0][1]) is not type(value):
        raise SystemExit(f"{value!r} came back as {back[0][1]!r}")

    def round_trip() -> None:
        decode_tuples(encode_tuples(5, "default", None, values, "bench", codec), codec)

    number = 2000
    best = min(timeit.repeat(round_trip, number=number, repeat=repeats))
    return best / number / TUPLES * 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    sys.modules.setdefault("bench_values", sys.modules[__name__])
    codec = load_codec({"topology.kryo.register": ["bench_values.Side", "bench_values.Point"]})
    results = {name: per_value_ns(value, codec, args.repeats) for name, value in CASES.items()}
    base = results["str (baseline)"]
    print(f"| value ({TUPLES} tuples [\"w\", value] a payload) | encode + decode, ns a tuple | vs str |")
    print("| --- | ---: | ---: |")
    for name, ns in results.items():
        print(f"| {name} | {ns:,.0f} | {ns / base:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"tuples_per_payload": TUPLES, "ns_per_tuple": results,
             "ratio_to_str": {k: v / base for k, v in results.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
