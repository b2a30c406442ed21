"""The protocol core's item readers: text rules and the history form (one copy for every user)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.protocol.items import (
    assistant_message,
    content_text,
    history_item,
    is_model_output,
    item_text,
    item_texts,
    item_type,
    part_text,
    summary_text,
)

SUMMARY = [
    {"type": "summary_text", "text": "Look at the test first."},
    {"type": "summary_text", "text": "Then the cache."},
]


def test_item_type_recognises_a_message_by_its_role() -> None:
    assert item_type({"role": "user", "content": "hi"}) == "message"
    assert item_type({"type": "function_call"}) == "function_call"
    assert item_type({"type": 3}) is None
    assert item_type({}) is None


@pytest.mark.parametrize(
    ("part", "text"),
    [
        ({"type": "output_text", "text": "a"}, "a"),
        ({"type": "refusal", "refusal": "no"}, "no"),
        ("bare", "bare"),
        ({"type": "input_image", "image_url": "x"}, None),
        (7, None),
    ],
)
def test_part_text(part: object, text: str | None) -> None:
    assert part_text(part) == text


def test_content_parts_join_without_separator_and_summaries_with_a_blank_line() -> None:
    parts = [{"type": "output_text", "text": "Hel"}, {"type": "output_text", "text": "lo"}]
    assert content_text(parts) == "Hello"
    assert content_text("plain") == "plain"
    assert content_text(None) == ""
    assert summary_text({"type": "reasoning", "summary": SUMMARY}) == (
        "Look at the test first.\n\nThen the cache."
    )


def test_item_texts_and_item_text_per_type() -> None:
    call = {"type": "function_call", "name": "read", "arguments": '{"p":1}'}
    assert list(item_texts(call)) == ["read", '{"p":1}']
    assert item_text(call) == 'read{"p":1}'
    output = {"type": "function_call_output", "call_id": "c", "output": [{"text": "ok"}]}
    assert item_text(output) == "ok"
    reasoning = {"type": "reasoning", "summary": SUMMARY}
    assert list(item_texts(reasoning)) == [p["text"] for p in SUMMARY]
    assert item_text(reasoning) == summary_text(reasoning)
    assert item_text({"type": "item_reference", "id": "msg_1"}) == ""


def test_model_output_items() -> None:
    assert is_model_output({"role": "assistant", "content": "x"})
    assert not is_model_output({"type": "message", "role": "user", "content": "x"})
    for kind in ("function_call", "custom_tool_call", "reasoning"):
        assert is_model_output({"type": kind})
    assert not is_model_output({"type": "function_call_output"})


def test_history_form_of_a_message_and_a_call() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
    }
    assert history_item(message) == assistant_message("Done.")
    call = {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1",
            "name": "run", "arguments": "{}"}  # fmt: skip
    assert history_item(call) == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "run",
        "arguments": "{}",
    }


def test_reasoning_goes_back_only_with_its_id() -> None:
    emitted: dict[str, Any] = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": SUMMARY,
        "encrypted_content": "gAAA",
    }
    assert history_item(emitted) == emitted
    bare = {k: v for k, v in emitted.items() if k != "encrypted_content"}
    assert history_item(bare) == bare
    assert history_item({"type": "reasoning", "summary": SUMMARY}) is None  # no id: not resendable
    assert history_item(emitted, include_reasoning=False) is None


def test_other_items_are_not_resent() -> None:
    assert history_item({"type": "web_search_call", "id": "ws_1"}) is None
    assert history_item({"type": "function_call_output", "call_id": "c", "output": "x"}) is None
