"""The supervisor daemon (`storm-zmq supervisor`): one per host.

It registers itself in ZooKeeper (an ephemeral node with its host and
`supervisor.slots.ports`), and every `supervisor.monitor.frequency.secs` reconciles
the worker processes it runs with the assignments: it launches a worker for each
slot assigned to it (fetching the topology's code from ZooKeeper once), restarts a
worker that died or whose local heartbeat is older than
`supervisor.worker.timeout.secs`, and stops workers whose slot is no longer theirs.
While ZooKeeper is unreachable it leaves its workers running as they are.

CPU pinning (`worker.cpu.pinning`, storm_zmq.runtime.tuning): a worker takes the
CPU at its slot's position among its host's worker slots, and a host may run
several supervisors. So when it launches a worker, a supervisor reads every
supervisor registered from its machine (the "hostname" of the registrations) and
hands the worker its position among all their slot ports. A worker keeps the CPU it
took: when a supervisor on the same machine registers or leaves later and the
worker would now get another CPU (or none), its supervisor logs a warning naming the
worker; it moves only when it restarts.

Workers outlive their supervisor, as Storm's do: a supervisor that stops, crashes or
restarts leaves its workers running (they run in sessions of their own), and
when it starts again it adopts the live worker processes whose launch files are
under its `storm.local.dir` (storm_zmq.cluster.processes), then carries on
as with workers it launched: it stops the ones whose slot is no longer theirs and
relaunches the ones that die or hang. Meanwhile nimbus keeps a worker whose
supervisor is gone where it is for as long as it heartbeats. `storm-zmq
kill_workers` stops a host's workers (`kill_workers`).

Files under `storm.local.dir`: `supervisor/id` (a stable id across restarts),
`stormdist/<topology>/` (unpacked code), `workers/<topology>-<port>/` (launch file,
heartbeat, pid), `logs/<topology>-<port>.log` (each worker's log, rotated; see
storm_zmq.logs) and `logs/<topology>-<port>.out` (its raw stdout/stderr: output that
bypassed logging, e.g. a crash before logging was set up). The logs directory is
served read-only on `logviewer.port` (storm_zmq.cluster.logviewer). Code and worker
directories of topologies this host no longer runs are removed; logs are kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storm_zmq.cluster.logviewer import LogViewer, start_logviewer
from storm_zmq.cluster.overview import transport_settings
from storm_zmq.cluster.package import MARKER_NAME, unpack_package
from storm_zmq.cluster.processes import (
    EXIT_FILE,
    PID_FILE,
    FoundWorker,
    WorkerProcess,
    exit_code,
    exit_text,
    find_workers,
    running_supervisors_slots,
    stop_processes,
)
from storm_zmq.cluster.state import ClusterState, ClusterUnavailable, impatient_zookeeper_conf
from storm_zmq.cluster.worker import slots_of
from storm_zmq.logs import open_worker_output, worker_log_path, worker_output_name
from storm_zmq.runtime.launch import LaunchError, worker_environment, worker_python
from storm_zmq.runtime.tuning import HOST_SLOT_KEY, host_slot, host_slots, slot_cpu

log = logging.getLogger(__name__)

#: A worker that keeps dying before its first heartbeat is said to at WARNING the
#: first time and every this many times in a row after (a launch every round:
#: about once a minute with supervisor.monitor.frequency.secs 3).
EXIT_REPORT_EVERY = 20

#: How much of the end of a worker's log is searched for the exception it died of.
LOG_TAIL_BYTES = 16384
_EXCEPTION_LINE = re.compile(r"\b([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Refused)): (.+)$")

#: How often a supervisor with pinned workers reads its host's supervisors again to
#: tell whether a worker's CPU is still its own (it reads them at every launch too).
PINNING_CHECK_SECS = 30.0


def _worth_saying(streak: int) -> bool:
    """Whether the `streak`-th trouble in a row is said: the first, and every
    EXIT_REPORT_EVERY-th after (a worker that dies, a launch refused)."""
    return streak == 1 or streak % EXIT_REPORT_EVERY == 0


@dataclass
class RunningWorker:
    topology_id: str
    index: int
    port: int
    process: WorkerProcess  # a subprocess.Popen, or an AdoptedProcess
    started_at: float
    directory: Path
    #: [position, count] among its host's worker slots when launched (None: not pinning)
    slot: list[int] | None = None
    #: the slot it would have now, once a warning said it differs
    warned_slot: list[int] | None = None


def local_hostname(conf: dict[str, Any]) -> str:
    """`storm.local.hostname`, or this host's name: how peers reach our workers."""
    return conf.get("storm.local.hostname") or socket.gethostname()


