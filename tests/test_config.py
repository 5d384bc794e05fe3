"""Defaults, storm.yaml loading order, -o parsing and validation errors."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import pytest

from storm_zmq import config
from storm_zmq.config import (
    DEFAULTS,
    KINDS,
    ORDERED_PAIRS,
    SCHEMA,
    ConfigError,
    check_value,
    closest_key,
    config_sources,
    load_config,
    load_config_with_origins,
    parse_override,
    validate,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def home_yaml(home: Path, text: str) -> Path:
    return write(home / ".storm" / "storm.yaml", text)


def cwd_yaml(cwd: Path, text: str) -> Path:
    return write(cwd / "conf" / "storm.yaml", text)


def load(home: Path, cwd: Path, conf_file: str | None = None, overrides: list[str] | None = None,
         env: dict[str, str] | None = None) -> dict[str, Any]:
    return load_config(conf_file, overrides, home=home, cwd=cwd, env=env or {})


def load_error(home: Path, cwd: Path, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as info:
        load(home, cwd, *args, **kwargs)
    return str(info.value)


# ------------------------------------------------------------------------- defaults


def test_schema_is_plain_data_with_docs() -> None:
    assert set(DEFAULTS) == set(SCHEMA)
    for key, setting in SCHEMA.items():
        assert setting.kind in KINDS, key
        assert setting.doc.strip(), key
        assert setting.doc.strip().endswith((".", ")")), key
        assert key.startswith(("storm.", "topology.", "supervisor.", "nimbus.", "worker.", "ui.",
                               "logviewer.")), key
    for low, high in ORDERED_PAIRS:
        assert low in SCHEMA and high in SCHEMA


def test_every_default_passes_its_own_check() -> None:
    for key, setting in SCHEMA.items():
        assert check_value(setting, setting.default) is None, key
    validate(dict(DEFAULTS), {})


def test_defaults_are_storms_names_and_values() -> None:
    expected = {
        "storm.messaging.transport": "storm_zmq.messaging.zmq.Context",
        "storm.messaging.zmq.threads": 1,
        "storm.messaging.zmq.hwm": 256,
        "storm.messaging.zmq.linger.millis": 500,
        "storm.messaging.zmq.min_wait_ms": 100,
        "storm.messaging.zmq.max_wait_ms": 1000,
        "storm.messaging.zmq.heartbeat.ivl.ms": 0,
        "storm.messaging.zmq.heartbeat.timeout.ms": 10000,
        "storm.messaging.zmq.keepalive.secs": 60,
        "storm.messaging.zmq.transfer.batch.size": 262144,
        "storm.messaging.zmq.max.frame.size": 16777216,
        "storm.messaging.zmq.send.timeout.ms": -1,
        "storm.messaging.zmq.curve": False,
        "storm.messaging.tcp.buffer_size": 4194304,
        "storm.messaging.tcp.min_wait_ms": 100,
        "storm.messaging.tcp.max_wait_ms": 1000,
        "storm.messaging.tcp.keepalive.secs": 60,
        "storm.messaging.tcp.transfer.batch.size": 262144,
        "storm.messaging.tcp.max.frame.size": 16777216,
        "storm.messaging.tcp.send.timeout.ms": -1,
        "storm.messaging.tcp.connect.timeout.ms": 2000,
        "storm.messaging.tcp.authentication": False,
        "storm.messaging.local.hwm": 256,
        "storm.messaging.local.send.timeout.ms": -1,
        "supervisor.slots.ports": [6700, 6701, 6702, 6703],
        "storm.local.dir": "storm-local",
        "storm.local.hostname": None,
        "storm.zookeeper.auth.scheme": None,
        "storm.zookeeper.auth.payload": None,
        "storm.zookeeper.topology.auth.scheme": None,
        "storm.zookeeper.topology.auth.payload": None,
        "storm.zookeeper.servers": ["localhost"],
        "storm.zookeeper.port": 2181,
        "storm.zookeeper.root": "/storm",
        "storm.zookeeper.session.timeout": 20000,
        "storm.zookeeper.connection.timeout": 15000,
        "storm.zookeeper.retry.times": 5,
        "storm.zookeeper.retry.interval": 1000,
        "storm.zookeeper.retry.intervalceiling.millis": 30000,
        "nimbus.monitor.freq.secs": 5,
        "nimbus.task.timeout.secs": 30,
        "nimbus.task.launch.secs": 120,
        "nimbus.inbox.jar.expiration.secs": 3600,
        "nimbus.supervisor.timeout.secs": 60,
        "supervisor.monitor.frequency.secs": 3,
        "supervisor.worker.timeout.secs": 30,
        "supervisor.worker.start.timeout.secs": 120,
        "supervisor.worker.shutdown.sleep.secs": 5,
        "worker.cpu.pinning": True,
        "worker.shared.executor.thread": True,
        "worker.python": None,  # ours: the interpreter running storm-zmq
        "worker.pypy.jit.trace_limit": 1000,  # ours: PyPy's own is 6000
        "worker.log.max.bytes": 10485760,
        "worker.log.backups": 5,
        "logviewer.port": 8000,
        "ui.host": "127.0.0.1",
        "ui.port": 8080,
        "ui.actions.enabled": True,
        "worker.heartbeat.frequency.secs": 1,
        "topology.workers": 1,
        "topology.acker.executors": None,
        "topology.max.spout.pending": None,
        "topology.message.timeout.secs": 30,
        "topology.enable.message.timeouts": True,
        "topology.max.task.parallelism": None,
        "topology.executor.receive.buffer.size": None,
        "topology.transfer.buffer.size": 1000,
        "topology.transfer.batch.size": 1000,
        "topology.producer.batch.size": 100,
        "topology.batch.flush.interval.millis": 1,
        "topology.tick.tuple.freq.secs": None,
        "topology.disable.loadaware.messaging": False,
        "topology.debug": False,
        "topology.error.throttle.interval.secs": 10,
        "topology.max.error.report.per.interval": 5,
        "topology.name": None,
        "topology.testing.always.try.serialize": False,
        "topology.copy.emitted.values": True,
        "topology.kryo.register": None,  # Storm's defaults.yaml: null
        "topology.tasks": None,  # Storm's defaults.yaml: null
        "topology.sleep.spout.wait.strategy.time.ms": 1,
        "topology.skip.missing.kryo.registrations": False,
        "topology.stats.sample.rate": 0.05,
    }
    assert DEFAULTS == expected
    assert type(DEFAULTS["topology.stats.sample.rate"]) is float


def test_no_files_gives_exactly_the_defaults(home: Path, cwd: Path) -> None:
    conf, origins = load_config_with_origins(home=home, cwd=cwd, env={})
    assert conf == DEFAULTS
    assert set(origins.values()) == {"default"}


def test_loaded_config_does_not_share_mutable_defaults(home: Path, cwd: Path) -> None:
    conf = load(home, cwd)
    conf["supervisor.slots.ports"].append(1)
    assert DEFAULTS["supervisor.slots.ports"] == [6700, 6701, 6702, 6703]
    assert load(home, cwd)["supervisor.slots.ports"] == [6700, 6701, 6702, 6703]


def test_example_conf_storm_yaml_loads_and_keeps_defaults(home: Path) -> None:
    conf, origins = load_config_with_origins(home=home, cwd=REPO, env={})
    assert conf == DEFAULTS
    used = {key for key, origin in origins.items() if origin == "conf/storm.yaml"}
    assert "storm.messaging.transport" in used
    assert used <= set(SCHEMA)


# ---------------------------------------------------------------------- load order


def test_precedence_home_then_cwd_then_overrides(home: Path, cwd: Path) -> None:
    home_yaml(home, """
        topology.workers: 2
        topology.debug: true
        storm.local.dir: /home-dir
        """)
    cwd_yaml(cwd, """
        topology.workers: 3
        storm.local.dir: /cwd-dir
        """)
    conf, origins = load_config_with_origins(
        overrides=["storm.local.dir=/o-dir"], home=home, cwd=cwd, env={}
    )
    assert conf["topology.debug"] is True
    assert conf["topology.workers"] == 3
    assert conf["storm.local.dir"] == "/o-dir"
    assert origins["topology.debug"] == "~/.storm/storm.yaml"
    assert origins["topology.workers"] == "conf/storm.yaml"
    assert origins["storm.local.dir"] == "-o storm.local.dir=/o-dir"
    assert origins["topology.message.timeout.secs"] == "default"


def test_explicit_file_replaces_cwd_file_but_not_home(
    home: Path, cwd: Path, tmp_path: Path
) -> None:
    home_yaml(home, "topology.workers: 2\ntopology.debug: true\n")
    cwd_yaml(cwd, "topology.workers: 3\ntopology.message.timeout.secs: 99\n")
    explicit = write(tmp_path / "other.yaml", "topology.workers: 4\n")
    conf = load(home, cwd, str(explicit))
    assert conf["topology.workers"] == 4
    assert conf["topology.debug"] is True  # home still applies
    assert conf["topology.message.timeout.secs"] == 30  # cwd conf/storm.yaml not read


def test_storm_conf_env_replaces_cwd_file(home: Path, cwd: Path, tmp_path: Path) -> None:
    cwd_yaml(cwd, "topology.workers: 3\ntopology.message.timeout.secs: 99\n")
    env_file = write(tmp_path / "env.yaml", "topology.workers: 5\n")
    conf, origins = load_config_with_origins(
        home=home, cwd=cwd, env={"STORM_CONF": str(env_file)}
    )
    assert conf["topology.workers"] == 5
    assert conf["topology.message.timeout.secs"] == 30
    assert origins["topology.workers"] == str(env_file)


def test_dash_c_wins_over_storm_conf(home: Path, cwd: Path, tmp_path: Path) -> None:
    env_file = write(tmp_path / "env.yaml", "topology.workers: 5\ntopology.debug: true\n")
    explicit = write(tmp_path / "c.yaml", "topology.workers: 6\n")
    conf = load(home, cwd, str(explicit), env={"STORM_CONF": str(env_file)})
    assert conf["topology.workers"] == 6
    assert conf["topology.debug"] is False  # STORM_CONF not read at all


def test_overrides_win_over_every_file_and_last_override_wins(
    home: Path, cwd: Path, tmp_path: Path
) -> None:
    home_yaml(home, "topology.workers: 2\n")
    explicit = write(tmp_path / "c.yaml", "topology.workers: 6\n")
    conf = load(home, cwd, str(explicit), ["topology.workers=7", "topology.workers=8"])
    assert conf["topology.workers"] == 8


def test_relative_dash_c_is_relative_to_cwd_and_named_as_given(home: Path, cwd: Path) -> None:
    write(cwd / "my.yaml", "topology.workers: 9\n")
    assert load(home, cwd, "my.yaml")["topology.workers"] == 9
    write(cwd / "bad.yaml", "topology.workers: nine\n")
    assert load_error(home, cwd, "bad.yaml").startswith("bad.yaml: topology.workers: ")


def test_missing_explicit_file_is_an_error(home: Path, cwd: Path) -> None:
    assert load_error(home, cwd, "nope.yaml") == "nope.yaml: no such file (given with -c)"
    message = load_error(home, cwd, env={"STORM_CONF": "/no/such/storm.yaml"})
    assert message == "/no/such/storm.yaml: no such file (named by STORM_CONF)"


def test_implicit_files_are_optional_and_empty_files_are_fine(home: Path, cwd: Path) -> None:
    assert load(home, cwd) == DEFAULTS
    home_yaml(home, "")
    cwd_yaml(cwd, "# only a comment\n\n")
    assert load(home, cwd) == DEFAULTS


def test_empty_storm_conf_counts_as_unset(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, "topology.workers: 3\n")
    assert load(home, cwd, env={"STORM_CONF": ""})["topology.workers"] == 3


def test_unreadable_file_is_an_error(home: Path, cwd: Path) -> None:
    (cwd / "conf" / "storm.yaml").mkdir(parents=True)
    assert load_error(home, cwd).startswith("conf/storm.yaml: cannot read: ")


# ----------------------------------------------------------------------- overrides


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("topology.workers=2", ("topology.workers", 2)),
        ("supervisor.slots.ports=[7000,7001]", ("supervisor.slots.ports", [7000, 7001])),
        ("topology.debug=true", ("topology.debug", True)),
        ("topology.max.spout.pending=null", ("topology.max.spout.pending", None)),
        ("storm.local.hostname=", ("storm.local.hostname", None)),
        ("topology.stats.sample.rate=0.5", ("topology.stats.sample.rate", 0.5)),
        ("storm.local.dir=/var/storm", ("storm.local.dir", "/var/storm")),
        ("my.app.query=a=b", ("my.app.query", "a=b")),
        (" my.app.key = 3", ("my.app.key", 3)),
        ("my.app.env={A: b}", ("my.app.env", {"A": "b"})),
        ("my.app.version='2'", ("my.app.version", "2")),
    ],
)
def test_parse_override_parses_values_as_yaml(text: str, expected: tuple[str, Any]) -> None:
    assert parse_override(text) == expected


@pytest.mark.parametrize("text", ["foo", "=3", " =3", ""])
def test_parse_override_needs_key_equals_value(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_override(text)
    assert str(info.value) == f"-o {text}: expected key=value"


def test_parse_override_invalid_yaml_value() -> None:
    with pytest.raises(ConfigError) as info:
        parse_override("supervisor.slots.ports=[7000,")
    assert str(info.value).startswith("-o supervisor.slots.ports=[7000,: invalid YAML value: ")


def test_override_type_error_names_the_option(home: Path, cwd: Path) -> None:
    message = load_error(home, cwd, overrides=["topology.workers=x"])
    assert message == "-o topology.workers=x: expected an integer, got 'x' (str)"


def test_override_list_value(home: Path, cwd: Path) -> None:
    conf = load(home, cwd, overrides=["supervisor.slots.ports=[7000,7001]"])
    assert conf["supervisor.slots.ports"] == [7000, 7001]


# -------------------------------------------------------------------- YAML problems


def test_broken_yaml_names_file_line_and_column(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, "topology.workers: 1\ntopology.debug: false\nstorm: [1, 2\n")
    message = load_error(home, cwd)
    assert message.startswith("conf/storm.yaml, line ")
    assert ", column " in message
    assert ": invalid YAML: " in message


def test_broken_yaml_line_number_is_one_based(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, "topology.workers: 1\ntopology.debug: false\nbad: value: here\n")
    assert load_error(home, cwd).startswith("conf/storm.yaml, line 3, column 11: invalid YAML: ")


def test_top_level_must_be_a_mapping(home: Path, cwd: Path) -> None:
    home_yaml(home, "- topology.workers\n- 2\n")
    assert load_error(home, cwd) == (
        "~/.storm/storm.yaml: top level must be a mapping of key: value, got a list"
    )
    home_yaml(home, "topology.workers 2\n")
    assert load_error(home, cwd) == (
        "~/.storm/storm.yaml: top level must be a mapping of key: value, got a string"
    )


def test_keys_must_be_strings(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, "6700: worker\n")
    assert load_error(home, cwd).startswith("conf/storm.yaml: key 6700 (int) is not a string")
    cwd_yaml(cwd, "true: 1\n")
    assert load_error(home, cwd).startswith("conf/storm.yaml: key True (bool) is not a string")


def test_duplicate_top_level_key_is_refused(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, "topology.workers: 2\ntopology.debug: true\ntopology.workers: 3\n")
    assert load_error(home, cwd) == (
        "conf/storm.yaml, line 3, column 1: invalid YAML: "
        "duplicate key 'topology.workers' (first set on line 1)"
    )


def test_nested_mappings_and_merge_keys_are_not_duplicate_checked(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, """
        my.app.base: &base {a: 1}
        my.app.env:
          <<: *base
          a: 2
        """)
    assert load(home, cwd)["my.app.env"] == {"a": 2}


def test_several_yaml_documents_are_refused(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, "topology.workers: 2\n---\ntopology.workers: 3\n")
    assert "invalid YAML" in load_error(home, cwd)


# ------------------------------------------------------------------ type and range


def file_error(home: Path, cwd: Path, text: str) -> str:
    cwd_yaml(cwd, text)
    return load_error(home, cwd)


def test_wrong_type_names_file_key_and_value(home: Path, cwd: Path) -> None:
    assert file_error(home, cwd, "storm.messaging.zmq.hwm: abc\n") == (
        "conf/storm.yaml: storm.messaging.zmq.hwm: expected an integer, got 'abc' (str)"
    )


def test_bool_is_not_an_integer(home: Path, cwd: Path) -> None:
    assert file_error(home, cwd, "topology.workers: true\n") == (
        "conf/storm.yaml: topology.workers: expected an integer, got True (bool)"
    )
    assert file_error(home, cwd, "topology.stats.sample.rate: false\n") == (
        "conf/storm.yaml: topology.stats.sample.rate: expected a number, got False (bool)"
    )


def test_float_is_not_an_integer_and_int_is_not_a_bool(home: Path, cwd: Path) -> None:
    assert file_error(home, cwd, "topology.workers: 1.5\n").endswith(
        "expected an integer, got 1.5 (float)"
    )
    assert file_error(home, cwd, "topology.debug: 1\n") == (
        "conf/storm.yaml: topology.debug: expected true or false, got 1 (int)"
    )
    assert file_error(home, cwd, "storm.local.dir: 5\n").endswith("expected a string, got 5 (int)")


def test_float_setting_accepts_int_and_reads_back_float(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, "topology.stats.sample.rate: 1\n")
    rate = load(home, cwd)["topology.stats.sample.rate"]
    assert rate == 1.0 and type(rate) is float


def test_list_must_be_a_list(home: Path, cwd: Path) -> None:
    assert file_error(home, cwd, "supervisor.slots.ports: 6700\n") == (
        "conf/storm.yaml: supervisor.slots.ports: expected a list of integers, got 6700 (int)"
    )


def test_kryo_registrations_are_names_or_one_entry_maps(home: Path, cwd: Path) -> None:
    """Storm's YAML shape; the names are imported when the topology starts."""
    cwd_yaml(cwd, "topology.kryo.register:\n  - a.B\n  - {c.D: c.DSerializer}\n")
    assert load(home, cwd)["topology.kryo.register"] == ["a.B", {"c.D": "c.DSerializer"}]
    key = "conf/storm.yaml: topology.kryo.register"
    assert file_error(home, cwd, "topology.kryo.register: a.B\n") == (
        f"{key}: expected a list of class names, each alone or as {{class: serializer}}, got 'a.B' (str)")
    assert file_error(home, cwd, "topology.kryo.register: [a.B, 3]\n") == (
        f"{key}: item 1: expected a class name or {{class: serializer}}, got 3")
    assert file_error(home, cwd, "topology.kryo.register: [{a.B: s, c.D: t}]\n") == (
        f"{key}: item 0: a map must be one class name to its serializer's name, got "
        "{'a.B': 's', 'c.D': 't'}")
    assert file_error(home, cwd, "topology.kryo.register: [{a.B: null}]\n").startswith(
        f"{key}: item 0: a map must be one class name")


