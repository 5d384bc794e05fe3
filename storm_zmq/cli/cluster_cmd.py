"""Cluster mode commands: the daemons (`nimbus`, `supervisor`) and `kill_workers`,
Storm's topology commands (`submit`, `kill`, `list`, `activate`, `deactivate`, `rebalance`,
`set_log_level`), and
`cluster`, what Storm's UI opens with (nimbuses, supervisors, slots used and free).

Every command reaches ZooKeeper through `storm_zmq.cluster.state`; an unreachable
ZooKeeper is one clear error line and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from storm_zmq.cli import UsageError, add_config_arguments, load_config_from_args, topology_file_arg
from storm_zmq.cluster.overview import ClusterOverview, read_overview
from storm_zmq.cluster.requests import (
    NO_NIMBUS,
    ActionRefused,
    Outcome,
    kill_request,
    rebalance_request,
    seconds,
    status_request,
)
from storm_zmq.config import ConfigError, parse_override, validate_topology_conf
from storm_zmq.metrics.summary import TopologyLayout
from storm_zmq.signals import on_signals


def _seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, at least 0."""
    try:
        return seconds(text, "")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}") from None


def add_parser(subparsers: Any) -> None:
    def command(name: str, help: str, func: Any) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(name, help=help, description=help)
        add_config_arguments(parser)
        parser.set_defaults(func=func)
        return parser

    command("nimbus", "run a nimbus daemon (several may run; one leads)", run_nimbus)
    command("supervisor", "run this host's supervisor daemon (its workers outlive it; "
            "it adopts them when it starts again)", run_supervisor)
    command("kill_workers", "stop the workers of this host's supervisor (its storm.local.dir), "
            "which outlive it (Storm's kill_workers)", run_kill_workers)
    submit = command("submit", "submit a topology to the cluster", submit_topology)
    submit.add_argument("topology_file", metavar="TOPOLOGY_FILE", type=topology_file_arg,
                        help="a topology file, or NAME for topologies/NAME.py")
    submit.add_argument("-n", "--name", help="topology name (default: the Topology's name)")
    submit.add_argument("-w", "--workers", type=int, help="workers (default: topology.workers)")
    submit.add_argument("--class", dest="topology_class",
                        help="the Topology class when the file defines several")
    submit.add_argument("--wait", type=_seconds, default=0.0, metavar="SECS",
                        help="then wait up to SECS for every worker to run, showing n/m "
                             "ready (exit 1 if they do not; default: do not wait)")
    kill = command("kill", "kill a topology: deactivate, wait, remove", kill_topology)
    kill.add_argument("name")
    kill.add_argument("-w", "--wait", type=_seconds, default=None, metavar="SECS",
                      help="seconds between deactivation and removal, counted by the "
                           "leader nimbus from when it sees the kill "
                           "(default: topology.message.timeout.secs)")
    command("list", "list the topologies", list_topologies)
    cluster = command("cluster", "show the nimbuses, the supervisors and their worker slots "
                      "(used, free, by which topology)", show_cluster)
    cluster.add_argument("--json", action="store_true",
                         help="print it as JSON, as the UI's /api/cluster serves it")
    for name, status in (("activate", "active"), ("deactivate", "inactive")):
        p = command(name, f"{name} a topology's spouts", set_status)
        p.add_argument("name")
        p.set_defaults(status=status)
    rebalance = command("rebalance", "spread a topology over the cluster again", rebalance_topology)
    rebalance.add_argument("name")
    rebalance.add_argument("-w", "--wait", type=_seconds, default=None, metavar="SECS",
                           help="seconds between deactivation and the reassignment, "
                                "counted by the leader nimbus from when it sees the "
                                "request (default: topology.message.timeout.secs)")
    rebalance.add_argument("-n", "--num-workers", type=int, default=None, metavar="WORKERS",
                           help="the number of workers afterwards (default: as now)")
    rebalance.add_argument("-e", "--executors", action="append", default=[],
                           metavar="COMPONENT=N",
                           help="a component's number of executors afterwards, at most its "
                                "tasks (repeatable; Storm's -e)")
    levels = command("set_log_level", "set loggers of a running topology's workers to another "
                     "level, for a while or until reset (Storm's set_log_level)", set_log_level)
    levels.add_argument("name")
    levels.add_argument("-l", "--level", action="append", default=[], metavar="LOGGER=LEVEL[:SECS]",
                        help="e.g. ROOT=DEBUG:30 or storm_zmq.component.count_bolt=WARN; ROOT is "
                             "the root logger; SECS 0 or none: until reset (repeatable)")
    levels.add_argument("-r", "--reset", action="append", default=[], metavar="LOGGER",
                        help="put LOGGER back to the level it had (repeatable)")


