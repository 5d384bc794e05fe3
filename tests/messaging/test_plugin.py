"""The plug-in contract: how a transport is named, found and checked."""

from __future__ import annotations

import pytest

from storm_zmq.config import DEFAULTS, ConfigError, load_config
from storm_zmq.messaging import TransportError, load_context, transport_class
from storm_zmq.messaging import local as local_transport
from storm_zmq.messaging.settings import LinkSettings


class RecordingContext(local_transport.Context):
    """A user's transport: any importable class with the Context shape plugs in."""

    prepared_with: dict | None = None

    def prepare(self, conf: dict) -> None:
        RecordingContext.prepared_with = conf
        super().prepare(conf)


def test_aliases_and_dotted_paths_name_the_same_class() -> None:
    assert transport_class("tcp") is transport_class("storm_zmq.messaging.tcp.Context")


def test_a_user_transport_class_is_loaded_and_prepared_with_the_conf() -> None:
    conf = dict(DEFAULTS, **{"storm.messaging.transport": f"{__name__}.RecordingContext"})
    context = load_context(conf)
    assert isinstance(context, RecordingContext)
    assert RecordingContext.prepared_with is conf
    context.term()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("nodots", "not a dotted path"),
        ("no_such_module_xyz.Context", "cannot import module 'no_such_module_xyz'"),
        ("storm_zmq.messaging.zmq.Nope", "has no attribute 'Nope'"),
        ("storm_zmq.messaging.base.TaskMessage", "is not a transport class"),
        ("storm_zmq.messaging.TRANSPORT_ALIASES", "is not a transport class"),
        ("..Context", "cannot import module '.': TypeError"),  # a relative name
    ],
)
def test_bad_transport_names_say_what_is_wrong(path: str, message: str) -> None:
    with pytest.raises(TransportError, match=message):
        transport_class(path)


def test_a_transport_module_that_fails_to_import_is_named_with_its_error(tmp_path, monkeypatch) -> None:
    (tmp_path / "broken_transport.py").write_text("def oops(:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TransportError, match="cannot import module 'broken_transport': SyntaxError"):
        transport_class("broken_transport.Context")


def test_a_bad_transport_in_storm_yaml_is_a_config_error_naming_file_and_key(tmp_path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "storm.yaml").write_text('storm.messaging.transport: "zmqq"\n')
    with pytest.raises(ConfigError, match=r"conf/storm.yaml.*storm.messaging.transport"):
        load_config(cwd=tmp_path, home=tmp_path / "home", env={})


def test_backoff_doubles_from_min_wait_and_is_capped() -> None:
    link = LinkSettings.from_conf(
        {"storm.messaging.tcp.min_wait_ms": 100, "storm.messaging.tcp.max_wait_ms": 1000},
        "storm.messaging.tcp.",
    )
    assert [link.backoff(a) for a in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert link.backoff(10_000) == 1.0
    assert link.send_timeout is None  # -1 by default: block under backpressure