def test_list_items_are_checked_with_their_index(home: Path, cwd: Path) -> None:
    assert file_error(home, cwd, "supervisor.slots.ports: [6700, '6701']\n") == (
        "conf/storm.yaml: supervisor.slots.ports: item 1: expected an integer, got '6701' (str)"
    )
    assert file_error(home, cwd, "supervisor.slots.ports: [true]\n").endswith(
        "item 0: expected an integer, got True (bool)"
    )
    assert file_error(home, cwd, "supervisor.slots.ports: [6700, 70000]\n") == (
        "conf/storm.yaml: supervisor.slots.ports: item 1: must be between 1 and 65535, got 70000"
    )
    assert file_error(home, cwd, "storm.zookeeper.servers: [zk1, 2]\n").endswith(
        "storm.zookeeper.servers: item 1: expected a string, got 2 (int)"
    )
    assert file_error(home, cwd, "storm.zookeeper.servers: [zk1, '']\n").endswith(
        "storm.zookeeper.servers: item 1: must not be empty"
    )


def test_null_only_where_nullable(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, "topology.max.spout.pending: 100\ntopology.acker.executors: null\n")
    conf = load(home, cwd)
    assert conf["topology.max.spout.pending"] == 100
    assert conf["topology.acker.executors"] is None
    assert file_error(home, cwd, "topology.workers: null\n") == (
        "conf/storm.yaml: topology.workers: expected an integer, got null"
    )
    assert file_error(home, cwd, "topology.workers:\n").endswith("got null")
    assert file_error(home, cwd, "topology.max.spout.pending: -1\n").endswith(
        "topology.max.spout.pending: must be >= 0, got -1"
    )
    cwd_yaml(cwd, "topology.max.spout.pending: 0\n")  # Storm's unbounded, as null
    assert load(home, cwd)["topology.max.spout.pending"] == 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("storm.zookeeper.port: 0", "storm.zookeeper.port: must be between 1 and 65535, got 0"),
        ("storm.zookeeper.port: 65536", "must be between 1 and 65535, got 65536"),
        ("storm.messaging.zmq.hwm: 0", "storm.messaging.zmq.hwm: must be >= 1, got 0"),
        ("storm.messaging.zmq.max.frame.size: 0", "must be >= 1, got 0"),
        ("storm.messaging.tcp.transfer.batch.size: -5", "must be >= 1, got -5"),
        ("storm.messaging.tcp.buffer_size: -1", "must be >= 0, got -1"),
        ("storm.messaging.zmq.send.timeout.ms: -2", "must be >= -1, got -2"),
        ("storm.messaging.zmq.heartbeat.timeout.ms: 7000000", "must be between 1 and 6553500"),
        ("topology.workers: 0", "topology.workers: must be >= 1, got 0"),
        ("topology.stats.sample.rate: 1.5", "must be between 0 and 1, got 1.5"),
        ("topology.stats.sample.rate: -0.1", "must be between 0 and 1, got -0.1"),
        ("topology.stats.sample.rate: .nan", "must be between 0 and 1, got nan"),
    ],
)
def test_out_of_range(home: Path, cwd: Path, line: str, message: str) -> None:
    error = file_error(home, cwd, line + "\n")
    assert error.startswith("conf/storm.yaml: " + line.split(":")[0] + ": ")
    assert message in error