def quiet_kazoo() -> None:
    """For a one-shot command: ZooKeeper trouble is its one error line, not kazoo's
    warning per failed connect attempt ("Connection dropped: ...", "Failed connecting
    to Zookeeper ...") printed before it."""
    logging.getLogger("kazoo").setLevel(logging.ERROR)


def _state(conf: dict[str, Any]) -> Any:
    from storm_zmq.cluster.state import ClusterState, ClusterUnavailable

    quiet_kazoo()
    try:
        return ClusterState(conf).start(timeout=conf["storm.zookeeper.connection.timeout"] / 1000)
    except ClusterUnavailable as exc:
        raise UsageError(str(exc)) from None


@contextlib.contextmanager
def cluster_session(args: argparse.Namespace) -> Iterator[Any]:
    """The cluster state for a one-shot command, closed afterwards. What the cluster
    refuses (no credentials for a protected node, a connection lost half-way) is
    one error line, like an unreachable ZooKeeper."""
    from storm_zmq.cluster.state import ClusterStateError

    state = _state(load_config_from_args(args))
    try:
        yield state
    except ClusterStateError as exc:
        raise UsageError(str(exc)) from None
    finally:
        state.stop()


def _storable_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """The topology config as the record keeps it (JSON in ZooKeeper, credentials
    left out), checked before anything is uploaded: a value JSON cannot hold would
    otherwise fail the last write and leave the code and secrets behind."""
    storable = {k: v for k, v in conf.items() if k not in _PRIVATE_KEYS}
    for key, value in storable.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"topology config {key!r}: {value!r} cannot be stored in "
                             f"ZooKeeper, which keeps JSON ({exc})") from None
    return storable


def _daemon(args: argparse.Namespace, factory: Any) -> int:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    conf = load_config_from_args(args)
    from storm_zmq.cluster.state import ClusterUnavailable
    from storm_zmq.cluster.supervisor import LocalDirInUse, UnresolvableHostname

    daemon = factory(conf)

    def stop() -> None:
        daemon.stopping.set()
        if hasattr(daemon, "state") and factory.__name__ == "Nimbus":
            daemon.state.stop()  # wakes a standby blocked in the election

    try:
        with on_signals([signal.SIGTERM, signal.SIGINT], stop):
            return daemon.run()
    except (ClusterUnavailable, LocalDirInUse, UnresolvableHostname) as exc:
        raise UsageError(str(exc)) from None


def run_nimbus(args: argparse.Namespace) -> int:
    from storm_zmq.cluster.nimbus import Nimbus

    return _daemon(args, Nimbus)


def run_supervisor(args: argparse.Namespace) -> int:
    from storm_zmq.cluster.supervisor import Supervisor

    return _daemon(args, Supervisor)


def run_kill_workers(args: argparse.Namespace) -> int:
    """No ZooKeeper needed: the workers are found by their processes."""
    from storm_zmq.cluster.supervisor import NoLocalDir, kill_workers

    conf = load_config_from_args(args)
    try:
        stopped = kill_workers(conf, warn=lambda text: print(f"note: {text}", file=sys.stderr))
    except NoLocalDir as exc:
        raise UsageError(str(exc)) from None
    for line in stopped:
        print(line)
    print(f"{len(stopped)} worker(s) stopped under {conf['storm.local.dir']}")
    return 0


