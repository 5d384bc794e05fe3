"""load_topology on temporary streamparse-style projects."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from storm_zmq.topology import Topology, TopologyError, load_topology

SPOUT = """
from storm_zmq.component import Spout


class WordSpout(Spout):
    outputs = ["word"]

    def next_tuple(self):
        self.emit(["dog"])
"""

BOLT = """
from storm_zmq.component import Bolt


class WordCountBolt(Bolt):
    outputs = ["word", "count"]

    def process(self, tup):
        self.emit([tup.values[0], 1])
"""

TOPOLOGY = """
from storm_zmq.topology import Grouping, Topology

from bolts.count import WordCountBolt
from spouts.words import WordSpout


class WordCount(Topology):
    config = {"topology.workers": 2}
    word_spout = WordSpout.spec(par=2)
    count_bolt = WordCountBolt.spec(inputs={word_spout: Grouping.fields("word")}, par=4)
"""


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        file = root / rel
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(textwrap.dedent(text))


def project(root: Path, topology: str = TOPOLOGY, **extra: str) -> Path:
    write(
        root,
        {
            "src/spouts/__init__.py": "",
            "src/spouts/words.py": SPOUT,
            "src/bolts/__init__.py": "",
            "src/bolts/count.py": BOLT,
            "topologies/wc.py": topology,
            **extra,
        },
    )
    return root / "topologies" / "wc.py"


def test_loads_streamparse_project(tmp_path: Path) -> None:
    topology = load_topology(project(tmp_path))
    assert issubclass(topology, Topology)
    assert topology.__name__ == "WordCount" and topology.name == "WordCount"
    definition = topology.definition()
    assert list(definition.components) == ["word_spout", "count_bolt"]
    assert definition.config == {"topology.workers": 2}
    spout_cls = definition.components["word_spout"].component_cls
    assert spout_cls.__module__ == "spouts.words"  # importable by workers under that name
    assert str(tmp_path / "src") in sys.path and str(tmp_path) in sys.path
    assert sys.path.index(str(tmp_path / "src")) < sys.path.index(str(tmp_path))
    assert sys.modules[topology.__module__].__file__ == str(tmp_path / "topologies" / "wc.py")


def test_str_path_and_loading_twice(tmp_path: Path) -> None:
    first = load_topology(str(project(tmp_path)))
    second = load_topology(tmp_path / "topologies" / "wc.py")
    assert first is not second and first.__module__ != second.__module__
    assert sys.path.count(str(tmp_path / "src")) == 1


def test_project_is_parent_when_not_in_topologies(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "src/spouts/__init__.py": "",
            "src/spouts/words.py": SPOUT,
            "src/bolts/__init__.py": "",
            "src/bolts/count.py": BOLT,
            "helpers.py": "PAR = 3\n",
            "wc.py": TOPOLOGY + "\nfrom helpers import PAR\nassert PAR == 3\n",
        },
    )
    assert load_topology(tmp_path / "wc.py").name == "WordCount"


def test_file_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "topologies" / "nope.py"
    with pytest.raises(TopologyError, match=f"^topology file not found: {missing}$"):
        load_topology(missing)


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    (tmp_path / "topologies").mkdir()
    with pytest.raises(TopologyError,
                       match=f"^{tmp_path / 'topologies'} is a directory, not a topology file$"):
        load_topology(tmp_path / "topologies")


def test_exception_in_component_module(tmp_path: Path) -> None:
    file = project(tmp_path, **{"src/bolts/count.py": "import os\n\nRATE = 1 / 0\n"})
    with pytest.raises(TopologyError) as info:
        load_topology(file)
    bolt = tmp_path / "src" / "bolts" / "count.py"
    assert str(info.value) == (
        f"cannot import topology file {file}: ZeroDivisionError: division by zero "
        f"at {bolt}:3: RATE = 1 / 0"
    )
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert not any(name.startswith("_storm_zmq_topology_") and "wc" in name for name in sys.modules)


def test_missing_module(tmp_path: Path) -> None:
    file = project(tmp_path, topology="import os\nfrom bolts.nope import X\n")
    with pytest.raises(TopologyError) as info:
        load_topology(file)
    assert str(info.value) == (
        f"cannot import topology file {file}: ModuleNotFoundError: No module named "
        f"'bolts.nope' at {file}:2: from bolts.nope import X"
    )  # bolts exists: nothing to say of where it was looked for


def test_a_module_not_found_says_where_the_project_is_and_what_streamparse_becomes(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "other" / "wc.py"  # outside topologies/: its own directory
    write(tmp_path, {"src/bolts/__init__.py": "", "other/wc.py": "from bolts import X\n"})
    with pytest.raises(TopologyError) as info:
        load_topology(elsewhere)
    assert str(info.value).endswith(
        f"No module named 'bolts' at {elsewhere}:1: from bolts import X; the project's modules "
        f"are looked for in {tmp_path / 'other'} and {tmp_path / 'other' / 'src'} (the project "
        "of topologies/x.py is the directory above topologies/, of any other file its own "
        "directory)")
    file = project(tmp_path, topology="from streamparse import Grouping, Topology\n")
    with pytest.raises(TopologyError) as info:
        load_topology(file)
    assert str(info.value).endswith(
        "; a streamparse project runs after its imports say storm_zmq instead of streamparse "
        "(`from storm_zmq import ...`; docs/streamparse.md)")


def test_error_raised_inside_a_function(tmp_path: Path) -> None:
    topology = (
        TOPOLOGY
        + """