def test_range_edges_are_accepted(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, """
        supervisor.slots.ports: [1, 65535]
        storm.messaging.zmq.send.timeout.ms: -1
        storm.messaging.tcp.send.timeout.ms: 0
        storm.messaging.tcp.buffer_size: 0
        storm.messaging.zmq.heartbeat.ivl.ms: 0
        topology.stats.sample.rate: 0
        topology.acker.executors: 0
        """)
    conf = load(home, cwd)
    assert conf["supervisor.slots.ports"] == [1, 65535]
    assert conf["topology.stats.sample.rate"] == 0.0


def test_max_wait_below_min_wait_blames_the_key_that_was_set(home: Path, cwd: Path) -> None:
    assert file_error(home, cwd, "storm.messaging.zmq.min_wait_ms: 5000\n") == (
        "conf/storm.yaml: storm.messaging.zmq.min_wait_ms: must be <= "
        "storm.messaging.zmq.max_wait_ms (1000, from default), got 5000"
    )
    (cwd / "conf" / "storm.yaml").unlink()
    message = load_error(home, cwd, overrides=["storm.messaging.tcp.max_wait_ms=10"])
    assert message == (
        "-o storm.messaging.tcp.max_wait_ms=10: must be >= storm.messaging.tcp.min_wait_ms "
        "(100, from default), got 10"
    )


