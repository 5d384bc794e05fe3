"""A worker in cluster mode: `python -m storm_zmq.cluster.worker ...`, started by a
supervisor.

The worker starts from the assignment file its supervisor wrote, so it needs no
ZooKeeper to run: the data plane keeps moving tuples while ZooKeeper is down. A
background thread talks to ZooKeeper when it can: it writes the heartbeat (with the
stats, and the marker of its slot's placement: cluster/heartbeat.py) under
/workerbeats, follows the topology's status (activate, deactivate, killed) and its
assignment (peers that moved get new connections; a worker whose slot was taken
away stops). The local heartbeat file, touched from the worker's
main loop, is what the supervisor watches to restart a hung worker.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import queue
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from storm_zmq.cluster.heartbeat import worker_beat
from storm_zmq.cluster.log_levels import LogLevels, python_logger
from storm_zmq.cluster.processes import EXIT_FILE, record_exit
from storm_zmq.cluster.state import ClusterState, worker_zookeeper_conf
from storm_zmq.logs import configure_worker_logging
from storm_zmq.portable import format_exception_only
from storm_zmq.runtime.assignment import WorkerSlot
from storm_zmq.runtime.worker import Worker
from storm_zmq.signals import on_signals

log = logging.getLogger(__name__)


def slots_of(assignment: dict[str, Any]) -> list[tuple[str, str, int]]:
    """The (supervisor, host, port) of each worker index of a stored assignment."""
    return [(s, h, int(p)) for s, h, p in assignment["slots"]]


def executor_layout(assignment: dict[str, Any]) -> list[Any]:
    """Which worker runs which executor, of a stored assignment: what a rebalance
    changes and a repair (a worker moved to another slot) does not."""
    return list(assignment["assignment"]["executors"])


class ZooKeeperControl:
    """`WorkerControl` for cluster mode (see the module docstring)."""

    def __init__(
        self, conf: dict[str, Any], topology_id: str, supervisor: str, host: str, port: int,
        heartbeat_file: Path, status: str, assignment: dict[str, Any], restarts: int = 0,
    ) -> None:
        self.conf = conf
        self.restarts = restarts
        self.topology_id = topology_id
        self.supervisor = supervisor
        self.host = host
        self.port = port
        self.heartbeat_file = heartbeat_file
        self.worker: Worker | None = None
        self._commands: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._status = status
        self._slots = slots_of(assignment)
        self._layout = executor_layout(assignment)
        self._stats: dict[str, Any] | None = None
        self._stats_time = time.time()
        self._stopping = threading.Event()
        self._state: ClusterState | None = None
        self._interval = float(conf["worker.heartbeat.frequency.secs"])
        self._zk_down_logged = False
        self._ready = False
        self._log_levels = LogLevels()  # storm-zmq set_log_level's requests
        self._thread = threading.Thread(target=self._loop, name="zookeeper", daemon=True)

    # -- WorkerControl ----------------------------------------------------------------

    def poll(self, timeout: float) -> str | None:
        try:
            return self._commands.get(timeout=timeout)
        except queue.Empty:
            return None

    def command(self, command: str) -> None:
        self._commands.put(command)

    def ready(self, worker: int) -> None:
        self._ready = True
        self._touch()
        if self._status == "active":
            self._commands.put("activate")
        self._thread.start()

    def report_stats(self, worker: int, stats: dict[str, Any]) -> None:
        # complete-latency samples are for the local runner's percentiles; the
        # heartbeat carries the sums and counts only
        for entry in stats.get("components", {}).values():
            entry.pop("latencies_ms", None)
            entry.pop("latency_runs", None)
        stats["restarts"] = self.restarts  # its supervisor's count, for stats and the UI
        self._stats, self._stats_time = stats, time.time()
        if self._ready:  # the heartbeat file says "it ran" to the supervisor (its exit streaks)
            self._touch()

    def report_error(self, worker: int, text: str) -> None:
        """Into ZooKeeper, for `stats` and the UI. A worker that fails before it is
        ready (a component raising in `initialize()`) has no ZooKeeper session yet:
        it opens one for this, or its error showed nowhere but in its log, while its
        supervisor relaunched it every few seconds (a cluster audit)."""
        state, own = self._state, None
        try:
            if state is None:
                state = own = ClusterState(worker_zookeeper_conf(self.conf)).start(
                    timeout=self._interval * 2)
            # "component 'name' task 3 failed: ..." names the component
            component = text.split("'")[1] if text.startswith("component '") else "worker"
            state.report_error(self.topology_id, component, text, host=self.host,
                               port=self.port)
        except Exception as exc:  # ZooKeeper down: the worker log has it anyway
            log.info("the error is not in ZooKeeper (stats, the UI): %s", exc)
        finally:
            if own is not None:
                own.stop()

    def stopped(self, worker: int, stats: dict[str, Any]) -> None:
        self._stopping.set()

    # -- ZooKeeper side -------------------------------------------------------------

    def _touch(self) -> None:
        self.heartbeat_file.write_text(str(time.time()))

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                if self._state is None:
                    self._state = ClusterState(worker_zookeeper_conf(self.conf)).start(
                        timeout=self._interval * 5)
                self._sync(self._state)
                if self._zk_down_logged:
                    log.info("ZooKeeper is back")
                    self._zk_down_logged = False
            except Exception as exc:
                if not self._zk_down_logged:
                    log.warning("ZooKeeper unreachable (%s); the worker keeps running with "
                                "the assignment it has", exc)
                    self._zk_down_logged = True
            self._stopping.wait(self._interval)
        if self._state is not None:
            self._state.stop()

    def _set_log_levels(self, requests: dict[str, Any]) -> None:
        changes = self._log_levels.update(requests, time.monotonic(),
                                          lambda name: python_logger(name).level, time.time())
        for change in changes:
            python_logger(change.logger).setLevel(change.level)
            # said whatever the levels now are (ROOT=WARN would hide an INFO line)
            said = max(logging.INFO, log.getEffectiveLevel())
            log.log(said, "set_log_level: logger %s %s%s", change.logger,
                    "" if change.reset else "at ", change.why)

    def _sync(self, state: ClusterState) -> None:
        assignment = state.get_assignment(self.topology_id)
        if assignment is None:  # killed: a heartbeat now would outlive the topology
            log.info("topology %s has no assignment any more: stopping", self.topology_id)
            self._commands.put("stop")
            return
        if (executor_layout(assignment) != self._layout
                or len(slots_of(assignment)) != len(self._slots)):
            # A rebalance: this process's executors are not the topology's any more,
            # or its peers are more or fewer (the peers of a running worker may move,
            # but not change in number). Its supervisor starts the slot's
            # worker again on the new assignment (no heartbeat from this one, which
            # nimbus would take for the new worker's).
            log.info("topology %s was rebalanced: stopping, to start again on the new "
                     "assignment", self.topology_id)
            self._commands.put("stop")
            return
        slots = slots_of(assignment)
        index = self.worker.index if self.worker is not None else -1
        if index >= len(slots) or (slots[index][0], slots[index][2]) != (self.supervisor, self.port):
            log.info("this slot is no longer assigned worker %d: stopping", index)
            self._commands.put("stop")
            return
        if self._stats is not None:
            # The marker of this slot in the assignment just checked: nimbus takes
            # the heartbeat for this placement's worker (cluster/heartbeat.py).
            state.heartbeat(self.topology_id, self.host, self.port,
                            worker_beat(self._stats_time, assignment["launched"][index],
                                        self._stats))
        record = state.get_topology(self.topology_id)
        status = record["status"] if record else "killed"
        if status != self._status:
            if status == "active":
                self._commands.put("activate")
            elif self._status == "active":
                self._commands.put("deactivate")
            self._status = status
        if slots != self._slots and self.worker is not None:
            self._slots = slots
            self.worker.update_peers([WorkerSlot(h, p) for _, h, p in slots])
        requests = (record or {}).get("log_levels")
        self._set_log_levels(requests if isinstance(requests, dict) else {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="storm_zmq.cluster.worker")
    parser.add_argument("--launch-file", required=True,
                        help="what the supervisor wrote: conf, topology record, assignment, slot")
    parser.add_argument("--restarts", type=int, default=0,
                        help="how often the supervisor relaunched this slot's worker before")
    args = parser.parse_args(argv)
    launch = json.loads(Path(args.launch_file).read_text())
    conf: dict[str, Any] = launch["conf"]
    # The rotated <topology>-<port>.log; print() and sys.stderr are captured into it
    # (the process's own stdout/stderr are the supervisor's .out file: storm_zmq.logs).
    log_file = launch.get("log_file")
    configure_worker_logging(
        conf, Path(log_file) if log_file else None,
        f"{launch['topology_id']} worker-{launch['worker_index']}",
        stderr=not log_file, capture_stdio=bool(log_file))
    if not log_file:
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    executors = launch["assignment"]["assignment"]["executors"]
    log.info("worker %d of %s starting on %s:%d (pid %d), components: %s",
             launch["worker_index"], launch["topology_id"], launch["host"], launch["port"],
             os.getpid(), ", ".join(sorted({c for _, c, _, w in executors
                                            if w == launch["worker_index"]})))
    control = ZooKeeperControl(
        conf, launch["topology_id"], launch["supervisor"], launch["host"], launch["port"],
        Path(launch["heartbeat_file"]), launch["status"], launch["assignment"],
        restarts=args.restarts,
    )
    # The supervisor stops a worker with SIGTERM: stop gracefully (cleanup() runs).
    # (In a thread of its own: a queue put in the handler itself could wait for a
    # lock the main thread holds, storm_zmq.signals.)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with on_signals([signal.SIGTERM], lambda: control.command("stop")):
        code = _run(launch, conf, control)
        sys.stdout.flush()
        sys.stderr.flush()
        # for a supervisor that adopted this worker (not its child: it cannot wait for it)
        with contextlib.suppress(OSError):
            record_exit(Path(args.launch_file).parent / EXIT_FILE, code)
        os._exit(code)  # (inside: a SIGTERM until here is still a command)


def _run(launch: dict[str, Any], conf: dict[str, Any], control: ZooKeeperControl) -> int:
    """Run the worker; its exit code."""
    spec = {
        "conf": conf,
        "worker_index": launch["worker_index"],
        "assignment": launch["assignment"]["assignment"],
        "topology_file": launch["topology_file"],
        "topology_name": launch["topology_class"],
        "secrets": launch.get("secrets"),
    }
    worker = Worker(spec, control)
    control.worker = worker
    try:
        return worker.run()
    except BaseException as exc:
        log.exception("worker %d failed to start", launch["worker_index"])
        # a port it cannot bind, a topology that does not load: for stats and the UI too
        control.report_error(launch["worker_index"],
                             f"worker {launch['worker_index']} failed to start: "
                             + format_exception_only(exc).strip())
        return 1


if __name__ == "__main__":
    main()
