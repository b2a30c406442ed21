from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from harness.protocol.accumulator import RULES, ResponseAccumulator
from harness.protocol.errors import RemoteProtocolError
from harness.protocol.stream import (
    RequestError,
    StreamAccumulator,
    is_request_error,
    is_unnumbered_error,
)

from .conftest import full_stream

Events = list[dict[str, Any]]


def rule_ids(events: Events) -> set[str]:
    acc = ResponseAccumulator()
    for event in events:
        acc.feed(event)
    return {v.rule_id for v in acc.violations}


def test_legal_stream_has_no_violations_and_reassembles(stream: Events) -> None:
    acc = ResponseAccumulator()
    for event in stream:
        acc.feed(event)
    assert acc.violations == []
    assert acc.done and acc.terminal_type == "response.completed"
    assert acc.output_text() == "Hello"
    assert [c["call_id"] for c in acc.function_calls()] == ["call_1"]
    assert [i["type"] for i in acc.output_items()] == ["reasoning", "message", "function_call"]


def _find(events: Events, event_type: str, nth: int = 0) -> int:
    return [i for i, e in enumerate(events) if e["type"] == event_type][nth]


def _renumber(events: Events) -> Events:
    for seq, event in enumerate(events):
        event["sequence_number"] = seq
    return events


def skip_seq(events: Events) -> Events:
    for event in events[3:]:
        event["sequence_number"] += 1
    return events


def drop_created(events: Events) -> Events:
    return _renumber(events[1:])


def delta_after_done(events: Events) -> Events:
    delta = copy.deepcopy(events[_find(events, "response.output_text.delta")])
    events.insert(_find(events, "response.output_text.done") + 1, delta)
    return _renumber(events)


def done_text_differs(events: Events) -> Events:
    events[_find(events, "response.output_text.done")]["text"] = "Help"
    return events


def second_terminal(events: Events) -> Events:
    events.append({**copy.deepcopy(events[-1]), "sequence_number": len(events)})
    return events


def id_changes(events: Events) -> Events:
    events[-1]["response"]["id"] = "resp_other"
    return events


def missing_usage(events: Events) -> Events:
    events[-1]["response"]["usage"] = None
    return events


def bad_usage_sum(events: Events) -> Events:
    events[-1]["response"]["usage"]["total_tokens"] += 1
    return events


def output_index_gap(events: Events) -> Events:
    events[_find(events, "response.output_item.added", 2)]["output_index"] = 5
    return events


def unknown_index(events: Events) -> Events:
    events[_find(events, "response.output_text.delta")]["output_index"] = 9
    return events


def wrong_item_id(events: Events) -> Events:
    events[_find(events, "response.output_text.delta")]["item_id"] = "msg_x"
    return events


def done_item_id_omitted(events: Events) -> Events:
    done = events[_find(events, "response.output_item.done", 2)]
    del done["item"]["id"]  # the API's types make it optional: nothing is lost, a SHOULD
    return events


def done_item_id_differs(events: Events) -> Events:
    done = events[_find(events, "response.output_item.done", 2)]
    done["item"]["id"] = "fc_other"  # two items mixed: a MUST
    return events


def item_done_differs(events: Events) -> Events:
    done = events[_find(events, "response.output_item.done", 2)]
    done["item"]["arguments"] = "{}"
    return events


def completed_with_open_item(events: Events) -> Events:
    del events[_find(events, "response.output_item.done", 2)]
    return _renumber(events)


def missing_field(events: Events) -> Events:
    del events[_find(events, "response.output_text.delta")]["content_index"]
    return events


def flat_error(events: Events) -> Events:
    terminal = events.pop()
    events.append({"type": "error", "sequence_number": len(events), "code": "x", "message": "m"})
    terminal["type"] = "response.failed"
    terminal["response"].update(status="failed", error={"code": "x", "message": "m"})
    events.append({**terminal, "sequence_number": len(events)})
    return events


def garbled_error(events: Events) -> Events:
    events = flat_error(events)
    events[-2] = {"type": "error", "sequence_number": events[-2]["sequence_number"], "error": "x"}
    return events


def status_mismatch(events: Events) -> Events:
    events[-1]["response"]["status"] = "incomplete"  # vLLM's completed + incomplete
    return events


