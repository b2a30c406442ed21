from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.protocol import wire
from harness.protocol.wire import WireFormatError, dumps, dumps_bytes, loads

CODECS = ["stdlib", "msgspec"] if wire.FAST_CODEC is not None else ["stdlib"]


@pytest.fixture(autouse=True, params=CODECS)
def codec(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs on both paths: the strict rules must not depend on the codec."""
    wire.use_fast_codec(request.param == "msgspec")
    yield str(request.param)
    wire.use_fast_codec(True)


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ("[" * 1000 + "]" * 1000, "nesting"),
        ("{" + '"a":' * 0 + "}" + "x", "Invalid JSON"),
        ('{"a": NaN}', "NaN"),
        ('{"a": Infinity}', "Infinity"),
        ('{"a": 1, "a": 2}', "duplicate key"),
        ('{"b": {"a": "x:y", "a": 2}}', "duplicate key"),
        ('{"a": 1e999}', "out of range"),
        ('{"a": -Infinity}', "Infinity"),
        ('{"a": ' + "9" * 65 + "}", "integer longer"),
        ('{"a": ' + "9" * 5000 + "}", "integer longer"),
        ('{"a": "\\ud800"}', "surrogate"),
        (b"\xff\xfe", "UTF-8"),
        ('{"a": "\\udc00"}', "surrogate"),
        ('{"a": "\ud800"}', "surrogate"),  # a str holding a lone surrogate itself
        ("[1,]", "Invalid JSON"),
        ("", "Invalid JSON"),
    ],
)
def test_traps_become_wire_format_errors(payload: str | bytes, fragment: str) -> None:
    with pytest.raises(WireFormatError) as info:
        loads(payload)
    assert fragment in str(info.value)
    assert "Traceback" not in str(info.value)


def test_depth_bound_is_exact() -> None:
    assert loads("[" * 64 + "]" * 64) is not None
    with pytest.raises(WireFormatError):
        loads("[" * 65 + "]" * 65)


def test_brackets_inside_strings_do_not_count() -> None:
    text = '{"a": "' + "[" * 500 + '"}'
    assert loads(text) == {"a": "[" * 500}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**18), 10**18) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(json_values)
def test_round_trip(value: object) -> None:
    text = dumps(value)
    assert text.isascii()
    assert loads(text) == value


@pytest.mark.parametrize(
    ("text", "param"),
    [
        ('{"model": "m", "top_p": 1e400}', "top_p"),
        ('{"temperature": -1e400}', "temperature"),
        ('{"input": [{"x": [1.5, 2e999]}]}', "input[0].x[1]"),
    ],
)
def test_an_overflowing_number_is_refused_naming_its_field(text: str, param: str) -> None:
    with pytest.raises(WireFormatError) as caught:
        loads(text)
    assert caught.value.param == param
    assert caught.value.code == "invalid_value"
    assert param in str(caught.value)


def test_large_but_finite_floats_still_parse() -> None:
    assert loads('{"t": 1e308, "u": 0.5}') == {"t": 1e308, "u": 0.5}


def test_the_codec_in_use_is_the_one_asked_for(codec: str) -> None:
    assert (None if codec == "stdlib" else "msgspec") == wire.FAST_CODEC


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "\\u003a", "b": 1}',  # an escaped colon: the fast path's key count defers
        '{"k:1": "v:2", "n": [1, {"x": ":"}]}',
        '{"a": ' + "9" * 64 + "}",  # the longest integer allowed
        '{"a": [' * 31 + "1" + "]}" * 31,  # 62 levels
        '  {"a": 1.5e300, "b": -0, "c": "\\u00e9\\ud83d\\ude00"}  ',
    ],
)
def test_what_the_strict_parser_accepts_both_paths_accept(text: str) -> None:
    wire.use_fast_codec(False)
    expected = loads(text)
    wire.use_fast_codec(True)
    assert loads(text) == expected
    assert loads(text.encode()) == expected


def test_non_finite_floats_are_written_as_null() -> None:
    assert loads(dumps({"a": [float("nan"), float("inf"), 1.5]})) == {"a": [None, None, 1.5]}


def test_lone_surrogates_are_escaped_on_output() -> None:
    assert dumps({"a": "\ud800"}) == '{"a":"\\ud800"}'
    assert dumps_bytes({"a": "\ud800"}) == b'{"a":"\\ud800"}'


@given(json_values)
def test_bytes_round_trip(value: object) -> None:
    assert loads(dumps_bytes(value)) == value


@pytest.mark.parametrize(
    "text",
    ["[" * 200_000 + "]" * 200_000, '{"a":' * 10_000 + "1" + "}" * 10_000],
)
def test_a_document_nested_past_the_bound_is_a_wire_format_error(text: str) -> None:
    with pytest.raises(wire.WireFormatError, match="nesting deeper than 200 levels"):
        wire.loads_document(text)


def test_a_document_reads_what_json_reads_brackets_in_strings_included() -> None:
    text = '{"a": "[[[[' + "[" * 500 + '", "a": NaN, "b": [[1]]}'
    assert wire.loads_document(text) == json.loads(text)
    with pytest.raises(wire.WireFormatError, match="Expecting"):
        wire.loads_document('{"a": 1')