class LocalDirInUse(Exception):
    """Another live supervisor holds this supervisor's `storm.local.dir`."""


class UnresolvableHostname(Exception):
    """The name this supervisor would register for its workers does not resolve."""


def check_resolves(host: str) -> None:
    """Refuse a `storm.local.hostname` this host cannot resolve itself: peers would
    never reach the workers placed here, and the topology stalled with no error
    anywhere (a cluster audit: a typo, and nothing moved until the supervisor
    stopped)."""
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnresolvableHostname(
            f"storm.local.hostname {host!r} does not resolve on this host ({exc}): the "
            "workers of other hosts could not reach the workers started here; set it to "
            "a name or address the cluster's hosts resolve to this one") from None


class Supervisor:
    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf
        self.local_dir = Path(conf["storm.local.dir"]).resolve()
        self.host = local_hostname(conf)
        # The machine (as registered: "hostname"), which supervisors share CPUs by.
        self.machine = socket.gethostname()
        self.started = time.time()  # registered, for the uptime `storm-zmq cluster` shows
        self.ports = list(conf["supervisor.slots.ports"])
        self.id = self._stable_id()
        self.workers: dict[int, RunningWorker] = {}
        self.stopping = threading.Event()
        # Its rounds must not wait out a ZooKeeper outage inside a call: a round that
        # cannot reach it soon falls back to keeping the workers it has alive (a
        # call that began as ZooKeeper went away blocked for up to 90 s, and a
        # worker killed meanwhile stayed dead until ZooKeeper was back). Each
        # round is the retry.
        self.state = ClusterState(impatient_zookeeper_conf(
            conf, int(conf["supervisor.monitor.frequency.secs"]) * 1000))
        self._zk_down_logged = False
        self._next_pinning_check = 0.0
        self._said_shared_ports: set[tuple[str, int]] = set()  # (other supervisor, port)
        self._next_ports_check = 0.0
        self.logs_dir = self.local_dir / "logs"
        self.logviewer: LogViewer | None = None
        self._local_dir_lock: int | None = None  # _lock_local_dir
        self._exit_streaks: dict[int, int] = {}  # port -> deaths in a row (_note_exit)
        # port -> (topology id, launches refused in a row): _note_refused_launch
        self._refused_streaks: dict[int, tuple[str, int]] = {}
        # (topology id, port) -> relaunches of a worker that died or hung: passed to
        # the worker, whose reports carry it (`stats`, the UI)
        self._restarts: dict[tuple[str, int], int] = {}

    def _stable_id(self) -> str:
        path = self.local_dir / "supervisor" / "id"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(f"{self.host}-{uuid.uuid4().hex[:8]}")
        return path.read_text().strip()

    def run(self) -> int:
        try:
            check_resolves(self.host)
        except UnresolvableHostname as exc:
            if self.conf.get("storm.local.hostname"):
                raise
            # the machine's own name: it ran before this check, so said, not refused
            log.warning("%s (storm.local.hostname is not set, so this is the machine's name)",
                        exc)
        self._lock_local_dir()
        self._adopt_workers()  # local only: its workers are watched from the start
        interval = float(self.conf["supervisor.monitor.frequency.secs"])
        if not self._connect(interval):
            self.shutdown()
            return 0
        self.logviewer = start_logviewer(self.conf, self.logs_dir)
        log.info("supervisor %s on %s, slots %s, local dir %s", self.id, self.host, self.ports,
                 self.local_dir)
        while not self.stopping.is_set():
            try:
                if not self.state.connected.is_set():
                    # A ZooKeeper call can block for minutes in an outage: keep the
                    # workers alive on the assignment we know instead.
                    raise ConnectionError("no ZooKeeper session")
                # First: this host is alive whatever one topology's workers do.
                self._register()
                if time.monotonic() >= self._next_ports_check:  # it reads every registration
                    self._next_ports_check = time.monotonic() + PINNING_CHECK_SECS
                    self._say_shared_ports()
                self.reconcile()
                if self._zk_down_logged:
                    log.info("ZooKeeper is back")
                    self._zk_down_logged = False
            except Exception as exc:  # ZooKeeper down: keep the workers we have
                if not self._zk_down_logged:
                    log.warning("cannot reach ZooKeeper (%s); workers keep running", exc)
                    self._zk_down_logged = True
                self._restart_dead_workers()
            self.stopping.wait(interval)
        self.shutdown()
        return 0

    def _connect(self, interval: float) -> bool:
        """Start the ZooKeeper session, trying until it succeeds, as Storm's
        supervisor does: one started while ZooKeeper is down used to exit (code 2),
        leaving the workers it found unwatched, and a service manager restarting it
        in a loop. Meanwhile the workers it adopted are kept alive. False: told to
        stop first."""
        timeout = self.conf["storm.zookeeper.connection.timeout"] / 1000
        said = False
        while not self.stopping.is_set():
            try:
                self.state.start(timeout=timeout)
            except ClusterUnavailable as exc:
                if not said:
                    log.warning("%s; trying again every %g s (supervisor.monitor.frequency.secs), "
                                "keeping the workers it found alive meanwhile", exc, interval)
                    said = True
                self._restart_dead_workers()
                self.stopping.wait(interval)
                continue
            if said:
                log.info("ZooKeeper answers: supervisor starting")
            return True
        return False

    def _lock_local_dir(self) -> None:
        """Hold `storm.local.dir` for as long as this process lives, or refuse.

        Why: a second supervisor started with the first one's `storm.local.dir` (a
        forgotten `-o`) took its id, SIGKILLed its running workers as leftovers of
        a previous run and removed their directories, so each relaunch failed. The
        lock is an flock, released when the process ends however it ends, and not
        inherited by workers (Python's descriptors are not), so a supervisor
        restarted after a crash gets it while its old workers still run."""
        fd, holder = _try_lock(self.local_dir)
        if fd is None:
            raise LocalDirInUse(
                f"storm.local.dir {self.local_dir} is in use by another supervisor (pid "
                f"{holder}); give each supervisor on a host its own storm.local.dir "
                "(and its own supervisor.slots.ports)")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._local_dir_lock = fd

    def _say_shared_ports(self) -> None:
        """Two supervisors of one address given the same `supervisor.slots.ports`:
        the workers placed on the second's died binding, relaunched for ever, and
        nothing said why (a cluster audit). Said once per port and supervisor.
        Supervisors with the same ports on other addresses (network namespaces of
        one machine) are fine."""
        shared = {(other, int(port))
                  for other, info in self.state.supervisors().items()
                  if other != self.id and info.get("host") == self.host
                  for port in info.get("ports") or () if int(port) in self.ports}
        for other, port in sorted(shared - self._said_shared_ports):
            log.warning("port %d of supervisor.slots.ports is also supervisor %s's, on the same "
                        "address %s: workers placed on it by both cannot bind; give each "
                        "supervisor of a host ports of its own", port, other, self.host)
        self._said_shared_ports = shared

    def _register(self) -> None:
        self.state.register_supervisor(self.id, {
            "host": self.host, "ports": self.ports, "time": time.time(), "started": self.started,
            "hostname": self.machine, "pid": os.getpid(),
            # where `storm-zmq logs` finds the workers' logs (None: viewer off)
            "logviewer_port": self.logviewer.port if self.logviewer else None,
            "logs_dir": str(self.logs_dir),
            # what every worker of a topology must share: nimbus says when hosts differ
            "transport": transport_settings(self.conf),
        })

    def shutdown(self) -> None:
        """Leave ZooKeeper. The workers keep running, as Storm's do, and the next run
        of this supervisor adopts them (`_adopt_workers`): its restart
        neither stops the topologies nor replays their tuples."""
        if self.workers:
            log.info("leaving %d worker(s) running (pids %s): this supervisor adopts them "
                     "when it starts again; `storm-zmq kill_workers` stops them",
                     len(self.workers), ", ".join(str(w.process.pid) for w in self.workers.values()))
        if self.logviewer is not None:
            self.logviewer.stop()
        self.state.stop()
        if self._local_dir_lock is not None:
            os.close(self._local_dir_lock)  # releases the flock
            self._local_dir_lock = None

    # -- reconciling ---------------------------------------------------------------

    def desired(self) -> dict[int, tuple[str, int, dict[str, Any], dict[str, Any]]]:
        """port -> (topology id, worker index, assignment, topology record)."""
        wanted = {}
        for topology_id in self.state.assignments():
            assignment = self.state.get_assignment(topology_id)
            record = self.state.get_topology(topology_id)
            if assignment is None or record is None:
                continue
            for index, (supervisor, _host, port) in enumerate(slots_of(assignment)):
                if supervisor == self.id and port in self.ports:
                    wanted[port] = (topology_id, index, assignment, record)
        return wanted

    def reconcile(self) -> None:
        wanted = self.desired()
        for port, worker in list(self.workers.items()):
            want = wanted.get(port)
            if want is None or (want[0], want[1]) != (worker.topology_id, worker.index):
                self._stop_worker(port, "slot no longer assigned to it")
        for port, (topology_id, index, assignment, record) in wanted.items():
            worker = self.workers.get(port)
            reason = self._needs_restart(worker) if worker is not None else "assigned"
            if reason:
                if worker is not None:
                    self._note_exit(worker)
                    self._count_restart(worker)
                    self._stop_worker(port, reason, force=True)
                try:
                    self._launch(port, topology_id, index, assignment, record, reason)
                except Exception as exc:  # that topology's problem, not the other slots'
                    log.error("cannot launch worker %d of %s on port %d: %s", index,
                              topology_id, port, exc)
        self._remove_stale_files(wanted)
        self._restarts = {key: count for key, count in self._restarts.items()
                          if wanted.get(key[1], ("",))[0] == key[0]}
        self._check_pinning()

    # -- CPU pinning -----------------------------------------------------------------

    def _host_slots(self) -> list[tuple[int, str]]:
        """Every worker slot of this machine: its supervisors' in ZooKeeper, ours, and
        those of a supervisor of this machine that stopped but whose workers run on
        (they keep their CPUs: a worker launched now must not be given one)."""
        registered = dict(self.state.supervisors())
        for other, ports in running_supervisors_slots().items():
            registered.setdefault(other, {"hostname": self.machine, "ports": ports})
        return host_slots(self.id, self.ports, self.machine, registered)

    def _check_pinning(self) -> None:
        """Warn about each worker launched with pinning on whose CPU (or lack of one)
        is no longer what its slot gives now that the host's supervisors changed (one
        started after it was launched, or one left): it keeps its CPU until it
        restarts. At most every PINNING_CHECK_SECS, since it reads every supervisor's
        registration."""
        pinned = [worker for worker in self.workers.values() if worker.slot is not None]
        now = time.monotonic()
        if not pinned or now < self._next_pinning_check:
            return
        self._next_pinning_check = now + PINNING_CHECK_SECS
        try:
            slots = self._host_slots()
            cpus = os.sched_getaffinity(0)
        except Exception as exc:  # the workers run on; the next check may do
            log.warning("cannot tell whether pinned workers still have CPUs of their own: %s", exc)
            return
        for worker in pinned:
            assert worker.slot is not None
            slot = host_slot(self.id, worker.port, slots)
            was, would = slot_cpu(*worker.slot, cpus), slot_cpu(*slot, cpus)
            if was == would:
                worker.warned_slot = None
                continue
            if slot == worker.warned_slot:
                continue
            worker.warned_slot = slot
            log.warning(
                "worker %d of %s on port %d (pid %d) was given %s as slot %d of %d worker ports on "
                "this host; the host's supervisors now have %d (%s), which would give it %s. "
                "It keeps its CPU until it restarts: kill it and this supervisor relaunches it "
                "(worker.cpu.pinning)", worker.index, worker.topology_id, worker.port,
                worker.process.pid, _cpu_text(was), worker.slot[0] + 1, worker.slot[1],
                slot[1], ", ".join(f"{port}" for port, _ in slots), _cpu_text(would))

    def _remove_stale_files(self, wanted: dict[int, tuple[str, int, Any, Any]]) -> None:
        """The code and worker directories of what this host no longer runs (Storm
        cleans them too): they grow with every submit, and a worker's launch file
        holds its topology's secrets. The logs stay (worker.log.* bounds them)."""
        running = {worker.directory for worker in self.workers.values()}
        topologies = {worker.topology_id for worker in self.workers.values()}
        topologies.update(topology_id for topology_id, *_ in wanted.values())
        for directory in (self.local_dir / "workers").glob("*"):
            if directory.is_dir() and directory not in running:
                shutil.rmtree(directory, ignore_errors=True)
        for directory in (self.local_dir / "stormdist").glob("*"):
            if directory.is_dir() and directory.name not in topologies:
                shutil.rmtree(directory, ignore_errors=True)

    def _note_exit(self, worker: RunningWorker) -> None:
        """Say why a worker died, at WARNING, with the exception it died of from the
        end of its log: the first time, and every EXIT_REPORT_EVERY-th time in a row
        while it dies before its first heartbeat. A worker that could not bind its
        port, or whose topology raised at start, was relaunched every round with
        only an INFO line, the cause in its own log alone."""
        code = worker.process.poll()
        if code is None or code == 0:
            return
        if (worker.directory / "heartbeat").exists():  # it ran: a new streak
            streak = 1
        else:
            streak = self._exit_streaks.get(worker.port, 0) + 1
        self._exit_streaks[worker.port] = streak
        if not _worth_saying(streak):
            return
        logs = [worker_log_path(self.logs_dir, worker.topology_id, worker.port),
                self.logs_dir / worker_output_name(worker.topology_id, worker.port)]
        cause = last_exception_line(logs) or "no exception in its log"
        log.warning("worker %d of %s on port %d exited %s%s: %s (see %s); "
                    "relaunching it", worker.index, worker.topology_id, worker.port, exit_text(code),
                    f", {streak} times in a row before its first heartbeat" if streak > 1 else "",
                    cause, logs[0])

    def _note_refused_launch(self, topology_id: str, index: int, port: int, why: str) -> None:
        """A worker its interpreter cannot run (`worker.python`): logged at ERROR and
        recorded among the topology's errors, which `stats`, the UI and `submit
        --wait` show, the first time and every EXIT_REPORT_EVERY-th round in a row
        after. It was logged every monitor round, and shown nowhere else: the
        submitter waited for workers that never came."""
        previous, streak = self._refused_streaks.get(port, (topology_id, 0))
        streak = streak + 1 if previous == topology_id else 1
        self._refused_streaks[port] = (topology_id, streak)
        if not _worth_saying(streak):
            return
        text = f"cannot launch worker {index} of {topology_id} on port {port}: {why}"
        log.error("%s%s", text, f" ({streak} rounds in a row)" if streak > 1 else "")
        try:
            self.state.report_error(topology_id, "worker", text, host=self.host, port=port)
        except Exception as exc:  # ZooKeeper away: the log has it
            log.info("the error is not in ZooKeeper (stats, the UI): %s", exc)

    def _restart_dead_workers(self) -> None:
        """Without ZooKeeper: keep the current assignment alive. Not a worker that
        exited 0: it stopped itself (its slot is another's now, or its topology was
        rebalanced or killed), and relaunching it from its launch file ran a
        duplicate of a worker placed elsewhere, spouts active (a cluster audit). It
        waits for ZooKeeper to say whether the slot is still its (`reconcile`)."""
        for port, worker in list(self.workers.items()):
            if worker.process.poll() == 0:
                continue
            reason = self._needs_restart(worker)
            if reason:
                self._note_exit(worker)
                self._count_restart(worker)
                launch = json.loads((worker.directory / "launch.json").read_text())
                self._stop_worker(port, reason, force=True)
                self._spawn(port, worker.topology_id, worker.index, worker.directory, launch, reason)

    def _count_restart(self, worker: RunningWorker) -> None:
        """A relaunch after the worker died or hung; not after it stopped itself
        (exit 0: a rebalance took its executors, its slot stays)."""
        if worker.process.poll() == 0:
            return
        key = (worker.topology_id, worker.port)
        self._restarts[key] = self._restarts.get(key, 0) + 1

    def _needs_restart(self, worker: RunningWorker) -> str | None:
        code = worker.process.poll()
        if code is not None:
            return f"worker exited {exit_text(code)}"
        heartbeat = worker.directory / "heartbeat"
        now = time.time()
        if heartbeat.exists():
            age = now - heartbeat.stat().st_mtime
            if age > self.conf["supervisor.worker.timeout.secs"]:
                return f"no heartbeat for {age:.0f} s"
        elif now - worker.started_at > self.conf["supervisor.worker.start.timeout.secs"]:
            return "never heartbeat after start"
        return None

    def _launch(self, port: int, topology_id: str, index: int, assignment: dict[str, Any],
                record: dict[str, Any], reason: str) -> None:
        code_dir = self.local_dir / "stormdist" / topology_id
        if not (code_dir / MARKER_NAME).exists():
            data = self.state.get_code(topology_id)
            if data is None:
                log.warning("no code for topology %s yet", topology_id)
                return
            unpack_package(data, code_dir)
        directory = self.local_dir / "workers" / f"{topology_id}-{port}"
        directory.mkdir(parents=True, exist_ok=True)
        conf = worker_conf(record, self.conf)
        # A pinned worker's CPU is its slot's position among the worker slots of
        # every supervisor on this machine, not only ours (worker.cpu.pinning).
        conf.pop(HOST_SLOT_KEY, None)
        if conf.get("worker.cpu.pinning"):
            slots = self._host_slots()
            conf[HOST_SLOT_KEY] = host_slot(self.id, port, slots)
            log.info("worker on port %d: slot %d of the %d worker ports of this host's "
                     "supervisors (%s)", port, conf[HOST_SLOT_KEY][0] + 1, len(slots),
                     ", ".join(f"{p}" for p, _ in slots))
        # The topology's transport secrets, stored at submit (docs/security.md), and
        # its workers' own ZooKeeper credentials, which then replace the daemon's.
        secrets = self.state.get_secrets(topology_id) or {}
        zookeeper_auth = secrets.pop("zookeeper_auth", None)
        if zookeeper_auth:
            for prefix in ("storm.zookeeper.auth.", "storm.zookeeper.topology.auth."):
                conf[prefix + "scheme"], conf[prefix + "payload"] = zookeeper_auth
        launch = {
            "conf": conf,
            "topology_id": topology_id,
            "supervisor": self.id,
            "host": self.host,
            "port": port,
            "worker_index": index,
            "status": record.get("status", "active"),
            "assignment": assignment,
            "topology_file": str(code_dir / record["topology_file"]),
            "topology_class": record["topology_class"],
            "heartbeat_file": str(directory / "heartbeat"),
            "log_file": str(worker_log_path(self.logs_dir, topology_id, port)),
        }
        launch["secrets"] = secrets or None
        # It holds the topology's secrets (and ZooKeeper credentials): owner only.
        fd = os.open(directory / "launch.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(launch))
        self._spawn(port, topology_id, index, directory, launch, reason)

    def _spawn(self, port: int, topology_id: str, index: int, directory: Path,
               launch: dict[str, Any], reason: str) -> None:
        try:
            python = worker_python(launch["conf"])
        except LaunchError as exc:  # tried again each round: the interpreter may appear
            self._note_refused_launch(topology_id, index, port, str(exc))
            return
        self._refused_streaks.pop(port, None)
        (directory / "heartbeat").unlink(missing_ok=True)
        # The worker logs to its rotated .log itself; stdout/stderr are for what
        # bypasses logging (storm_zmq.logs), kept apart in a small .out file.
        log_file = open_worker_output(self.logs_dir, topology_id, port,
                                      int(self.conf["worker.log.max.bytes"]))
        process = subprocess.Popen(
            [python, "-m", "storm_zmq.cluster.worker",
             "--launch-file", str(directory / "launch.json"),
             "--restarts", str(self._restarts.get((topology_id, port), 0))],
            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, cwd=str(directory),
            env=worker_environment(own_path=False),
        )
        log_file.close()
        _write_pid_file(directory, process.pid)
        self.workers[port] = RunningWorker(topology_id, index, port, process, time.time(), directory,
                                           launch["conf"].get(HOST_SLOT_KEY))
        if reason == "assigned":
            log.info("launched worker %d of %s on port %d (pid %d)", index, topology_id, port,
                     process.pid)
        else:  # the reason is the previous worker's fate, not this one's
            log.info("launched worker %d of %s on port %d (pid %d) in place of the previous "
                     "one (%s)", index, topology_id, port, process.pid, reason)

    def _stop_worker(self, port: int, reason: str, force: bool = False) -> None:
        worker = self.workers.pop(port)
        process = worker.process
        if process.poll() is None:
            log.info("stopping worker %d of %s on port %d: %s", worker.index, worker.topology_id,
                     port, reason)
            grace = 0 if force else self.conf["supervisor.worker.shutdown.sleep.secs"]
            if stop_processes([process], grace):
                log.warning("worker %d of %s on port %d (pid %d) did not exit 10 s after SIGKILL",
                            worker.index, worker.topology_id, port, process.pid)
        (worker.directory / PID_FILE).unlink(missing_ok=True)

    def _adopt_workers(self) -> None:
        """Take on the workers a previous run of this supervisor left running
        (`shutdown`, or a crash): the first round then keeps those whose slot is
        still theirs. One on a port this run does not have (its
        `supervisor.slots.ports` changed) is stopped now: it holds a port that is
        not this supervisor's to give."""
        found = find_workers(self.local_dir / "workers")
        live = {worker.directory for worker in found}
        for pid_file in (self.local_dir / "workers").glob(f"*/{PID_FILE}"):
            if pid_file.parent not in live:
                code = exit_code(pid_file.parent / EXIT_FILE, _read_pid(pid_file))
                log.info("worker %s exited %s while no supervisor ran on this storm.local.dir",
                         pid_file.parent.name, exit_text(code))
                pid_file.unlink(missing_ok=True)
        unwanted: list[tuple[FoundWorker, str]] = []
        for worker in found:
            try:
                launch = json.loads((worker.directory / "launch.json").read_text())
                port = int(launch["port"])
                adopted = RunningWorker(launch["topology_id"], int(launch["worker_index"]), port,
                                        worker.process, worker.process.started_at,
                                        worker.directory, launch["conf"].get(HOST_SLOT_KEY))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                unwanted.append((worker, f"its launch file cannot be read ({exc})"))
                continue
            if port not in self.ports:
                unwanted.append((worker, f"port {port} is not one of this supervisor's slots "
                                         f"{self.ports}"))
                continue
            if port in self.workers:
                unwanted.append((worker, f"another worker holds port {port}"))
                continue
            self.workers[port] = adopted
            _write_pid_file(worker.directory, worker.process.pid)
            if worker.restarts:
                self._restarts[(adopted.topology_id, port)] = worker.restarts
            log.info("adopted worker %d of %s on port %d (pid %d), left running by a previous "
                     "run of this supervisor", adopted.index, adopted.topology_id, port,
                     worker.process.pid)
        for worker, reason in unwanted:
            log.info("stopping worker %s (pid %d) left by a previous run of this supervisor: %s",
                     worker.directory.name, worker.process.pid, reason)
        stop_processes([worker.process for worker, _ in unwanted],
                       self.conf["supervisor.worker.shutdown.sleep.secs"])
        for worker, _ in unwanted:
            _remove_pid_file(worker.directory, worker.process.pid)

#: Settings of this host that win over the topology's: how it reaches ZooKeeper,
#: where it keeps things, how its workers run, its slots, its transport settings.
HOST_PREFIXES = ("storm.zookeeper.", "storm.local.", "worker.", "storm.messaging.",
                 "supervisor.slots.ports",
                 # the grace this supervisor gives a starting worker, by which the
                 # worker times its "still waiting for initialize()" notices
                 "supervisor.worker.start.timeout.secs")
#: Host settings that a topology's own setting overrides (`worker_conf`).
TOPOLOGY_MAY_CHOOSE = ("storm.messaging.", "worker.python")


def _try_lock(local_dir: Path) -> tuple[int | None, str]:
    """The supervisor's flock on `local_dir`: (its descriptor, "") when taken, (None,
    the holder's pid as it wrote it) when another process holds it."""
    path = local_dir / "supervisor" / "lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        return None, holder
    return fd, ""


def _write_pid_file(directory: Path, pid: int) -> None:
    """Whole or not at all (a supervisor killed while writing it left an empty one)."""
    part = directory / f"{PID_FILE}.part"
    part.write_text(str(pid))
    os.replace(part, directory / PID_FILE)


def _read_pid(path: Path) -> int | None:
    """The pid a pid file names; None when it is gone or not a number."""
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def _remove_pid_file(directory: Path, pid: int) -> None:
    """Unless it names another process by now (its supervisor relaunched the worker)."""
    path = directory / PID_FILE
    if _read_pid(path) == pid:
        with contextlib.suppress(OSError):
            path.unlink()


class NoLocalDir(Exception):
    """`storm.local.dir` has no supervisor's files: mistyped, or never used."""


@contextlib.contextmanager
def local_dir_lock(local_dir: Path) -> Iterator[str | None]:
    """The supervisor's lock on `local_dir`, held while the body runs when it is free
    (yields None: no supervisor can start on it meanwhile); when a supervisor holds
    it, yields that supervisor's pid and holds nothing."""
    fd, holder = _try_lock(local_dir)
    if fd is None:
        yield holder
        return
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield None
    finally:
        os.close(fd)


def kill_workers(conf: dict[str, Any], warn: Callable[[str], None]) -> list[str]:
    """Stop the workers of this host's supervisor (its `storm.local.dir`), as Storm's
    ``storm kill_workers`` does: they outlive their supervisor, so this is how a host
    is emptied. Gracefully, as a supervisor stops a worker, all at once. `warn` is
    told first when a supervisor runs on the directory (it launches the workers of
    its slots again). A line per worker."""
    local_dir = Path(conf["storm.local.dir"]).resolve()
    if not (local_dir / "supervisor" / "id").exists():
        raise NoLocalDir(f"storm.local.dir {local_dir} is not a supervisor's (no supervisor/id "
                         "in it): give the storm.local.dir of the supervisor whose workers to stop")
    with local_dir_lock(local_dir) as holder:
        if holder is not None:
            warn(f"the supervisor (pid {holder}) running on this storm.local.dir launches the "
                 "workers of its slots again: stop it first to empty this host")
        found = find_workers(local_dir / "workers")
        stuck = stop_processes([worker.process for worker in found],
                               float(conf["supervisor.worker.shutdown.sleep.secs"]))
    done = []
    for worker in found:
        if worker.process in stuck:
            done.append(f"worker {worker.directory.name} (pid {worker.process.pid}) did not exit "
                        "10 s after SIGKILL")
            continue
        _remove_pid_file(worker.directory, worker.process.pid)
        done.append(f"stopped worker {worker.directory.name} (pid {worker.process.pid}): "
                    f"exited {exit_text(worker.process.wait(0))}")
    return done


def worker_conf(record: dict[str, Any], host_conf: dict[str, Any]) -> dict[str, Any]:
    """A worker's config: the topology's, under this host's `HOST_PREFIXES`
    settings, except the ``storm.messaging.*`` settings the topology chose itself
    (its record's ``conf_set``: its config and its submit's ``-o``). Every worker of
    a topology must speak the same transport, with the same curve or authentication
    and frame limits, so a topology submitted with ``-o
    storm.messaging.transport=tcp`` runs on tcp whatever the supervisors say; before,
    the hosts' settings, their defaults included, always won, and it ran on zmq.
    So with ``worker.python``: the host's is the default of its workers' interpreter,
    and a topology that names one (a numpy topology on CPython, another on PyPy) gets
    it. ``topology.workers`` is the topology's number of workers now (after a
    rebalance)."""
    chosen = set(record.get("conf_set", ()))
    host = {key: value for key, value in host_conf.items()
            if key.startswith(HOST_PREFIXES)
            and not (key.startswith(TOPOLOGY_MAY_CHOOSE) and key in chosen)}
    conf = {**record["conf"], **host}
    if record.get("num_workers") is not None:  # submit's -w, or a rebalance's -n, as in Storm
        conf["topology.workers"] = int(record["num_workers"])
    return conf


def last_exception_line(paths: list[Path]) -> str | None:
    """``Type: message`` of the last exception in the ends of these log files (the
    most recently written first), whatever prefix a log line puts before it."""
    existing = [p for p in paths if p.exists()]
    for path in sorted(existing, key=lambda p: p.stat().st_mtime, reverse=True):
        with open(path, "rb") as stream:
            stream.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
            lines = stream.read().decode(errors="replace").splitlines()
        for line in reversed(lines):
            match = _EXCEPTION_LINE.search(line)
            if match:
                return f"{match.group(1)}: {match.group(2).strip()}"
    return None


def settings_the_hosts_decide(chosen: Iterable[str]) -> list[str]:
    """Of the settings a topology chose (its config, submit's ``-o``), those its
    workers will not get in a cluster: how a host runs its worker processes
    (``worker.*``, its slots) is each supervisor's own storm.yaml, whatever the
    topology says (`worker_conf`), so `submit` names them rather than letting them go
    unused in silence (some, like ``worker.shared.executor.thread``, do apply in
    local mode). ``storm.messaging.*`` and ``worker.python`` are the topology's when it
    chose them;
    ``storm.zookeeper.*`` and ``storm.local.*`` are the hosts' too, but a submit's
    own ``-o`` of those is for reaching the cluster, not for the workers."""
    decided = tuple(prefix for prefix in HOST_PREFIXES
                    if not prefix.startswith(("storm.zookeeper.", "storm.local.")))
    return sorted(key for key in chosen
                  if key.startswith(decided) and not key.startswith(TOPOLOGY_MAY_CHOOSE))


def _cpu_text(cpu: int | None) -> str:
    return "no CPU of its own" if cpu is None else f"CPU {cpu}"
