"""ComponentSpec: construction checks, inputs and outputs forms, spec["stream"]."""

from __future__ import annotations

import pytest

from storm_zmq.component import Bolt, Spout
from storm_zmq.topology import ComponentSpec, Grouping, Stream, StreamRef, TopologyError


class WordSpout(Spout):
    outputs = ["word"]


class MultiSpout(Spout):
    outputs = [Stream(["word"]), Stream(["id", "line"], name="lines"), Stream(["x"], "d", True)]


class CountBolt(Bolt):
    outputs = ["word", "count"]


class SinkBolt(Bolt):
    pass


def test_defaults() -> None:
    spec = WordSpout.spec()
    assert spec.component_cls is WordSpout
    assert spec.kind == "spout"
    assert spec.name is None and spec.given_name is None
    assert (spec.par, spec.num_tasks) == (1, 1)
    assert spec.config == {}
    assert spec.inputs == ()
    assert spec.outputs == {"default": Stream(["word"])}


def test_a_component_that_cannot_be_made_with_no_arguments_is_refused_at_its_spec() -> None:
    class Scaled(Bolt):
        def __init__(self, factor: int) -> None:
            super().__init__()
            self.factor = factor

    with pytest.raises(TopologyError, match=r"^bolt Scaled: cannot be made with no arguments "
                                            r"\(missing a required argument: 'factor'\)"):
        Scaled.spec(inputs=[WordSpout.spec()])

    class Plain(Bolt):  # as streamparse's examples write it
        def __init__(self) -> None:
            super().__init__()

    assert Plain.spec(inputs=[WordSpout.spec()]).component_cls is Plain


def test_par_num_tasks_config_name() -> None:
    config = {"topology.tick.tuple.freq.secs": 1}
    spec = CountBolt.spec(
        name="counter", inputs=[WordSpout.spec()], par=2, num_tasks=6, config=config
    )
    assert (spec.name, spec.given_name, spec.par, spec.num_tasks) == ("counter", "counter", 2, 6)
    # num_tasks is written to the config, as Storm's setNumTasks writes it
    assert spec.config == {**config, "topology.tasks": 6} and spec.config is not config
    assert CountBolt.spec(inputs=[WordSpout.spec()], par=3).num_tasks == 3


def test_streamparse_class_attributes_par_and_config() -> None:
    class Tuned(Spout):
        outputs = ["x"]
        par = 3
        config = {"a": 1}

    spec = Tuned.spec()
    assert (spec.par, spec.num_tasks, spec.config) == (3, 3, {"a": 1})
    assert Tuned.spec(par=1, config={}).par == 1
    assert Tuned.spec(par=1, config={"b": 2}).config == {"b": 2}


def test_direct_constructor() -> None:
    spec = ComponentSpec(
        component_cls=SinkBolt,
        kind="bolt",
        name=None,
        inputs=None,
        par=None,
        config=None,
        num_tasks=None,
    )
    assert (spec.kind, spec.par, spec.num_tasks, spec.outputs) == ("bolt", 1, 1, {})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"par": "2"}, "spout WordSpout: par must be an int >= 1, got '2'"),
        ({"par": 0}, "spout WordSpout: par must be an int >= 1, got 0"),
        ({"par": -1}, "par must be an int >= 1, got -1"),
        ({"par": True}, "par must be an int >= 1, got True"),
        ({"par": 2.0}, "par must be an int >= 1, got 2.0"),
        ({"num_tasks": 0}, "spout WordSpout: num_tasks must be an int >= 1, got 0"),
        ({"num_tasks": "4"}, "num_tasks must be an int >= 1, got '4'"),
        ({"config": [("a", 1)]}, "spout WordSpout: config must be a dict, got [('a', 1)]"),
        ({"name": ""}, "spout WordSpout: name must be a non-empty str, got ''"),
        ({"name": 5}, "name must be a non-empty str, got 5"),
    ],
)
def test_invalid_spout_args(kwargs: dict, message: str) -> None:
    with pytest.raises(TopologyError) as info:
        WordSpout.spec(**kwargs)
    assert message in str(info.value)


def test_fewer_tasks_than_executors_run_one_executor_a_task_as_in_storm() -> None:
    spec = WordSpout.spec(par=4, num_tasks=2)  # Storm: min(par, num_tasks) executors
    assert (spec.par, spec.num_tasks) == (2, 2)


def test_invalid_class_and_kind() -> None:
    with pytest.raises(TopologyError, match="component_cls must be a class"):
        ComponentSpec(component_cls=WordSpout(), kind="spout")  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="component WordSpout: kind must be 'spout' or 'bolt'"):
        ComponentSpec(component_cls=WordSpout, kind="sprout")  # type: ignore[arg-type]


def test_invalid_class_attribute_par() -> None:
    class Bad(Spout):
        par = "4"

    with pytest.raises(TopologyError, match="spout Bad: par must be an int >= 1, got '4'"):
        Bad.spec()


def test_a_per_environment_par_dict_says_storm_zmq_has_no_environments() -> None:
    with pytest.raises(TopologyError, match=r"spout WordSpout: par \{'prod': 4, 'beta': 1\} is "
                       "streamparse's per-environment par .* give an int"):
        WordSpout.spec(par={"prod": 4, "beta": 1})


# -- inputs ---------------------------------------------------------------------------------

spout = WordSpout.spec()
multi = MultiSpout.spec()


def test_inputs_none() -> None:
    assert SinkBolt.spec().inputs == ()
    assert SinkBolt.spec(inputs=[]).inputs == ()
    assert SinkBolt.spec(inputs={}).inputs == ()


