"""Topology classes: naming, validation at class creation, the resolved definition."""

from __future__ import annotations

import pickle
import re

import pytest

from storm_zmq.component import Bolt, Spout
from storm_zmq.topology import (
    ComponentDefinition,
    ComponentSpec,
    Grouping,
    InputDefinition,
    Stream,
    StreamRef,
    Topology,
    TopologyDefinition,
    TopologyError,
)


class WordSpout(Spout):
    outputs = ["word"]


class LineSpout(Spout):
    outputs = [Stream(["line"]), Stream(["id", "line"], "with_ids"), Stream(["x"], "dx", True)]


class CountBolt(Bolt):
    outputs = ["word", "count"]


class LoopBolt(Bolt):
    outputs = [Stream(["word"]), Stream(["word"], "loop")]


class SinkBolt(Bolt):
    pass


class WordCount(Topology):
    config = {"topology.max.spout.pending": 100}
    word_spout = WordSpout.spec(par=2)
    count_bolt = CountBolt.spec(
        inputs={word_spout: Grouping.fields("word")}, par=3, num_tasks=6, config={"k": [1]}
    )
    sink = SinkBolt.spec(name="printer", inputs=[count_bolt])


def raises(message: str):
    """pytest.raises(TopologyError) whose message must be exactly `message`."""
    return pytest.raises(TopologyError, match="^" + re.escape(message) + "$")


# -- the happy path -----------------------------------------------------------------------


def test_names_specs_config() -> None:
    assert WordCount.name == "WordCount"
    assert WordCount.config == {"topology.max.spout.pending": 100}
    assert [spec.name for spec in WordCount.specs] == ["word_spout", "count_bolt", "printer"]
    assert WordCount.specs[0] is WordCount.word_spout  # streamparse's: a list of the specs
    assert WordCount.word_spout.name == "word_spout"
    assert WordCount.sink.name == "printer"
    assert isinstance(WordCount.specs[2], ComponentSpec)


def test_definition_model() -> None:
    d = WordCount.definition()
    assert isinstance(d, TopologyDefinition)
    assert d.name == "WordCount"
    assert d.config == {"topology.max.spout.pending": 100}
    assert list(d.components) == ["word_spout", "count_bolt", "printer"]
    count = d.components["count_bolt"]
    assert count == ComponentDefinition(
        name="count_bolt",
        component_cls=CountBolt,
        kind="bolt",
        par=3,
        num_tasks=6,
        config={"k": [1], "topology.tasks": 6},  # num_tasks is Storm's setNumTasks
        inputs=(InputDefinition("word_spout", "default", Grouping.fields("word")),),
        outputs={"default": Stream(["word", "count"])},
    )
    source, stream, grouping = count.inputs[0]  # a plain (source, stream, grouping) triple
    assert (source, stream, grouping) == ("word_spout", "default", Grouping.fields("word"))
    assert d.components["printer"].inputs == (("count_bolt", "default", Grouping.SHUFFLE),)
    assert list(d.spouts) == ["word_spout"] and list(d.bolts) == ["count_bolt", "printer"]
    assert d.spouts["word_spout"].is_spout and d.bolts["printer"].is_bolt


def test_definition_is_a_snapshot() -> None:
    d = WordCount.definition()
    d.config["x"] = 1
    d.components["count_bolt"].config["k"].append(2)
    assert "x" not in WordCount.config
    assert WordCount.count_bolt.config == {"k": [1], "topology.tasks": 6}
    assert WordCount.definition().components["count_bolt"].config == {"k": [1], "topology.tasks": 6}
    with pytest.raises(AttributeError):
        d.name = "other"  # type: ignore[misc]


def test_definition_includes_config_overrides() -> None:
    class Overridden(Topology):
        s = WordSpout.spec()

    Overridden.config["topology.workers"] = 3
    assert Overridden.definition().config == {"topology.workers": 3}
    assert Topology.config == {}  # the base's dict is not shared


def test_definition_pickles() -> None:
    d = WordCount.definition()
    assert pickle.loads(pickle.dumps(d)) == d