#: What kill, rebalance and submit add when no nimbus leads: they only record a
#: request in ZooKeeper, which the leading nimbus carries out.


def _nimbus_leads(state: Any) -> bool:
    """Whether a nimbus holds the leadership (its node in the election)."""
    return state.leader() is not None


def _warn_without_nimbus(leads: bool) -> None:
    if not leads:
        print(f"warning: {NO_NIMBUS}", file=sys.stderr)


def _warn_of_slots(overview: ClusterOverview, workers: int, name: str) -> None:
    for warning in overview.slot_warnings(name, workers):
        print(f"warning: {warning}", file=sys.stderr)


def _warn_of_settings_the_hosts_decide(chosen: list[str], name: str) -> None:
    from storm_zmq.cluster.supervisor import settings_the_hosts_decide

    unused = settings_the_hosts_decide(chosen)
    if unused:
        print(f"warning: {name!r} sets {', '.join(unused)}, which each supervisor takes from "
              "its own storm.yaml (how its host runs workers): the topology's value is not "
              "used in a cluster", file=sys.stderr)


def _named(state: Any, name: str) -> list[tuple[str, dict[str, Any]]]:
    """Every topology called `name`, killed ones too: (id, record)."""
    found = []
    for topology_id in state.topologies():
        record = state.get_topology(topology_id)
        if record and record["name"] == name:
            found.append((topology_id, record))
    return found


def _find(state: Any, name: str, killed_too: bool = False) -> tuple[str, dict[str, Any]]:
    """The live topology called `name`; with `killed_too`, a killed one still
    waiting for its removal when no live one has the name."""
    named = sorted(_named(state, name), key=lambda found: found[1]["status"] == "killed")
    if named and (killed_too or named[0][1]["status"] != "killed"):
        return named[0]
    if named:  # `list` shows it, as killed: "no running topology" read as a contradiction
        raise UsageError(f"topology {name!r} was killed and is being removed (see storm-zmq list)")
    raise UsageError(f"no running topology named {name!r} (see storm-zmq list)")


#: Credentials never stored in the (world-readable) topology record.
_PRIVATE_KEYS = ("storm.zookeeper.auth.payload", "storm.zookeeper.topology.auth.payload")


def _store_secrets(state: Any, topology_id: str, topology_conf: dict[str, Any]) -> None:
    """Make the topology's transport secrets (docs/security.md) and store them where
    only holders of the ZooKeeper credentials can read them, with the workers' own
    ZooKeeper credentials (storm.zookeeper.topology.auth.*) if any. Done before the
    topology record exists, so no supervisor ever sees a topology without them."""
    from storm_zmq.cluster.state import ClusterStateError, zookeeper_auth
    from storm_zmq.messaging.auth import TopologySecrets

    try:
        topology_auth = zookeeper_auth(topology_conf, "storm.zookeeper.topology.auth.")
        secrets: dict[str, Any] = TopologySecrets.generate().to_dict()
        if topology_auth is not None:
            secrets["zookeeper_auth"] = list(topology_auth)
        state.set_secrets(topology_id, secrets, topology_auth=topology_auth)
    except ClusterStateError as exc:
        raise UsageError(f"cannot store the secrets of {topology_id}: {exc}") from None
    authenticated = (topology_conf.get("storm.messaging.zmq.curve")
                     or topology_conf.get("storm.messaging.tcp.authentication"))
    if authenticated and state.auth is None:
        print("warning: storm.zookeeper.auth.* is not set: any ZooKeeper client can read "
              "this topology's transport secrets (docs/security.md)", file=sys.stderr)


