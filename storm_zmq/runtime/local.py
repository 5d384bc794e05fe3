"""Local mode: run a topology on this machine with real worker processes, no ZooKeeper.

The runner computes the assignment itself, starts one worker process per slot port
(runtime/launch.py: a fresh interpreter, `worker.python`), activates the
spouts, shows progress, and stops gracefully: spouts are deactivated, in-flight
tuples drain (bounded by `topology.message.timeout.secs`), then every worker stops
its executors, which run their components' `cleanup()`.
"""

from __future__ import annotations

import json
import pickle
import random
import re
import reprlib
import signal
import socket
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from storm_zmq.config import ConfigError, validate_topology_conf
from storm_zmq.messaging import TRANSPORT_ALIASES
from storm_zmq.messaging.auth import TopologySecrets
from storm_zmq.runtime.assignment import (
    WorkerSlot,
    acker_executors,
    assign,
    workers_with_executors,
)
from storm_zmq.runtime.launch import LaunchError, WorkerProcess, worker_python
from storm_zmq.runtime.reports import decode_report
from storm_zmq.runtime.stats import RunStats
from storm_zmq.topology import load_topology
from storm_zmq.topology.definition import with_task_counts
from storm_zmq.topology.loader import streamparse_leftovers
from storm_zmq.topology.registrations import (
    REGISTER,
    RegistrationError,
    load_codec,
    topology_registrations,
)

PROGRESS_INTERVAL = 2.0
#: A drain still going after this long is announced (it may take up to
#: topology.message.timeout.secs).
DRAIN_NOTICE_SECS = 2.0
#: While draining, workers are asked for a report this often. Short rounds are safe
#: because a report counts every place a tuple can be (RunStats.backlog): queues, the
#: batch an executor is running, the send thread's hand, and messages between workers.
DRAIN_ROUND_SECS = 0.1
#: How long a stop waits for the workers' last reports before it kills them: more
#: than the 12 s a worker gives its executors to stop (`Worker._shutdown`), so that
#: a worker stuck in cleanup() says so itself first.
FINISH_WAIT_SECS = 15.0


_TRACEBACK_HEAD = "Traceback (most recent call last):"


def one_line(error: str) -> str:
    """A worker's error, whose traceback it printed already, in one line: its first,
    or for a bare traceback (whose first line says nothing) the exception's."""
    head, _, rest = error.partition("\n")
    if head.endswith(_TRACEBACK_HEAD):
        # the exception's line: the last one that names an exception type (notes
        # added to it come after it)
        raised = [line for line in rest.splitlines() if _EXCEPTION_LINE.match(line)]
        if raised:
            head = head.removesuffix(_TRACEBACK_HEAD) + raised[-1]
    return head.rstrip(":")


_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(: |$)")



def _start_deaf_to_ctrl_c(process: WorkerProcess) -> None:
    """Start a worker process with SIGINT and SIGTERM ignored. A terminal sends
    Ctrl-C to the whole process group (`timeout` and service managers SIGTERM), and
    a worker still importing died of it inside Python's start-up, with tracebacks,
    before `worker_main` could ignore it (the run then said a worker was killed by
    SIGINT). An ignored signal is inherited through the exec, and Python leaves a
    signal that it finds ignored alone; this runner's own handlers are back as soon
    as the process is started (a signal in those milliseconds is not seen here)."""
    handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        process.start()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)

class RunError(Exception):
    """Something about the run the user must fix (busy port, too few ports, ...)."""


@dataclass
class RunOptions:
    topology_file: str
    conf: dict[str, Any]
    seconds: float = 0.0  # 0: until Ctrl-C or every spout is exhausted
    workers: int | None = None
    transport: str | None = None
    debug: bool = False
    topology_name: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    progress: bool = True
    #: Where the configuration came from, for the run's first line (`config_sources`).
    config_sources: str = ""
    #: Called once, in the runner's thread, when every worker is ready and before the
    #: spouts are activated, with the run's live `RunStats` (a UI reads it from then
    #: on; it is updated in place as reports arrive).
    on_started: Callable[[RunStats], None] | None = None
    #: Called in the runner's thread with each worker report as it arrives
    #: (worker index, report); benchmarks sample from it.
    on_report: Callable[[int, dict[str, Any]], None] | None = None


@dataclass
class RunResult:
    exit_code: int
    stats: RunStats
    reason: str
    #: a Ctrl-C or SIGTERM took part in the stop, whatever the reason says (a stop
    #: by -t whose cleanups a Ctrl-C interrupted still "ran N s"); benchmarks stop on it
    interrupted: bool = False