def test_consumers() -> None:
    class Fan(Topology):
        lines = LineSpout.spec()
        a = SinkBolt.spec(inputs={lines: Grouping.ALL, lines["with_ids"]: Grouping.fields("id")})
        b = SinkBolt.spec(inputs=[lines])
        c = SinkBolt.spec(inputs=[lines["dx"]])

    d = Fan.definition()
    assert d.consumers("lines", "default") == [("a", Grouping.ALL), ("b", Grouping.SHUFFLE)]
    assert d.consumers("lines", "with_ids") == [("a", Grouping.fields("id"))]
    assert d.consumers("lines", "dx") == [("c", Grouping.DIRECT)]  # implicit: direct stream
    assert WordCount.definition().consumers("count_bolt", "default") == [
        ("printer", Grouping.SHUFFLE)
    ]
    with pytest.raises(KeyError, match="no component 'nope'"):
        d.consumers("nope", "default")
    with pytest.raises(KeyError, match=r"'a' declares no stream 'default' \(it declares \[\]\)"):
        d.consumers("a", "default")
    d.consumers("lines", "default").clear()
    assert len(d.consumers("lines", "default")) == 2


def test_named_topology_and_no_config() -> None:
    class T(Topology):
        name = "word-count"
        s = WordSpout.spec()

    assert T.name == "word-count" and T.definition().name == "word-count"
    assert T.config == {} and T.config is not Topology.config


def test_explicit_streams_and_forward_reference() -> None:
    class T(Topology):
        lines = LineSpout.spec()
        first = SinkBolt.spec(inputs=[StreamRef("later", "default")])
        later = CountBolt.spec(inputs={lines["with_ids"]: Grouping.GLOBAL})

    d = T.definition()
    assert d.components["first"].inputs == (("later", "default", Grouping.SHUFFLE),)
    assert d.components["later"].inputs == (("lines", "with_ids", Grouping.GLOBAL),)
    assert d.consumers("lines", "default") == []  # declared, nobody subscribes


def test_cycle_through_a_named_stream_is_allowed() -> None:
    class T(Topology):
        words = WordSpout.spec()
        loop = LoopBolt.spec(inputs=[words, StreamRef("loop", "loop")])
        back = SinkBolt.spec(inputs=[StreamRef("a2", "loop")])
        a1 = LoopBolt.spec(inputs=[words, StreamRef("a2", "default")])
        a2 = LoopBolt.spec(inputs=[StreamRef("a1", "loop")])

    assert T.definition().consumers("loop", "loop") == [("loop", Grouping.SHUFFLE)]


def test_inheritance() -> None:
    class Prod(WordCount):
        config = {"topology.workers": 4}
        sink = None  # drops the inherited component
        extra = SinkBolt.spec(inputs=[WordCount.count_bolt])

    assert [spec.name for spec in Prod.specs] == ["word_spout", "count_bolt", "extra"]
    assert Prod.name == "Prod" and Prod.config == {"topology.workers": 4}

    class Same(WordCount):
        pass

    assert Same.config == WordCount.config and Same.config is not WordCount.config
    assert list(Same.definition().components) == ["word_spout", "count_bolt", "printer"]


def test_base_class() -> None:
    assert Topology.specs == [] and Topology.name == "Topology"
    with pytest.raises(TopologyError, match="base class"):
        Topology.definition()


# -- validation ------------------------------------------------------------------------------


def test_no_spout() -> None:
    with raises("topology Empty: no spout (a topology needs at least one)"):

        class Empty(Topology):
            pass

    outside = WordSpout.spec()
    with raises("topology Bolts: no spout (a topology needs at least one)"):

        class Bolts(Topology):
            b = SinkBolt.spec(inputs=[outside])


def test_bolt_without_inputs() -> None:
    with raises("topology T: bolt 'b': a bolt needs at least one input"):

        class T(Topology):
            s = WordSpout.spec()
            b = SinkBolt.spec()


