"""Topology packages: what goes in, determinism, self-containment (a fresh interpreter
loads the topology from the unpacked package alone) and safe unpacking."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_zmq.cluster import package as package_mod
from storm_zmq.cluster.package import (
    MANIFEST_NAME,
    MARKER_NAME,
    Package,
    PackageError,
    build_package,
    read_package,
    unpack_package,
)
from storm_zmq.topology import TopologyError

RUNTIME_PROJECT = Path(__file__).resolve().parents[1] / "runtime" / "project"
WORDCOUNT = RUNTIME_PROJECT / "topologies" / "wordcount.py"


@pytest.fixture(autouse=True)
def restore_imports(tmp_path: Path) -> Iterator[None]:
    """Loading a topology leaves its project on sys.path and its modules in
    sys.modules; drop what these tests' temporary projects added, so the same module
    names can be reused by the next test."""
    path_before = list(sys.path)
    modules_before = set(sys.modules)
    yield
    sys.path[:] = path_before
    root = str(tmp_path.resolve())
    for name in set(sys.modules) - modules_before:
        filename = getattr(sys.modules[name], "__file__", None) or ""
        if str(Path(filename).resolve()).startswith(root) or name.startswith(
            "_storm_zmq_topology_"
        ):
            del sys.modules[name]


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def copy_runtime_project(target: Path) -> Path:
    shutil.copytree(RUNTIME_PROJECT, target,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


COMPONENTS = """\
    from storm_zmq import Bolt, Spout

    class Numbers(Spout):
        outputs = ["n"]

        def next_tuple(self):
            pass

    class Sink(Bolt):
        def process(self, tup):
            pass
    """

HELPER_TOPOLOGY = """\
    from comps import Numbers, Sink
    from pkghelpers.util import PAR
    from pkghelpers.sub.deep import DEPTH

    from storm_zmq import Topology

    class Helped(Topology):
        numbers = Numbers.spec(par=PAR)
        sink = Sink.spec(inputs=[numbers], par=DEPTH)
    """


def helper_project(root: Path) -> Path:
    """A project whose topology imports ``pkghelpers`` from the project root (outside
    src/), next to modules it does not import."""
    write(root, {
        "topologies/t.py": HELPER_TOPOLOGY,
        "src/comps.py": COMPONENTS,
        "pkghelpers/__init__.py": "",
        "pkghelpers/util.py": "PAR = 2\n",
        "pkghelpers/unused.py": "raise RuntimeError('never imported')\n",
        "pkghelpers/sub/__init__.py": "",
        "pkghelpers/sub/deep.py": "DEPTH = 3\n",
        "notes/scratch.py": "X = 1\n",
        "README.md": "not shipped\n",
    })
    return root / "topologies" / "t.py"


# -- building -------------------------------------------------------------------------


def test_build_runtime_project() -> None:
    package = build_package(WORDCOUNT)
    assert isinstance(package, Package)
    assert package.topology_file == "topologies/wordcount.py"
    assert package.topology_class == "FiniteWordCount"
    assert "src/testparts/__init__.py" in package.files
    assert "src/testparts/components.py" in package.files
    assert "topologies/wordcount.py" in package.files
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in package.files)
    # other topology files are not shipped, even if loaded in this process before
    assert "topologies/crash.py" not in package.files
    assert package.sha256 == hashlib.sha256(package.data).hexdigest()
    with zipfile.ZipFile(io.BytesIO(package.data)) as archive:
        assert archive.namelist() == sorted(archive.namelist())
        assert set(archive.namelist()) == {*package.files, MANIFEST_NAME}
        assert archive.read("topologies/wordcount.py") == WORDCOUNT.read_bytes()
    assert "data" not in repr(package)  # no megabytes of bytes in logs


def test_build_by_name(tmp_path: Path) -> None:
    write(tmp_path, {
        "src/comps.py": COMPONENTS,
        "topologies/two.py": """\
            from comps import Numbers, Sink
            from storm_zmq import Topology

            class First(Topology):
                numbers = Numbers.spec()

            class Second(Topology):
                name = "second-one"
                numbers = Numbers.spec()
                sink = Sink.spec(inputs=[numbers])
            """,
    })
    package = build_package(tmp_path / "topologies" / "two.py", "second-one")
    assert package.topology_class == "Second"
    with pytest.raises(TopologyError, match="several topologies"):
        build_package(tmp_path / "topologies" / "two.py")


def test_src_files_and_skipped_files(tmp_path: Path) -> None:
    project = copy_runtime_project(tmp_path / "project")
    write(project, {
        "src/testparts/__pycache__/components.cpython-311.pyc": "junk",
        "src/testparts/stale.pyc": "junk",
        "src/testparts/.hidden.py": "junk",
        "src/.git/config": "junk",
        "src/data/words.txt": "the quick brown fox\n",
        "src/other/__init__.py": "",
        "docs/notes.md": "not under src/, not a module: not shipped\n",
    })
    package = build_package(project / "topologies" / "wordcount.py")
    shipped_modules = tuple(
        f"src/testparts/{p.name}" for p in sorted((project / "src" / "testparts").glob("*.py"))
        if not p.name.startswith(".")
    )
    assert "src/testparts/components.py" in shipped_modules
    assert package.files == (
        "src/data/words.txt",
        "src/other/__init__.py",
        *shipped_modules,
        "topologies/wordcount.py",
    )


def test_deterministic(tmp_path: Path) -> None:
    first = build_package(WORDCOUNT)
    assert build_package(WORDCOUNT).data == first.data
    # another checkout with other mtimes gives the same bytes: no paths, no times
    copy = copy_runtime_project(tmp_path / "elsewhere")
    for path in copy.rglob("*"):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    again = build_package(copy / "topologies" / "wordcount.py")
    assert again.sha256 == first.sha256
    with zipfile.ZipFile(io.BytesIO(again.data)) as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_project_module_outside_src_included(tmp_path: Path) -> None:
    topology = helper_project(tmp_path)
    package = build_package(topology)
    assert package.topology_file == "topologies/t.py"
    assert package.topology_class == "Helped"
    assert package.files == (
        "pkghelpers/__init__.py",
        "pkghelpers/sub/__init__.py",
        "pkghelpers/sub/deep.py",
        "pkghelpers/util.py",
        "src/comps.py",
        "topologies/t.py",
    )
    # the second build, with everything already imported, ships the same
    assert build_package(topology).sha256 == package.sha256


def test_sys_path_entry_added_by_topology(tmp_path: Path) -> None:
    write(tmp_path, {
        "src/comps.py": COMPONENTS,
        "lib/pkgliblevel.py": "PAR = 1\n",
        "topologies/t.py": """\
            import os, sys
            sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
            from pkgliblevel import PAR
            from comps import Numbers
            from storm_zmq import Topology

            class Lib(Topology):
                numbers = Numbers.spec(par=PAR)
            """,
    })
    package = build_package(tmp_path / "topologies" / "t.py")
    assert "lib/pkgliblevel.py" in package.files
    # built again, the entry is on sys.path already: the same package all the same
    assert build_package(tmp_path / "topologies" / "t.py").sha256 == package.sha256


def test_a_neighbour_the_topology_imports_from_topologies_goes_in_and_loads_unpacked(
    tmp_path: Path,
) -> None:
    """The loader appends the topology's directory to sys.path (as streamparse
    does), so `from pkgsettings import PAR` in topologies/t.py finds
    topologies/pkgsettings.py: it must ship, and load from the unpacked package."""
    write(tmp_path / "project", {
        "src/comps.py": COMPONENTS,
        "topologies/pkgsettings.py": "PAR = 3\n",
        "topologies/unused.py": "X = 1\n",
        "topologies/t.py": """\
            from comps import Numbers
            from pkgsettings import PAR
            from storm_zmq import Topology

            class Neighbour(Topology):
                numbers = Numbers.spec(par=PAR)
            """,
    })
    package = build_package(tmp_path / "project" / "topologies" / "t.py")
    assert package.files == ("src/comps.py", "topologies/pkgsettings.py", "topologies/t.py")
    shutil.rmtree(tmp_path / "project")
    target = tmp_path / "unpacked"
    unpack_package(package.data, target)
    result = subprocess.run(
        [sys.executable, "-c",
         "import sys; from storm_zmq.topology import load_topology; "
         "print(load_topology(sys.argv[1]).definition().components['numbers'].par)",
         str(target / package.topology_file)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"


def test_topology_file_outside_topologies_dir(tmp_path: Path) -> None:
    write(tmp_path, {
        "src/comps.py": COMPONENTS,
        "flat.py": """\
            from comps import Numbers
            from storm_zmq import Topology

            class Flat(Topology):
                numbers = Numbers.spec()
            """,
    })
    package = build_package(tmp_path / "flat.py")
    assert package.topology_file == "flat.py"
    assert package.files == ("flat.py", "src/comps.py")


def test_broken_topology_raises_topology_error(tmp_path: Path) -> None:
    with pytest.raises(TopologyError):
        build_package(RUNTIME_PROJECT / "topologies" / "invalid.py")
    write(tmp_path, {"topologies/bad.py": "from no_such_module_xyz import Thing\n"})
    with pytest.raises(TopologyError, match="no_such_module_xyz"):
        build_package(tmp_path / "topologies" / "bad.py")
    with pytest.raises(TopologyError, match="not found"):
        build_package(tmp_path / "topologies" / "missing.py")


def test_unreadable_file_named(tmp_path: Path) -> None:
    project = copy_runtime_project(tmp_path / "project")
    (project / "src" / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    with pytest.raises(PackageError, match="dangling.py"):
        build_package(project / "topologies" / "wordcount.py")


def test_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = copy_runtime_project(tmp_path / "project")
    (project / "src" / "blob.bin").write_bytes(os.urandom(20_000))
    monkeypatch.setattr(package_mod, "MAX_PACKAGE_BYTES", 10_000)
    with pytest.raises(PackageError) as error:
        build_package(project / "topologies" / "wordcount.py")
    message = str(error.value)
    assert "MAX_PACKAGE_BYTES" in message
    assert "src/blob.bin" in message
    assert "MiB" in message
    # the biggest file is named first
    assert message.index("src/blob.bin") < message.index("src/testparts/components.py")


# -- reading and unpacking ------------------------------------------------------------


def test_read_package(tmp_path: Path) -> None:
    package = build_package(helper_project(tmp_path))
    assert read_package(package.data) == package


def test_unpacked_package_is_self_contained(tmp_path: Path) -> None:
    original = copy_runtime_project(tmp_path / "original")
    package = build_package(original / "topologies" / "wordcount.py")
    shutil.rmtree(original)  # the package must do without the project
    target = tmp_path / "deploy" / "topo-1"
    unpack_package(package.data, target)
    assert (target / MARKER_NAME).read_text().strip() == package.sha256
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    script = textwrap.dedent("""\
        import json, sys
        from storm_zmq.topology import load_topology
        topology = load_topology(sys.argv[1])
        import testparts.components as components
        definition = topology.definition()
        print(json.dumps({"class": topology.__name__, "components": components.__file__,
                          "names": sorted(definition.components)}))
        """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", script, str(target / package.topology_file)],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["class"] == package.topology_class
    assert Path(out["components"]).resolve().is_relative_to(target.resolve())
    assert out["names"] == ["count", "sentences", "split"]


def test_unpack_helper_project_round_trip(tmp_path: Path) -> None:
    package = build_package(helper_project(tmp_path / "project"))
    shutil.rmtree(tmp_path / "project")
    target = tmp_path / "unpacked"
    unpack_package(package.data, target)
    unpacked = sorted(p.relative_to(target).as_posix() for p in target.rglob("*")
                      if p.is_file())
    assert unpacked == sorted([*package.files, MANIFEST_NAME, MARKER_NAME])
    result = subprocess.run(
        [sys.executable, "-c",
         "import sys; from storm_zmq.topology import load_topology; "
         "print(load_topology(sys.argv[1]).__name__)", str(target / package.topology_file)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Helped"


def test_unpack_idempotent_and_replacing(tmp_path: Path) -> None:
    package = build_package(WORDCOUNT)
    target = tmp_path / "deploy" / "topo"
    unpack_package(package.data, target)
    components = target / "src" / "testparts" / "components.py"
    inode = components.stat().st_ino
    unpack_package(package.data, target)  # same sha256: left as it is
    assert components.stat().st_ino == inode
    # another package replaces the content entirely
    other = build_package(helper_project(tmp_path / "other"))
    unpack_package(other.data, target)
    assert not components.exists()
    assert (target / "pkghelpers" / "util.py").read_text() == "PAR = 2\n"
    assert (target / MARKER_NAME).read_text().strip() == other.sha256
    # no temporary directories left next to the target
    assert sorted(p.name for p in target.parent.iterdir()) == ["topo"]


def crafted_zip(entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


def symlink_entry(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (("../evil.py", b"x"), "'..'"),
        (("/abs.py", b"x"), "absolute"),
        (("src/../../evil.py", b"x"), "'..'"),
        (("src\\..\\..\\evil.py", b"x"), "backslash"),
        (("C:/evil.py", b"x"), "absolute"),
        (("src//a.py", b"x"), "malformed"),
        (symlink_entry("src/link.py", "/etc/passwd"), "symlink"),
        ((MARKER_NAME, b"0" * 64), "reserved"),
    ],
)
def test_unsafe_entries_refused(tmp_path: Path, entry: tuple, reason: str) -> None:
    data = crafted_zip([("src/ok.py", b"ok"), entry])
    target = tmp_path / "deploy" / "topo"
    name = entry[0] if isinstance(entry[0], str) else entry[0].filename
    with pytest.raises(PackageError, match=reason) as error:
        unpack_package(data, target)
    assert repr(name) in str(error.value)
    assert not target.exists()  # nothing written, not even the good entry
    assert not (tmp_path / "evil.py").exists()
    assert not (tmp_path / "deploy" / "evil.py").exists()
    assert not (tmp_path / "deploy").exists()  # checked before anything is created


def test_duplicate_entries_refused(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="Duplicate name"):
        data = crafted_zip([("src/a.py", b"1"), ("src/a.py", b"2")])
    with pytest.raises(PackageError, match="duplicate"):
        unpack_package(data, tmp_path / "topo")


def test_not_a_zip(tmp_path: Path) -> None:
    with pytest.raises(PackageError, match="not a valid topology package"):
        unpack_package(b"definitely not a zip", tmp_path / "topo")
    with pytest.raises(PackageError, match="not a valid topology package"):
        read_package(b"")
    with pytest.raises(PackageError, match=MANIFEST_NAME):
        read_package(crafted_zip([("src/a.py", b"1")]))