def test_equal_min_and_max_wait_is_fine(home: Path, cwd: Path) -> None:
    overrides = ["storm.messaging.zmq.min_wait_ms=500", "storm.messaging.zmq.max_wait_ms=500"]
    assert load(home, cwd, overrides=overrides)["storm.messaging.zmq.max_wait_ms"] == 500


def test_batch_size_must_fit_in_a_frame(home: Path, cwd: Path) -> None:
    message = load_error(home, cwd, overrides=["storm.messaging.tcp.max.frame.size=1000"])
    assert "must be >= storm.messaging.tcp.transfer.batch.size (262144, from default)" in message


def test_zookeeper_root_must_be_absolute(home: Path, cwd: Path) -> None:
    assert file_error(home, cwd, "storm.zookeeper.root: storm\n") == (
        "conf/storm.yaml: storm.zookeeper.root: must be an absolute ZooKeeper path "
        "starting with '/'"
    )


def test_duplicate_slot_ports_and_empty_servers(home: Path, cwd: Path) -> None:
    assert file_error(home, cwd, "supervisor.slots.ports: [6700, 6701, 6700]\n") == (
        "conf/storm.yaml: supervisor.slots.ports: duplicate ports [6700]"
    )
    assert file_error(home, cwd, "storm.zookeeper.servers: []\n").endswith(
        "storm.zookeeper.servers: must not be empty"
    )
    assert file_error(home, cwd, "storm.local.dir: ''\n").endswith(
        "storm.local.dir: must not be empty"
    )


