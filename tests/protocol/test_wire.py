from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.protocol.wire import WireFormatError, dumps, loads


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ("[" * 1000 + "]" * 1000, "nesting"),
        ("{" + '"a":' * 0 + "}" + "x", "Invalid JSON"),
        ('{"a": NaN}', "NaN"),
        ('{"a": Infinity}', "Infinity"),
        ('{"a": 1, "a": 2}', "duplicate key"),
        ('{"a": ' + "9" * 5000 + "}", "integer longer"),
        ('{"a": "\\ud800"}', "surrogate"),
        (b"\xff\xfe", "UTF-8"),
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