def status_not_terminal(events: Events) -> Events:
    events[-1]["response"]["status"] = "in_progress"  # a client reading status sees it running
    return events


MUTATIONS: dict[Callable[[Events], Events], str] = {
    skip_seq: "seq.contiguous",
    drop_created: "lifecycle.first_event",
    delta_after_done: "item.grammar",
    done_text_differs: "text.done_matches_deltas",
    second_terminal: "lifecycle.after_terminal",
    id_changes: "response.id_stable",
    missing_usage: "usage.present",
    bad_usage_sum: "usage.consistent",
    output_index_gap: "item.index_order",
    unknown_index: "item.unknown_index",
    wrong_item_id: "item.id_match",
    done_item_id_omitted: "item.id_omitted",
    done_item_id_differs: "item.id_match",
    item_done_differs: "item.done_matches",
    completed_with_open_item: "terminal.unfinished_items",
    missing_field: "event.schema",
    flat_error: "event.flat_error",
    garbled_error: "error.shape",
    status_mismatch: "response.status",
    status_not_terminal: "response.status_terminal",
}


@pytest.mark.parametrize("mutate", list(MUTATIONS), ids=lambda m: m.__name__)
def test_each_mutation_is_caught_by_its_rule(mutate: Callable[[Events], Events]) -> None:
    assert MUTATIONS[mutate] in rule_ids(mutate(full_stream()))


def test_an_omitted_done_item_id_is_not_also_a_mismatch() -> None:
    assert rule_ids(done_item_id_omitted(full_stream())) == {"item.id_omitted"}


def test_every_rule_is_documented() -> None:
    assert set(MUTATIONS.values()) <= set(RULES)
    assert all(level in ("MUST", "SHOULD", "INFO") for level, _ in RULES.values())


def test_raise_on_makes_the_first_violation_an_exception() -> None:
    acc = ResponseAccumulator(raise_on=RemoteProtocolError)
    events = skip_seq(full_stream())
    with pytest.raises(RemoteProtocolError) as info:
        for event in events:
            acc.feed(event)
    assert info.value.rule_id == "seq.contiguous"


def test_unknown_event_and_item_types_pass_through(stream: Events) -> None:
    stream.insert(2, {"type": "response.brand_new_call.delta", "sequence_number": 2})
    stream.insert(
        3,
        {
            "type": "response.output_item.added",
            "sequence_number": 3,
            "output_index": 0,
            "item": {"type": "shell_call", "id": "sh_1"},
        },
    )
    for event in stream[4:]:
        if "output_index" in event:
            event["output_index"] += 1
    _renumber(stream)
    stream[-1]["response"]["output"].insert(0, {"type": "shell_call", "id": "sh_1"})
    acc = ResponseAccumulator()
    for event in stream:
        acc.feed(event)
    # the shell_call never gets output_item.done, but the terminal lists it: how production
    # hosted-tool items look (PROTOCOL.md §9), reported and never failed
    assert {(v.rule_id, v.level) for v in acc.violations} == {
        ("event.unknown_type", "INFO"),
        ("terminal.listed_not_done", "INFO"),
    }
    assert acc.unknown_types == {"response.brand_new_call.delta"}


def test_mid_stream_failure_is_error_then_failed() -> None:
    from harness.protocol.emitter import ResponseEmitter
    from harness.protocol.errors import server_error

    from .conftest import base_response

    emitter = ResponseEmitter(base_response(), self_check=True)
    events = [emitter.created(), emitter.in_progress(), *emitter.begin_message("msg_1")]
    events += emitter.failed(server_error())
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["error"]["type"] == "server_error" and events[-2]["status"] == 500
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_stream_accumulator_splits_responses_and_request_errors() -> None:
    from harness.protocol.errors import previous_response_not_found

    stream = StreamAccumulator()
    for event in full_stream("resp_1"):
        stream.feed(event)
    routed = stream.feed(previous_response_not_found("resp_x").to_event())
    for event in full_stream("resp_2"):
        stream.feed(event)
    assert [r.response_id for r in stream.finished] == ["resp_1", "resp_2"]
    assert not hasattr(routed, "response_id")
    assert stream.request_errors[0].error.code == "previous_response_not_found"
    assert list(stream.all_violations()) == []