# ------------------------------------------------------------------------ transport


@pytest.mark.parametrize("name", ["zmq", "tcp", "storm_zmq.messaging.tcp.Context"])
def test_builtin_transports_and_aliases(home: Path, cwd: Path, name: str) -> None:
    conf = load(home, cwd, overrides=[f"storm.messaging.transport={name}"])
    assert conf["storm.messaging.transport"] == name


def test_any_importable_context_shaped_class_is_a_transport(
    home: Path, cwd: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "lib" / "my_transport_for_config_test.py", """
        class Context:
            def prepare(self, conf): pass
            def bind(self, storm_id, port): pass
            def connect(self, storm_id, host, port): pass
            def term(self): pass
        """)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    cwd_yaml(cwd, "storm.messaging.transport: my_transport_for_config_test.Context\n")
    assert load(home, cwd)["storm.messaging.transport"] == "my_transport_for_config_test.Context"


def test_unknown_transport_names_file_and_key(home: Path, cwd: Path) -> None:
    message = file_error(home, cwd, "storm.messaging.transport: no_such_pkg.Context\n")
    assert message.startswith(
        "conf/storm.yaml: storm.messaging.transport: cannot import module 'no_such_pkg'"
    )
    nope = "storm.messaging.transport=storm_zmq.messaging.Nope"
    message = load_error(home, cwd, overrides=[nope])
    assert message.startswith("-o storm.messaging.transport=storm_zmq.messaging.Nope: ")
    assert "has no attribute 'Nope'" in message
    message = load_error(home, cwd, overrides=["storm.messaging.transport=netty"])
    assert "is not a dotted path" in message