def compute():
    return {}["missing"]

PAR = compute()
"""
    )
    file = project(tmp_path, topology=topology)
    with pytest.raises(TopologyError) as info:
        load_topology(file)
    message = str(info.value)
    assert message.startswith(f"cannot import topology file {file}: KeyError: 'missing' at ")
    assert message.endswith(':14: return {}["missing"]')  # the innermost user frame
    assert "Traceback" not in message


def test_syntax_error(tmp_path: Path) -> None:
    file = project(tmp_path, **{"src/spouts/words.py": "class WordSpout(:\n    pass\n"})
    with pytest.raises(TopologyError) as info:
        load_topology(file)
    message = str(info.value)
    assert message.startswith(f"cannot import topology file {file}: SyntaxError: ")
    assert message.endswith(f"at {tmp_path / 'src' / 'spouts' / 'words.py'}:1: class WordSpout(:")


def test_a_validation_error_keeps_its_message_and_gains_the_class_statement(tmp_path: Path) -> None:
    file = project(tmp_path, topology=TOPOLOGY.replace('fields("word")', 'fields("wrd")'))
    with pytest.raises(TopologyError) as info:
        load_topology(file)
    line = TOPOLOGY.splitlines().index("class WordCount(Topology):") + 1
    assert str(info.value) == (
        "topology WordCount: bolt 'count_bolt': fields grouping on 'wrd', but stream "
        f"'default' of 'word_spout' has fields ['word'] (at {file}:{line}: class WordCount(Topology):)"
    )


def test_the_definition_knows_where_its_class_is(tmp_path: Path) -> None:
    """So a config error found after the import can point there (validate_topology_conf)."""
    file = project(tmp_path)
    line = TOPOLOGY.splitlines().index("class WordCount(Topology):") + 1
    assert load_topology(file).definition().sources == dict.fromkeys(
        ["config", "word_spout", "count_bolt"], f"{file}:{line}")


def test_what_a_base_topology_in_another_file_set_points_at_the_base(tmp_path: Path) -> None:
    """A subclass's config and components may come from a base in src/: an error in
    them must point at the base's class statement, not the subclass's."""
    base = TOPOLOGY.replace("class WordCount(Topology):", "class Base(Topology):")
    file = project(tmp_path, topology=(
        "from base_topology import Base\nfrom bolts.count import WordCountBolt\n\n\n"
        "class Sub(Base):\n    extra_bolt = WordCountBolt.spec(inputs=[Base.word_spout])\n"),
        **{"src/base_topology.py": base})
    base_line = base.splitlines().index("class Base(Topology):") + 1
    base_file = tmp_path / "src" / "base_topology.py"
    assert load_topology(file).definition().sources == {
        "config": f"{base_file}:{base_line}", "word_spout": f"{base_file}:{base_line}",
        "count_bolt": f"{base_file}:{base_line}", "extra_bolt": f"{file}:5"}


def test_no_topology(tmp_path: Path) -> None:
    file = project(tmp_path, topology="from storm_zmq.topology import Topology\nX = 1\n")
    with pytest.raises(TopologyError) as info:
        load_topology(file)
    assert str(info.value) == (
        f"{file}: defines no Topology subclass (expected e.g. `class WordCount(Topology): ...`)"
    )


def test_a_file_that_only_imports_a_topology_runs_that_one_as_in_streamparse(tmp_path: Path) -> None:
    """streamparse takes any Topology the file's module holds; one the file defines
    comes first, so a base it imports to subclass is not taken (the test above)."""
    file = project(tmp_path, topology="from nb_shared import WordCount\n",
                   **{"topologies/nb_shared.py": TOPOLOGY})
    assert load_topology(file).__name__ == "WordCount"
    two = project(tmp_path, topology="from nb_shared import WordCount\nfrom nb_more import Second\n",
                  **{"topologies/nb_more.py": "from nb_shared import WordCount\nclass Second(WordCount):\n"
                                           "    pass\n"})
    with pytest.raises(TopologyError, match=r"defines several topologies \(WordCount, Second\)"):
        load_topology(two)


def test_a_topology_file_imports_its_neighbours_in_topologies_after_src(tmp_path: Path) -> None:
    """streamparse appends the topology's directory to sys.path: shared settings in
    topologies/nb_common.py import as `nb_common`; a module of src/ of the same name wins."""
    file = project(tmp_path, topology="from nb_common import CONF\nfrom nb_names import NAME\n"
                   + TOPOLOGY.replace('config = {"topology.workers": 2}', "config = CONF\n    name = NAME"),
                   **{"topologies/nb_common.py": 'CONF = {"topology.workers": 3}\n',
                      "topologies/nb_names.py": 'NAME = "from-topologies"\n',
                      "src/nb_names.py": 'NAME = "from-src"\n'})
    topology = load_topology(file)
    assert topology.config == {"topology.workers": 3} and topology.name == "from-src"
    assert sys.path.index(str(tmp_path / "topologies")) > sys.path.index(str(tmp_path / "src"))


def test_two_topologies(tmp_path: Path) -> None:
    two = (
        TOPOLOGY
        + """

