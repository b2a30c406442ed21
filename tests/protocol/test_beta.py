"""The 2026 beta extensions in the protocol core: steer/inject parsing, the replies' shapes and
routing, and the agent tag (PROTOCOL.md §2.2)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.beta import (
    BETA_CLIENT_EVENT_TYPES,
    InvalidSteerInput,
    agent_name,
    beta_problems,
    beta_target,
    parse_inject,
    parse_steer,
    steer_event,
)
from harness.protocol.emitter import ResponseEmitter
from harness.protocol.errors import LocalProtocolError
from harness.protocol.events import response_object
from harness.protocol.requests import (
    CLIENT_EVENT_TYPES,
    InvalidRequest,
    parse_client_event,
    parse_create,
)
from harness.protocol.stream import BetaReply, StreamAccumulator

USAGE = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}


def emitter(**kwargs: Any) -> ResponseEmitter:
    return ResponseEmitter(response_object("resp_1", "m", created_at=1_760_000_000), **kwargs)


# -- client events --------------------------------------------------------------------------------
def test_a_steer_takes_a_string_or_user_messages() -> None:
    steer = parse_steer({"previous_response_id": "resp_1", "input": "shorter please"})
    assert steer.items == ({"type": "message", "role": "user", "content": "shorter please"},)
    parts = [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "x"}]
    steer = parse_steer(
        {"previous_response_id": "resp_1", "input": [{"role": "user", "content": parts}]}
    )
    assert steer.items[0]["content"] == parts and steer.raw_input[0]["content"] == parts


@pytest.mark.parametrize(
    "body",
    [
        {"previous_response_id": "resp_1", "input": []},
        {"previous_response_id": "resp_1", "input": [{"role": "assistant", "content": "x"}]},
        {"previous_response_id": "resp_1", "input": [{"type": "function_call_output"}]},
        {
            "previous_response_id": "resp_1",
            "input": [{"role": "user", "content": [{"type": "output_text"}]}],
        },
        {"previous_response_id": "resp_1", "input": "x", "stream_id": "a"},
    ],
)
def test_a_steer_with_a_target_but_bad_input_is_invalid_input(body: dict[str, Any]) -> None:
    with pytest.raises(InvalidSteerInput) as caught:
        parse_steer(body)
    assert caught.value.error.code == "invalid_input"
    assert caught.value.previous_response_id == "resp_1"
    assert caught.value.raw_input == body["input"]  # what steer.failed returns


def test_a_steer_or_inject_without_a_target_is_a_request_error() -> None:
    for parse, name in ((parse_steer, "previous_response_id"), (parse_inject, "response_id")):
        with pytest.raises(InvalidRequest) as caught:
            parse({"input": "x"})
        assert not isinstance(caught.value, InvalidSteerInput)
        assert caught.value.error.param == name and caught.value.error.status == 400
    with pytest.raises(InvalidRequest) as caught:
        parse_inject({"response_id": "resp_1", "input": {"type": "function_call_output"}})
    assert caught.value.error.param == "input"
    inject = parse_inject({"response_id": "resp_1", "input": [{"type": "x"}, 3]})
    assert inject.items == ({"type": "x"}, 3)  # as sent: a failure returns them unchanged


def test_beta_client_events_are_accepted_only_where_a_server_serves_them() -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_client_event({"type": "response.inject", "response_id": "r", "input": []})
    assert caught.value.error.code == "unknown_event_type"
    accepted = CLIENT_EVENT_TYPES | BETA_CLIENT_EVENT_TYPES
    event_type, body = parse_client_event({"type": "response.steer", "input": "x"}, accepted)
    assert event_type == "response.steer" and body == {"input": "x"}


def test_the_create_takes_multi_agent() -> None:
    body = {
        "model": "m",
        "input": "x",
        "multi_agent": {"enabled": True, "max_concurrent_subagents": 2},
    }
    request = parse_create(body, transport="ws")
    assert request.multi_agent and request.max_concurrent_subagents == 2
    assert not parse_create({"model": "m", "input": "x"}, transport="ws").multi_agent
    for bad in ({}, {"enabled": "yes"}, {"enabled": True, "max_concurrent_subagents": 0}, []):
        with pytest.raises(InvalidRequest) as caught:
            parse_create({"model": "m", "input": "x", "multi_agent": bad}, transport="ws")
        assert str(caught.value.error.param).startswith("multi_agent")


# -- replies and the agent tag -------------------------------------------------------------------
def test_reply_shapes_follow_the_sdk_types() -> None:
    accepted = {
        "type": "response.steer.accepted",
        "sequence_number": 3,
        "steer": steer_event("steer_1", "resp_1"),
    }
    assert beta_problems(accepted) == [] and beta_target(accepted) == "resp_1"
    failed = {
        "type": "response.steer.failed",
        "sequence_number": 0,
        "error": {"type": "invalid_request_error", "code": "invalid_input", "message": "no"},
        "steer": steer_event(None, "resp_1", "x", failed=True),
    }
    assert beta_problems(failed) == []
    assert beta_problems({**accepted, "steer": {"previous_response_id": "resp_1"}}) == [
        "'steer.id' missing or not a string"
    ]
    no_input = {**failed, "steer": {"previous_response_id": "resp_1"}}
    assert "'steer.input' (the returned input) missing" in beta_problems(no_input)
    inject_failed = {
        "type": "response.inject.failed",
        "sequence_number": 0,
        "response_id": "resp_9",
        "input": [],
        "error": {"message": "gone"},
    }
    assert beta_problems(inject_failed) == ["'error.code' missing or not a string"]
    assert beta_target(inject_failed) == "resp_9"


def test_replies_are_numbered_in_the_response_and_pass_its_grammar_even_after_the_terminal() -> (
    None
):
    out = emitter()
    events = [out.created(), out.in_progress()]
    events.append(out.beta_event("response.steer.accepted", steer=steer_event("steer_1", "resp_1")))
    events += out.begin_message("msg_1")
    events.append(out.text_delta("hi"))
    events += out.end_message()
    events.append(out.completed(USAGE, completed_at=1_760_000_001))
    events.append(
        out.beta_event(
            "response.steer.pending",
            reason="waiting_for_required_input",
            required_input=[],
            steer=steer_event("steer_1", "resp_1"),
        )
    )
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    stream = StreamAccumulator(raise_on=LocalProtocolError)  # INFO (event.beta) never raises
    routed = [stream.feed(e) for e in events]
    assert isinstance(routed[2], BetaReply) and routed[2].response is routed[0]
    assert isinstance(routed[-1], BetaReply) and routed[-1].response is routed[0]
    response = stream.finished[0]
    assert [v.rule_id for v in response.violations] == []
    assert len(response.beta_events) == 2
    assert sorted(v.rule_id for v in stream.violations) == ["event.beta", "event.beta"]


def test_a_malformed_reply_breaks_beta_schema_only() -> None:
    out = emitter(self_check=False)
    events = [out.created(), out.in_progress()]
    bad = out.beta_event("response.inject.created")  # no response_id: names nothing
    stream = StreamAccumulator()
    for event in (*events, bad):
        stream.feed(event)
    assert [v.rule_id for v in stream.all_violations()] == ["event.beta", "beta.schema"]
    with pytest.raises(LocalProtocolError):
        emitter().beta_event("response.steer.accepted", steer={"previous_response_id": "resp_1"})


def test_a_multi_agent_response_tags_events_and_items_and_lists_committed_outputs() -> None:
    out = emitter(agent="root")
    events = [out.created(), out.in_progress()]
    events += out.begin_function_call("fc_1", "call_1", "f", agent="worker")
    events.append(out.arguments_delta("{}"))
    events += out.end_function_call()
    events.append(out.beta_event("response.inject.created", response_id="resp_1"))
    events += out.function_call_output("fco_1", "call_1", "ok", agent="worker")
    events += out.begin_message("msg_1")
    events.append(out.text_delta("done"))
    events += out.end_message()
    events.append(out.completed(USAGE, completed_at=1_760_000_001))
    assert agent_name(events[0]) == "root" and agent_name(events[-1]) == "root"
    assert {agent_name(e) for e in events[2:6]} == {"worker"}
    assert agent_name(events[-2]["item"]) == "root"
    output = events[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["function_call", "function_call_output", "message"]
    assert [agent_name(i) for i in output] == ["worker", "worker", "root"]
    assert "agent" not in events[6]  # the inject reply carries no agent (SDK type)


def _item_events(agent: str, index: int, text: str) -> list[dict[str, Any]]:
    item = {
        "id": f"msg_{index}",
        "type": "message",
        "role": "assistant",
        "content": [],
        "agent": {"agent_name": agent},
    }
    ids = {"item_id": f"msg_{index}", "output_index": index, "agent": {"agent_name": agent}}
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return [
        {"type": "response.output_item.added", "output_index": index, "item": item},
        {
            "type": "response.content_part.added",
            **ids,
            "content_index": 0,
            "part": {**part, "text": ""},
        },
        {
            "type": "response.output_text.delta",
            **ids,
            "content_index": 0,
            "delta": text,
            "logprobs": [],
        },
        {
            "type": "response.output_text.done",
            **ids,
            "content_index": 0,
            "text": text,
            "logprobs": [],
        },
        {"type": "response.content_part.done", **ids, "content_index": 0, "part": part},
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": {**item, "content": [part]},
        },
    ]


@pytest.mark.parametrize(("second", "sequential"), [("worker", []), ("root", ["item.sequential"])])
def test_items_of_different_agents_may_interleave(second: str, sequential: list[str]) -> None:
    first, other = _item_events("root", 0, "a"), _item_events(second, 1, "b")
    body = [e for pair in zip(first, other, strict=True) for e in pair]
    start = response_object("resp_1", "m", created_at=1_760_000_000)
    done = {
        **start,
        "status": "completed",
        "output": [first[-1]["item"], other[-1]["item"]],
        "usage": USAGE,
    }
    events = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
        *body,
        {"type": "response.completed", "response": done},
    ]
    accumulator = ResponseAccumulator()
    for seq, event in enumerate(events):
        accumulator.feed({**event, "sequence_number": seq})
    assert sorted({v.rule_id for v in accumulator.violations}) == sequential
    assert accumulator.output_text() == "ab"
