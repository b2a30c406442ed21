"""The grammar paths real production streams take (PROTOCOL.md §9, §10), each on its own."""

from __future__ import annotations

import copy
from typing import Any

from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.stream import StreamAccumulator

from .conftest import full_stream

Events = list[dict[str, Any]]


def _renumber(events: Events) -> Events:
    for seq, event in enumerate(events):
        event["sequence_number"] = seq
    return events


def _rules(events: Events) -> set[tuple[str, str]]:
    acc = ResponseAccumulator()
    for event in events:
        acc.feed(event)
    return {(v.rule_id, v.level) for v in acc.violations}


def _with_hosted_item(done: bool) -> Events:
    """full_stream with a web_search_call at output_index 0 (and its own progress events)."""
    events = full_stream()
    item = {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}
    hosted = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"},
        {"type": "response.web_search_call.completed", "output_index": 0, "item_id": "ws_1"},
    ]
    if done:
        final = {**item, "status": "completed", "action": {"type": "search"}}
        hosted.append({"type": "response.output_item.done", "output_index": 0, "item": final})
    for event in events[2:]:
        if "output_index" in event:
            event["output_index"] += 1
    events[2:2] = hosted
    events[-1]["response"]["output"].insert(0, item)
    return _renumber(events)


def test_hosted_item_is_done_on_its_output_item_done() -> None:
    assert _rules(_with_hosted_item(done=True)) == set()


def test_hosted_item_listed_without_done_is_informational() -> None:
    assert _rules(_with_hosted_item(done=False)) == {("terminal.listed_not_done", "INFO")}


def test_hosted_item_event_after_done_is_informational() -> None:
    events = _with_hosted_item(done=True)
    late = copy.deepcopy(events[3])  # web_search_call.searching
    events.insert(6, late)
    assert _rules(_renumber(events)) == {("item.after_done", "INFO")}


def test_hosted_event_on_a_message_breaks_the_strict_grammar() -> None:
    events = full_stream()
    message = next(e for e in events if e["type"] == "response.content_part.added")
    stray = {
        "type": "response.web_search_call.searching",
        "output_index": message["output_index"],
        "item_id": message["item_id"],
    }
    events.insert(events.index(message) + 1, stray)
    assert ("item.grammar", "MUST") in _rules(_renumber(events))


def test_unknown_event_on_a_strict_item_passes_and_is_reported() -> None:
    events = full_stream()
    message = next(e for e in events if e["type"] == "response.content_part.added")
    stray = {"type": "response.output_text.brand_new", "output_index": message["output_index"]}
    events.insert(events.index(message) + 1, stray)
    assert _rules(_renumber(events)) == {("event.unknown_type", "INFO")}


def _reasoning_text_stream() -> Events:
    """full_stream whose reasoning item carries its text as a reasoning_text content part."""
    events = full_stream()
    done = next(e for e in events if e["type"] == "response.output_item.done")
    rs = {"output_index": done["output_index"], "item_id": done["item"]["id"]}
    part = {**rs, "content_index": 0}
    text = [
        {
            "type": "response.content_part.added",
            **part,
            "part": {"type": "reasoning_text", "text": ""},
        },
        {"type": "response.reasoning_text.delta", **part, "delta": "think"},
        {"type": "response.reasoning_text.delta", **part, "delta": "ing"},
        {"type": "response.reasoning_text.done", **part, "text": "thinking"},
        {
            "type": "response.content_part.done",
            **part,
            "part": {"type": "reasoning_text", "text": "thinking"},
        },
    ]
    done["item"]["content"] = [{"type": "reasoning_text", "text": "thinking"}]
    events[events.index(done) : events.index(done)] = text
    return _renumber(events)


def test_reasoning_text_content_parts_follow_their_grammar() -> None:
    assert _rules(_reasoning_text_stream()) == set()


def test_reasoning_text_deltas_must_add_up() -> None:
    events = _reasoning_text_stream()
    next(e for e in events if e["type"] == "response.reasoning_text.done")["text"] = "other"
    assert ("text.done_matches_deltas", "MUST") in _rules(events)


def _queued_stream() -> Events:
    events = full_stream()
    events[0]["response"]["status"] = "queued"
    queued = copy.deepcopy(events[0])
    queued["type"] = "response.queued"
    events.insert(1, queued)
    return _renumber(events)


def test_created_queued_in_progress_is_one_response_on_a_connection() -> None:
    stream = StreamAccumulator()
    for event in _queued_stream():
        stream.feed(event)
    assert len(stream.finished) == 1 and list(stream.all_violations()) == []


def test_created_queued_in_progress_is_one_response_on_sse() -> None:
    assert _rules(_queued_stream()) == set()


def test_one_cause_gives_one_finding_with_a_count() -> None:
    events = full_stream()
    for event in events:
        del event["sequence_number"]
    acc = ResponseAccumulator()
    for event in events:
        acc.feed(event)
    (violation,) = acc.violations
    assert (violation.rule_id, violation.count) == ("event.legacy_fields", len(events))


def test_resumed_stream_starts_after_zero() -> None:
    events = _queued_stream()[1:]  # GET ?starting_after=0: from the queued event on
    assert _rules(events) == {("seq.resumed", "INFO")}
