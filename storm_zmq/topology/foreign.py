"""streamparse's specs for components that are not Python: `JavaBolt`, `JavaSpout`,
`ShellBolt`, `ShellSpout`.

storm-zmq runs Python components in its own worker processes; there is no JVM to run
a Java class and no multilang subprocess for a shell command. A topology that uses
one still imports (the names exist, so a streamparse project gets this far after
changing its imports), and its `spec(...)` is one clear error naming the component,
rather than an ImportError about a missing name.
"""

from __future__ import annotations

from typing import Any, NoReturn

from storm_zmq.topology.errors import TopologyError

__all__ = ["JavaBolt", "JavaSpout", "ShellBolt", "ShellSpout"]


class _Foreign:
    _runs = ""  # what the component would run, for the message

    @classmethod
    def spec(cls, *args: Any, **kwargs: Any) -> NoReturn:
        details = ", ".join(f"{key}={kwargs[key]!r}" for key in
                            ("name", "full_class_name", "command", "script") if kwargs.get(key))
        kind = "Bolt" if cls.__name__.endswith("Bolt") else "Spout"
        raise TopologyError(
            f"{cls.__name__}.spec({details}): storm-zmq runs Python components only "
            f"(no {cls._runs}); write this component as a Python {kind} (storm_zmq.{kind})")


class JavaBolt(_Foreign):
    _runs = "JVM to run a Java class"


class JavaSpout(_Foreign):
    _runs = "JVM to run a Java class"


class ShellBolt(_Foreign):
    _runs = "multilang subprocess to run a command"


class ShellSpout(_Foreign):
    _runs = "multilang subprocess to run a command"