def prepare_run(options: RunOptions, warn: bool = True) -> tuple[Any, dict[str, Any], int]:
    """Load and validate everything before any process starts: a mistake costs
    nothing half-started. `warn`: print the config's warnings (once per run: the
    UI prepares the run before `run_local` does)."""
    topology = load_topology(options.topology_file, options.topology_name)
    definition = topology.definition()
    conf = {**options.conf, **definition.config, **options.overrides}
    _refuse_flag_against_override(options)
    if options.transport:
        conf["storm.messaging.transport"] = options.transport
    # a short name, from --transport, -o or storm.yaml
    conf["storm.messaging.transport"] = _transport_class(conf.get("storm.messaging.transport"))
    if options.debug:
        conf["topology.debug"] = True
    try:
        warnings = validate_topology_conf(conf, definition, overridden=options.overrides)
    except ConfigError as exc:
        raise RunError(str(exc)) from None
    conf[REGISTER] = topology_registrations(conf, definition)
    for warning in [*warnings, *definition.unreachable_fields(),
                    *streamparse_leftovers(options.topology_file)] if warn else ():
        print(f"warning: {warning}", file=sys.stderr)
    try:  # imported here as each worker will: a missing class stops nothing half-started
        load_codec(conf)
    except RegistrationError as exc:
        raise RunError(f"topology {definition.name}: {exc}") from None
    definition = with_task_counts(definition, conf)
    _check_picklable(conf)
    workers = options.workers or int(conf["topology.workers"])
    if conf["storm.messaging.transport"] == TRANSPORT_ALIASES["local"] and workers > 1:
        workers = 1
        if warn:
            print("note: the local transport runs in one process; using 1 worker",
                  file=sys.stderr)
    if workers < 1:
        raise RunError(f"need at least one worker, got {workers}")
    useful = workers_with_executors(conf, definition.parallelism, workers)
    if useful < workers:
        if warn:
            print(f"note: {definition.name} has {useful} executor(s) in all, so {workers} "
                  f"workers would leave {workers - useful} with nothing to run: using {useful}",
                  file=sys.stderr)
        workers = useful
    conf["topology.workers"] = workers  # what components read: the run's, as -w sets it in Storm
    return definition, conf, workers


def _refuse_flag_against_override(options: RunOptions) -> None:
    """``--transport tcp -o storm.messaging.transport=zmq`` (or ``-d`` with ``-o
    topology.debug=false``) asks for two things: the flag used to win in silence, so
    a benchmark could run on another transport than the one its command line shows."""
    overridden = options.overrides.get("storm.messaging.transport")
    if options.transport and overridden is not None and (
        _transport_class(options.transport) != _transport_class(overridden)
    ):
        raise RunError(f"--transport {options.transport} and -o storm.messaging.transport="
                       f"{overridden} disagree; give one of them")
    debug = options.overrides.get("topology.debug", True)
    if options.debug and debug is not True:
        typed = debug if isinstance(debug, str) else json.dumps(debug)  # as YAML spells it
        raise RunError(f"-d and -o topology.debug={typed} disagree; give one of them")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _transport_class(name: Any) -> Any:
    return TRANSPORT_ALIASES.get(name, name) if isinstance(name, str) else name


def _check_picklable(conf: dict[str, Any]) -> None:
    """Every worker process receives the config pickled: a value that cannot be
    (a lambda, an open file) is named here rather than by a traceback at start."""
    try:
        pickle.dumps(conf)
    except Exception:
        for key, value in conf.items():
            try:
                pickle.dumps(value)
            except Exception as exc:
                raise RunError(f"config {key!r}: {reprlib.repr(value)} cannot be passed to the worker "
                               f"processes ({type(exc).__name__}: {exc})") from None
        raise


def check_ports(ports: list[int]) -> None:
    for port in ports:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("0.0.0.0", port))
            except OSError as exc:
                raise RunError(
                    f"port {port} (from supervisor.slots.ports) is busy: {exc.strerror}; "
                    f"{_who_holds(port) or 'stop what uses it'} or choose other ports with "
                    "-o supervisor.slots.ports=[...]"
                ) from None


#: Where `free_ports` looks: from here up to the kernel's ephemeral range.
LOWEST_FREE_PORT = 10_000


