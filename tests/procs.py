"""Processes as /proc shows them (Linux): how tests tell that a run started, and
stopped, exactly the processes it should."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    session: int
    state: str  # "R", "S", ..., "Z" for a zombie (exited, not reaped yet)
    start_time: int  # clock ticks after boot
    command: bytes  # the command line, arguments separated by NUL bytes
    cpu_secs: float  # user and system CPU time so far


_TICKS_PER_SEC = os.sysconf("SC_CLK_TCK")


def processes() -> list[Proc]:
    """Every process alive now, oldest first."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                data = stat.read()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:  # gone meanwhile
            continue
        # after "pid (comm) ": state ppid pgrp session ... utime, stime are the 12th
        # and 13th, starttime the 20th
        fields = data[data.rindex(b")") + 2:].split()
        found.append(Proc(int(entry), int(fields[1]), int(fields[3]), fields[0].decode(),
                          int(fields[19]), command,
                          (int(fields[11]) + int(fields[12])) / _TICKS_PER_SEC))
    return sorted(found, key=lambda p: (p.start_time, p.pid))
