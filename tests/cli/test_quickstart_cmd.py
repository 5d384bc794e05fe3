"""`storm-zmq quickstart`: the project it creates runs at once, and its own tests pass."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from storm_zmq.cli.main import main
from storm_zmq.cli.quickstart_cmd import class_name, render_project
from tests.messaging.conftest import free_port


def test_the_project_has_the_streamparse_layout_with_the_name_substituted() -> None:
    files = {str(f.path): f.text for f in render_project("word_count")}
    assert set(files) == {
        ".gitignore", "README.md", "conf/storm.yaml", "topologies/word_count.py",
        "src/spouts/__init__.py", "src/spouts/sentences.py", "src/bolts/__init__.py",
        "src/bolts/wordcount.py", "tests/conftest.py", "tests/test_bolts.py",
    }
    assert "class WordCount(Topology):" in files["topologies/word_count.py"]
    assert 'name = "word_count"' in files["topologies/word_count.py"]
    assert "storm-zmq run topologies/word_count.py" in files["README.md"]
    assert not any("{{" in text for text in files.values())


def test_class_name_is_camel_case() -> None:
    assert class_name("word_count") == "WordCount"
    assert class_name("my-topo2") == "MyTopo2"
    assert class_name("x") == "X"


@pytest.mark.parametrize("name", ["1abc", "a/b", "../x", "a.b", "", "a b", "x" * 65,
                                  "None", "true"])  # class None(Topology): a SyntaxError
def test_an_invalid_name_is_a_usage_error(tmp_path: Path, name: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", name, "-d", str(tmp_path)]) == 2
    assert f"invalid project name {name!r}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_non_empty_directory_is_refused_and_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "mine.txt").write_text("keep")
    assert main(["quickstart", "proj", "-d", str(tmp_path)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "proj").iterdir()] == ["mine.txt"]


def test_an_existing_empty_directory_is_used(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    assert main(["quickstart", "proj", "-d", str(tmp_path)]) == 0
    assert (tmp_path / "proj" / "topologies" / "proj.py").is_file()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_parent_it_cannot_write_is_one_line_naming_path_and_cause(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "proj", "-d", "/proc"]) == 2  # mkdir fails there, even as root
    err = capsys.readouterr().err
    assert err == "storm-zmq: error: cannot create project 'proj' in /proc/proj: No such file or directory\n"


def _failing_write_text(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """Path.write_text succeeds `after` times, then raises as a full disk would."""
    real = Path.write_text
    calls = 0

    def write_text(self: Path, *args: Any, **kwargs: Any) -> int:
        nonlocal calls
        calls += 1
        if calls > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)


def test_a_failed_write_leaves_no_half_written_project(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _failing_write_text(monkeypatch, after=3)
    assert main(["quickstart", "proj", "-d", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"storm-zmq: error: cannot create project 'proj' in {tmp_path / 'proj'}: "
                          f"{tmp_path / 'proj'}/")
    assert err.endswith(": No space left on device\n") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_into_an_existing_empty_directory_empties_it_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proj").mkdir()
    _failing_write_text(monkeypatch, after=3)
    assert main(["quickstart", "proj", "-d", str(tmp_path)]) == 2
    assert list((tmp_path / "proj").iterdir()) == []


@pytest.mark.slow
def test_the_generated_project_runs_to_the_end_and_its_tests_pass(tmp_path: Path) -> None:
    assert main(["quickstart", "wordy", "-d", str(tmp_path)]) == 0
    project = tmp_path / "wordy"
    ports = [free_port(), free_port()]
    run = subprocess.run(
        [sys.executable, "-m", "storm_zmq.cli.main", "run", "topologies/wordy.py", "-w", "2",
         "-o", f"supervisor.slots.ports={ports}", "-o", "sentences.total=2000", "-t", "60"],
        capture_output=True, text=True, timeout=120, cwd=project)
    assert run.returncode == 0, run.stderr
    # ended by itself (bounded spout), long before -t, with every sentence counted
    assert "every spout is exhausted" in run.stdout, run.stdout
    rows = {line.split()[0]: line.split() for line in run.stdout.splitlines()
            if line.startswith("  ")}
    assert rows["sentence_spout"][1] == "2,000" and rows["sentence_spout"][3] == "2,000"
    assert int(rows["count_bolt"][2].replace(",", "")) == 2000 * 12  # words per sentence
    assert "all 2000 sentences acked" in run.stderr

    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests"], capture_output=True, text=True, timeout=120, cwd=project)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "3 passed" in tests.stdout