def test_an_error_before_any_event_of_its_response_is_a_request_error() -> None:
    from harness.protocol.errors import previous_response_not_found, server_error

    refused = previous_response_not_found("resp_x").to_event()
    numbered = {**server_error().to_event(), "sequence_number": 2}
    started = ResponseAccumulator()
    started.feed(full_stream("resp_1")[0])
    assert is_request_error(refused, None) and is_request_error(refused, ResponseAccumulator())
    assert is_request_error(numbered, None)  # no response has begun: the request was refused
    assert not is_request_error(numbered, started) and not is_request_error(refused, started)
    assert not is_request_error(full_stream("resp_1")[0], None)  # not an error at all


def test_on_a_socket_an_unnumbered_error_mid_stream_answers_another_request() -> None:
    from harness.protocol.errors import previous_response_not_found, server_error

    events = full_stream("resp_1")
    stream = StreamAccumulator()
    for event in events[:2]:
        stream.feed(event)
    refused = previous_response_not_found("resp_x").to_event()
    assert is_unnumbered_error(refused)
    assert isinstance(stream.feed(refused), RequestError)  # a bad frame sent mid-stream
    numbered = {**server_error().to_event(), "sequence_number": 2}
    assert not is_unnumbered_error(numbered)
    routed = stream.feed(numbered)
    assert isinstance(routed, ResponseAccumulator) and routed.error is not None


def test_stream_accumulator_flags_interleaved_responses() -> None:
    stream = StreamAccumulator()
    first, second = full_stream("resp_1"), full_stream("resp_2")
    for event in first[:4] + second:
        stream.feed(event)
    assert "conn.no_interleave" in {v.rule_id for v in stream.all_violations()}


def test_lanes_are_tracked_separately() -> None:
    stream = StreamAccumulator()
    a = [{**e, "stream_id": "a"} for e in full_stream("resp_a")]
    b = [{**e, "stream_id": "b"} for e in full_stream("resp_b")]
    for pair in zip(a, b, strict=True):
        for event in pair:
            stream.feed(event)
    assert list(stream.all_violations()) == []
    assert {r.response_id for r in stream.finished} == {"resp_a", "resp_b"}


@pytest.mark.parametrize("bad", [None, "x", 3, []])
def test_a_lifecycle_event_whose_response_is_not_an_object_is_a_violation_not_a_crash(
    bad: object,
) -> None:
    events = full_stream()
    events[-1]["response"] = bad
    acc = ResponseAccumulator()
    for event in events:
        acc.feed(event)
    assert "event.schema" in {v.rule_id for v in acc.violations}
    assert acc.done and acc.terminal_type == "response.completed"


def _announce_second_item_first(events: Events) -> Events:
    """The message (index 1) announced before the reasoning item (index 0), as OpenRouter's
    advisor streams do: their `output_item.added` events swapped, all else kept."""
    first = _find(events, "response.output_item.added")
    second = _find(events, "response.output_item.added", 1)
    events.insert(first, events.pop(second))
    return _renumber(events)


def test_an_item_announced_ahead_is_judged_once_and_every_item_still_followed() -> None:
    # the message is open while the reasoning streams: item.sequential, rightly; no
    # item.unknown_index for the message's events, no "never announced" at the terminal
    swapped = {"item.index_order", "item.sequential"}
    assert rule_ids(_announce_second_item_first(full_stream())) == swapped
    broken = _announce_second_item_first(full_stream())
    broken[_find(broken, "response.output_text.delta")]["delta"] = "Jel"  # judged all the same
    assert rule_ids(broken) == swapped | {"text.done_matches_deltas"}


def test_an_index_far_ahead_or_a_place_never_announced_is_still_caught() -> None:
    events = full_stream()
    events[_find(events, "response.output_item.added", 1)]["output_index"] = 10_000
    assert {"item.index_order", "item.unknown_index"} <= rule_ids(events)  # not followed
    events = full_stream()
    events[_find(events, "response.output_item.added", 1)]["output_index"] = 2  # 1 never comes
    assert {"item.index_order", "terminal.unfinished_items"} <= rule_ids(events)