def ephemeral_port_start() -> int:
    """The first port the kernel hands out for a bind to port 0 or a connection's own
    end (Linux's ip_local_port_range; its default where that cannot be read)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ranges:
            return int(ranges.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_ports(count: int) -> list[int]:
    """`count` distinct ports nothing listens on now, for runs that must not meet
    another topology on the default supervisor.slots.ports (the benchmarks'). Picked
    at random below the kernel's ephemeral range: a port the kernel hands out for a
    bind to port 0 is one it may give another program's connection next, before the
    run's worker binds it (a suite run found its port busy so). Where that range
    starts too low to leave room, the kernel's pick."""
    ephemeral = ephemeral_port_start()
    ports: list[int] = []
    for _ in range(10_000 if ephemeral > LOWEST_FREE_PORT + 1_000 else 0):
        port = random.randrange(LOWEST_FREE_PORT, ephemeral)
        if port in ports:
            continue
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("0.0.0.0", port))  # as check_ports probes it
            except OSError:
                continue
        ports.append(port)
        if len(ports) == count:
            return ports
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind(("0.0.0.0", 0))
            port = probe.getsockname()[1]
        if port not in ports:
            ports.append(port)
    return ports


def _who_holds(port: int) -> str | None:
    """A cluster worker on `port` of this machine, said with how to stop it: workers
    outlive their supervisor (as Storm's do), so after trying a cluster its worker
    held the slot port the README's local run uses, and the run said only "busy"."""
    from storm_zmq.cluster.processes import worker_processes

    try:
        for pid, _ticks, _arguments, launch_file in worker_processes():
            directory = launch_file.parent  # storm.local.dir/workers/<topology id>-<port>
            if directory.name.endswith(f"-{port}"):
                local_dir = directory.parent.parent
                return (f"a cluster's worker holds it (pid {pid}, {directory.name}): stop it "
                        f"with `storm-zmq kill_workers -o storm.local.dir={local_dir}`")
    except OSError:  # no /proc (not Linux): the plain message
        pass
    return None


def run_local(options: RunOptions, out: TextIO = sys.stdout) -> RunResult:
    definition, conf, num_workers = prepare_run(options)
    ports = list(conf["supervisor.slots.ports"])[:num_workers]
    if len(ports) < num_workers:
        need = "needs a port" if num_workers == 1 else "need as many ports"
        raise RunError(f"{_count(num_workers, 'worker')} {need}, but supervisor.slots.ports "
                       f"has {len(conf['supervisor.slots.ports'])}")
    check_ports(ports)
    try:
        python = worker_python(conf)
    except LaunchError as exc:
        raise RunError(str(exc)) from None
    storm_id = f"{definition.name}-local-{uuid.uuid4().hex[:8]}"
    parallelism = definition.parallelism
    assignment = assign(
        storm_id, parallelism, [WorkerSlot("127.0.0.1", p) for p in ports],
        acker_executors(conf, num_workers),
    )
    stats = RunStats(definition)
    runner = _Runner(options, conf, assignment, stats, out, python)
    return runner.run()


