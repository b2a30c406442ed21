"""The usage-based check that a continuation carried its parent's context."""

from __future__ import annotations

from typing import Any

from harness.conformance.judges.carried import CarriedContext, items_tokens, measure
from harness.protocol.tokenizer import count_tokens

NEW = [{"type": "message", "role": "user", "content": "Thanks. One more sentence, please."}]


def usage(input_tokens: int, output_tokens: int, reasoning: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def test_new_items_are_sized_by_the_project_tokenizer() -> None:
    assert items_tokens(NEW) == count_tokens("Thanks. One more sentence, please.")
    output = [{"type": "function_call_output", "call_id": "c", "output": "sunny, 21 C"}]
    assert items_tokens(output) == count_tokens("sunny, 21 C")
    parts = [{"type": "message", "content": [{"type": "input_text", "text": "a b"}]}]
    assert items_tokens(parts) == count_tokens("a b") and items_tokens("a b") == count_tokens("a b")


def test_a_continuation_reporting_its_new_input_alone_fails_with_the_numbers() -> None:
    # the vLLM deviation: 14 input tokens with and without the parent
    measured = measure({"usage": usage(14, 40)}, {"usage": usage(14, 30)}, NEW)
    assert isinstance(measured, CarriedContext) and not measured.carried
    text = measured.describe()
    assert "input_tokens 14" in text and "parent input 14" in text and "visible output 40" in text


def test_a_carried_continuation_passes_within_the_tolerance() -> None:
    new = items_tokens(NEW)
    exact = 14 + 40 + new
    measured = measure({"usage": usage(14, 40)}, {"usage": usage(exact, 5)}, NEW)
    assert isinstance(measured, CarriedContext) and measured.carried
    # another tokenizer may count the new items at half and the re-rendered output 10% shorter
    shy = exact - measured.tolerance_tokens
    assert measure({"usage": usage(14, 40)}, {"usage": usage(shy, 5)}, NEW).carried  # type: ignore[union-attr]
    short = measure({"usage": usage(14, 40)}, {"usage": usage(shy - 1, 5)}, NEW)
    assert isinstance(short, CarriedContext) and not short.carried


def test_reasoning_and_instructions_are_not_expected_to_carry() -> None:
    parent = {"usage": usage(30, 100, reasoning=80), "instructions": "Answer like a pirate."}
    measured = measure(parent, {"usage": usage(0, 1)}, NEW)
    assert isinstance(measured, CarriedContext)
    assert measured.parent_visible_output == 20
    assert measured.parent_instructions == count_tokens("Answer like a pirate.")


def test_without_usage_the_check_cannot_judge() -> None:
    assert isinstance(measure({"usage": None}, {"usage": usage(1, 1)}, NEW), str)
    assert "continuation" in str(measure({"usage": usage(1, 1)}, {}, NEW))
    assert isinstance(measure({"usage": {"input_tokens": "x"}}, {"usage": usage(1, 1)}, NEW), str)