def test_class_without_context_shape_is_refused(home: Path, cwd: Path) -> None:
    message = load_error(home, cwd, overrides=["storm.messaging.transport=pathlib.Path"])
    assert message.startswith("-o storm.messaging.transport=pathlib.Path: ")
    assert "is not a transport class" in message


# -------------------------------------------------------------------- unknown keys


def test_typo_of_a_known_key_is_an_error(home: Path, cwd: Path) -> None:
    assert file_error(home, cwd, "storm.messaging.zmq.hwn: 10\n") == (
        "conf/storm.yaml: storm.messaging.zmq.hwn: unknown key; "
        "did you mean storm.messaging.zmq.hwm?"
    )
    (cwd / "conf" / "storm.yaml").unlink()
    message = load_error(home, cwd, overrides=["topology.worker=4"])
    assert message == "-o topology.worker=4: unknown key; did you mean topology.workers?"


def test_a_nested_mapping_under_a_prefix_of_storms_keys_is_an_error(home: Path, cwd: Path) -> None:
    """An audit: `topology:` with `message.timeout.secs: 5` under it was one user key
    holding a dict, and the timeout stayed 30 without a word."""
    assert file_error(home, cwd, "topology:\n  message.timeout.secs: 5\n  workers: 2\n") == (
        "conf/storm.yaml: topology: a nested mapping, where Storm's keys are flat dotted "
        "names: write topology.message.timeout.secs: 5; topology.workers: 2 at the top level")
    # a user's own nested settings stay theirs
    (cwd / "conf" / "storm.yaml").write_text("myapp:\n  db: {host: x}\n")
    assert load_config(home=home, cwd=cwd, env={})["myapp"] == {"db": {"host": "x"}}


