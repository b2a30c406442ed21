"""No stage may crash on hostile input: the server feeds them whatever the client sent."""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reference_server.state.render import render_full, render_item
from reference_server.state.safety import SafetyState, classify_input, classify_output
from reference_server.state.validate import ValidationState, validate_items

KEYS = ("type", "role", "content", "text", "call_id", "name", "arguments", "output", "summary")
VALUES = (
    "message", "function_call", "function_call_output", "reasoning", "user", "assistant",
    "input_text", "output_text", "input_image", "input_file", "summary_text", "refusal",
)  # fmt: skip
json_like = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10),
              st.sampled_from(VALUES)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
    max_leaves=12,
)  # fmt: skip
items = st.lists(st.dictionaries(st.sampled_from(KEYS), json_like, max_size=6), max_size=6)


@given(items)
def test_stages_never_raise(batch: list[dict[str, Any]]) -> None:
    validate_items(ValidationState.initial(), batch)
    ValidationState.initial().with_output(batch)
    for item in batch:
        assert render_item(item)[-1] > 0
    render_full(batch)
    classify_input(SafetyState.initial(), batch)


@given(st.lists(json_like, max_size=6))
def test_validation_accepts_any_json_values(batch: list[Any]) -> None:
    _, errors = validate_items(ValidationState.initial(), batch)
    assert all(isinstance(e.message, str) and e.message for e in errors)


@given(st.text())
def test_output_classifier_takes_any_text(text: str) -> None:
    classify_output(text)
