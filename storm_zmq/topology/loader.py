"""Load a ``Topology`` subclass from a topology file in a streamparse project.

streamparse layout::

    <project>/topologies/wordcount.py   from bolts.wordcount import WordCountBolt
    <project>/src/bolts/wordcount.py
    <project>/src/spouts/words.py

Components live in ``<project>/src`` and are imported as top-level modules, so both
``<project>/src`` and ``<project>`` go on ``sys.path`` (and stay there: workers keep
importing component modules by those names), and the topology file's own directory
after everything else, as streamparse appends it (its neighbours in ``topologies/``).
The topology file itself is imported under a unique module name, so two topologies
with the same file name never clash.

Why the error wrapping: a topology file that fails to import is the commonest
mistake, and the CLI should print one line saying which file, which exception and
which line of the user's code, rather than a traceback through importlib.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import linecache
import sys
import sysconfig
import traceback
from pathlib import Path
from types import FrameType, ModuleType

import storm_zmq
from storm_zmq.topology.errors import TopologyError
from storm_zmq.topology.topology import Topology

__all__ = ["is_user_file", "load_topology", "project_dir", "streamparse_leftovers",
           "user_code_line"]

_counter = itertools.count(1)


def project_dir(path: Path) -> Path:
    """The project of a topology file: the grandparent of ``topologies/x.py``, else
    the file's directory."""
    parent = path.parent
    return parent.parent if parent.name == "topologies" else parent


def streamparse_leftovers(path: str | Path) -> list[str]:
    """What a streamparse project has that storm-zmq does not read, for a warning:
    its ``config.json`` (sparse's environments and their topology options), whose
    settings would otherwise be lost without a word (a porting audit)."""
    config_json = project_dir(Path(path).expanduser().resolve()) / "config.json"
    if not config_json.is_file():
        return []
    return [f"{config_json} (streamparse's sparse settings) is not read: put its topology "
            "options in the topology's config or conf/storm.yaml, and its log level in "
            "pystorm.log.level (docs/streamparse.md)"]


def _not_found(file: Path, given: str | Path) -> TopologyError:
    """For a bare name (`storm-zmq run wordcnt`), say which topology files the
    working directory's topologies/ has."""
    topologies = Path("topologies")
    bare = Path(given).name == str(given)
    found = sorted(p.name for p in topologies.glob("*.py")) if bare and topologies.is_dir() else []
    hint = f" (topologies/ has {', '.join(found)})" if found else ""
    return TopologyError(f"topology file not found: {file}{hint}")


def load_topology(path: str | Path, name: str | None = None) -> type[Topology]:
    """Import the topology file ``path`` and return the ``Topology`` subclass it
    defines (``name`` picks one by topology or class name when it defines several).
    Raises :class:`TopologyError` for every failure."""
    file = Path(path).expanduser().resolve()
    if file.is_dir():
        raise TopologyError(f"{file} is a directory, not a topology file")
    if not file.is_file():
        raise _not_found(file, path)
    project = project_dir(file)
    _refuse_shadowing(project, project / "src")
    _add_to_sys_path(project)
    _add_to_sys_path(project / "src")  # src first: component modules win
    # last, as streamparse appends it: a topology file imports its neighbours in
    # topologies/ (`from common import CONF`) and shadows nothing
    _add_to_sys_path(file.parent, last=True)
    module = _import_file(file)
    return _pick_topology(file, module, name)


#: Imported by a worker after the project is on its path (lazily), or by the
#: components it runs: not always in this process's modules yet.
_RUNTIME_MODULES = frozenset({"storm_zmq", "zmq", "msgpack", "yaml", "kazoo", "pyspark", "py4j"})
_STDLIB_DIRS = tuple(str(Path(p).resolve()) + "/" for key, p in sysconfig.get_paths().items()
                     if key in ("stdlib", "platstdlib"))


def _refuse_shadowing(*directories: Path) -> None:
    """A module of the project named as one that storm-zmq imports (``src/queue.py``,
    ``src/msgpack.py``) would be imported in its place in every worker, which gets
    the project's directories first on its path from its start: the workers died
    of tracebacks deep in the runtime, and the run said only that they exited.
    Only what the import system would take for a module counts (a ``.py`` file, an
    extension, a directory with ``__init__.py``: a plain directory such as ``site/``
    or ``email/`` of templates shadows nothing), and only modules of the standard
    library and storm-zmq's own dependencies (built-in and frozen ones cannot be
    shadowed)."""
    import storm_zmq.runtime.worker  # noqa: F401  what a worker has imported before it loads the topology

    needed = set(_RUNTIME_MODULES)
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        if where and origin not in ("built-in", "frozen") and \
                str(Path(where).resolve()).startswith(_STDLIB_DIRS) and "-packages/" not in where:
            needed.add(name.partition(".")[0])
    for directory in directories:
        if not directory.is_dir():
            continue
        for entry in sorted(directory.iterdir()):
            name = _module_name(entry)
            if name in needed and not _is_module(sys.modules.get(name), entry):
                raise TopologyError(
                    f"{entry} has the name of the module {name!r} that storm-zmq and Python "
                    f"need: with {directory} first on the path of every worker it would be "
                    "imported instead of it; rename it")


