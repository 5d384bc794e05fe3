"""Output streams, streamparse's ``Stream(fields=None, name="default", direct=False)``.

A component declares the streams it emits on through its ``outputs`` class
attribute. Streams are immutable values: the topology is validated once, at class
creation, and the runtime relies on the declared fields never changing afterwards.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from storm_zmq.topology.errors import TopologyError

__all__ = ["DEFAULT_STREAM", "Stream", "is_attribute_name", "is_system_id"]

DEFAULT_STREAM = "default"


def is_attribute_name(field: str) -> bool:
    """Whether `tup.values.<field>` reaches a field: the values namedtuple renames a
    field that is no Python identifier, a keyword or starts with ``_`` (``_0``)."""
    return field.isidentifier() and not keyword.iskeyword(field) and not field.startswith("_")


def is_system_id(name: str) -> bool:
    """Storm reserves ids starting with ``__`` for its system components and streams
    (``__acker``, ``__system``, ``__tick``, ``__ack_ack``, ...)."""
    return name.startswith("__")


@dataclass(frozen=True, init=False)
class Stream:
    """A named output stream with its field names.

    ``fields`` is stored as a tuple so that a ``Stream`` cannot be changed after the
    topology was validated against it. ``direct=True`` makes it a direct stream: the
    emitter picks the receiving task, and subscribers must use ``Grouping.DIRECT``.
    """

    fields: tuple[str, ...]
    name: str
    direct: bool

    def __init__(
        self, fields: Iterable[str] | None = None, name: str = DEFAULT_STREAM, direct: bool = False
    ) -> None:
        object.__setattr__(self, "name", _check_stream_name(name))
        object.__setattr__(self, "fields", _check_fields(fields, self.name))
        if not isinstance(direct, bool):
            raise TopologyError(
                f"Stream {self.name!r}: direct must be True or False, got {direct!r}"
            )
        object.__setattr__(self, "direct", direct)

    def __repr__(self) -> str:
        direct = ", direct=True" if self.direct else ""
        return f"Stream({list(self.fields)!r}, name={self.name!r}{direct})"


def _check_stream_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TopologyError(f"Stream name must be a non-empty str, got {name!r}")
    if is_system_id(name):
        raise TopologyError(
            f"Stream name {name!r} is reserved: names starting with '__' are Storm's system streams"
        )
    return name


def _check_fields(fields: Any, stream: str) -> tuple[str, ...]:
    if fields is None:
        return ()
    # a str is iterable too, but Stream("word") is always a mistake for ["word"]
    if not isinstance(fields, (list, tuple)):
        raise TopologyError(
            f"Stream {stream!r}: fields must be a list or tuple of str, got {fields!r}"
        )
    seen: set[str] = set()
    for field in fields:
        if not isinstance(field, str) or not field:
            raise TopologyError(
                f"Stream {stream!r}: field names must be non-empty str, got {field!r}"
            )
        if is_system_id(field):
            raise TopologyError(
                f"Stream {stream!r}: field name {field!r} is reserved (starts with '__')"
            )
        if field in seen:
            raise TopologyError(
                f"Stream {stream!r}: duplicate field name {field!r} in {list(fields)!r}"
            )
        seen.add(field)
    return tuple(fields)