def test_spout_with_inputs() -> None:
    with raises("topology T: spout 'fed': a spout takes no inputs"):

        class T(Topology):
            s = WordSpout.spec()
            fed = ComponentSpec(component_cls=WordSpout, kind="spout", inputs=[s])


def test_input_from_spec_not_in_topology() -> None:
    outside = WordSpout.spec()
    with raises(
        "topology T: bolt 'b': input from a component not in this topology: a WordSpout spec "
        "that is not a class attribute of T (assign it in the class body, and use that "
        "attribute as the input)"
    ):

        class T(Topology):
            s = WordSpout.spec()
            b = SinkBolt.spec(inputs={outside: Grouping.SHUFFLE})


def test_input_from_unknown_name() -> None:
    with raises(
        "topology T: bolt 'b': input from unknown component 'nope' (components of T: ['s', 'b'])"
    ):

        class T(Topology):
            s = WordSpout.spec()
            b = SinkBolt.spec(inputs=[StreamRef("nope")])


def test_undeclared_stream() -> None:
    with raises(
        "topology T: bolt 'b': input stream 'lines' of 's' is not declared; 's' "
        "declares ['default']"
    ):

        class T(Topology):
            s = WordSpout.spec()
            b = SinkBolt.spec(inputs=[s["lines"]])

    with raises(
        "topology T: bolt 'c': input stream 'default' of 'b' is not declared; 'b' declares []"
    ):

        class T(Topology):  # noqa: F811
            s = WordSpout.spec()
            b = SinkBolt.spec(inputs=[s])
            c = SinkBolt.spec(inputs=[b])


def test_fields_grouping_on_missing_field() -> None:
    with raises(
        "topology WordCount: bolt 'count_bolt': fields grouping on 'wrd', but stream "
        "'default' of 'word_spout' has fields ['word']"
    ):

        class WordCount(Topology):
            word_spout = WordSpout.spec()
            count_bolt = CountBolt.spec(inputs={word_spout: Grouping.fields("wrd")})

    with raises(
        "topology T: bolt 'b': fields grouping on 'word', but stream 'with_ids' of "
        "'lines' has fields ['id', 'line']"
    ):

        class T(Topology):
            lines = LineSpout.spec()
            b = SinkBolt.spec(inputs={lines["with_ids"]: Grouping.fields("id", "word")})


def test_direct_grouping_on_non_direct_stream() -> None:
    with raises(
        "topology T: bolt 'b': Grouping.DIRECT on stream 'default' of 's', which is "
        "not declared direct (declare it as Stream(..., direct=True))"
    ):

        class T(Topology):
            s = WordSpout.spec()
            b = SinkBolt.spec(inputs={s: Grouping.DIRECT})


def test_non_direct_grouping_on_direct_stream() -> None:
    with raises(
        "topology T: bolt 'b': stream 'dx' of 'lines' is direct, so it must be "
        "subscribed with Grouping.DIRECT, not Grouping.SHUFFLE"
    ):

        class T(Topology):
            lines = LineSpout.spec()
            b = SinkBolt.spec(inputs={lines["dx"]: Grouping.SHUFFLE})


def test_cycle_on_default_streams() -> None:
    with raises(
        "topology T: cycle 'a' -> 'b' -> 'a' on 'default' streams; a cycle must "
        "subscribe to at least one explicitly declared (non-'default') stream"
    ):

        class T(Topology):
            s = WordSpout.spec()
            a = CountBolt.spec(inputs=[s, StreamRef("b")])
            b = CountBolt.spec(inputs=[a])

    with raises(
        "topology T: cycle 'a' -> 'a' on 'default' streams; a cycle must subscribe "
        "to at least one explicitly declared (non-'default') stream"
    ):

        class T(Topology):  # noqa: F811
            s = WordSpout.spec()
            a = CountBolt.spec(inputs=[s, StreamRef("a")])

    # a default-stream cycle is an error even where another edge pair uses a named stream
    with pytest.raises(TopologyError, match="cycle 'x' -> 'y' -> 'z' -> 'x'"):

        class U(Topology):
            s = WordSpout.spec()
            x = LoopBolt.spec(inputs=[s, StreamRef("z", "default"), StreamRef("y", "loop")])
            y = LoopBolt.spec(inputs=[x])
            z = LoopBolt.spec(inputs=[y])


