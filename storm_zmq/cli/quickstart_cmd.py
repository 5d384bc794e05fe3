"""``storm-zmq quickstart NAME``: a new project that runs at once (streamparse's
``sparse quickstart``).

The project is the streamparse layout (``topologies/``, ``src/spouts``,
``src/bolts``) plus ``conf/storm.yaml``, a README with the two commands to run it and
unit tests of its components on `storm_zmq.testing`. The word count's spout is
bounded, so ``storm-zmq run topologies/NAME.py`` ends by itself. Templates are
package data under ``storm_zmq/quickstart/templates`` (see that package).
"""

from __future__ import annotations

import argparse
import keyword
import re
import shutil
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

from storm_zmq.cli import UsageError

#: A project name: it names a directory, the topology file and the topology, so it
#: must be a valid Storm topology name and a plain file name.
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}\Z")

#: Template file names that are not ``<name>.tmpl`` of the file they become.
_RENAMED = {"gitignore.tmpl": ".gitignore"}


@dataclass(frozen=True)
class ProjectFile:
    path: Path  # relative to the project directory
    text: str


def class_name(name: str) -> str:
    """``word_count`` / ``word-count`` -> ``WordCount``: the Topology class's name."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]+", name) if part)


def check_name(name: str) -> None:
    if not NAME_PATTERN.match(name):
        raise UsageError(
            f"invalid project name {name!r}: use a letter followed by letters, digits, "
            "'_' or '-' (at most 64 characters), e.g. wordcount")
    if keyword.iskeyword(class_name(name)):  # `class None(Topology):` does not compile
        raise UsageError(f"invalid project name {name!r}: its topology class would be named "
                         f"{class_name(name)}, a Python keyword; choose another name")


def render_project(name: str) -> list[ProjectFile]:
    """The files of project `name` (pure: nothing is written)."""
    check_name(name)
    values = {"{{name}}": name, "{{class_name}}": class_name(name)}

    def substitute(text: str) -> str:
        for token, value in values.items():
            text = text.replace(token, value)
        return text

    files = []
    root = resources.files("storm_zmq.quickstart") / "templates"
    for relative, template in _walk(root, Path()):
        target = relative.with_name(_RENAMED.get(relative.name, relative.name.removesuffix(".tmpl")))
        files.append(ProjectFile(Path(substitute(str(target))), substitute(template.read_text())))
    return sorted(files, key=lambda f: f.path)


def _walk(node: Traversable, relative: Path) -> list[tuple[Path, Traversable]]:
    found = []
    for child in node.iterdir():
        if child.is_dir():
            found += _walk(child, relative / child.name)
        elif child.name.endswith(".tmpl"):
            found.append((relative / child.name, child))
    return found


def create_project(name: str, parent: Path) -> Path:
    """Write project `name` into ``parent/name`` (which must not exist or be empty)."""
    files = render_project(name)
    directory = parent / name
    try:
        existed = directory.exists()
        if existed and not directory.is_dir():
            raise UsageError(f"cannot create project {name!r}: {directory} is a file")
        if existed and any(directory.iterdir()):
            raise UsageError(f"cannot create project {name!r}: {directory} exists and is not empty")
    except OSError as exc:
        raise UsageError(_os_error_message(name, directory, exc)) from None
    try:
        for file in files:
            target = directory / file.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(file.text)
    except OSError as exc:
        _remove_partial_project(directory, existed)
        raise UsageError(_os_error_message(name, directory, exc)) from None
    return directory


def _os_error_message(name: str, directory: Path, exc: OSError) -> str:
    """One line: the path that failed and why (``No such file or directory``, ...)."""
    where = "" if exc.filename in (None, str(directory)) else f"{exc.filename}: "
    return f"cannot create project {name!r} in {directory}: {where}{exc.strerror or exc}"


def _remove_partial_project(directory: Path, existed: bool) -> None:
    """Undo a failed `create_project`: it wrote only into `directory`, which was
    absent or empty before, so everything in it is the failed project's."""
    if not existed:
        shutil.rmtree(directory, ignore_errors=True)
        return
    try:
        children = list(directory.iterdir())
    except OSError:
        return
    for child in children:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            try:
                child.unlink(missing_ok=True)
            except OSError:
                pass


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "quickstart",
        help="create a new project that runs at once",
        description="Create NAME/ with a word count topology (topologies/NAME.py, "
        "src/spouts, src/bolts), conf/storm.yaml, unit tests of the components and a "
        "README. Its spout is bounded: `storm-zmq run topologies/NAME.py` ends by itself.",
    )
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("-d", "--directory", default=".", metavar="PARENT",
                        help="create the project in PARENT/NAME (default: ./NAME)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    parent = Path(args.directory)
    if not parent.is_dir():
        raise UsageError(f"--directory {parent}: no such directory")
    directory = create_project(args.name, parent)
    count = sum(1 for p in directory.rglob("*") if p.is_file())
    print(f"created project {args.name!r} in {directory} ({count} files). Next:\n"
          f"    cd {directory}\n"
          f"    storm-zmq run topologies/{args.name}.py\n"
          f"    python -m pytest tests")
    return 0
