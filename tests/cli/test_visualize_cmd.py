"""`storm-zmq visualize`: format choice, output file, errors as one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storm_zmq.cli.main import main
from tests.machine import missing

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT = str(ROOT / "topologies" / "wordcount.py")


def test_dot_to_stdout_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["visualize", WORDCOUNT]) == 0
    out = capsys.readouterr().out
    assert out.startswith('digraph "WordCount" {')
    assert '"sentence_spout" -> "split_bolt" [label="shuffle"];' in out


def test_mermaid_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["visualize", WORDCOUNT, "--format", "mermaid"]) == 0
    out = capsys.readouterr().out
    assert "flowchart LR" in out and '-->|"fields(word)"|' in out


@pytest.mark.parametrize(("suffix", "start"), [(".mmd", "---"), (".gv", "digraph")])
def test_output_file_format_follows_its_suffix(tmp_path: Path, suffix: str, start: str) -> None:
    out = tmp_path / f"graph{suffix}"
    assert main(["visualize", WORDCOUNT, "-o", str(out)]) == 0
    assert out.read_text().startswith(start)


def test_several_topologies_in_a_file_are_picked_with_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "two.py"
    file.write_text(
        "from storm_zmq import Bolt, Spout, Topology\n"
        "class S(Spout):\n    outputs = ['x']\n"
        "class B(Bolt):\n    outputs = []\n"
        "class One(Topology):\n    s = S.spec()\n"
        "class Two(Topology):\n    s = S.spec()\n    b = B.spec(inputs=[s])\n")
    assert main(["visualize", str(file), "-n", "Two"]) == 0
    assert '"s" -> "b"' in capsys.readouterr().out
    # --class, as submit spells it (its -n is the name to submit under)
    assert main(["visualize", str(file), "--class", "Two"]) == 0
    assert '"s" -> "b"' in capsys.readouterr().out
    assert main(["visualize", str(file)]) == 2
    assert "defines several topologies (One, Two); say which one with --class NAME" in \
        capsys.readouterr().err


def test_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["visualize", str(tmp_path / "missing.py")]) == 2
    assert "topology file not found" in capsys.readouterr().err
    assert main(["visualize", WORDCOUNT, "-o", str(tmp_path / "no" / "dir.dot")]) == 2
    assert "cannot write -o" in capsys.readouterr().err


def test_a_bare_name_is_the_topology_of_topologies_as_sparse_n_found_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)  # a streamparse project's root
    assert main(["visualize", "wordcount"]) == 0
    assert capsys.readouterr().out.startswith('digraph "WordCount" {')
    assert main(["visualize", "wordcount.py"]) == 0
    assert main(["visualize", "wordcnt"]) == 2
    err = capsys.readouterr().err
    assert f"topology file not found: {ROOT / 'wordcnt'} (topologies/ has " in err
    assert "wordcount.py" in err
    monkeypatch.chdir(tmp_path)  # no topologies/ here: the path as given, no hint
    assert main(["visualize", "wordcount"]) == 2
    assert f"topology file not found: {tmp_path / 'wordcount'}\n" in capsys.readouterr().err


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_an_image_suffix_is_drawn_by_graphviz(tmp_path: Path, suffix: str, magic: bytes) -> None:
    if shutil.which("dot") is None:
        missing("Graphviz's dot is not installed on this machine")
    out = tmp_path / f"graph{suffix}"
    assert main(["visualize", WORDCOUNT, "-o", str(out)]) == 0
    assert out.read_bytes().startswith(magic)


def test_an_image_without_graphviz_is_one_line_naming_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    assert main(["visualize", WORDCOUNT, "-o", str(tmp_path / "graph.png")]) == 2
    err = capsys.readouterr().err
    assert "needs Graphviz's `dot` on PATH" in err and "-o GRAPH.dot" in err
    assert not (tmp_path / "graph.png").exists()
    assert main(["visualize", WORDCOUNT, "-f", "mermaid", "-o", str(tmp_path / "graph.svg")]) == 2
    assert "rendered from the dot graph" in capsys.readouterr().err