class Second(Topology):
    name = "second"
    word_spout = WordSpout.spec()
"""
    )
    file = project(tmp_path, topology=two)
    with pytest.raises(TopologyError) as info:
        load_topology(file)
    assert str(info.value) == (
        f"{file}: defines several topologies (WordCount, second); say which one with --class NAME"
    )
    assert load_topology(file, "WordCount").name == "WordCount"
    assert load_topology(file, "second").__name__ == "Second"
    assert load_topology(file, "Second").name == "second"  # the class name works too
    with pytest.raises(TopologyError) as info:
        load_topology(file, "third")
    assert str(info.value) == f"{file}: no topology named 'third' (it defines WordCount, second)"


def test_name_selects_the_only_topology_too(tmp_path: Path) -> None:
    file = project(tmp_path)
    assert load_topology(file, "WordCount").name == "WordCount"
    with pytest.raises(TopologyError, match="no topology named 'x'"):
        load_topology(file, "x")


@pytest.mark.parametrize("shadow", ["src/queue.py", "src/msgpack.py", "src/logging/__init__.py",
                                    "zmq.py"])
def test_a_project_module_named_as_one_the_runtime_needs_is_refused(tmp_path: Path, shadow: str) -> None:
    # Every worker has the project's directories first on its path from its start:
    # src/queue.py was imported in place of the standard module, and workers died of
    # tracebacks deep in the runtime.
    file = project(tmp_path, **{shadow: "X = 1\n"})
    entry, _, _ = shadow.removesuffix("/__init__.py").partition("/__init__")
    name = Path(entry).stem
    with pytest.raises(TopologyError, match=rf"{entry} has the name of the module '{name}' "
                                            "that storm-zmq and Python need: .* rename it"):
        load_topology(file)
    assert str(tmp_path / "src") not in sys.path


def test_directories_that_are_no_modules_and_unneeded_names_are_not_refused(tmp_path: Path) -> None:
    # a plain directory (mkdocs' site/, templates in email/) shadows nothing
    file = project(tmp_path, **{"site/index.html": "<html/>", "src/email/welcome.txt": "hi",
                                "src/bolts/queue.py": "X = 1\n"})  # not top-level: no shadow
    assert load_topology(file).__name__ == "WordCount"


def test_a_streamparse_config_json_is_said_not_to_be_read(tmp_path: Path) -> None:
    """A porting audit: sparse's config.json (its environments' topology options and
    log level) was ignored without a word."""
    from storm_zmq.topology.loader import streamparse_leftovers

    topology = tmp_path / "topologies" / "t.py"
    topology.parent.mkdir()
    topology.write_text("")
    assert streamparse_leftovers(topology) == []
    (tmp_path / "config.json").write_text('{"envs": {}}')
    (said,) = streamparse_leftovers(topology)
    assert said.startswith(f"{tmp_path / 'config.json'} (streamparse's sparse settings) is not read")
