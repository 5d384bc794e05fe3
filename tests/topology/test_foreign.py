"""streamparse's Java and shell component specs: the names import, and a spec is
one clear error naming the component (storm-zmq runs Python components only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storm_zmq import JavaBolt, JavaSpout, ShellBolt, ShellSpout
from storm_zmq.topology import TopologyError, load_topology


@pytest.mark.parametrize(("cls", "kwargs", "expected"), [
    (JavaSpout, {"name": "kafka", "full_class_name": "org.apache.storm.kafka.KafkaSpout",
                 "args_list": [1]},
     "JavaSpout.spec(name='kafka', full_class_name='org.apache.storm.kafka.KafkaSpout'): "
     "storm-zmq runs Python components only (no JVM to run a Java class); write this "
     "component as a Python Spout (storm_zmq.Spout)"),
    (ShellBolt, {"command": "node", "script": "split.js", "par": 2},
     "ShellBolt.spec(command='node', script='split.js'): storm-zmq runs Python components "
     "only (no multilang subprocess to run a command); write this component as a Python "
     "Bolt (storm_zmq.Bolt)"),
    (JavaBolt, {}, "JavaBolt.spec(): storm-zmq runs Python components only"),
    (ShellSpout, {}, "ShellSpout.spec(): storm-zmq runs Python components only"),
])
def test_a_foreign_spec_is_one_error_naming_it(cls: type, kwargs: dict, expected: str) -> None:
    with pytest.raises(TopologyError) as refused:
        cls.spec(**kwargs)
    assert str(refused.value).startswith(expected)


def test_a_topology_file_with_a_java_spout_fails_to_load_with_that_error(tmp_path: Path) -> None:
    (tmp_path / "topologies").mkdir()
    topology = tmp_path / "topologies" / "pixels.py"
    topology.write_text(
        "from storm_zmq import JavaSpout, Topology\n\n"
        "class Pixels(Topology):\n"
        "    pixels = JavaSpout.spec(name='pixels', full_class_name='com.x.PixelSpout')\n")
    with pytest.raises(TopologyError, match=r"^JavaSpout.spec\(name='pixels', full_class_name="
                       r"'com.x.PixelSpout'\): storm-zmq runs Python components only"):
        load_topology(topology)