def _module_name(entry: Path) -> str | None:
    """The module `entry` is on a path, if the import system would take it for one."""
    if entry.is_dir():
        return entry.name if (entry / "__init__.py").is_file() else None
    if entry.suffix == ".py":
        return entry.stem
    if entry.suffix == ".so":  # an extension: name.cpython-311-x86_64-linux-gnu.so
        return entry.name.partition(".")[0]
    return None


def _is_module(module: ModuleType | None, entry: Path) -> bool:
    """Whether `entry` is where `module` came from (storm-zmq's own checkout holds
    a project: this repository's topologies/)."""
    where = getattr(module, "__file__", None)
    return where is not None and Path(where).resolve() in (entry.resolve(), entry.resolve() / "__init__.py")


def _add_to_sys_path(directory: Path, last: bool = False) -> None:
    entry = str(directory)
    if directory.is_dir() and entry not in sys.path:
        sys.path.insert(len(sys.path) if last else 0, entry)


def _import_file(file: Path) -> ModuleType:
    module_name = f"_storm_zmq_topology_{next(_counter)}_{file.stem}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise TopologyError(f"cannot import topology file {file}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    # registered before running it, as a normal import does (dataclasses, pickle
    # and typing look the module up by name while its body runs)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except TopologyError as exc:
        del sys.modules[module_name]
        # raised while a class statement ran: the message names topology and
        # component; the line of that statement says which file
        where = _user_location(exc, file)
        if where and str(file) not in str(exc):
            raise TopologyError(f"{exc} (at {where})") from exc
        raise
    except Exception as exc:
        del sys.modules[module_name]
        where = _user_location(exc, file)
        at = f" at {where}" if where else ""
        raise TopologyError(
            f"cannot import topology file {file}: {type(exc).__name__}: {exc}{at}"
            f"{_import_hint(exc, file)}"
        ) from exc
    return module


def _import_hint(exc: Exception, file: Path) -> str:
    """What to do about a module not found: a streamparse import to change, or where
    the project's modules were looked for (a topology outside ``topologies/``
    has its own directory as the project, and ``src/`` next to it)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return ""
    top = exc.name.partition(".")[0]
    if top in ("streamparse", "pystorm"):
        return (f"; a streamparse project runs after its imports say storm_zmq instead of {top} "
                f"(`from storm_zmq import ...`; docs/streamparse.md)")
    if top in getattr(sys, "stdlib_module_names", ()) or importlib.util.find_spec(top) is not None:
        return ""  # a submodule missing from a module that exists: its own story
    project = project_dir(file)
    where = [str(project), str(project / "src")] + ([str(file.parent)] if file.parent != project else [])
    return (f"; the project's modules are looked for in {', '.join(where[:-1])} and {where[-1]} "
            "(the project of topologies/x.py is the directory above topologies/, of any "
            "other file its own directory)")


def _user_location(exc: BaseException, file: Path) -> str:
    """``file:line: source`` of the innermost frame in the user's code (not in the
    standard library, site-packages, importlib or storm_zmq)."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        # the offending file never ran, so it is not in the traceback
        return _location(exc.filename, exc.lineno, exc.text)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
    if not frames:
        return ""
    frame = frames[-1]
    return _location(frame.filename, frame.lineno or 0, frame.line)


def _location(filename: str, lineno: int, text: str | None) -> str:
    if text is None:
        text = linecache.getline(filename, lineno)
    text = text.strip()
    return f"{filename}:{lineno}" + (f": {text}" if text else "")


def _not_user_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    dirs.add(str(Path(storm_zmq.__file__).resolve().parent))
    return tuple(str(Path(d).resolve()) + "/" for d in dirs)


@functools.lru_cache(maxsize=1024)
def is_user_file(filename: str) -> bool:
    """Whether code in `filename` is the user's: not Python's, an installed package's
    or storm-zmq's (error messages point at the user's line)."""
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return False
    resolved = str(Path(filename).resolve())
    return not resolved.startswith(_not_user_dirs()) and "site-packages" not in resolved


def user_code_line(frame: FrameType | None) -> str:
    """``file:line in function`` of the innermost frame of the user's code on the
    stack that ends at `frame` ('' if none is): where a component is, for a message."""
    while frame is not None:
        code = frame.f_code
        if is_user_file(code.co_filename):
            return f"{code.co_filename}:{frame.f_lineno} in {code.co_name}"
        frame = frame.f_back
    return ""


def _pick_topology(file: Path, module: ModuleType, name: str | None) -> type[Topology]:
    """The topologies the file defines; if it defines none, the ones it imports
    (a file that only names a topology shared by several, as streamparse takes any
    it finds), but not a base class it imports to subclass."""
    everything = [value for value in vars(module).values()
                  if isinstance(value, type) and issubclass(value, Topology) and value is not Topology]
    found = list(dict.fromkeys(t for t in everything if t.__module__ == module.__name__))
    if not found:
        found = list(dict.fromkeys(everything))
    if not found:
        raise TopologyError(
            f"{file}: defines no Topology subclass (expected e.g. `class WordCount(Topology): ...`)"
        )
    if name is None:
        if len(found) > 1:
            raise TopologyError(
                f"{file}: defines several topologies ({', '.join(t.name for t in found)}); "
                "say which one with --class NAME"
            )
        return found[0]
    for topology in found:
        if name in (topology.name, topology.__name__):
            return topology
    raise TopologyError(
        f"{file}: no topology named {name!r} (it defines {', '.join(t.name for t in found)})"
    )
