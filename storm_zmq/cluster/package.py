"""Topology packages: the zip `storm-zmq submit` ships to ZooKeeper, so that a
supervisor host needs only storm-zmq installed, not a checkout of the project.

What goes in (paths relative to the project root, as in the project)::

    topologies/wordcount.py          the topology file
    src/...                          everything under <project>/src (the components),
                                     minus __pycache__, *.pyc and dot-files/dot-dirs
    helpers/util.py                  project modules the topology imported from outside
    helpers/__init__.py              src/ (found in sys.modules after loading it), with
                                     the package __init__.py files on the way
    .storm-zmq-package.json          manifest: topology file, class, file list

`build_package` loads the topology first (`load_topology`), so a broken topology fails
with its `TopologyError` before anything is shipped, and the imports it made tell which
project modules outside src/ it needs. A module counts as the project's when its file
lies under the project directory (not in storm_zmq itself, a dot-dir, __pycache__ or a
site-packages) and its dotted name matches its path below ``<project>`` (which the
loader puts on sys.path) or below a sys.path entry inside the project that loading the
topology added: that is how the topology could have imported it, and it keeps out files
that merely happen to be imported in this process (other topology files, modules of
another project nested in this one). Modules are taken from sys.modules, not only the
ones this load imported, so building twice in one process gives the same package.

The zip is deterministic (sorted entries, fixed timestamps and permissions, fixed
compression level), so the same project gives the same bytes and the same sha256
wherever it is checked out and whatever the files' mtimes.

`unpack_package` validates every entry before writing anything (no absolute paths,
``..``, backslashes, symlinks, duplicates, or paths escaping the target), extracts into
a temporary directory next to the target and renames it into place, so a half-extracted
package is never seen; a marker file holding the sha256 makes it idempotent.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import storm_zmq
from storm_zmq.topology.loader import load_topology, project_dir

__all__ = [
    "MANIFEST_NAME",
    "MARKER_NAME",
    "MAX_PACKAGE_BYTES",
    "MAX_UNPACKED_BYTES",
    "Package",
    "PackageError",
    "build_package",
    "read_package",
    "unpack_package",
]

#: Largest package (zip) `build_package` makes: ZooKeeper is no blob store.
MAX_PACKAGE_BYTES = 64 * 1024 * 1024
#: Largest total uncompressed size `unpack_package` accepts (zip-bomb guard).
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024

MANIFEST_NAME = ".storm-zmq-package.json"
MARKER_NAME = ".storm-zmq-package.sha256"
FORMAT = 1

_DATE_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can hold
_FILE_MODE = 0o644
_COMPRESS_LEVEL = 6
_CHUNK = 1024 * 1024

# project -> sys.path entries that loading its topologies added (see build_package)
_import_roots: dict[Path, list[Path]] = {}


class PackageError(Exception):
    """A package could not be built, read or unpacked; the message names the file or
    zip entry at fault."""


@dataclass(frozen=True)
class Package:
    """A built topology package: `data` is the zip, `topology_file` the topology file's
    path inside it (POSIX, relative), `topology_class` the Topology subclass's class
    name, `files` the project files inside (sorted, without the manifest)."""

    data: bytes = field(repr=False)
    topology_file: str
    topology_class: str
    files: tuple[str, ...]
    sha256: str

    @property
    def size(self) -> int:
        return len(self.data)


# -- building -------------------------------------------------------------------------


def build_package(topology_file: str | Path, name: str | None = None) -> Package:
    """Load the topology in ``topology_file`` (``name`` picks one, as for
    `load_topology`) and package it with its project's code. Raises `TopologyError`
    for a broken topology and `PackageError` for unreadable files or a package over
    `MAX_PACKAGE_BYTES`."""
    file = Path(topology_file).expanduser().resolve()
    path_before = set(sys.path)
    topology = load_topology(file, name)  # TopologyError propagates: nothing shipped
    project = project_dir(file)
    # import roots: the project (the loader put it on sys.path) and whatever loading
    # this project's topologies added inside it (remembered, so that a second build in
    # this process, where nothing is added, ships the same); not entries other loads left
    added = _import_roots.setdefault(project, [])
    for entry in sys.path:
        root = _resolve(entry) if entry not in path_before else None
        if root is not None and root not in added:
            added.append(root)
    roots = [project, *added]
    files: dict[str, Path] = {}  # zip name -> source file
    files[_relative(file, project)] = file
    src = project / "src"
    if src.is_dir():
        for path in _walk(src):
            files.setdefault(_relative(path, project), path)
    for path in _project_modules(project, roots):
        files.setdefault(_relative(path, project), path)
    topology_rel = _relative(file, project)
    return _zip(files, topology_rel, topology.__name__, file)


def _relative(path: Path, project: Path) -> str:
    return path.relative_to(project).as_posix()


def _skipped(name: str) -> bool:
    return name.startswith(".") or name == "__pycache__" or name.endswith(".pyc")


def _walk(root: Path) -> list[Path]:
    """Files under ``root``, following symlinked directories once (a link loop is
    not followed again), skipping __pycache__, *.pyc and dot-files/dirs."""
    found: list[Path] = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if not _skipped(d))
        found.extend(Path(dirpath, f) for f in sorted(filenames) if not _skipped(f))
    return found


def _excluded_dirs() -> tuple[Path, ...]:
    return (Path(storm_zmq.__file__).resolve().parent,)


def _resolve(entry: str) -> Path | None:
    try:
        return Path(entry or os.getcwd()).resolve()
    except (OSError, RuntimeError):
        return None


def _project_modules(project: Path, import_roots: list[Path]) -> list[Path]:
    """Files of the modules in sys.modules that the topology could have imported from
    the project outside src/ (through ``import_roots``), plus their packages'
    __init__.py files."""
    src = project / "src"
    roots: list[Path] = []
    for root in import_roots:
        if root != src and _inside(root, project) and root not in roots:
            roots.append(root)
    excluded = _excluded_dirs()
    found: list[Path] = []
    for module_name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if not isinstance(filename, str):
            continue  # built-in or namespace package
        try:
            path = Path(filename).resolve()
        except (OSError, RuntimeError):
            continue
        if (
            not _inside(path, project)
            or _inside(path, src)
            or any(_inside(path, d) for d in excluded)
            or not path.is_file()
        ):
            continue
        rel_parts = path.relative_to(project).parts
        if any(
            p.startswith(".") or p in ("__pycache__", "site-packages", "dist-packages")
            for p in rel_parts
        ):
            continue
        for root in roots:
            if _inside(path, root) and _name_matches(module_name, path.relative_to(root)):
                found.append(path)
                found.extend(_package_inits(path, root))
                break
    return found


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _name_matches(module_name: str, rel: Path) -> bool:
    parts = rel.parts
    if not parts:
        return False
    stem = parts[-1].split(".", 1)[0]  # util.py, util.cpython-311-x86_64-linux-gnu.so
    dotted = parts[:-1] if stem == "__init__" else (*parts[:-1], stem)
    return ".".join(dotted) == module_name


def _package_inits(path: Path, root: Path) -> list[Path]:
    inits = []
    directory = path.parent
    while directory != root and _inside(directory, root):
        init = directory / "__init__.py"
        if init.is_file():
            inits.append(init)
        directory = directory.parent
    return inits


def _new_zip_info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_DATE_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # Unix, so external_attr holds the mode wherever it is built
    info.external_attr = (stat.S_IFREG | _FILE_MODE) << 16
    return info


def _zip(files: dict[str, Path], topology_file: str, topology_class: str,
         source: Path) -> Package:
    names = tuple(sorted(files))
    total = 0
    for name in names:
        try:
            total += files[name].stat().st_size
        except OSError as exc:
            raise PackageError(f"cannot package {files[name]} (for topology {source}): "
                               f"{exc.strerror or exc}") from exc
    if total > MAX_UNPACKED_BYTES:
        _too_big(files, source, total, partial=False, compressed=False)
    manifest = json.dumps(
        {"format": FORMAT, "topology_file": topology_file, "topology_class": topology_class,
         "files": list(names)},
        sort_keys=True, indent=1,
    ).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compresslevel=_COMPRESS_LEVEL) as archive:
        with archive.open(_new_zip_info(MANIFEST_NAME), "w") as out:
            out.write(manifest)
        for name in names:
            path = files[name]
            try:
                with path.open("rb") as src, archive.open(_new_zip_info(name), "w") as out:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        if buffer.tell() > MAX_PACKAGE_BYTES:
                            _too_big(files, source, buffer.tell(), partial=True)
            except OSError as exc:
                raise PackageError(
                    f"cannot package {path} (for topology {source}): "
                    f"{exc.strerror or exc}") from exc
    data = buffer.getvalue()
    if len(data) > MAX_PACKAGE_BYTES:
        _too_big(files, source, len(data), partial=False)
    return Package(data=data, topology_file=topology_file, topology_class=topology_class,
                   files=names, sha256=hashlib.sha256(data).hexdigest())


def _mib(size: float) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def _too_big(files: dict[str, Path], source: Path, size: int, partial: bool,
             compressed: bool = True) -> None:
    sizes = []
    for name, path in files.items():
        try:
            sizes.append((path.stat().st_size, name))
        except OSError:
            pass
    sizes.sort(key=lambda item: (-item[0], item[1]))
    biggest = ", ".join(f"{name} ({_mib(s)})" for s, name in sizes[:5])
    what = f"over {_mib(size)} (stopped there)" if partial else _mib(size)
    if compressed:
        what, limit = f"{what} compressed", f"{_mib(MAX_PACKAGE_BYTES)} (MAX_PACKAGE_BYTES)"
    else:
        what, limit = f"{what} uncompressed", f"{_mib(MAX_UNPACKED_BYTES)} (MAX_UNPACKED_BYTES)"
    raise PackageError(
        f"package for topology {source} is {what}, over the limit of {limit}; "
        f"biggest files: {biggest}; "
        "keep data files out of src/ and the project's imported modules")


# -- reading and unpacking ------------------------------------------------------------


def _open_zip(data: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise PackageError(f"not a valid topology package: {exc}") from exc


def read_package(data: bytes) -> Package:
    """The `Package` for package bytes, from its manifest (checked against the
    entries)."""
    with _open_zip(data) as archive:
        _check_entries(archive)
        try:
            manifest: Any = json.loads(archive.read(MANIFEST_NAME))
        except KeyError:
            raise PackageError(f"topology package has no {MANIFEST_NAME}") from None
        except (ValueError, zipfile.BadZipFile, OSError) as exc:
            raise PackageError(f"topology package entry {MANIFEST_NAME} is unreadable: "
                               f"{exc}") from exc
        names = sorted(i.filename for i in archive.infolist()
                       if i.filename != MANIFEST_NAME and not i.is_dir())
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PackageError(f"topology package entry {MANIFEST_NAME}: unknown format "
                           f"{manifest.get('format') if isinstance(manifest, dict) else None!r}")
    topology_file = manifest.get("topology_file")
    topology_class = manifest.get("topology_class")
    files = manifest.get("files")
    if not isinstance(topology_file, str) or not isinstance(topology_class, str):
        raise PackageError(f"topology package entry {MANIFEST_NAME}: no topology_file "
                           "or topology_class")
    if files != names:
        raise PackageError(f"topology package entry {MANIFEST_NAME}: its file list does "
                           "not match the package's entries")
    if topology_file not in names:
        raise PackageError(f"topology package lacks its topology file {topology_file}")
    return Package(data=data, topology_file=topology_file, topology_class=topology_class,
                   files=tuple(names), sha256=hashlib.sha256(data).hexdigest())


def _check_name(name: str) -> None:
    if not name:
        raise PackageError("topology package has an entry with an empty name")
    if "\\" in name or "\x00" in name:
        raise PackageError(f"topology package entry {name!r}: backslash or NUL in name")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise PackageError(f"topology package entry {name!r}: absolute path refused")
    parts = PurePosixPath(name).parts
    if ".." in name.split("/"):
        raise PackageError(f"topology package entry {name!r}: '..' component refused")
    if not parts or name.rstrip("/").split("/") != list(parts):
        raise PackageError(f"topology package entry {name!r}: malformed path "
                           "(empty or '.' component)")
    if parts[0] == MARKER_NAME:
        raise PackageError(f"topology package entry {name!r}: reserved name")


def _check_entries(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """Every entry is a plain file or directory with a safe relative name; returns
    them. Raises `PackageError` naming the first bad entry."""
    infos = archive.infolist()
    seen: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        _check_name(name)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise PackageError(f"topology package entry {name!r}: symlink refused")
        if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) and stat.S_IFMT(mode):
            raise PackageError(f"topology package entry {name!r}: not a regular file")
        key = name.rstrip("/")
        if key in seen:
            raise PackageError(f"topology package entry {name!r}: duplicate entry")
        seen.add(key)
        if info.flag_bits & 0x1:
            raise PackageError(f"topology package entry {name!r}: encrypted")
        total += info.file_size
        if total > MAX_UNPACKED_BYTES:
            raise PackageError(f"topology package unpacks to over {_mib(MAX_UNPACKED_BYTES)} "
                               f"(MAX_UNPACKED_BYTES), at entry {name!r}")
    return infos


def _read_marker(target: Path) -> str | None:
    try:
        return (target / MARKER_NAME).read_text().strip()
    except OSError:
        return None


def unpack_package(data: bytes, target: Path) -> None:
    """Extract package ``data`` into directory ``target``, which then holds exactly
    the package's files (and a marker file with its sha256). Nothing is written unless
    every entry is safe; extraction goes to a temporary directory next to ``target``
    that is renamed into place. If ``target`` already holds this package (same
    sha256), nothing is done; if it holds something else, it is replaced."""
    target = Path(target).absolute()
    digest = hashlib.sha256(data).hexdigest()
    if _read_marker(target) == digest:
        return
    with _open_zip(data) as archive:
        infos = _check_entries(archive)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.unpack-", dir=target.parent))
        except OSError as exc:
            raise PackageError(f"cannot unpack topology package into {target}: "
                               f"{exc.strerror or exc}") from exc
        try:
            _extract(archive, infos, temp)
            (temp / MARKER_NAME).write_text(digest + "\n")
            _install(temp, target, digest)
        except OSError as exc:
            raise PackageError(f"cannot unpack topology package into {target}: "
                               f"{exc.strerror or exc}") from exc
        finally:
            shutil.rmtree(temp, ignore_errors=True)


def _extract(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], temp: Path) -> None:
    root = temp.resolve()
    for info in infos:
        name = info.filename
        dest = (root / name).resolve()
        if dest == root or root not in dest.parents:  # belt and braces after _check_name
            raise PackageError(f"topology package entry {name!r}: escapes the target")
        if info.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        try:
            with archive.open(info) as src, open(dest, "xb") as out:
                while chunk := src.read(_CHUNK):
                    written += len(chunk)
                    if written > info.file_size:
                        raise PackageError(f"topology package entry {name!r}: larger "
                                           "than its declared size")
                    out.write(chunk)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError,
                NotImplementedError) as exc:
            raise PackageError(f"topology package entry {name!r} is corrupt: {exc}") from exc
        os.chmod(dest, _FILE_MODE)


def _install(temp: Path, target: Path, digest: str) -> None:
    """Rename the extracted ``temp`` to ``target``; an existing ``target`` with other
    content is moved aside first and removed after. A concurrent unpacker that won the
    race with the same package is fine."""
    old: Path | None = None
    if target.exists() or target.is_symlink():
        if _read_marker(target) == digest:
            return
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        os.rename(target, old / "content")
    try:
        os.rename(temp, target)
    except OSError:
        if _read_marker(target) == digest:  # another unpacker put the same package there
            return
        if old is not None and not target.exists():  # put the previous content back
            os.rename(old / "content", target)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
