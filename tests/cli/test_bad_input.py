"""Bad user input at every entry of `storm-zmq run`: arguments, storm.yaml, -o
overrides, topology files, busy ports, a component that fails to start.

Each case must exit non-zero (2 for the user's mistakes, 1 for a component that
failed), say what is wrong and where in one line on stderr (no traceback, except a
component's own, which is the user's code), and leave nothing behind: no worker
process alive, every port free. `config` errors are in test_main.py and
tests/test_config.py; the single busy port and an invalid topology through the
whole CLI are in tests/runtime/test_local_mode.py.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storm_zmq.cli.main import main
from tests.messaging.conftest import free_port
from tests.procs import processes

pytestmark = pytest.mark.usefixtures("isolated")

PROJECT = Path(__file__).parents[1] / "runtime" / "project"
WORDCOUNT = PROJECT / "topologies" / "wordcount.py"


def children() -> list[int]:
    """Live child processes of this process (a half-started run would leave some),
    except multiprocessing's resource tracker, which lives as long as we do."""
    return [p.pid for p in processes() if p.ppid == os.getpid() and p.state != "Z"
            and b"resource_tracker" not in p.command]


def one_error_line(err: str, *needles: str) -> str:
    """The single ``storm-zmq: error:`` line of `err`, containing every needle."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("storm-zmq")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def run_in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    before = set(children())
    code = main(argv)
    out, err = capsys.readouterr()
    assert set(children()) <= before, "a process was left behind"
    return code, out, err


# -- arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", str(WORDCOUNT), "--bogus"], "unrecognized arguments: --bogus"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["run"], "the following arguments are required: TOPOLOGY_FILE"),
        (["run", str(WORDCOUNT), "-w", "x"], "argument -w/--workers: invalid int value: 'x'"),
        (["run", str(WORDCOUNT), "-w", "0"], "-w/--workers must be at least 1, got 0"),
        (["run", str(WORDCOUNT), "-w", "-3"], "-w/--workers must be at least 1, got -3"),
        (["run", str(WORDCOUNT), "-t", "soon"], "argument -t/--time: invalid float value: 'soon'"),
        (["run", str(WORDCOUNT), "--transport", "carrier-pigeon"],
         "argument --transport: invalid choice: 'carrier-pigeon'"),
        (["run", "no/such/topology.py"], "topology file not found: "),
        (["run", str(WORDCOUNT.parent)], f"{WORDCOUNT.parent.resolve()} is a directory, not a topology file"),
        (["run", str(WORDCOUNT), "-n", "Nope"], "no topology named 'Nope' (it defines FiniteWordCount)"),
        (["run", str(WORDCOUNT), "--class", "Nope"], "no topology named 'Nope' (it defines FiniteWordCount)"),
        (["run", str(WORDCOUNT), "-w", "3", "-o", "supervisor.slots.ports=[7001,7002]"],
         "3 workers need as many ports, but supervisor.slots.ports has 2"),
        (["run", str(WORDCOUNT), "-w", "1", "-o", "supervisor.slots.ports=[]"],
         "1 worker needs a port, but supervisor.slots.ports has 0"),
        (["run", str(WORDCOUNT), "--ui", "--ui-port", "70000"],
         "--ui-port must be between 0 and 65535, got 70000"),
        # the UI took it, then the run blamed supervisor.slots.ports
        (["run", str(WORDCOUNT), "--ui", "--ui-port", "7002", "-w", "2", "-o",
          "supervisor.slots.ports=[7001,7002]"],
         "UI port 7002 (--ui-port / ui.port) is one of the workers' ports [7001, 7002] "
         "(supervisor.slots.ports); choose another"),
        # cluster commands: refused before ZooKeeper is asked anything (a rebalance
        # with -w -1 used to deactivate the topology, then die in time.sleep)
        (["rebalance", "t", "-w", "-1"], "argument -w/--wait: expected a number of seconds >= 0, got '-1'"),
        (["kill", "t", "-w", "nan"], "argument -w/--wait: expected a number of seconds >= 0, got 'nan'"),
        (["submit", str(WORDCOUNT), "--wait", "inf"],
         "argument --wait: expected a number of seconds >= 0, got 'inf'"),
        (["submit", str(WORDCOUNT), "-n", "a/b"], "-n/--name: invalid topology name 'a/b'"),
        (["submit", str(WORDCOUNT), "-w", "0"], "-w/--workers must be at least 1, got 0"),
        # a mistyped storm.local.dir: said, and nothing created there
        (["kill_workers", "-o", "storm.local.dir=no/such/dir"],
         "no/such/dir is not a supervisor's (no supervisor/id in it)"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_in_process(argv, capsys)
    assert code == 2
    assert message in err, err
    assert "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize("seconds", ["-5", "nan"])
def test_a_negative_or_nan_run_time_is_refused(
    seconds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bug (cli/run_cmd.py): -t -5 and -t nan are taken as "no limit" and the
    topology runs. Proposed: refuse ``not args.time >= 0`` with a UsageError."""
    argv = ["run", str(WORDCOUNT), f"--time={seconds}", "-q", "-o", "test.count=5",
            "-o", f"supervisor.slots.ports=[{free_port()}]", "-o", "test.output_dir=."]
    code, out, err = run_in_process(argv, capsys)
    assert code == 2, out
    one_error_line(err, "-t/--time", seconds)