def _refuse_taken_name(name: str, topology_id: str, record: dict[str, Any]) -> None:
    """Storm's AlreadyAliveException: a name is taken until nimbus has removed its
    topology, a killed one too. Two topologies of one name would share every
    command that takes the name (`kill`, `logs`, `stats`), and a killed one's
    workers are still draining."""
    if record["status"] != "killed":
        raise UsageError(f"topology {name!r} is already running as {topology_id}; "
                         f"kill it first (storm-zmq kill {name})")
    left = float(record.get("kill_at", 0)) - time.time()
    when = f"in about {left:.0f} s" if left >= 1 else "at nimbus's next round"
    raise UsageError(f"topology {name!r} ({topology_id}) is killed and still draining: nimbus "
                     f"removes it {when}; submit again after that, or remove it now with "
                     f"storm-zmq kill {name} -w 0")


def submit_topology(args: argparse.Namespace) -> int:
    from storm_zmq.cluster.package import PackageError, build_package
    from storm_zmq.cluster.state import ClusterStateError, check_topology_name
    from storm_zmq.runtime.assignment import acker_executors, workers_with_executors
    from storm_zmq.topology import load_topology
    from storm_zmq.topology.definition import with_task_counts
    from storm_zmq.topology.loader import streamparse_leftovers
    from storm_zmq.topology.registrations import (
        REGISTER,
        RegistrationError,
        load_codec,
        topology_registrations,
    )

    conf = load_config_from_args(args)
    print(f"packaging {args.topology_file} ...", file=sys.stderr, flush=True)
    try:
        package = build_package(args.topology_file, args.topology_class)
    except PackageError as exc:
        raise UsageError(str(exc)) from None
    print(f"packaged {len(package.files)} files, {len(package.data):,} bytes", file=sys.stderr,
          flush=True)
    definition = load_topology(args.topology_file, args.topology_class).definition()
    overrides = dict(parse_override(text) for text in args.overrides)
    topology_conf = {**conf, **definition.config, **overrides}
    try:
        warnings = validate_topology_conf(topology_conf, definition, overridden=overrides)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    topology_conf[REGISTER] = topology_registrations(topology_conf, definition)
    for warning in [*warnings, *definition.unreachable_fields(),
                    *streamparse_leftovers(args.topology_file)]:
        print(f"warning: {warning}", file=sys.stderr)
    try:  # imported here as each worker will (the package holds the same files)
        load_codec(topology_conf)
    except RegistrationError as exc:
        raise UsageError(f"topology {definition.name}: {exc}") from None
    definition = with_task_counts(definition, topology_conf)
    name = args.name or definition.name
    try:
        check_topology_name(name)
    except ValueError as exc:
        raise UsageError(f"-n/--name: {exc}") from None
    topology_conf["topology.name"] = name  # as Storm's submit sets it
    workers = args.workers if args.workers is not None else int(topology_conf["topology.workers"])
    if workers < 1:
        raise UsageError(f"-w/--workers must be at least 1, got {workers}")
    useful = workers_with_executors(topology_conf, definition.parallelism, workers)
    if useful < workers:  # a worker with nothing to run would hold a slot (a cluster audit)
        print(f"warning: {name!r} has {useful} executor(s) in all, so {workers} workers would "
              f"leave {workers - useful} with nothing to run: submitting it with {useful}",
              file=sys.stderr)
        workers = useful
    storable_conf = _storable_conf(topology_conf)
    # What this topology chose itself, in its config or with submit's -o (not what
    # the submitter's storm.yaml or the defaults say): its storm.messaging.* choices
    # win over the supervisors' own settings, its worker.* ones do not
    # (storm_zmq.cluster.supervisor.worker_conf), and submit says so.
    conf_set = sorted(key for key in storable_conf if key in definition.config or key in overrides)
    state = _state(conf)
    try:
        with state.name_claimed(name):  # one submit of a name at a time
            for topology_id, record in _named(state, name):
                _refuse_taken_name(name, topology_id, record)
            topology_id = f"{name}-{int(time.time())}"
            print(f"uploading {len(package.data):,} bytes of code ({len(package.files)} files)",
                  file=sys.stderr, flush=True)
            started = time.monotonic()
            _store_secrets(state, topology_id, topology_conf)
            state.put_code(topology_id, package.data)
            print(f"uploaded {len(package.data):,} bytes in {time.monotonic() - started:.1f} s",
                  file=sys.stderr, flush=True)
            state.set_topology(topology_id, {
                "name": name,
                "status": "active",
                "conf": storable_conf,
                "num_workers": workers,
                "ackers": acker_executors(topology_conf, workers),
                "components": {n: [c.par, c.num_tasks] for n, c in definition.components.items()},
                # kinds and edges for `stats` and the UI, without loading the code
                "layout": TopologyLayout.from_definition(definition).to_dict(),
                "topology_file": package.topology_file,
                "topology_class": package.topology_class,
                "launch_time": time.time(),
                "code_sha256": package.sha256,
                # what this topology chose itself (see conf_set above)
                "conf_set": conf_set,
            })
        overview = read_overview(state, leaving_out=topology_id)
    except ClusterStateError as exc:
        raise UsageError(str(exc)) from None
    finally:
        state.stop()
    print(f"submitted topology {name!r} as {topology_id} "
          f"({workers} worker{'' if workers == 1 else 's'})", flush=True)
    _warn_of_slots(overview, workers, name)
    _warn_of_settings_the_hosts_decide(conf_set, name)
    _warn_without_nimbus(overview.leader is not None)
    if args.wait > 0:
        from storm_zmq.cli.progress import wait_for_workers

        with cluster_session(args) as state:
            if not wait_for_workers(state, topology_id, workers, args.wait, sys.stderr):
                print(f"not every worker of {name!r} runs after {args.wait:g} s: see "
                      f"storm-zmq logs {name}, and the supervisors' logs", file=sys.stderr)
                return 1
    return 0


