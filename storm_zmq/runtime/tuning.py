"""How a worker process uses the machine: which CPU it runs on, how its transport
threads wake, how it runs Python's cyclic garbage collector, and, under PyPy, how
long its JIT's traces may be (`tune_jit`).

CPU pinning (`worker.cpu.pinning`, on by default). The threads of a worker run
Python one at a time, so a worker never uses more than about one core for its
Python code; but the kernel moves its threads between cores as they wake, and a
tuple created by one thread on one core and processed by the next on another is
fetched across caches. Pinned to one CPU the same worker counted 17-38 % more
words per second, and two workers' p99 complete latency at half load was lower
in five of six pairs (docs/benchmarks.md, sessions 4 and 12). The CPU is the
position of the worker's slot among its host's worker slots in the CPUs the
process may use, so the workers of one host spread over its cores, one each. In
local mode the host's slots are the run's ports. Under a supervisor they are the
slot ports of every supervisor registered in ZooKeeper from the same machine
(`host_slots`, read when the supervisor launches the worker): two supervisors on
one host get different CPUs, not the first CPU each. A host with more worker
slots than CPUs pins nothing: workers that must share cores do better where the
kernel can move them. What a pinned worker starts inherits its CPU, so a child
that needs cores of its own (a local Spark's JVM) is started inside `unpinned()`.

Transport threads that wake without preempting (`wake_without_preempting`). A
pinned worker's threads share one CPU, and the executor thread is busy most of it.
When the receive thread's frame arrives or the send thread's batch is queued, the
kernel preempts whatever runs, usually the executor thread in the middle of Python
code: the woken thread needs the interpreter lock the executor thread holds, sleeps
again at once, and the executor thread comes back with colder caches. At half load
with two workers the executor thread was preempted 2,000-2,300 times a second so.
The receive and send threads run as SCHED_BATCH (Linux: the same share of the CPU,
but their wake-ups preempt nobody; they run when the executor thread waits or its
time slice ends): the preemptions fell to 90-320 a second, two workers with acking
counted 2.3 % more words in 9 of 10 alternating pairs, and the p99 at half load was
no worse (docs/benchmarks.md, session 32). ZeroMQ's I/O thread keeps the normal
policy: it works without the interpreter lock, so preempting for it gets work done.

Garbage collection.

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
the queues are full, and a pass takes 1-17 ms with CPython's default queue size (4096
tuples per executor; 1.6-3 ms at 1024) but held the interpreter for 0.38-0.53 s with
Storm's 32,768 (600-700k objects), once every 10 s. Once a second would cost that every second.
Reference cycles made by user code are still freed, at most that late; everything
else is freed by reference counting as always.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from storm_zmq.portable import ON_PYPY, get_affinity, set_affinity
from storm_zmq.runtime.balance import largest_share

log = logging.getLogger(__name__)

#: `topology.executor.receive.buffer.size` when it is null, by the worker's
#: interpreter (the key's doc in storm_zmq.config says why they differ).
CPYTHON_RECEIVE_BUFFER = 4096
PYPY_RECEIVE_BUFFER = 32768

YOUNG_COLLECTION_INTERVAL = 10.0
FULL_COLLECTION_INTERVAL = 60.0


#: The CPUs this process could use before `pin_worker` pinned it; None if not pinned.
_cpus_before_pinning: frozenset[int] | None = None


#: What a supervisor sets in the conf of each worker it launches: ``[position, count]``,
#: the worker's slot among its host's worker slots (`host_slots`), for `pin_worker`.
HOST_SLOT_KEY = "worker.host.slot"


def slot_cpu(position: int, slots: int, cpus: Collection[int]) -> int | None:
    """The CPU for the worker in slot `position` of a host's `slots` worker slots: that
    position in the sorted allowed `cpus`; None when there is no CPU to give each slot
    one of its own, i.e. when the slots outnumber `cpus`."""
    if not cpus or slots > len(cpus):
        return None
    return sorted(cpus)[position % len(cpus)]


def worker_cpu(port: int, host_ports: Sequence[int], cpus: Collection[int]) -> int | None:
    """The CPU for the worker on `port`: its position among `host_ports` (by port
    number if the port is not among them) in the sorted allowed `cpus`; None when
    there is no CPU to give it one of its own, i.e. when `host_ports` outnumber `cpus`."""
    ports = list(host_ports)
    return slot_cpu(ports.index(port) if port in ports else port, len(ports), cpus)


def host_slots(supervisor_id: str, ports: Sequence[int], machine: str,
               supervisors: Mapping[str, Mapping[str, Any]]) -> list[tuple[int, str]]:
    """The worker slots of the host of supervisor `supervisor_id` (its own slot
    `ports`), in order: (port, supervisor id) for its own ports and for those of every
    other supervisor in `supervisors` (id -> its ZooKeeper registration) whose
    "hostname" (the machine's name; "host" in a registration without it) is `machine`.
    A pair rather than the port alone, so that supervisors on one machine with the
    same ports (each in its own network namespace) still get slots of their own."""
    slots = {(int(port), supervisor_id) for port in ports}
    for other, info in supervisors.items():
        if other != supervisor_id and (info.get("hostname") or info.get("host")) == machine:
            slots.update((int(port), other) for port in info.get("ports") or ())
    return sorted(slots)


def host_slot(supervisor_id: str, port: int, slots: Sequence[tuple[int, str]]) -> list[int]:
    """``[position, count]`` of the worker on `port` of `supervisor_id` among its host's
    `slots` (`host_slots`): what a supervisor puts under `HOST_SLOT_KEY`."""
    ordered = list(slots)
    return [ordered.index((port, supervisor_id)), len(ordered)]


def pin_worker(conf: dict[str, Any], port: int, host_ports: Sequence[int] | None = None) -> int | None:
    """Pin this thread, and every thread it starts from now on, to the worker's CPU
    when `worker.cpu.pinning` is on; call before the worker starts its threads.
    `host_ports` are the ports of every worker this host may run (a local run passes
    its own); without them the worker's slot is `HOST_SLOT_KEY` in `conf` (set by its
    supervisor), else its port among `supervisor.slots.ports`. Returns the CPU, or
    None when pinning is off, the host has more worker slots than CPUs, or the
    platform cannot do it."""
    global _cpus_before_pinning
    if not conf.get("worker.cpu.pinning"):
        return None
    slot = conf.get(HOST_SLOT_KEY) if host_ports is None else None
    if slot:
        position, count = int(slot[0]), int(slot[1])
    else:
        ports = list(host_ports if host_ports is not None
                     else conf.get("supervisor.slots.ports") or ())
        position = ports.index(port) if port in ports else port
        count = len(ports)
    try:
        allowed = get_affinity()
        cpu = slot_cpu(position, count, allowed)
        if cpu is None:
            log.info("worker on port %d not pinned: %d worker ports on this host, %d CPUs "
                     "(worker.cpu.pinning gives each worker a CPU of its own)",
                     port, count, len(allowed))
            return None
        set_affinity({cpu})
    except (AttributeError, OSError) as exc:  # not Linux, or not allowed
        log.warning("worker.cpu.pinning: could not pin the worker on port %d: %s", port, exc)
        return None
    _cpus_before_pinning = frozenset(allowed)
    log.info("worker on port %d pinned to CPU %s (worker.cpu.pinning: %d worker ports on "
             "this host, %d CPUs)", port, cpu, count, len(allowed))
    return cpu


def wake_without_preempting() -> bool:
    """Make the calling thread SCHED_BATCH (see the module docstring): for a worker's
    threads that wake often and then need the interpreter lock the busy executor
    thread holds. False where the platform has no such policy or refuses it; the
    thread then runs as before."""
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):
        return False
    return True


class RunnableMeter:
    """The largest share of the time between two samples in which one of some
    threads of this process was runnable: on a CPU, or waiting in a run queue for
    one. Sampled with the native ids of the threads to look at, which may change
    between samples.

    Why: a worker's CPU figure (`storm_zmq.runtime.balance`) was only the CPU its
    process got, so a worker on a core that other processes also want looked less
    busy than it was: with two CPU hogs on the two cores, the worker whose bolt
    burns the interpreter used two thirds of a core (below `BUSY_HIGH`) and the
    shuffles kept sending it half their tuples. Its executor thread was runnable
    all the time, though. The figure is the larger of the process's share and this
    one (`Worker`'s receive loop). One thread's share, not their sum: threads of
    one worker wait in the run queue for each other (executor threads of their own,
    on a pinned worker at half load, waited 0.13-0.36 s a second each), and that
    time is in the process's CPU already. Only executor threads are looked at:
    the transport threads wait by design (`wake_without_preempting`).

    Reads /proc/self/task/ID/schedstat (Linux); None for the first sample, and
    where nothing can be read."""

    def __init__(self) -> None:
        self._last: dict[int, int] = {}  # thread id -> its runnable ns at the last sample
        self._last_wall: float | None = None

    def sample(self, thread_ids: Collection[int], wall_secs: float) -> float | None:
        read: dict[int, int] = {}
        for thread_id in thread_ids:
            try:
                with open(f"/proc/self/task/{thread_id}/schedstat", "rb") as stats:
                    on_cpu, queued = stats.read().split()[:2]
                read[thread_id] = int(on_cpu) + int(queued)
            except (OSError, ValueError):  # ended, or no schedstat here
                continue
        before, last_wall = self._last, self._last_wall
        self._last, self._last_wall = read, wall_secs
        if last_wall is None or wall_secs <= last_wall:
            return None
        return largest_share(before, read, wall_secs - last_wall)


@contextlib.contextmanager
def unpinned() -> Iterator[None]:
    """Run the block on every CPU the worker could use before it was pinned: for
    starting a child process that must not share the worker's one core (a local
    Spark's JVM inherits the affinity of the thread that starts it). Affinity is per
    thread, so only the calling thread is widened, and only for the block."""
    cpus = _cpus_before_pinning
    if cpus is None:
        yield
        return
    pinned = get_affinity()
    set_affinity(set(cpus))
    try:
        yield
    finally:
        set_affinity(pinned)


def receive_buffer_size(conf: Mapping[str, Any], on_pypy: bool = ON_PYPY) -> int:
    """Each executor's receive queue capacity in tuples: what the conf says, or, when
    it says null, what suits the interpreter this worker runs under. With two PyPy
    workers and acking off the word count counted 1.07M-1.28M words/s at 32768
    against 577k-997k at 4096, whose queues sent throttles 40 % of the time; CPython
    counted the same at both, and 4096 keeps its collector's passes short."""
    value = conf.get("topology.executor.receive.buffer.size")
    if value is not None:
        return int(value)
    return PYPY_RECEIVE_BUFFER if on_pypy else CPYTHON_RECEIVE_BUFFER


#: The key of PyPy's JIT trace limit for workers (its doc in storm_zmq.config).
TRACE_LIMIT_KEY = "worker.pypy.jit.trace_limit"


def tune_jit(conf: Mapping[str, Any], port: int) -> None:
    """PyPy's JIT with `worker.pypy.jit.trace_limit`; nothing on CPython or when the
    key is null. Call at start-up, before the loops of the data path are traced.

    Why: the JIT compiles a trace in the thread that made it hot, holding the
    interpreter lock, so every thread of the worker waits: at PyPy's trace limit,
    6000 operations, compiles of 10-35 ms kept coming for a minute after start and
    made most of two PyPy workers' p99 complete latency (docs/pypy.md)."""
    setting = conf.get(TRACE_LIMIT_KEY)
    if not ON_PYPY or setting is None:
        return
    import pypyjit  # PyPy's own module

    limit = int(setting)
    pypyjit.set_param(f"trace_limit={limit}")
    log.info("worker on port %d: PyPy's JIT records at most %d operations a trace (%s)",
             port, limit, TRACE_LIMIT_KEY)


def tune_gc() -> None:
    """Call once after start-up, before the data starts moving. PyPy's collector is
    left as it is: it has no reference counting to free what the clock does not
    collect, and its generational, incremental passes cost what survives a young
    pass, not what is alive (its young generation's size: `launch.PYPY_NURSERY`)."""
    if ON_PYPY:
        return
    gc.collect()
    gc.freeze()  # (CPython only: PyPy has none, and returned above)
    gc.disable()


class CollectionClock:
    """Runs the collections `tune_gc` turned off; `tick()` from one thread, often."""

    def __init__(self, clock: type[time.monotonic] | None = None) -> None:  # type: ignore[valid-type]
        self._clock = clock or time.monotonic
        now = self._clock()
        self._next_young = now + YOUNG_COLLECTION_INTERVAL
        self._next_full = now + FULL_COLLECTION_INTERVAL

    def tick(self) -> None:
        if ON_PYPY:  # its collector runs on its own (tune_gc)
            return
        now = self._clock()
        if now >= self._next_full:
            gc.collect()
            self._next_full = now + FULL_COLLECTION_INTERVAL
            self._next_young = now + YOUNG_COLLECTION_INTERVAL
        elif now >= self._next_young:
            gc.collect(1)
            self._next_young = now + YOUNG_COLLECTION_INTERVAL
