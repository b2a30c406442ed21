from __future__ import annotations

import pytest

from harness.protocol.emitter import ResponseEmitter
from harness.protocol.errors import LocalProtocolError

from .conftest import USAGE, base_response


def test_emitter_numbers_events_and_lists_output(stream: list[dict]) -> None:  # type: ignore[type-arg]
    assert [e["sequence_number"] for e in stream] == list(range(len(stream)))
    terminal = stream[-1]["response"]
    assert terminal["status"] == "completed" and terminal["usage"] == USAGE
    assert [i["id"] for i in terminal["output"]] == ["rs_1", "msg_1", "fc_1"]
    created = stream[0]["response"]
    assert created["output"] == [] and created["usage"] is None


def test_emitter_refuses_an_illegal_order() -> None:
    emitter = ResponseEmitter(base_response())
    emitter.created()
    with pytest.raises(LocalProtocolError) as info:
        emitter.begin_message("msg_1")  # output before response.in_progress
    assert info.value.rule_id == "lifecycle.order"


def test_emitter_refuses_completion_with_an_open_item() -> None:
    emitter = ResponseEmitter(base_response())
    emitter.created()
    emitter.in_progress()
    emitter.begin_message("msg_1")
    with pytest.raises(LocalProtocolError):
        emitter.completed(USAGE, completed_at=1_760_000_001)


def test_incomplete_closes_the_open_item() -> None:
    emitter = ResponseEmitter(base_response(), stream_id="lane-1", obfuscate=False)
    events = [emitter.created(), emitter.in_progress(), *emitter.begin_message("msg_1")]
    events.append(emitter.text_delta("abc"))
    events += emitter.incomplete("max_output_tokens", USAGE)
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert events[-2]["item"]["status"] == "incomplete"
    assert all(e["stream_id"] == "lane-1" for e in events)
    assert "obfuscation" not in events[3]


def test_early_failure_is_created_then_failed() -> None:
    from harness.protocol.errors import invalid_request

    emitter = ResponseEmitter(base_response())
    events = emitter.failed(invalid_request("flagged", code="invalid_prompt"))
    assert [e["type"] for e in events] == ["response.created", "response.failed"]
    assert events[-1]["response"]["error"]["code"] == "invalid_prompt"


def test_refusal_message_streams_refusal_events() -> None:
    from harness.protocol.accumulator import ResponseAccumulator

    emitter = ResponseEmitter(base_response(), self_check=True)
    events = [
        emitter.created(),
        emitter.in_progress(),
        *emitter.begin_message("msg_1", refusal=True),
    ]
    events += [emitter.text_delta("I can't "), emitter.text_delta("help with that.")]
    events += emitter.end_message()
    events.append(emitter.completed(USAGE, completed_at=1_760_000_001))
    types = [e["type"] for e in events]
    assert "response.refusal.delta" in types and "response.refusal.done" in types
    assert events[-1]["response"]["output"][0]["content"] == [
        {"type": "refusal", "refusal": "I can't help with that."}
    ]
    checker = ResponseAccumulator()
    for event in events:
        checker.feed(event)
    assert checker.violations == []