def test_submit_refuses_a_registered_type_it_cannot_import_before_uploading_anything(
    capsys: pytest.CaptureFixture[str]
) -> None:
    # No ZooKeeper runs here: the check must come before the first write.
    argv = ["submit", str(PROJECT / "topologies" / "value_types.py"),
            "-o", "topology.kryo.register=[testparts.components.Side, no_such_module.Type]"]
    code, _, err = run_in_process(argv, capsys)
    assert code == 2
    one_error_line(err, "topology ValueTypes: topology.kryo.register item 1 (no_such_module.Type): "
                        "ModuleNotFoundError: No module named 'no_such_module'")


def test_submit_refuses_a_config_value_zookeeper_cannot_keep_before_uploading_anything(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No ZooKeeper runs here: the check must come before the first write.
    topology = isolated / "setconf.py"
    topology.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(PROJECT / 'src')!r})\n"
        "from testparts.components import SetSpout, SinkBolt\n"
        "from storm_zmq import Topology\n\n"
        "class SetConf(Topology):\n"
        "    config = {'my.tags': {1, 2}}\n"
        "    values = SetSpout.spec()\n"
        "    sink = SinkBolt.spec(inputs=[values])\n"
    )
    code, _, err = run_in_process(["submit", str(topology)], capsys)
    assert code == 2
    one_error_line(err, "topology config 'my.tags': {1, 2} cannot be stored in ZooKeeper")