def test_inputs_bare_spec_means_default_stream_shuffle() -> None:
    spec = SinkBolt.spec(inputs=spout)
    assert spec.inputs == ((StreamRef(spout, "default"), Grouping.SHUFFLE),)
    assert spec.implicit_groupings == {0}


def test_inputs_stream_ref() -> None:
    spec = SinkBolt.spec(inputs=multi["lines"])
    assert spec.inputs == ((StreamRef(multi, "lines"), Grouping.SHUFFLE),)


@pytest.mark.parametrize("container", [list, tuple])
def test_inputs_list_or_tuple(container) -> None:
    spec = SinkBolt.spec(inputs=container([spout, multi["lines"], StreamRef("later", "s")]))
    assert spec.inputs == (
        (StreamRef(spout), Grouping.SHUFFLE),
        (StreamRef(multi, "lines"), Grouping.SHUFFLE),
        (StreamRef("later", "s"), Grouping.SHUFFLE),
    )
    assert spec.implicit_groupings == {0, 1, 2}


def test_inputs_dict() -> None:
    spec = SinkBolt.spec(
        inputs={
            spout: Grouping.fields("word"),
            multi["lines"]: Grouping.ALL,
            multi["d"]: Grouping.DIRECT,
        }
    )
    assert spec.inputs == (
        (StreamRef(spout, "default"), Grouping.fields("word")),
        (StreamRef(multi, "lines"), Grouping.ALL),
        (StreamRef(multi, "d"), Grouping.DIRECT),
    )
    assert spec.implicit_groupings == frozenset()


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            {spout: "shuffle"},
            "bolt SinkBolt: inputs: the grouping of WordSpout spec stream "
            "'default' must be a Grouping",
        ),
        (
            {"word_spout": Grouping.SHUFFLE},
            "bolt SinkBolt: inputs must be component specs or "
            "spec['stream'] references, got 'word_spout'",
        ),
        ([WordSpout], "did you forget to call .spec()?"),
        ([WordSpout()], "got <tests.topology.test_spec.WordSpout object at 0x"),
        ([WordSpout()], "(did you mean WordSpout.spec()?)"),
        ([spout, 3], "inputs must be component specs or spec['stream'] references, got 3"),
        (
            "word_spout",
            "bolt SinkBolt: inputs must be a spec, spec['stream'], a list of those, or a dict",
        ),
        ({spout}, "inputs must be a spec"),
    ],
)
def test_invalid_inputs(inputs, message: str) -> None:
    with pytest.raises(TopologyError) as info:
        SinkBolt.spec(inputs=inputs)
    assert message in str(info.value)


# -- spec["stream"] and StreamRef --------------------------------------------------------


def test_getitem() -> None:
    ref = multi["lines"]
    assert ref == StreamRef(multi, "lines")
    assert ref.component is multi and ref.stream == "lines"
    assert hash(ref) == hash(StreamRef(multi, "lines"))
    assert ref != StreamRef(MultiSpout.spec(), "lines")  # specs compare by identity
    # undeclared streams are reported by the topology, which can name itself
    assert spout["nope"].stream == "nope"


def test_getitem_invalid() -> None:
    with pytest.raises(TopologyError, match="spout WordSpout: stream name must be a non-empty str"):
        spout[0]  # type: ignore[index]
    with pytest.raises(TopologyError, match="stream name must be a non-empty str"):
        spout[""]


def test_stream_ref_invalid() -> None:
    with pytest.raises(TopologyError, match="component must be a ComponentSpec or a component"):
        StreamRef(3)  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="component must be"):
        StreamRef("")
    with pytest.raises(TopologyError, match="stream must be a non-empty str"):
        StreamRef("a", "")


def test_identity_semantics_and_repr() -> None:
    a, b = WordSpout.spec(), WordSpout.spec()
    assert a != b and len({a, b}) == 2
    assert repr(WordSpout.spec(name="w", par=2, num_tasks=4)) == (
        "ComponentSpec(WordSpout, kind='spout', name='w', par=2, num_tasks=4)"
    )


# -- outputs --------------------------------------------------------------------------------


def outputs_of(outputs) -> dict[str, Stream]:
    cls = type("C", (Bolt,), {"outputs": outputs})
    return cls.spec().outputs


def test_outputs_forms() -> None:
    assert outputs_of(None) == {}
    assert outputs_of([]) == {}
    assert outputs_of(()) == {}
    assert outputs_of(["a", "b"]) == {"default": Stream(["a", "b"])}
    assert outputs_of(("a",)) == {"default": Stream(["a"])}
    s1, s2 = Stream(["x"], "s1"), Stream([], "s2", direct=True)
    assert outputs_of([s1, s2]) == {"s1": s1, "s2": s2}
    assert outputs_of([Stream(["a"])]) == {"default": Stream(["a"])}
    mixed = outputs_of(["a", s1, "b"])
    assert mixed == {"default": Stream(["a", "b"]), "s1": s1}
    assert list(mixed) == ["default", "s1"]


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        ("word", "bolt C: outputs must be a list of field names or of Stream objects, got 'word'"),
        ({"a": 1}, "outputs must be a list of field names or of Stream objects"),
        (["a", 1], "bolt C: outputs must be field names (str) or Stream objects, got 1"),
        ([Stream(["a"], "s"), Stream(["b"], "s")], "bolt C: outputs declare stream 's' twice"),
        (["a", Stream(["b"])], "outputs declare stream 'default' twice"),
        ([Stream(["b"]), "a"], "outputs declare stream 'default' twice"),
        (["a", "a"], "bolt C: outputs: Stream 'default': duplicate field name 'a'"),
        (["__a"], "field name '__a' is reserved"),
    ],
)
def test_invalid_outputs(outputs, message: str) -> None:
    with pytest.raises(TopologyError) as info:
        outputs_of(outputs)
    assert message in str(info.value)
