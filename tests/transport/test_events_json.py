"""The client's event parser is `json.loads` exactly, whichever codec runs it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from harness.protocol import wire
from harness.transport.received import loads_json

CODECS = ["stdlib", "msgspec"] if wire.FAST_CODEC is not None else ["stdlib"]


@pytest.fixture(autouse=True, params=CODECS)
def codec(request: pytest.FixtureRequest) -> Iterator[None]:
    wire.use_fast_codec(request.param == "msgspec")
    yield
    wire.use_fast_codec(True)


@pytest.mark.parametrize(
    "text",
    [
        '{"type": "response.output_text.delta", "delta": "h\\u00e9", "sequence_number": 3}',
        '{"a": NaN, "b": Infinity}',  # a target's bad output is read, then judged by the checker
        '{"a": 1, "a": 2}',
        '{"a": "\\ud800"}',
        '{"a": 1e999}',
        '{"a": ' + "9" * 40 + "}",
        "  [1, 2]  ",
        "[" * 200 + "]" * 200,
    ],
)
def test_same_value_as_json_loads(text: str) -> None:
    expected = json.loads(text)
    got = loads_json(text)
    assert repr(got) == repr(expected)  # repr: NaN != NaN


@pytest.mark.parametrize("text", ["", "{", '{"a": 1} x', "\ufeff{}"])
def test_same_errors_as_json_loads(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        loads_json(text)


@pytest.mark.parametrize(
    "text", ["[" * 200_000 + "]" * 200_000, '{"a":' * 10_000 + "1" + "}" * 10_000]
)
def test_nesting_past_the_document_bound_is_refused_not_a_recursion_error(text: str) -> None:
    with pytest.raises(wire.WireFormatError, match="nesting deeper than"):
        loads_json(text)


def test_nesting_up_to_the_document_bound_parses() -> None:
    depth = wire.DOCUMENT_MAX_DEPTH
    assert loads_json("[" * depth + "]" * depth) is not None