@pytest.mark.parametrize(("overrides", "blamed", "said"), [
    (["storm.zookeeper.auth.scheme=digest"], "storm.zookeeper.auth.scheme=digest",
     "must be set together (got scheme 'digest' and no payload)"),
    (["storm.zookeeper.topology.auth.payload=a:b"], "storm.zookeeper.topology.auth.payload=a:b",
     "must be set together (got scheme None and a payload)"),
    (["storm.zookeeper.auth.scheme=digest", "storm.zookeeper.auth.payload=nocolon"],
     "storm.zookeeper.auth.payload=nocolon", 'must be "user:password" for the digest scheme'),
])
def test_zookeeper_credentials_set_by_halves_are_an_error_when_the_config_loads(
        home: Path, cwd: Path, overrides: list[str], blamed: str, said: str) -> None:
    # A recovery audit: found only when a command made its ZooKeeper client, which
    # all but two of them let out as a traceback
    message = load_error(home, cwd, overrides=overrides)
    assert message.startswith(f"-o {blamed}: ") and message.endswith(said)


def test_a_key_our_transports_do_not_have_is_an_error(home: Path, cwd: Path) -> None:
    # the tcp transport has no high-water mark: a zmq knob copied under tcp would be
    # read by nothing (and is too far from any tcp key to look like a typo)
    message = load_error(home, cwd, overrides=["storm.messaging.tcp.hwm=5"])
    assert message.startswith("-o storm.messaging.tcp.hwm=5: unknown key; storm.messaging.tcp.* has ")
    assert "buffer_size" in message and "connect.timeout.ms" in message
    # Apache Storm's own transport keys still pass through untouched
    assert load_config(overrides=["storm.messaging.netty.buffer_size=5"], home=home, cwd=cwd,
                       env={})["storm.messaging.netty.buffer_size"] == 5


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("topology.wokrers", "topology.workers"),
        ("supervisor.slot.ports", "supervisor.slots.ports"),
        ("storm.zookeeper.server", "storm.zookeeper.servers"),
        ("storm.messaging.zmq.linger.ms", "storm.messaging.zmq.linger.millis"),
        ("storm.messaging.zmq.heartbeat.ivl.millis", "storm.messaging.zmq.heartbeat.ivl.ms"),
        ("storm.messaging.tcp.buffer.size", "storm.messaging.tcp.buffer_size"),
        ("topology.Workers", "topology.workers"),
        # shapes that passed as user keys (helper audit)
        ("Topology.Workers", "topology.workers"),
        ("TOPOLOGY.MAX.SPOUT.PENDING", "topology.max.spout.pending"),
        ("topology_max_spout_pending", "topology.max.spout.pending"),
        ("topology.spout.max.pending", "topology.max.spout.pending"),
        ("topology.message.timeout", "topology.message.timeout.secs"),
    ],
)
def test_closest_key_finds_typos(typo: str, meant: str) -> None:
    assert closest_key(typo) == meant


@pytest.mark.parametrize(
    "key",
    [
        "topology.workers",  # known
        "my.app.db.url",
        "topology.name",
        "topology.worker.childopts",
        "topology.executor.send.buffer.size",
        "storm.messaging.netty.min_wait_ms",
        "storm.messaging.netty.buffer_size",
        "storm.messaging.netty.transfer.batch.size",
        "storm.nimbus.retry.intervalceiling.millis",
        "nimbus.seeds",
        "zmq.hwm",
    ],
)
def test_closest_key_leaves_other_keys_alone(key: str) -> None:
    assert closest_key(key) is None