def _update(state: Any, topology_id: str, name: str,
            change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> dict[str, Any]:
    """`state.update_topology` (compare-and-set: nimbus may write the record at the
    same time), with what cannot be done as one error line."""
    try:
        written = state.update_topology(topology_id, change)
    except ActionRefused as exc:
        raise UsageError(str(exc)) from None
    if written is None:
        raise UsageError(f"topology {name!r} was removed meanwhile (see storm-zmq list)")
    return written


def kill_topology(args: argparse.Namespace) -> int:
    outcome, now = Outcome(), time.time()
    with cluster_session(args) as state:
        # A killed topology may be killed again, as in Storm: the new wait replaces
        # the old one (`-w 0` removes a draining topology at nimbus's next round).
        topology_id, _ = _find(state, args.name, killed_too=True)
        _update(state, topology_id, args.name,
                lambda r: kill_request(args.name, topology_id, r, args.wait, now, outcome))
        leads = _nimbus_leads(state)
    print(outcome.message)
    _warn_without_nimbus(leads)
    return 0


def set_status(args: argparse.Namespace) -> int:
    outcome = Outcome()
    with cluster_session(args) as state:
        topology_id, _ = _find(state, args.name)
        _update(state, topology_id, args.name,
                lambda r: status_request(args.name, r, args.status, outcome))
    print(outcome.message)
    return 0


def rebalance_topology(args: argparse.Namespace) -> int:
    """Storm's rebalance: deactivate, wait (in-flight tuples finish), reassign, back to
    the status before. The wait is the leader nimbus's, as `kill`'s: this command
    only records the request (status "rebalancing"), so nothing is left deactivated
    when it is interrupted. A rebalance of a topology already rebalancing replaces
    that request and keeps the status from before it."""
    if args.num_workers is not None and args.num_workers < 1:
        raise UsageError(f"-n/--num-workers must be at least 1, got {args.num_workers}")
    executors = {}
    for text in args.executors:
        component, _, count = text.partition("=")
        if not component or not count.strip().isascii() or not count.strip().isdecimal():
            raise UsageError(f"-e {text}: expected COMPONENT=N, N a whole number of executors")
        executors[component.strip()] = int(count)
    outcome, now = Outcome(), time.time()
    with cluster_session(args) as state:
        topology_id, _ = _find(state, args.name)
        _update(state, topology_id, args.name, lambda r: rebalance_request(
            args.name, r, args.wait, args.num_workers, now, outcome, executors))
        overview = read_overview(state, leaving_out=topology_id)  # its own slots are its to reuse
    print(outcome.message)
    _warn_of_slots(overview, outcome.workers, args.name)
    _warn_without_nimbus(overview.leader is not None)
    return 0


def set_log_level(args: argparse.Namespace) -> int:
    """Storm's set_log_level: the requests go into the topology's record, which every
    worker reads at each heartbeat (storm_zmq.cluster.log_levels)."""
    from storm_zmq.cluster.log_levels import parse_request, request_over

    if not args.level and not args.reset:
        raise UsageError("set_log_level needs -l LOGGER=LEVEL[:SECS] or -r LOGGER")
    try:
        requests = [parse_request(spec) for spec in args.level]
    except ValueError as exc:
        raise UsageError(f"-l {exc}") from None
    now = time.time()
    had: set[str] = set()  # loggers with a request before this one (for -r's message)

    def change(record: dict[str, Any]) -> dict[str, Any]:
        before = record.get("log_levels")
        had.clear()
        had.update(before if isinstance(before, dict) else ())
        levels = {name: request for name, request in
                  (before.items() if isinstance(before, dict) else ())
                  # a timed request long over is dropped (its workers are done with it)
                  if not request_over(request, now - 60) and name not in args.reset}
        for logger, level, secs in requests:
            # "requested" also tells this request from the next one for the logger
            levels[logger] = {"level": level, "timeout_secs": secs, "requested": now}
        return {**record, "log_levels": levels}

    with cluster_session(args) as state:
        topology_id, _ = _find(state, args.name)
        _update(state, topology_id, args.name, change)
    for logger, level, secs in requests:
        print(f"{args.name!r}: logger {logger} at {level} "
              + (f"for {secs:g} s" if secs else "until reset"))
    for logger in args.reset:
        print(f"{args.name!r}: logger {logger} back to the level it had" if logger in had else
              f"{args.name!r}: logger {logger} had no level set (nothing to reset)")
    return 0


def list_topologies(args: argparse.Namespace) -> int:
    waiting = False
    with cluster_session(args) as state:
        rows = []
        for topology_id in state.topologies():
            record = state.get_topology(topology_id)
            if record is None:
                continue
            uptime = time.time() - record["launch_time"]
            # Storm's list shows the workers assigned: a topology waiting for slots
            # (or for a nimbus) has fewer than it asks for, or none
            assignment = state.get_assignment(topology_id)
            assigned = len(assignment["slots"]) if assignment else 0
            workers = str(record["num_workers"])
            if assigned != record["num_workers"]:
                workers, waiting = f"{assigned}/{workers}", True
            rows.append((record["name"], record["status"], workers, f"{uptime:,.0f}s",
                         topology_id))
    if not rows:
        print("no topologies")
        return 0
    header = ("name", "status", "workers", "uptime", "id")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    if waiting:
        print("workers A/N: A assigned of the N it asks for (the rest wait for free slots or "
              "for a nimbus; see storm-zmq cluster and nimbus's log)")
    return 0


def show_cluster(args: argparse.Namespace) -> int:
    from storm_zmq.metrics.text import format_overview

    with cluster_session(args) as state:
        overview: ClusterOverview = read_overview(state)
    if args.json:
        print(json.dumps(overview.to_dict(), indent=2))
    else:
        print(format_overview(overview))
    return 0
