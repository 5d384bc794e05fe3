"""Stream: streamparse's signature, validated, immutable."""

from __future__ import annotations

import dataclasses

import pytest

from storm_zmq.topology import Stream, TopologyError


def test_defaults() -> None:
    stream = Stream()
    assert stream.fields == ()
    assert stream.name == "default"
    assert stream.direct is False


def test_fields_list_or_tuple_stored_as_tuple() -> None:
    assert Stream(["a", "b"]).fields == ("a", "b")
    assert Stream(("a", "b"), name="s", direct=True) == Stream(["a", "b"], "s", True)


def test_positional_streamparse_signature() -> None:
    stream = Stream(["word"], "words", True)
    assert (stream.fields, stream.name, stream.direct) == (("word",), "words", True)


def test_frozen() -> None:
    stream = Stream(["a"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        stream.name = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        stream.fields = ("b",)  # type: ignore[misc]


def test_hashable_and_equal_by_value() -> None:
    assert len({Stream(["a"]), Stream(("a",))}) == 1
    assert Stream(["a"]) != Stream(["a"], direct=True)


def test_repr() -> None:
    assert repr(Stream(["a"], "s", direct=True)) == "Stream(['a'], name='s', direct=True)"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fields": "word"}, "Stream 'default': fields must be a list or tuple of str, got 'word'"),
        ({"fields": {"a"}}, "fields must be a list or tuple of str"),
        ({"fields": ["a", 1]}, "Stream 'default': field names must be non-empty str, got 1"),
        ({"fields": [""]}, "field names must be non-empty str, got ''"),
        ({"fields": ["a", "b", "a"]}, "duplicate field name 'a' in ['a', 'b', 'a']"),
        ({"fields": ["__id"]}, "field name '__id' is reserved"),
        ({"name": 3}, "Stream name must be a non-empty str, got 3"),
        ({"name": ""}, "Stream name must be a non-empty str, got ''"),
        ({"name": "__tick"}, "Stream name '__tick' is reserved"),
        ({"direct": 1}, "Stream 'default': direct must be True or False, got 1"),
        ({"fields": ["a"], "name": "s", "direct": "yes"}, "Stream 's': direct must be True"),
    ],
)
def test_invalid(kwargs: dict, message: str) -> None:
    with pytest.raises(TopologyError) as info:
        Stream(**kwargs)
    assert message in str(info.value)
