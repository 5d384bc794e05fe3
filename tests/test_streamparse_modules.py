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
