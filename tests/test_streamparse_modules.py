"""streamparse's other import paths (``streamparse.bolt``, ``.spout``, ``.storm``,
``.dsl``) have storm_zmq twins with the same names, the very same objects as
``storm_zmq``'s own."""

from __future__ import annotations

import logging

import pytest

import storm_zmq
from storm_zmq import bolt, dsl, spout, storm


def test_each_module_names_the_top_level_objects() -> None:
    for module in (bolt, spout, storm, dsl):
        for name in module.__all__:
            assert getattr(module, name) is getattr(storm_zmq, name), (module.__name__, name)
    assert {"BatchingBolt", "Bolt", "TicklessBatchingBolt"} <= set(bolt.__all__)
    assert {"Spout", "ReliableSpout"} <= set(spout.__all__)
    assert {"Bolt", "Spout", "Tuple", "StormHandler"} <= set(storm.__all__)
    assert {"Grouping", "Stream", "Topology", "JavaSpout"} <= set(dsl.__all__)


def test_streamparse_submodules_import_as_they_did() -> None:
    """A porting audit: ``from streamparse.storm.bolt import Bolt`` and
    ``from streamparse.dsl.topology import Topology`` (found in public projects)
    failed: ``storm_zmq.storm`` and ``.dsl`` were modules, not packages."""
    import importlib

    for path, names in {
        "storm_zmq.storm.bolt": ["Bolt", "BatchingBolt", "TicklessBatchingBolt", "JavaBolt"],
        "storm_zmq.storm.spout": ["Spout", "ReliableSpout", "ShellSpout"],
        "storm_zmq.storm.component": ["Component", "StormHandler", "Tuple"],
        "storm_zmq.dsl.topology": ["Topology", "TopologyType"],
        "storm_zmq.dsl.stream": ["Grouping", "Stream"],
    }.items():
        module = importlib.import_module(path)
        assert set(names) <= set(module.__all__), path
        for name in module.__all__:
            if name == "TopologyType":  # the metaclass, not a top-level name
                assert module.TopologyType is type(storm_zmq.Topology)
                assert isinstance(storm_zmq.Topology, module.TopologyType)
                continue
            assert getattr(module, name) is getattr(storm_zmq, name), (path, name)
    assert storm_zmq.VERSION == (0, 1, 0) and storm.Component is storm_zmq.Component


def test_components_carry_streamparses_par_and_config_defaults_and_component_has_no_spec() -> None:
    """streamparse's Component: `par = 1`, `config = None`, read by `spec()` when
    not passed; `Component.spec()` is a TypeError that says to subclass."""
    from storm_zmq import Bolt, Component, Spout, Topology
    from storm_zmq.topology import TopologyError

    assert (Spout.par, Spout.config, Bolt.par, Bolt.config) == (1, None, 1, None)

    class Wide(Spout):
        outputs = ["x"]
        par = 3
        config = {"topology.tick.tuple.freq.secs": 2}

    class T(Topology):
        wide = Wide.spec()
        narrow = Bolt.spec(inputs=[wide])

    components = T.definition().components
    assert (components["wide"].par, components["narrow"].par) == (3, 1)
    assert components["wide"].config == {"topology.tick.tuple.freq.secs": 2}
    with pytest.raises(TypeError, match="subclass Spout or Bolt"):
        Component.spec()
    assert issubclass(TopologyError, TypeError)


def test_a_dsl_mistake_is_the_value_or_type_error_streamparse_raised() -> None:
    from storm_zmq import Bolt, Grouping, Spout, Topology

    class S(Spout):
        outputs = ["x"]

    for kind in (ValueError, TypeError):
        with pytest.raises(kind):
            Grouping.fields()
        with pytest.raises(kind):
            type("NoInputs", (Topology,), {"s": S.spec(), "b": Bolt.spec()})


def test_a_storm_handler_leaves_each_record_to_the_worker_log_once(
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    """pystorm's StormHandler forwarded records to Storm; here they reach the
    worker's log through the root logger anyway, so the handler writes nothing."""
    logger = logging.getLogger("storm_zmq.component.handled")
    handler = storm_zmq.StormHandler(stream=None)
    logger.addHandler(handler)
    try:
        with caplog.at_level(logging.INFO):
            logger.info("once")
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in caplog.records] == ["once"]
    assert capsys.readouterr() == ("", "")
