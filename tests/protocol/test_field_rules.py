"""The field rules (issue 41): each one fails on the stream that breaks it and stays quiet on the
legal one; the response rules run inside the accumulator, the request rules against the create."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from harness.protocol.accumulator import RULES, ResponseAccumulator
from harness.protocol.emitter import ResponseEmitter
from harness.protocol.field_rules import (
    FIELD_RULES,
    lane_consistency_problems,
    request_problems,
    timestamp_problems,
    wall_clock_problems,
)
from harness.protocol.request_rules import judge_exchange
from harness.protocol.stream import StreamAccumulator

from .conftest import USAGE, base_response, create, full_stream, on_lane

Events = list[dict[str, Any]]
NOW_S = 1_700_000_100.0


def rule_ids(events: Events) -> set[str]:
    acc = ResponseAccumulator()
    for event in events:
        acc.feed(event)
    return {v.rule_id for v in acc.violations}


def terminal(events: Events) -> dict[str, Any]:
    response: dict[str, Any] = events[-1]["response"]
    return response


def capped_stream(output_tokens: int) -> Events:
    """A message cut by max_output_tokens 4, reporting `output_tokens`."""
    emitter = ResponseEmitter({**base_response(), "max_output_tokens": 4}, self_check=False)
    events = [emitter.created(), emitter.in_progress()]
    events += emitter.begin_message("msg_1")
    events.append(emitter.text_delta("cut short"))
    events += emitter.end_message()
    usage = {**USAGE, "output_tokens": output_tokens, "total_tokens": 10 + output_tokens}
    events += emitter.incomplete("max_output_tokens", usage)
    return events


def test_every_field_rule_is_registered_with_the_stream_rules() -> None:
    assert FIELD_RULES.items() <= RULES.items()


def test_the_legal_stream_breaks_no_field_rule(stream: Events) -> None:
    assert not rule_ids(stream) & set(FIELD_RULES)
    assert not rule_ids(capped_stream(4)) & set(FIELD_RULES)


def test_zero_output_tokens_after_streamed_text_is_usage_output_streamed(stream: Events) -> None:
    usage = terminal(stream)["usage"]
    usage.update(output_tokens=0, total_tokens=usage["input_tokens"])
    assert "usage.output_streamed" in rule_ids(stream)


def test_a_call_a_program_issued_is_not_model_output() -> None:
    # programmatic tool calling (recorded api.openai.com traffic): the arguments came from code
    emitter = ResponseEmitter(base_response(), self_check=False)
    events = [emitter.created(), emitter.in_progress()]
    events += emitter.begin_function_call("fc_1", "call_1", "getDemand")
    events.append(emitter.arguments_delta("{}"))
    events += emitter.end_function_call()
    events[-1]["item"]["caller"] = {"type": "program", "caller_id": "call_0"}
    zero = {**USAGE, "input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    zero["input_tokens_details"] = {"cached_tokens": 0}
    events.append(emitter.completed(zero, completed_at=1_700_000_001))
    assert not rule_ids(events) & set(FIELD_RULES)


def test_more_output_than_the_cap_that_cut_it_is_usage_output_cap() -> None:
    assert "usage.output_cap" in rule_ids(capped_stream(12))
    # the cap is only judged when the cap cut the response
    completed = full_stream()
    terminal(completed)["max_output_tokens"] = 1
    assert "usage.output_cap" not in rule_ids(completed)


def test_reasoning_tokens_above_output_tokens_is_usage_details_bounded(stream: Events) -> None:
    terminal(stream)["usage"]["output_tokens_details"]["reasoning_tokens"] = 4
    assert "usage.details_bounded" in rule_ids(stream)


def test_a_relisted_parent_item_is_output_own_items(stream: Events) -> None:
    parent_item = {"id": "msg_parent", "type": "message", "role": "assistant", "content": []}
    terminal(stream)["output"].insert(0, parent_item)
    ids = rule_ids(stream)
    assert "output.own_items" in ids
    assert "terminal.output_matches" not in ids  # the streamed items are still all listed


def test_milliseconds_are_not_unix_seconds(stream: Events) -> None:
    for event in stream:
        if "response" in event:
            event["response"]["created_at"] *= 1000
    assert "time.unix_seconds" in rule_ids(stream)
    problems = timestamp_problems({"created_at": 1_700_000_000_000})
    assert problems == [
        ("time.unix_seconds", "created_at 1700000000000 is not unix seconds (milliseconds?)")
    ]


@pytest.mark.parametrize(
    ("response", "rules"),
    [
        ({"created_at": 1_741_000_000}, []),  # a 2025 recording: judged by unit, not by today
        ({"created_at": 1_741_000_000.5, "completed_at": None}, []),  # float, no completed_at
        ({"created_at": 0}, ["time.unix_seconds"]),
        ({"created_at": "1741000000"}, ["time.unix_seconds"]),
        ({"created_at": 1_741_000_010, "completed_at": 1_741_000_000}, ["time.order"]),
    ],
)
def test_timestamps_are_judged_for_unit_and_order(
    response: dict[str, Any], rules: list[str]
) -> None:
    assert [rule for rule, _ in timestamp_problems(response)] == rules


def test_the_wall_clock_window_is_an_hour_and_five_minutes_back_five_ahead() -> None:
    def judged(created_at: float) -> bool:
        return bool(wall_clock_problems({"created_at": created_at}, NOW_S))

    assert not judged(NOW_S - 65 * 60) and judged(NOW_S - 65 * 60 - 1)
    assert not judged(NOW_S + 5 * 60) and judged(NOW_S + 5 * 60 + 1)
    assert not judged(NOW_S * 1000)  # no unix seconds at all: time.unix_seconds' business


def test_each_lane_carries_its_own_stream_id(stream: Events) -> None:
    assert request_problems(create(stream_id="a"), on_lane(stream, "a")) == []
    assert request_problems(create(), on_lane(stream, None)) == []
    [(rule, _)] = request_problems(create(stream_id="a"), on_lane(stream, "b"))
    assert rule == "lane.stream_id"
    [(rule, message)] = request_problems(create(), on_lane(stream, "a"))
    assert rule == "lane.default_stream_id" and "none asked" in message


def test_the_echo_is_the_requests_previous_response_id(stream: Events) -> None:
    for event in stream:
        if "response" in event:
            event["response"]["previous_response_id"] = "resp_parent"
    assert request_problems(create(previous_response_id="resp_parent"), stream) == []
    [(rule, message)] = request_problems(create(), stream)  # a new chain echoes null
    assert rule == "response.previous_response_id" and "'resp_parent'" in message
    [(rule, _)] = request_problems(create(previous_response_id="resp_older"), stream)
    assert rule == "response.previous_response_id"


def test_the_wall_clock_is_judged_only_with_the_callers_clock(stream: Events) -> None:
    assert request_problems(create(), stream) == []
    late = request_problems(create(), stream, now_s=1_700_000_000 + 2 * 3600)
    assert [rule for rule, _ in late] == ["time.wall_clock"]


def test_judge_exchange_files_on_the_response_or_on_the_stream(stream: Events) -> None:
    splitter = StreamAccumulator()
    routed = [splitter.feed(event) for event in on_lane(stream, "b")]
    response = routed[-1]
    assert isinstance(response, ResponseAccumulator)
    found = judge_exchange(create(stream_id="a"), on_lane(stream, "b"), response, splitter)
    assert [v.rule_id for v in found] == ["lane.stream_id"]
    assert found[0] in response.violations and found[0] in list(splitter.all_violations())
    error = {"type": "error", "stream_id": "b", "error": {"type": "x", "code": None}}
    refused = judge_exchange(create(stream_id="a"), [error], None, splitter)
    assert refused and refused[0] in splitter.violations
    # a steer or any other client event is no create: nothing to judge it against
    assert judge_exchange({"type": "response.steer"}, [error], None, splitter) == []


def test_interleaved_lanes_keep_each_responses_stream_id() -> None:
    a = on_lane(full_stream("resp_a"), "a")
    b = on_lane(full_stream("resp_b"), "b")
    assert lane_consistency_problems([a[0], b[0], *a[1:], *b[1:]]) == []
    a[-1]["stream_id"] = "b"  # a's terminal under the other running lane's id
    [(rule, message)] = lane_consistency_problems([a[0], b[0], *a[1:], *b[1:]])
    assert rule == "lane.stream_id" and "resp_a" in message


def test_a_stray_of_another_response_is_not_judged_against_this_create(stream: Events) -> None:
    splitter = StreamAccumulator()
    routed = [splitter.feed(event) for event in stream]
    response = routed[-1]
    assert isinstance(response, ResponseAccumulator)
    stray = copy.deepcopy(stream[-1])  # the previous response's second terminal
    stray["response"].update(id="resp_0", previous_response_id="resp_older")
    assert judge_exchange(create(), [stray, *stream], response, splitter) == []
