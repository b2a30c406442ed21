"""A resumed background stream (GET ?stream=true&starting_after=N) is judged from N+1."""

from __future__ import annotations

from typing import Any

import pytest

from harness.protocol.stream import StreamAccumulator
from tests.protocol.conftest import full_stream

Events = list[dict[str, Any]]


def _judge(events: Events, **resume: Any) -> tuple[StreamAccumulator, set[tuple[str, str]]]:
    stream = StreamAccumulator(**resume)
    for event in events:
        stream.feed(event)
    return stream, {(v.rule_id, v.level) for v in stream.all_violations()}


def _after(n: int) -> Events:
    """The events after sequence_number n of a full response."""
    return [e for e in full_stream() if e["sequence_number"] > n]


@pytest.mark.parametrize("n", [0, 1, 2, 5, 12])
def test_a_stream_resumed_after_n_passes_and_finds_its_terminal(n: int) -> None:
    stream, rules = _judge(_after(n), starting_after=n)
    assert rules == {("seq.resumed", "INFO")}
    (response,) = stream.finished
    assert response.terminal_type == "response.completed" and response.resumed_after == n


def test_a_stream_continuing_a_response_seen_before_is_resumed() -> None:
    stream, rules = _judge(_after(0), seen_responses={"resp_1"})  # starts at response.in_progress
    assert rules == {("seq.resumed", "INFO")} and len(stream.finished) == 1


def test_a_resumed_stream_must_start_at_n_plus_1() -> None:
    _, rules = _judge(_after(3), starting_after=1)
    assert ("seq.contiguous", "MUST") in rules


def test_the_rest_of_the_rules_still_hold_after_the_resume_point() -> None:
    events = _after(1)
    for event in events:
        if event["type"] == "response.output_text.done":
            event["text"] = "something else"
    _, rules = _judge(events, starting_after=1)
    assert ("text.done_matches_deltas", "MUST") in rules


def test_a_broken_start_without_a_resume_still_fails() -> None:
    _, rules = _judge(_after(1))  # no starting_after, no response seen before
    assert {("seq.start", "MUST"), ("lifecycle.first_event", "MUST")} <= rules


def test_an_unseen_response_id_is_no_resume() -> None:
    _, rules = _judge(_after(0), seen_responses={"resp_other"})
    assert ("seq.start", "MUST") in rules


def test_only_the_first_response_of_a_stream_is_a_continuation() -> None:
    events = full_stream("resp_a") + [e for e in full_stream("resp_1") if e["sequence_number"] > 1]
    _, rules = _judge(events, seen_responses={"resp_1"})
    assert ("lifecycle.first_event", "MUST") in rules or ("seq.start", "MUST") in rules