class _Runner:
    def __init__(self, options: RunOptions, conf: dict[str, Any], assignment: Any, stats: RunStats,
                 out: TextIO, python: str) -> None:
        self.options = options
        self.python = python  # the workers' interpreter (worker.python)
        self.conf = conf
        self.assignment = assignment
        self.stats = stats
        self.out = out
        self.processes: list[WorkerProcess] = []
        self.pipes: list[Any] = []
        self.interrupted = False
        self.error: str | None = None
        # a worker prints its failure, traceback and all, to the stderr it shares
        # with this process before reporting it: then one line here is enough
        self.error_printed = False
        self.stopped: set[int] = set()
        self.stop_sent = False  # "stop" broadcast: a worker exiting 0 from now on is no death
        # then "draining", "stopping" (the workers told to stop, or a failure's
        # stop) and "done" (the summary said): what a Ctrl-C does, `_on_interrupt`
        self.phase = "running"
        self.drain_cut = False  # a Ctrl-C ended the drain's wait
        self.cleanup_wait_said = False  # a Ctrl-C while the workers stop was answered
        self.died = False  # a worker went away unasked (self.error says how)
        self.error_said = False  # `_say_error` printed self.error
        self.failed: set[int] = set()  # workers that reported a failure (they end themselves) or died
        self.ending = "interrupted"  # why the run is stopping, once it is (`_stopped_at_once`)

    def run(self) -> RunResult:
        # SIGTERM (`timeout`, a service manager) stops the run as Ctrl-C does
        previous = {sig: signal.signal(sig, self._on_interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            return self._run()
        except KeyboardInterrupt:
            if self.stats.started_at is None:
                raise  # still starting: nothing ran, nothing to sum up
            return self._stopped_at_once()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._terminate()

    def _on_interrupt(self, signum: int, frame: Any) -> None:
        """Each Ctrl-C (or SIGTERM) goes one step further, and says what the next
        one would do. Once running: the first stops the run gracefully, and from
        then on a second ends the drain's wait (even one pressed before the drain
        began: a double tap); the workers still run every cleanup() (a second
        Ctrl-C used to end everything there, and no cleanup() ran). The first
        one while the workers run cleanup() is answered and waited through (it
        ended the run in silence, a stop by -t included, and skipped the cleanups
        left, where users write out final state). Any other stops the workers at
        once (`_stopped_at_once`). While the workers start, a second one stops at
        once; after the summary, nothing."""
        if self.phase == "done":
            return
        if self.stats.started_at is None:
            if self.interrupted:
                raise KeyboardInterrupt
            self.interrupted = True
            print("\nstopping the workers, which are still starting ...", file=sys.stderr, flush=True)
            return
        if self.phase == "running":
            self.interrupted = True
            self.phase = "draining"
            print("\nstopping (Ctrl-C again to stop waiting for the tuples in flight) ...",
                  file=sys.stderr, flush=True)
            return
        if self.phase == "draining" and not self.drain_cut:
            self.drain_cut = True
            print("\nnot waiting for the tuples in flight: stopping the workers, which run "
                  "cleanup() (Ctrl-C again to stop at once) ...", file=sys.stderr, flush=True)
            return
        if self.phase == "stopping" and not self.drain_cut and not self.cleanup_wait_said:
            self.cleanup_wait_said = True
            print("\nthe workers are running cleanup() and stopping (Ctrl-C again to stop them "
                  "at once, leaving what cleanup() has not done) ...", file=sys.stderr, flush=True)
            return
        raise KeyboardInterrupt

    def _run(self) -> RunResult:
        secrets = TopologySecrets.generate().to_dict()  # one set per run, for every worker
        for index in range(len(self.assignment.workers)):
            spec = {
                "conf": self.conf,
                "secrets": secrets,
                "worker_index": index,
                "assignment": self.assignment.to_dict(),
                "topology_file": self.options.topology_file,
                "topology_name": self.options.topology_name,
                # this host's workers: the run's, not every slot port (CPU pinning)
                "host_ports": [worker.port for worker in self.assignment.workers],
            }
            process = WorkerProcess(self.python, spec)
            _start_deaf_to_ctrl_c(process)
            self.processes.append(process)
            self.pipes.append(process.pipe)
        ports = ", ".join(str(w.port) for w in self.assignment.workers)
        transport = self.conf["storm.messaging.transport"]
        sources = f"; config: {self.options.config_sources}" if self.options.config_sources else ""
        python = f", python {self.python}" if self.python != sys.executable else ""
        self._say(
            f"{self.stats.topology}: {len(self.processes)} worker(s) on port(s) {ports}, "
            f"transport {transport}, acking {'on' if self.assignment.ackers else 'off'}{python}"
            f"{sources}"
        )
        ready: set[int] = set()
        # as a supervisor gives a starting worker (a SparkSpout may start Spark first)
        ready_timeout = float(self.conf["supervisor.worker.start.timeout.secs"])
        deadline = time.monotonic() + ready_timeout
        while len(ready) < len(self.processes):
            if self._poll(0.1, ready) or self.interrupted:
                return self._finish(1 if self.error else 130, "failed to start" if self.error else "interrupted")
            if time.monotonic() > deadline:
                late = ", ".join(str(i) for i in range(len(self.processes)) if i not in ready)
                self.error = (
                    f"worker {late} not ready after {ready_timeout:.0f} s: a component's "
                    "initialize() is still running (its worker's warnings say which); give it "
                    "longer with -o supervisor.worker.start.timeout.secs=SECONDS")
                return self._finish(1, "failed to start")
        if self.options.on_started is not None:
            self.options.on_started(self.stats)
        self._broadcast("activate")
        started = time.monotonic()
        self.stats.start(started)
        end = started + self.options.seconds if self.options.seconds > 0 else None
        next_progress = started + PROGRESS_INTERVAL
        reason = ""
        while not reason:
            if self._poll(0.1):
                return self._finish(1, "a worker died" if self.died else "a component failed")
            now = time.monotonic()
            if self.interrupted:
                reason = "interrupted"
            elif end is not None and now >= end:
                reason = f"ran {self.options.seconds:g} s"
            elif self.stats.all_spouts_exhausted():
                reason = "every spout is exhausted"
            if self.options.progress and now >= next_progress:
                next_progress = now + PROGRESS_INTERVAL
                self._say(self.stats.progress_line(now))
        return self._stop_gracefully(reason)

    def _stop_gracefully(self, reason: str) -> RunResult:
        self.ending = reason
        self._broadcast("deactivate")
        self.stats.deactivate(time.monotonic())
        timeout = float(self.conf["topology.message.timeout.secs"])
        started = time.monotonic()
        deadline = started + timeout
        # Drained when two rounds of reports, each sent after the previous check,
        # show nothing pending and nothing queued anywhere. Workers report when
        # asked, a round every DRAIN_ROUND_SECS, rather than at their own pace.
        quiet_rounds = 0
        since = started
        next_request = started
        noticed = False
        self.phase = "draining"  # a Ctrl-C from now on ends the wait
        while quiet_rounds < 2:
            if time.monotonic() >= next_request:
                next_request = time.monotonic() + DRAIN_ROUND_SECS
                self._broadcast("report")
            if self._poll(DRAIN_ROUND_SECS / 4):
                return self._finish(1, f"{reason}, then a component failed while stopping")
            now = time.monotonic()
            if now >= deadline or self.drain_cut:
                self._say_undrained(now - started)
                break
            if self.stats.reported_since(since):
                quiet_rounds = quiet_rounds + 1 if self.stats.drained() else 0
                since = time.monotonic()
            if not noticed and now - started >= DRAIN_NOTICE_SECS:
                noticed = True  # a long drain is said, not left to look like a hang
                pending, queued = self.stats.backlog()
                where = self.stats.waited_for()
                print(f"draining: {pending:,} tuple tree(s) pending, {queued:,} tuple(s) queued"
                      f"{f' ({where})' if where else ''}; waiting up to {timeout:g} s "
                      "(topology.message.timeout.secs; Ctrl-C to stop waiting)",
                      file=sys.stderr, flush=True)
        self.phase = "stopping"
        self._broadcast("stop")
        deadline = time.monotonic() + 30
        while len(self.stopped) < len(self.processes) and time.monotonic() < deadline:
            if self._poll(0.1):
                return self._finish(1, f"{reason}, then a component failed while stopping")
            if all(not p.is_alive() for p in self.processes):
                break
        return self._finish(0, reason)

    def _stopped_at_once(self) -> RunResult:
        """A Ctrl-C that stops at once: the workers that have not stopped are
        killed, named (their components' cleanup() may not have run), and the run
        still ends with its summary: exit 130, or 1 if it was stopping for a
        failure, which is said if it was not yet."""
        self.phase = "done"
        self._read_waiting_reports()
        self._kill_unstopped("stopped at once")
        self._terminate()  # those finishing their exit too
        if self.error:
            self._say_error()
        self.stats.stop(time.monotonic())
        reason = f"{self.ending}, then stopped at once"
        self._say(self.stats.summary(reason))
        return RunResult(1 if self.error else 130, self.stats, reason, interrupted=True)

    def _read_waiting_reports(self) -> None:
        """The reports already in the pipes (a worker's last one before it stopped)."""
        from multiprocessing.connection import wait

        for _ in range(4 * len(self.pipes)):
            alive = [p for i, p in enumerate(self.pipes) if i not in self.stopped]
            if not alive or not wait(alive, 0):
                return
            self._poll(0)

    def _kill_unstopped(self, why: str) -> None:
        """Kill the workers still running, naming those that have not said they
        stopped or failed, and what that skips (one that said so is only finishing
        its exit)."""
        running = [index for index, process in enumerate(self.processes)
                   if index not in self.stopped and index not in self.failed and process.is_alive()]
        if not running:
            return
        named = "; ".join(f"worker {index} (components {self._components_of(index)})"
                          for index in running)
        print(f"{why}: killed {named}, not stopped yet, so cleanup() may not have run there",
              file=sys.stderr, flush=True)
        self._terminate()

    def _say_undrained(self, waited: float) -> None:
        said = self.stats.undrained(waited)
        if said:
            print(said, file=sys.stderr, flush=True)

    def _say_error(self) -> None:
        if self.error_said or not self.error:
            return
        self.error_said = True
        error = self.error
        if self.error_printed:
            error = one_line(error) + (" (traceback above)" if "Traceback (" in error
                                       else " (logged above)")
        print(f"error: {error}", file=sys.stderr, flush=True)

    def _finish(self, code: int, reason: str) -> RunResult:
        self.phase, self.ending = "stopping", reason
        self._say_error()
        if self.failed:  # the others need not wait to send to them (Worker._send)
            self._broadcast("peers-gone:" + ",".join(map(str, sorted(self.failed))))
        self._broadcast("stop")
        # the final reports ("stopped") of the workers still there: a worker that
        # died in its first half second left every count of the others at 0
        error, deadline = self.error, time.monotonic() + FINISH_WAIT_SECS
        while len(self.stopped) < len(self.pipes) and time.monotonic() < deadline:
            self._poll(0.1)
            if all(not process.is_alive() for process in self.processes):
                self._read_waiting_reports()  # a pipe a child of theirs holds gives no EOF
                break
        if self.error != error and self.error is not None and error is not None:
            print(f"also: {one_line(self.error)}", file=sys.stderr, flush=True)
        self.error = error  # the run's error is the first one, said above
        self._kill_unstopped(f"not stopped after {FINISH_WAIT_SECS:g} s")
        for process in self.processes:
            process.join(max(0.1, deadline - time.monotonic()))
        self.phase = "done"
        self.stats.stop(time.monotonic())
        interrupted = self.interrupted or self.drain_cut or self.cleanup_wait_said
        if code == 0 or self.stats.started_at is not None:
            self._say(self.stats.summary(reason))
        elif not self.error:  # a Ctrl-C before every worker was ready: no summary to give
            self._say(f"{self.stats.topology}: {reason} while its workers started; they stopped")
        return RunResult(code, self.stats, reason, interrupted=interrupted)

    def _poll(self, timeout: float, ready: set[int] | None = None) -> bool:
        """Read what workers sent; True when one failed (self.error says why)."""
        from multiprocessing.connection import wait

        alive = [p for i, p in enumerate(self.pipes) if i not in self.stopped]
        for pipe in wait(alive, timeout) if alive else []:
            try:
                message = decode_report(pipe.recv_bytes())
            except (EOFError, OSError):
                index = self.pipes.index(pipe)
                self.stopped.add(index)
                process = self.processes[index]
                process.join(5)
                # gone without saying "stopped": a death, unless asked to stop and
                # exited cleanly (a component's os._exit(0) is a death too)
                if process.exitcode != 0 or not self.stop_sent:
                    self.failed.add(index)
                if not self.error and (process.exitcode != 0 or not self.stop_sent):
                    self.error = self._died(index, process.exitcode)
                    self.died = True
                    return True
                continue
            kind, index = message[0], message[1]
            if kind == "ready" and ready is not None:
                ready.add(index)
            elif kind in ("stats", "stopped"):
                self.stats.update(index, message[2])
                if self.options.on_report is not None:
                    self.options.on_report(index, message[2])
                if kind == "stopped":
                    self.stopped.add(index)
            elif kind == "error":
                self.failed.add(index)
                self.error = f"worker {index}: {message[2]}"
                self.error_printed = True
                return True
        return False

    def _died(self, index: int, exitcode: int | None) -> str:
        """What a worker that went away unasked died of, and what it ran."""
        slot = self.assignment.workers[index]
        if exitcode is not None and exitcode < 0:
            try:
                name = signal.Signals(-exitcode).name
            except ValueError:
                name = f"signal {-exitcode}"
            how = f"was killed by {name}" + (
                " (out of memory? the kernel's log says: dmesg)" if name == "SIGKILL" else "")
        else:
            how = f"exited unexpectedly with code {exitcode}"
        return f"worker {index} (port {slot.port}, components {self._components_of(index)}) {how}"

    def _components_of(self, index: int) -> str:
        """The user's components that worker `index` runs, for a message."""
        return ", ".join(sorted({e.component for e in self.assignment.executors_of(index)
                                 if not e.component.startswith("__")})) or "none"

    def _broadcast(self, command: str) -> None:
        if command == "stop":
            self.stop_sent = True
        for index, pipe in enumerate(self.pipes):
            if index in self.stopped:
                continue
            try:
                pipe.send(command)
            except OSError:
                self.stopped.add(index)

    def _terminate(self) -> None:
        """Whatever worker is still there after its stop (and the joins) is stuck:
        killed. Workers ignore SIGTERM (a group's signal is the runner's to handle)."""
        for process in self.processes:
            if process.is_alive():
                process.kill()
                process.join(5)

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)