# -- storm.yaml and -o ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("topology.workers: 1\nbad: value: here\n",
         ["conf/storm.yaml, line 2, column 11: invalid YAML"]),
        ("topology.workers: two\n", ["conf/storm.yaml", "topology.workers", "expected an integer"]),
        ("topology.wrokers: 2\n",
         ["conf/storm.yaml", "topology.wrokers: unknown key; did you mean topology.workers?"]),
        ("supervisor.slots.ports: 6700\n", ["conf/storm.yaml", "supervisor.slots.ports"]),
        ("- just\n- a list\n", ["conf/storm.yaml"]),
        ("topology.message.timeout.secs: 0\n", ["conf/storm.yaml", "topology.message.timeout.secs"]),
    ],
)
def test_a_bad_storm_yaml_stops_run_before_anything_starts(
    isolated: Path, text: str, needles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated / "conf").mkdir()
    (isolated / "conf" / "storm.yaml").write_text(text)
    code, out, err = run_in_process(["run", str(WORDCOUNT)], capsys)
    assert code == 2
    one_error_line(err, *needles)
    assert out == ""


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("topology.workers", "-o topology.workers: expected key=value"),
        ("topology.workers=[1,", "-o topology.workers=[1,: invalid YAML value"),
        ("topology.workers=0", "-o topology.workers=0: must be >= 1, got 0"),
        ("supervisor.slots.ports=[70000]", "-o supervisor.slots.ports=[70000]"),
        ("storm.messaging.zmq.hwn=1",
         "-o storm.messaging.zmq.hwn=1: unknown key; did you mean storm.messaging.zmq.hwm?"),
        ("storm.messaging.transport=no.such.Context",
         "-o storm.messaging.transport=no.such.Context: cannot import module"),
    ],
)
def test_a_bad_override_stops_run_before_anything_starts(
    override: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_in_process(["run", str(WORDCOUNT), "-o", override], capsys)
    assert code == 2
    one_error_line(err, message)


# -- topology files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "needles"),
    [
        ("from storm_zmq import Topology\n\nx = 1\nraise RuntimeError('boom at import')\n",
         ["RuntimeError: boom at import", "broken.py:4"]),
        ("from storm_zmq import Topology\ndef f(:\n    pass\n", ["SyntaxError", "broken.py:2"]),
        ("import no_such_module_anywhere\n",
         ["ModuleNotFoundError: No module named 'no_such_module_anywhere'", "broken.py:1"]),
        ("x = 1\n", ["defines no Topology"]),
        ("from storm_zmq import Topology\n\nclass Empty(Topology):\n    pass\n", ["Empty"]),
        # found when the class statement runs: the message names the topology and the
        # component, and now the file and line too
        ("from storm_zmq import Bolt, Grouping, Spout, Topology\n\n"
         "class S(Spout):\n    outputs = ['x']\n\n    def next_tuple(self):\n        pass\n\n"
         "class B(Bolt):\n    def process(self, tup):\n        pass\n\n"
         "class Bad(Topology):\n    s = S.spec()\n    b = B.spec(inputs={s: Grouping.fields('y')})\n",
         ["topology Bad: bolt 'b': fields grouping on 'y'", "broken.py:13: class Bad(Topology):"]),
    ],
    ids=["raises", "syntax", "import", "no-topology", "empty-topology", "invalid-topology"],
)
def test_a_broken_topology_file_names_file_and_line(
    isolated: Path, source: str, needles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = isolated / "topologies" / "broken.py"
    path.parent.mkdir()
    path.write_text(source)
    code, out, err = run_in_process(["run", str(path)], capsys)
    assert code == 2
    one_error_line(err, *needles)


@pytest.mark.parametrize(
    ("config", "needles"),
    [
        ("{'topology.max.spout.pending': 'lots'}",
         ["topology BadConf config at {path}:9: topology.max.spout.pending"]),
        ("{1: 2}", ["config key 1 (topology BadConf config at {path}:9) is not a string"]),
        # every worker process gets the config pickled
        ("{'my.hook': lambda: 1}", ["config 'my.hook': <function", "cannot be passed to the worker processes"]),
    ],
)
def test_a_topology_with_a_bad_config_value_names_the_key(
    isolated: Path, config: str, needles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = isolated / "topologies" / "badconf.py"
    path.parent.mkdir()
    path.write_text(
        "from storm_zmq import Spout, Topology\n\n"
        "class S(Spout):\n    outputs = ['x']\n\n    def next_tuple(self):\n        pass\n\n"
        f"class BadConf(Topology):\n    config = {config}\n"
        "    s = S.spec()\n"
    )
    code, _out, err = run_in_process(["run", str(path)], capsys)
    assert code == 2
    one_error_line(err, *(needle.format(path=path.resolve()) for needle in needles))


def test_a_conflict_with_an_override_blames_the_override_for_its_part(
    isolated: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """The topology sets both bounds; -o lowers one below the other: the message
    names where each value came from (the -o one was blamed on the topology)."""
    path = isolated / "topologies" / "pair.py"
    path.parent.mkdir()
    path.write_text(
        "from storm_zmq import Spout, Topology\n\n"
        "class S(Spout):\n    outputs = ['x']\n\n    def next_tuple(self):\n        pass\n\n"
        "class Pair(Topology):\n"
        "    config = {'storm.messaging.zmq.min_wait_ms': 160,"
        " 'storm.messaging.zmq.max_wait_ms': 1000}\n"
        "    s = S.spec()\n")
    code, _out, err = run_in_process(
        ["run", str(path), "-o", "storm.messaging.zmq.max_wait_ms=150"], capsys)
    assert code == 2
    one_error_line(err, f"topology Pair config at {path.resolve()}:9: storm.messaging.zmq.min_wait_ms: "
                   "must be <= storm.messaging.zmq.max_wait_ms (150, from -o "
                   "storm.messaging.zmq.max_wait_ms), got 160")


COMPONENT_CONF_TOPOLOGY = (
    "from storm_zmq import Bolt, Spout, Topology\n\n"
    "class S(Spout):\n    outputs = ['x']\n\n    def next_tuple(self):\n        pass\n\n"
    "class B(Bolt):\n    def process(self, tup):\n        pass\n\n"
    "class CompConf(Topology):\n"
    "    s = S.spec(config={spout_config})\n"
    "    count_bolt = B.spec(inputs=[s], config={bolt_config})\n"
)


@pytest.mark.parametrize(
    ("spout_config", "bolt_config", "message"),
    [
        ("{}", "{'topology.tick.tuple.freq.secs': '1'}",
         "component 'count_bolt' config at {where}: topology.tick.tuple.freq.secs: "
         "expected an integer, got '1' (str)"),
        ("{'topology.max.spout.pending': '10'}", "{}",
         "component 's' config at {where}: topology.max.spout.pending: expected an integer, got '10' (str)"),
        ("{}", "{'topology.tick.tuple.freq.sec': 1}",
         "component 'count_bolt' config at {where}: topology.tick.tuple.freq.sec: unknown key; "
         "did you mean topology.tick.tuple.freq.secs?"),
    ],
    ids=["wrong-type-bolt", "wrong-type-spout", "typo"],
)
@pytest.mark.parametrize("command", ["run", "submit"])
def test_a_bad_component_config_is_refused_as_topology_config_is(
    isolated: Path, command: str, spout_config: str, bolt_config: str, message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Bug: a component's own ``config=`` was never validated, so these crashed a worker
    with a TypeError or (the typo) silently never ticked. They must fail before any
    worker starts, naming the component; submit (no ZooKeeper here) before any write."""
    path = isolated / "topologies" / "compconf.py"
    path.parent.mkdir()
    path.write_text(COMPONENT_CONF_TOPOLOGY.format(spout_config=spout_config,
                                                   bolt_config=bolt_config))
    limit = ["-t", "5"] if command == "run" else []  # unfixed, the typo case runs on
    code, out, err = run_in_process([command, str(path), *limit], capsys)
    assert code == 2, out
    # the error points at the class statement, as an error found at import does
    where = f"{path.resolve()}:{COMPONENT_CONF_TOPOLOGY.splitlines().index('class CompConf(Topology):') + 1}"
    message = message.format(where=where)
    assert one_error_line(err, message) == f"storm-zmq: error: {message}"


def test_component_config_keeps_user_keys_as_topology_config_does(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unknown keys outside storm.* / topology.* (the user's own, as ``test.count``) pass
    in a component's config exactly as in the topology's: the run proceeds."""
    path = isolated / "topologies" / "compconf.py"
    path.parent.mkdir()
    path.write_text(COMPONENT_CONF_TOPOLOGY.format(
        spout_config="{'my.rate': 'fast', 'topology.max.spout.pending': 10}",
        bolt_config="{'test.count': 3, 'topology.tick.tuple.freq.secs': 1}"))
    argv = ["run", str(path), "-t", "1", "-q", "-o", f"supervisor.slots.ports=[{free_port()}]"]
    code, out, err = run_in_process(argv, capsys)
    assert code == 0, err
    assert "warning" not in err  # both Storm keys are read per component


def test_a_component_config_key_read_per_worker_is_said_to_be_unused(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bug: a component's config could set a key that only the worker or topology
    reads (a batch size, the message timeout): it passed validation and was ignored
    in silence. Storm drops such keys too; the run now says so (before it starts)."""
    from storm_zmq.config import DEFAULTS
    from storm_zmq.runtime.local import RunOptions, prepare_run

    path = isolated / "topologies" / "compconf.py"
    path.parent.mkdir()
    path.write_text(COMPONENT_CONF_TOPOLOGY.format(
        spout_config="{'topology.debug': False}",
        bolt_config="{'topology.transfer.batch.size': 10, 'topology.message.timeout.secs': 5,"
                    " 'my.key': 1}"))
    prepare_run(RunOptions(topology_file=str(path), conf=dict(DEFAULTS)))  # what run does first
    err = capsys.readouterr().err
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warning.startswith(
        "warning: component 'count_bolt' config at ") and (
        "sets topology.message.timeout.secs, topology.transfer.batch.size, which are read for "
        "the whole worker or topology, not per component: the component's value is not used"
        in warning), warning


def test_storm_keys_nothing_here_reads_are_named_with_what_to_know(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Storm project's wait strategy, JVM options or multilang serializer changed
    nothing and said nothing; now each one set is a warning naming where it was set
    and what applies instead, and the run goes on."""
    from storm_zmq.config import DEFAULTS
    from storm_zmq.runtime.local import RunOptions, prepare_run

    path = isolated / "topologies" / "compconf.py"
    path.parent.mkdir()
    path.write_text(COMPONENT_CONF_TOPOLOGY.format(
        spout_config="{'topology.spout.wait.progressive.level1.count': 5}",
        bolt_config="{'topology.debug': False}"))
    prepare_run(RunOptions(
        topology_file=str(path),
        conf={**DEFAULTS, "topology.worker.childopts": "-Xmx2g"},
        overrides={"topology.multilang.serializer": "org.apache.storm.multilang.JsonSerializer"}))
    warnings = sorted(line for line in capsys.readouterr().err.splitlines()
                      if line.startswith("warning:"))
    assert len(warnings) == 3, warnings
    assert warnings[0].startswith("warning: topology.multilang.serializer (-o "
                                  "topology.multilang.serializer) is Storm's, and not used here: "
                                  "components run inside the Python worker process")
    assert warnings[1].startswith("warning: topology.spout.wait.progressive.level1.count "
                                  "(component 's' config at ")
    assert "topology.sleep.spout.wait.strategy.time.ms" in warnings[1]
    assert warnings[2] == ("warning: topology.worker.childopts (storm.yaml) is Storm's, and not "
                           "used here: a JVM setting: the workers are Python processes "
                           "(worker.python chooses the interpreter)")


# -- real processes: busy ports and a component that fails while others started ---------------


def run_cli(cwd: Path, *args: str, timeout: float = 90) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """`storm-zmq run ...` in its own session; returns the result and every process
    of that session still alive afterwards (there must be none)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "storm_zmq.cli.main", "run", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
        start_new_session=True,
    )
    out, err = process.communicate(timeout=timeout)
    result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    # what the runner killed is reaped in a moment: poll until none is left, or 5 s
    deadline = time.monotonic() + 5
    while True:
        left = [p.pid for p in processes() if p.session == process.pid and p.state != "Z"]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return result, left


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return False
        return True


@pytest.mark.slow
def test_a_busy_second_port_starts_nothing(isolated: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        first = free_port()
        result, left = run_cli(isolated, str(WORDCOUNT), "-w", "2", "-o", "test.count=10",
                               "-o", f"supervisor.slots.ports=[{first},{busy}]")
    assert result.returncode == 2
    one_error_line(result.stderr, f"port {busy} (from supervisor.slots.ports) is busy")
    assert result.stdout == "", "nothing started, so nothing was announced"
    assert left == []
    assert port_free(first)


@pytest.mark.slow
def test_a_busy_ui_port_starts_nothing(isolated: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        port = free_port()
        result, left = run_cli(isolated, str(WORDCOUNT), "--ui", "--ui-port", str(busy),
                               "-o", "test.count=10", "-o", f"supervisor.slots.ports=[{port}]")
    assert result.returncode == 2
    one_error_line(result.stderr, f"cannot serve the UI on 127.0.0.1:{busy}")
    assert left == []
    assert port_free(port)


@pytest.mark.slow
@pytest.mark.parametrize(("failure", "said"), [
    ("raise", ["RuntimeError: initialize failed on purpose"]),
    # an audit: a pystorm component that installs a SIGTERM handler died of Python's
    # bare "signal only works in main thread", with no word of what to do instead
    ("signal", ["ValueError: signal only works in main thread",
                "cannot install a signal handler", "cleanup()"]),
])
def test_a_component_that_fails_to_initialize_stops_every_worker(
        isolated: Path, failure: str, said: list[str]) -> None:
    ports = [free_port(), free_port()]
    result, left = run_cli(isolated, str(PROJECT / "topologies" / "init_fails.py"), "-w", "2",
                           "-o", "test.count=10", "-o", f"supervisor.slots.ports={ports}",
                           "-o", f"test.output_dir={isolated}", "-o", f"test.init_failure={failure}")
    assert result.returncode == 1
    assert "component 'broken' task" in result.stderr
    for text in said:
        assert text in result.stderr, (text, result.stderr[-3000:])
    assert "faultparts.py" in result.stderr  # the user's traceback points at their code
    assert left == [], "a worker outlived the failed run"
    assert all(port_free(p) for p in ports)


@pytest.mark.slow
def test_a_component_slow_to_initialize_is_named_and_the_wait_is_the_supervisors(
    isolated: Path,
) -> None:
    """Bug: `run` waited a fixed 120 s for its workers, then said only "workers not
    ready" (a SparkSpout starting Spark looked hung). It waits
    supervisor.worker.start.timeout.secs, as a supervisor does, says which worker
    and which key, and the worker says meanwhile whose initialize() it waits for."""
    ports = [free_port(), free_port()]
    result, left = run_cli(isolated, str(PROJECT / "topologies" / "init_slow.py"), "-w", "2",
                           "-o", "test.count=10", "-o", f"supervisor.slots.ports={ports}",
                           "-o", "test.init_sleep_secs=600",
                           "-o", "supervisor.worker.start.timeout.secs=4")
    assert result.returncode == 1
    assert re.search(r"worker [01] not ready after 4 s: a component's initialize\(\) is still "
                     r"running .* -o supervisor\.worker\.start\.timeout\.secs=SECONDS",
                     result.stderr), result.stderr
    # only the one in initialize() is named: z_quick's executor (its tasks come after
    # slow's) waits its turn in the shared executor thread, and is only counted
    assert re.search(r"worker [01] still waiting for initialize\(\) of slow \(tasks \d+\) "
                     r"after \d s \(1 more executor waits its turn\); a worker not ready after "
                     r"4 s \(supervisor\.worker\.start\.timeout\.secs\) fails\n",
                     result.stderr), result.stderr
    assert left == [], "a worker outlived the failed run"
    assert all(port_free(p) for p in ports)


@pytest.mark.slow
def test_a_topology_that_raises_on_import_through_the_real_cli(isolated: Path) -> None:
    path = isolated / "topologies" / "broken.py"
    path.parent.mkdir()
    path.write_text("from storm_zmq import Topology\n\nraise ValueError('bad at import')\n")
    result, left = run_cli(isolated, str(path))
    assert result.returncode == 2
    one_error_line(result.stderr, "ValueError: bad at import", "broken.py:3")
    assert result.stdout == ""
    assert left == []