def test_unknown_keys_pass_through_untouched(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, """
        my.app.db.url: "postgres://db/app"
        topology.environment: {LANG: C}
        storm.messaging.netty.buffer_size: 5242880
        topology.executor.send.buffer.size: 1024
        nimbus.seeds: [nimbus1]
        """)
    conf, origins = load_config_with_origins(
        overrides=["my.app.limit=3"], home=home, cwd=cwd, env={}
    )
    assert conf["my.app.db.url"] == "postgres://db/app"
    assert conf["topology.environment"] == {"LANG": "C"}
    assert conf["storm.messaging.netty.buffer_size"] == 5242880
    assert conf["nimbus.seeds"] == ["nimbus1"]
    assert conf["my.app.limit"] == 3
    assert origins["my.app.db.url"] == "conf/storm.yaml"
    assert set(conf) == set(DEFAULTS) | {
        "my.app.db.url", "topology.environment", "storm.messaging.netty.buffer_size",
        "topology.executor.send.buffer.size", "nimbus.seeds", "my.app.limit",
    }


# ------------------------------------------------------------------------- validate


def test_validate_without_origins_blames_default() -> None:
    conf = dict(DEFAULTS, **{"topology.workers": "two"})
    with pytest.raises(ConfigError) as info:
        validate(conf)
    assert str(info.value) == "default: topology.workers: expected an integer, got 'two' (str)"


def test_validate_reports_missing_known_key() -> None:
    conf = dict(DEFAULTS)
    del conf["topology.debug"]
    with pytest.raises(ConfigError, match="topology.debug: missing"):
        validate(conf, {})


def test_check_value_is_usable_alone() -> None:
    setting = SCHEMA["topology.stats.sample.rate"]
    assert check_value(setting, 0.5) is None
    assert check_value(setting, math.inf) == "must be between 0 and 1, got inf"
    assert check_value(SCHEMA["storm.local.hostname"], None) is None
    assert SCHEMA["storm.local.hostname"].type_name == "str or null"
    assert SCHEMA["topology.workers"].type_name == "int"


def test_module_keeps_no_state_between_loads(home: Path, cwd: Path) -> None:
    cwd_yaml(cwd, "topology.workers: 3\n")
    assert load(home, cwd)["topology.workers"] == 3
    (cwd / "conf" / "storm.yaml").unlink()
    assert load(home, cwd)["topology.workers"] == 1
    assert config.DEFAULTS["topology.workers"] == 1


def test_config_sources_name_the_files_read_and_count_the_options(home: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    read: list[str] = []
    load_config_with_origins(home=home, cwd=cwd, env={}, read=read)
    assert config_sources(read, 0) == "built-in defaults (no conf/storm.yaml in this directory)"
    write(home / ".storm" / "storm.yaml", "topology.debug: true\n")
    write(cwd / "conf" / "storm.yaml", "# nothing set: read all the same\n")
    read = []
    load_config_with_origins(overrides=["topology.workers=3", "topology.workers=4"], home=home,
                             cwd=cwd, env={}, read=read)
    assert config_sources(read, 2) == "~/.storm/storm.yaml, conf/storm.yaml, 2 -o option(s)"
    write(tmp_path / "mine.yaml", "")
    read = []
    load_config_with_origins("mine.yaml", home=home, cwd=tmp_path, env={}, read=read)
    assert config_sources(read, 0) == "~/.storm/storm.yaml, mine.yaml"


def test_config_sources_name_the_topologys_own_conf_when_run_from_elsewhere(tmp_path: Path) -> None:
    # A new user's audit: run from the project's parent, the project's conf/storm.yaml
    # (its ports) was not read, and the first line did not name it
    project = tmp_path / "events"
    write(project / "conf" / "storm.yaml", "supervisor.slots.ports: [17330]\n")
    write(project / "topologies" / "events.py", "")
    topology = str(project / "topologies" / "events.py")
    assert config_sources([], 0, topology, cwd=tmp_path) == (
        f"built-in defaults (no conf/storm.yaml in this directory); not read: "
        f"{project / 'conf' / 'storm.yaml'} (the topology's project's: run from {project}, or "
        f"give -c {project / 'conf' / 'storm.yaml'})")
    assert config_sources(["conf/storm.yaml"], 0, topology, cwd=project) == "conf/storm.yaml"
    assert config_sources(["other.yaml"], 1, topology, cwd=project) == "other.yaml, 1 -o option(s)"
    given = str(project / "conf" / "storm.yaml")  # -c names it from elsewhere: read
    assert config_sources([given], 0, topology, cwd=tmp_path) == given
