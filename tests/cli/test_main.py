"""The storm-zmq command line: `config`, --version, and user errors without tracebacks."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from storm_zmq import __version__
from storm_zmq.cli import add_config_arguments, load_config_from_args
from storm_zmq.cli.main import main
from storm_zmq.config import DEFAULTS

pytestmark = pytest.mark.usefixtures("isolated")


def write_conf(work: Path, text: str, name: str = "conf/storm.yaml") -> Path:
    path = work / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_config_prints_every_key_sorted_as_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    keys = [line.split(": ", 1)[0] for line in lines]
    assert keys == sorted(DEFAULTS)
    assert yaml.safe_load(out) == DEFAULTS  # the output is itself a valid storm.yaml
    assert "supervisor.slots.ports: [6700, 6701, 6702, 6703]" in lines
    assert "storm.local.hostname: null" in lines


def test_config_selected_keys_in_given_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "topology.workers", "storm.messaging.zmq.hwm"]) == 0
    assert capsys.readouterr().out == "topology.workers: 1\nstorm.messaging.zmq.hwm: 256\n"


def test_config_reads_cwd_conf_dash_c_and_overrides(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_conf(isolated, "topology.workers: 3\nmy.app.name: demo\n")
    assert main(["config", "topology.workers", "my.app.name"]) == 0
    assert capsys.readouterr().out == "topology.workers: 3\nmy.app.name: demo\n"

    other = write_conf(isolated, "topology.workers: 4\n", name="other.yaml")
    argv = ["config", "-c", str(other), "-o", "supervisor.slots.ports=[7000,7001]",
            "--override", "topology.debug=true",
            "topology.workers", "supervisor.slots.ports", "topology.debug"]
    assert main(argv) == 0
    assert capsys.readouterr().out == (
        "topology.workers: 4\nsupervisor.slots.ports: [7000, 7001]\ntopology.debug: true\n"
    )


def test_config_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == DEFAULTS
    assert main(["config", "--json", "-o", "topology.workers=2", "topology.workers"]) == 0
    assert json.loads(capsys.readouterr().out) == {"topology.workers": 2}


def test_config_origins(isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_conf(isolated, "topology.workers: 3\n")
    argv = ["config", "--origins", "-o", "topology.debug=true",
            "topology.workers", "topology.debug", "topology.message.timeout.secs"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        "topology.workers: 3  # conf/storm.yaml",
        "topology.debug: true  # -o topology.debug=true",
        "topology.message.timeout.secs: 30  # default",
    ]


def test_config_describe_says_what_every_key_means(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--describe", "-o", "topology.max.spout.pending=500",
                 "-o", "my.app.name=x"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    keys = [line.split(":")[0] for line in lines if not line.startswith(" ")]
    assert keys == sorted([*DEFAULTS, "my.app.name"])
    pending = out.split("topology.max.spout.pending: 500\n")[1].split("\ntopology.")[0]
    assert "Bound on un-acked tuples per spout task" in pending
    assert "type int or null, at least 0, default null" in " ".join(pending.split())
    assert "my.app.name: x\n    not a storm-zmq key: passed to the topologies" in out
    assert all(len(line) <= 88 for line in lines if line.startswith("    "))


def test_config_unknown_key_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "topology.wrkers"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "storm-zmq: error: unknown key 'topology.wrkers'; did you mean topology.workers?\n"
    )
    assert main(["config", "my.app.name"]) == 2
    assert capsys.readouterr().err == "storm-zmq: error: unknown key 'my.app.name'\n"


def test_broken_yaml_is_one_line_on_stderr(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_conf(isolated, "topology.workers: 1\nbad: value: here\n")
    assert main(["config"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("storm-zmq: error: conf/storm.yaml, line 2, column 11: invalid YAML: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["config", "-o", "topology.workers=x"],
         "-o topology.workers=x: expected an integer, got 'x' (str)"),
        (["config", "-o", "foo"], "-o foo: expected key=value"),
        (["config", "-c", "missing.yaml"], "missing.yaml: no such file (given with -c)"),
        (["config", "-o", "storm.messaging.zmq.hwn=1"],
         "-o storm.messaging.zmq.hwn=1: unknown key; did you mean storm.messaging.zmq.hwm?"),
    ],
)
def test_config_errors_exit_2(argv: list[str], message: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == f"storm-zmq: error: {message}\n"


def test_storm_conf_environment_variable(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_conf(isolated, "topology.workers: 6\n", name="env.yaml")
    monkeypatch.setenv("STORM_CONF", str(path))
    assert main(["config", "topology.workers"]) == 0
    assert capsys.readouterr().out == "topology.workers: 6\n"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"storm-zmq {__version__}\n"


def test_python_dash_m_is_the_same_command() -> None:
    result = subprocess.run([sys.executable, "-m", "storm_zmq", "--version"],
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, f"storm-zmq {__version__}\n"), result.stderr


@pytest.mark.parametrize("command", [["config"], ["visualize", "topologies/wordcount.py"]])
def test_a_closed_stdout_ends_any_command_quietly(command: list[str]) -> None:
    """`storm-zmq config | head -1`: the reader gone, no BrokenPipeError traceback."""
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen([sys.executable, "-m", "storm_zmq", *command], cwd=root,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before it writes anything: every write fails
    errors = process.stderr.read()
    assert process.wait(timeout=60) == 0, errors
    assert errors == ""


def test_no_subcommand_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: storm-zmq")
    assert "config" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--help"]) == 0
    out = capsys.readouterr().out
    assert "-c FILE" in out and "-o KEY=VALUE" in out and "--json" in out


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    assert main(["config", "--no-such-option"]) == 2
    assert main(["config", "--json", "--origins"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_shared_config_arguments(isolated: Path) -> None:
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    other = write_conf(isolated, "topology.workers: 4\n", name="c.yaml")
    args = parser.parse_args(["-c", str(other), "-o", "topology.debug=true", "-o", "a.b=1"])
    conf = load_config_from_args(args)
    assert conf["topology.workers"] == 4
    assert conf["topology.debug"] is True
    assert conf["a.b"] == 1
    assert load_config_from_args(parser.parse_args([]))["topology.workers"] == 1


def test_real_process_broken_yaml_exits_2_without_traceback(isolated: Path) -> None:
    write_conf(isolated, "topology.workers: [1,\n")
    env = {k: v for k, v in os.environ.items() if k != "STORM_CONF"}
    result = subprocess.run(
        [sys.executable, "-m", "storm_zmq.cli.main", "config"],
        cwd=isolated, env=env, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("storm-zmq: error: conf/storm.yaml, line ")
    assert "invalid YAML" in result.stderr


def test_a_ctrl_c_while_the_command_imports_its_modules_ends_it_with_130() -> None:
    # (an audit: Ctrl-C in the command's first half second printed a traceback)
    code = ("import builtins, sys\n"
            "real = builtins.__import__\n"
            "def interrupted(name, *args, **kwargs):\n"
            "    if name == 'storm_zmq.cli.main':\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *args, **kwargs)\n"
            "builtins.__import__ = interrupted\n"
            "from storm_zmq.__main__ import main\n"
            "sys.exit(main())\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr) == (130, "")