def test_duplicate_names() -> None:
    with raises("topology T: duplicate component name 'words' (attributes 'a' and 'b')"):

        class T(Topology):
            a = WordSpout.spec(name="words")
            b = WordSpout.spec(name="words")

    with raises("topology T: duplicate component name 'a' (attributes 'a' and 'b')"):

        class T(Topology):  # noqa: F811
            a = WordSpout.spec()
            b = WordSpout.spec(name="a")


def test_same_spec_assigned_twice() -> None:
    with raises(
        "topology T: the same WordSpout spec is assigned to both 'a' and 'b'; call "
        ".spec() once per component"
    ):

        class T(Topology):
            a = WordSpout.spec()
            b = a


def test_reserved_component_name() -> None:
    with raises(
        "topology T: component name '__acker' is reserved (names starting with '__' "
        "are Storm's system components, like '__acker')"
    ):

        class T(Topology):
            a = WordSpout.spec(name="__acker")


def test_reserved_attribute() -> None:
    with raises(
        "topology T: attribute 'name' is reserved in Topology classes and cannot hold "
        "a component; use name='name' on another attribute"
    ):

        class T(Topology):
            name = WordSpout.spec()


def test_subscribing_twice() -> None:
    with raises("topology T: bolt 'b': subscribes twice to stream 'default' of 's'"):

        class T(Topology):
            s = WordSpout.spec()
            b = SinkBolt.spec(inputs={s: Grouping.SHUFFLE, s["default"]: Grouping.ALL})


def test_invalid_par_and_num_tasks() -> None:
    with raises("bolt SinkBolt: par must be an int >= 1, got 0"):

        class T(Topology):
            s = WordSpout.spec()
            b = SinkBolt.spec(inputs=[s], par=0)



def test_component_class_instead_of_spec() -> None:
    with raises(
        "topology T: attribute 's' is the component class WordSpout, not a spec; did "
        "you forget to call WordSpout.spec()?"
    ):

        class T(Topology):
            s = WordSpout


def test_invalid_config_and_name() -> None:
    with raises("topology T: config must be a dict, got [1]"):

        class T(Topology):
            config = [1]
            s = WordSpout.spec()

    with raises("topology T: name must be a non-empty str without any of '/.:\\\\', got 'a/b'"):

        class T(Topology):  # noqa: F811
            name = "a/b"
            s = WordSpout.spec()


def test_failed_class_leaves_specs_reusable() -> None:
    spout = WordSpout.spec()
    with pytest.raises(TopologyError):

        class Bad(Topology):
            s = spout
            b = SinkBolt.spec()

    class Good(Topology):
        s = spout

    assert Good.specs == [spout]


def test_max_task_parallelism_caps_tasks_and_executors_as_storm_does() -> None:
    from storm_zmq.topology.definition import with_task_counts

    class Capped(Topology):
        s = WordSpout.spec(par=1, num_tasks=4)
        wide = SinkBolt.spec(inputs=[s], par=3)
        own = SinkBolt.spec(inputs=[s], par=3, config={"topology.max.task.parallelism": 3})
        narrow = SinkBolt.spec(inputs=[s], par=1)

    definition = Capped.definition()
    capped = with_task_counts(definition, {"topology.max.task.parallelism": 2})
    assert {n: (c.par, c.num_tasks) for n, c in capped.components.items()} == {
        "s": (1, 2), "wide": (2, 2), "own": (3, 3), "narrow": (1, 1)}
    assert with_task_counts(definition, {"topology.max.task.parallelism": None}) == definition
    assert definition.components["wide"].par == 3, "the definition itself is left as it was"


