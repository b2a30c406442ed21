"""The TTFT and TTFE marks: which event of a stream each one is."""

from __future__ import annotations

from typing import Any

import pytest

from harness.protocol.emitter import ResponseEmitter
from harness.protocol.timing_marks import (
    first_output_index,
    first_token_index,
    is_content_delta,
    is_content_done,
)
from tests.protocol.conftest import USAGE, base_response, full_stream


def _types(events: list[dict[str, Any]], index: int | None) -> str | None:
    return None if index is None else str(events[index]["type"])


def test_ttft_is_the_first_content_delta_not_the_item_announcement() -> None:
    events = full_stream()  # reasoning first: its summary delta is the first token
    assert _types(events, first_output_index(events)) == "response.output_item.added"
    assert _types(events, first_token_index(events)) == "response.reasoning_summary_text.delta"


def test_a_function_call_only_response_marks_its_first_arguments_delta() -> None:
    emitter = ResponseEmitter(base_response("resp_fc"), self_check=False)
    events = [emitter.created(), emitter.in_progress()]
    events += emitter.begin_function_call("fc_1", "call_1", "run")
    events += [emitter.arguments_delta("{}")]
    events += emitter.end_function_call()
    events.append(emitter.completed(USAGE, completed_at=1_760_000_001))
    assert _types(events, first_token_index(events)) == "response.function_call_arguments.delta"


def test_without_deltas_the_first_done_carrying_content_is_the_mark() -> None:
    emitter = ResponseEmitter(base_response("resp_nd"), self_check=False)
    events = [emitter.created(), emitter.in_progress(), *emitter.begin_message("msg_1")]
    emitter.text_delta("whole answer")  # built, never sent: the done events carry the text
    events += emitter.end_message()
    events.append(emitter.completed(USAGE, completed_at=1_760_000_001))
    assert _types(events, first_token_index(events)) == "response.output_text.done"


def test_an_item_done_alone_counts_when_it_carries_content() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": "{}"}
    assert is_content_done({"type": "response.output_item.done", "output_index": 0, "item": item})
    empty = {**item, "arguments": ""}
    assert not is_content_done({"type": "response.output_item.done", "item": empty})
    message = {"type": "message", "content": [{"type": "output_text", "text": "hi"}]}
    assert is_content_done({"type": "response.output_item.done", "item": message})


@pytest.mark.parametrize(
    ("event", "content"),
    [
        ({"type": "response.output_text.delta", "delta": "a"}, True),
        ({"type": "response.output_text.delta", "delta": ""}, False),  # no character yet
        ({"type": "response.refusal.delta", "delta": "no"}, True),
        ({"type": "response.reasoning_text.delta", "delta": "x"}, True),
        ({"type": "response.custom_tool_call_input.delta", "delta": "*** Begin"}, True),
        ({"type": "response.code_interpreter_call_code.delta", "delta": "print"}, True),
        ({"type": "response.mcp_call_arguments.delta", "delta": "{"}, True),
        ({"type": "response.some_future_tool.delta", "delta": "z"}, True),  # PROTOCOL.md §9
        ({"type": "response.image_generation_call.partial_image", "partial_image_b64": "A"}, True),
        ({"type": "response.output_item.added", "item": {"type": "message"}}, False),
        ({"type": "response.web_search_call.searching"}, False),
        ({"type": "response.content_part.added", "part": {"type": "output_text"}}, False),
    ],
)
def test_what_counts_as_a_content_delta(event: dict[str, Any], content: bool) -> None:
    assert is_content_delta(event) is content


def test_a_stream_with_no_content_has_no_ttft_mark_but_a_ttfe_mark() -> None:
    emitter = ResponseEmitter(base_response("resp_e"), self_check=False)
    events = [emitter.created(), emitter.in_progress(), *emitter.begin_message("msg_1")]
    events += emitter.end_message()
    assert first_token_index(events) is None
    assert _types(events, first_output_index(events)) == "response.output_item.added"
    assert first_output_index([emitter.created()]) is None
