"""Component specs: what ``Spout.spec(...)`` and ``Bolt.spec(...)`` return.

A :class:`ComponentSpec` is the unresolved, per-component half of a topology
declaration. It checks what it can check alone (types of ``par``, ``num_tasks``,
``config``, the form of ``inputs`` and of the component's ``outputs``) right away,
so a typo fails on the line that made it. Everything that needs the whole topology
(names, whether an input's component and stream exist, fields, cycles) is checked
when the ``Topology`` subclass is created (see :mod:`storm_zmq.topology.resolve`).

Inputs refer to upstream specs by object (``inputs=[word_spout]``,
``{word_spout["words"]: Grouping.fields("word")}``) because a spec usually gets its
name only later, from the class attribute it is assigned to. A :class:`StreamRef`
may also name its component by string (``StreamRef("count_bolt", "loop")``), which
is the only way to subscribe to a component defined further down, e.g. to close a
cycle.

This module must not import :mod:`storm_zmq.component` (which imports it).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from storm_zmq.topology.errors import TopologyError
from storm_zmq.topology.grouping import Grouping, GroupingSpec
from storm_zmq.topology.stream import DEFAULT_STREAM, Stream

__all__ = ["ComponentKind", "ComponentSpec", "StreamRef"]

ComponentKind = Literal["spout", "bolt"]
_KINDS: Final = ("spout", "bolt")
#: A component's number of tasks, in its config: Storm's setNumTasks.
TASKS_KEY: Final = "topology.tasks"


@dataclass(frozen=True)
class StreamRef:
    """One stream of one component: ``spec["stream"]``, or by component name
    ``StreamRef("name", "stream")`` (a forward reference)."""

    component: ComponentSpec | str
    stream: str = DEFAULT_STREAM

    def __post_init__(self) -> None:
        if not isinstance(self.component, (ComponentSpec, str)) or self.component == "":
            raise TopologyError(
                f"StreamRef: component must be a ComponentSpec or a component name, "
                f"got {self.component!r}"
            )
        if not isinstance(self.stream, str) or not self.stream:
            raise TopologyError(f"StreamRef: stream must be a non-empty str, got {self.stream!r}")

    def describe(self) -> str:
        """``'name'`` or ``WordSpout spec`` for messages."""
        if isinstance(self.component, str):
            return repr(self.component)
        return self.component.describe()


class ComponentSpec:
    """A spout or bolt of a topology, before the topology resolved names.

    Attributes: ``component_cls``, ``kind`` (``"spout"``/``"bolt"``), ``name`` (the
    ``name=`` given, else set from the class attribute when the topology is
    created), ``par`` (executors; at most ``num_tasks``, as in Storm), ``num_tasks`` (tasks), ``config`` (a
    dict), ``inputs`` (a tuple of ``(StreamRef, GroupingSpec)``) and ``outputs``
    (stream name -> :class:`Stream`, from ``component_cls.outputs``).

    Specs compare and hash by identity: the same declaration assigned under two
    names is one component declared twice, which the topology rejects.
    """

    def __init__(
        self,
        component_cls: type,
        kind: ComponentKind,
        name: str | None = None,
        inputs: Any = None,
        par: int | None = None,
        config: dict[str, Any] | None = None,
        num_tasks: int | None = None,
    ) -> None:
        if not isinstance(component_cls, type):
            raise TopologyError(
                f"ComponentSpec: component_cls must be a class, got {component_cls!r}"
            )
        self.component_cls = component_cls
        if kind not in _KINDS:
            raise TopologyError(f"{self._who()}: kind must be 'spout' or 'bolt', got {kind!r}")
        self.kind: ComponentKind = kind
        self._check_made_without_arguments()
        if name is not None and (not isinstance(name, str) or not name):
            raise TopologyError(f"{self._who()}: name must be a non-empty str, got {name!r}")
        self.given_name = name
        self.name = name
        # streamparse components may carry `par` and `config` class attributes
        if par is None:
            par = getattr(component_cls, "par", None)
            if par is None:
                par = 1
        self.par = self._check_count("par", par)
        if config is None:
            config = getattr(component_cls, "config", None)
        if config is None:
            config = {}
        if not isinstance(config, dict):
            raise TopologyError(f"{self._who()}: config must be a dict, got {config!r}")
        self.config: dict[str, Any] = dict(config)
        # the task count is the config's topology.tasks, as Storm's setNumTasks sets
        # it (streamparse has no num_tasks: its users set this key), so a topology's
        # topology.tasks applies only where the component set none
        # (definition.with_task_counts)
        if num_tasks is not None:
            num_tasks = self._check_count("num_tasks", num_tasks)
            given = self.config.get(TASKS_KEY, num_tasks)
            if given != num_tasks:
                raise TopologyError(f"{self._who()}: num_tasks={num_tasks} and config "
                                    f"{TASKS_KEY}: {given!r} disagree (they are one setting)")
            self.config[TASKS_KEY] = num_tasks
        elif self.config.get(TASKS_KEY) is not None:
            num_tasks = self._check_count(f"config {TASKS_KEY}", self.config[TASKS_KEY])
        self.num_tasks = self.par if num_tasks is None else num_tasks
        if self.num_tasks < self.par:
            # Storm spreads the tasks over min(par, num_tasks) executors (every
            # executor runs at least one task) and says nothing; so does this.
            self.par = self.num_tasks
        self.outputs: dict[str, Stream] = self._normalise_outputs(
            getattr(component_cls, "outputs", None)
        )
        inputs_list, implicit = self._normalise_inputs(inputs)
        self.inputs: tuple[tuple[StreamRef, GroupingSpec], ...] = inputs_list
        # indexes of inputs listed without a grouping: shuffle, or direct when the
        # stream turns out to be direct (streamparse's rule), decided at resolution
        self.implicit_groupings: frozenset[int] = implicit

    # -- streams --------------------------------------------------------------------

    def __getitem__(self, stream: str) -> StreamRef:
        """``spec["stream"]``: a reference to one of this component's streams. That
        the stream exists is checked when the topology is created."""
        if not isinstance(stream, str) or not stream:
            raise TopologyError(
                f"{self._who()}: stream name must be a non-empty str, got {stream!r}"
            )
        return StreamRef(self, stream)

    # -- messages -------------------------------------------------------------------

    def describe(self) -> str:
        """The component for error messages: its name once known, else its class."""
        if self.name is not None:
            return repr(self.name)
        return f"{self.component_cls.__name__} spec"

    def _check_made_without_arguments(self) -> None:
        """A worker makes each component with ``cls()``, as streamparse does
        (`component.new_component`): an ``__init__`` that needs arguments is found
        here, naming the class, rather than as a worker's failure."""
        try:
            inspect.signature(self.component_cls).bind()
        except TypeError as exc:
            raise TopologyError(
                f"{self._who()}: cannot be made with no arguments ({exc}), and a worker makes "
                "each component with cls(), as streamparse does: give __init__'s parameters "
                "defaults, or set the component up in initialize()") from None
        except ValueError:  # no signature to read (a class made in C): found when made
            pass

    def _who(self) -> str:
        return f"{getattr(self, 'kind', 'component')} {self.component_cls.__name__}"

    def __repr__(self) -> str:
        parts = [self.component_cls.__name__, f"kind={self.kind!r}"]
        if self.name is not None:
            parts.append(f"name={self.name!r}")
        parts.append(f"par={self.par}")
        if self.num_tasks != self.par:
            parts.append(f"num_tasks={self.num_tasks}")
        return f"ComponentSpec({', '.join(parts)})"

    # -- validation -----------------------------------------------------------------

    def _check_count(self, what: str, value: Any) -> int:
        if isinstance(value, dict):
            raise TopologyError(
                f"{self._who()}: {what} {value!r} is streamparse's per-environment "
                f"{what} (sparse run/submit -e ENV picks one); storm-zmq has no "
                f"environments: give an int, e.g. choose it in the topology file from "
                f"os.environ")
        if type(value) is not int:  # bool is an int, and "2" is a common YAML slip
            raise TopologyError(f"{self._who()}: {what} must be an int >= 1, got {value!r}")
        if value < 1:
            raise TopologyError(f"{self._who()}: {what} must be an int >= 1, got {value}")
        return value

    def _normalise_outputs(self, outputs: Any) -> dict[str, Stream]:
        if outputs is None:
            return {}
        if not isinstance(outputs, (list, tuple)):
            raise TopologyError(
                f"{self._who()}: outputs must be a list of field names or of Stream objects, "
                f"got {outputs!r}"
            )
        default_fields: list[str] = []
        streams: dict[str, Stream | None] = {}  # None: the default stream from field names
        for output in outputs:
            if isinstance(output, str):
                if DEFAULT_STREAM in streams and streams[DEFAULT_STREAM] is not None:
                    raise self._duplicate_stream(DEFAULT_STREAM)
                streams.setdefault(DEFAULT_STREAM, None)
                default_fields.append(output)
            elif isinstance(output, Stream):
                if output.name in streams:
                    raise self._duplicate_stream(output.name)
                streams[output.name] = output
            else:
                raise TopologyError(
                    f"{self._who()}: outputs must be field names (str) or Stream objects, "
                    f"got {output!r}"
                )
        result: dict[str, Stream] = {}
        for stream_name, stream in streams.items():
            if stream is None:
                try:
                    stream = Stream(default_fields)
                except TopologyError as exc:
                    raise TopologyError(f"{self._who()}: outputs: {exc}") from None
            result[stream_name] = stream
        return result

    def _duplicate_stream(self, stream: str) -> TopologyError:
        return TopologyError(
            f"{self._who()}: outputs declare stream {stream!r} twice (plain field names "
            "are the 'default' stream's fields)"
        )

    def _normalise_inputs(
        self, inputs: Any
    ) -> tuple[tuple[tuple[StreamRef, GroupingSpec], ...], frozenset[int]]:
        if inputs is None:
            return (), frozenset()
        pairs: list[tuple[StreamRef, GroupingSpec]] = []
        implicit: set[int] = set()
        if isinstance(inputs, Mapping):
            for source, grouping in inputs.items():
                ref = self._stream_ref(source)
                if not isinstance(grouping, GroupingSpec):
                    raise TopologyError(
                        f"{self._who()}: inputs: the grouping of {ref.describe()} stream "
                        f"{ref.stream!r} must be a Grouping (e.g. Grouping.SHUFFLE or "
                        f"Grouping.fields('word')), got {grouping!r}"
                    )
                pairs.append((ref, grouping))
        else:
            if isinstance(inputs, (ComponentSpec, StreamRef)):
                inputs = [inputs]
            if not isinstance(inputs, (list, tuple)):
                raise TopologyError(
                    f"{self._who()}: inputs must be a spec, spec['stream'], a list of those, "
                    f"or a dict of those to groupings, got {inputs!r}"
                )
            for source in inputs:
                implicit.add(len(pairs))
                pairs.append((self._stream_ref(source), Grouping.SHUFFLE))
        return tuple(pairs), frozenset(implicit)

    def _stream_ref(self, source: Any) -> StreamRef:
        if isinstance(source, StreamRef):
            return source
        if isinstance(source, ComponentSpec):
            return StreamRef(source, DEFAULT_STREAM)
        if isinstance(source, type):
            hint = " (did you forget to call .spec()?)"
        elif callable(getattr(type(source), "spec", None)):  # a component made by hand
            hint = f" (did you mean {type(source).__name__}.spec()?)"
        else:
            hint = ""
        raise TopologyError(
            f"{self._who()}: inputs must be component specs or spec['stream'] references, "
            f"got {source!r}{hint}"
        )