def test_topology_tasks_is_a_components_task_count_as_storms_set_num_tasks_writes_it() -> None:
    from storm_zmq.topology.definition import with_task_counts

    class Tasks(Topology):
        s = WordSpout.spec(par=2, config={"topology.tasks": 4})  # streamparse's way
        given = SinkBolt.spec(inputs=[s], par=3, num_tasks=6)  # the same setting
        plain = SinkBolt.spec(inputs=[s], par=3)
        fewer = SinkBolt.spec(inputs=[s], par=3, config={"topology.tasks": 2})

    definition = Tasks.definition()
    assert {n: (c.par, c.num_tasks) for n, c in definition.components.items()} == {
        "s": (2, 4), "given": (3, 6), "plain": (3, 3), "fewer": (2, 2)}
    assert definition.components["given"].config == {"topology.tasks": 6}
    # a topology-wide value counts where the component set none, under the cap
    wide = with_task_counts(definition, {"topology.tasks": 5, "topology.max.task.parallelism": 4})
    assert {n: (c.par, c.num_tasks) for n, c in wide.components.items()} == {
        "s": (2, 4), "given": (3, 4), "plain": (3, 4), "fewer": (2, 2)}

    with pytest.raises(TopologyError, match=r"num_tasks=3 and config topology.tasks: 4 disagree"):
        SinkBolt.spec(inputs=[Tasks.s], num_tasks=3, config={"topology.tasks": 4})
    with pytest.raises(TopologyError, match=r"config topology.tasks must be an int >= 1, got '4'"):
        SinkBolt.spec(inputs=[Tasks.s], config={"topology.tasks": "4"})


def test_the_storm_context_describes_a_components_streams_and_subscriptions() -> None:
    # what Storm's TopologyContext.toJSONString gives a multilang (pystorm) component
    from storm_zmq.topology import Stream
    from storm_zmq.topology.definition import storm_context

    class Two(Spout):
        outputs = ["word", Stream(["n"], name="numbers")]

    class Ctx(Topology):
        s = Two.spec()
        by_word = SinkBolt.spec(inputs={s: Grouping.fields("word")})
        one = SinkBolt.spec(inputs={s["numbers"]: Grouping.GLOBAL, s: Grouping.ALL})

    definition = Ctx.definition()
    assert storm_context(definition, "s") == {
        "streams": ["default", "numbers"],
        "stream->outputfields": {"default": ["word"], "numbers": ["n"]},
        "stream->target->grouping": {
            "default": {"by_word": {"type": "FIELDS", "fields": ["word"]}, "one": {"type": "ALL"}},
            "numbers": {"one": {"type": "FIELDS", "fields": []}},  # Storm's global grouping
        },
        "source->stream->grouping": {},
        "source->stream->fields": {},
    }
    one = storm_context(definition, "one")
    assert one["source->stream->grouping"] == {
        "s": {"numbers": {"type": "FIELDS", "fields": []}, "default": {"type": "ALL"}}}
    assert one["source->stream->fields"] == {"s": {"numbers": ["n"], "default": ["word"]}}
    assert one["streams"] == [] and one["stream->target->grouping"] == {}  # it declares none


def test_fields_no_attribute_can_name_are_said_with_what_reaches_them() -> None:
    # A new user's audit: tup.values arrived as Values(_0=..., _1=...) in silence
    class OddSpout(Spout):
        outputs = [Stream(["user-id", "class", "ok", "_x"]), Stream(["fine"], "other")]

    class Odd(Topology):
        odd = OddSpout.spec()
        sink = SinkBolt.spec(inputs={odd: Grouping.fields("user-id")})

    (warning,) = Odd.definition().unreachable_fields()
    assert re.fullmatch(
        r"component 'odd' at .*test_topology\.py:\d+: field\(s\) \['user-id', 'class', '_x'\] of "
        r"stream 'default' are not Python attribute names, so tup\.values\.<name> cannot reach "
        r"them: 'user-id' is tup\.values\._0, 'class' is tup\.values\._1, '_x' is "
        r"tup\.values\._3 \(or by position\); rename them \(pystorm refused them\)", warning)

    class Plain(Topology):
        words = WordSpout.spec()
        counts = CountBolt.spec(inputs=[words])

    assert Plain.definition().unreachable_fields() == []
