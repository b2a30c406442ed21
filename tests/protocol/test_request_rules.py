"""Pairing a recorded connection's creates with the events that answered them, and the request
rules over the pairs (`wsmode check` on wire logs)."""

from __future__ import annotations

from typing import Any

from harness.protocol.request_rules import judge_recorded, pair_exchanges

from .conftest import create, full_stream, on_lane

Events = list[dict[str, Any]]


def refusal(stream_id: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {
        "type": "error",
        "status": 400,
        "error": {"type": "invalid_request_error", "code": "x", "message": "no", "param": None},
    }
    if stream_id is not None:
        error["stream_id"] = stream_id
    return error


def test_sequential_creates_pair_with_their_responses_and_errors() -> None:
    first, second = full_stream("resp_1"), full_stream("resp_2")
    frames = [
        ("send", create()),
        *(("recv", e) for e in first),
        ("send", create(previous_response_id="resp_gone")),
        ("recv", refusal()),
        ("send", create()),
        *(("recv", e) for e in second),
    ]
    pairs = pair_exchanges(frames)
    assert [len(p.events) for p in pairs] == [len(first), 1, len(second)]
    assert all(p.done for p in pairs)
    assert judge_recorded(frames) == []


def test_interleaved_lanes_pair_by_stream_id() -> None:
    a, b = on_lane(full_stream("resp_a"), "a"), on_lane(full_stream("resp_b"), "b")
    mixed = [event for pair in zip(a, b, strict=True) for event in pair]
    frames = [("send", create(stream_id="a")), ("send", create(stream_id="b"))]
    frames += [("recv", e) for e in mixed]
    pairs = pair_exchanges(frames)
    assert [p.events for p in pairs] == [a, b]
    assert judge_recorded(frames) == []


def test_a_mis_tagged_event_goes_to_the_waiting_create_and_breaks_its_lane() -> None:
    named = on_lane(full_stream("resp_1"), "a")
    tagged_default = on_lane(full_stream("resp_2"), "a")  # a default-lane create's answer
    frames = [("send", create(stream_id="a")), *(("recv", e) for e in named)]
    frames += [("send", create()), *(("recv", e) for e in tagged_default)]
    assert [v.rule_id for v in judge_recorded(frames)] == ["lane.default_stream_id"]


def test_errors_of_frames_that_were_no_create_end_no_create() -> None:
    events = full_stream("resp_1")
    frames = [
        ("send", create()),
        *(("recv", e) for e in events[:3]),
        ("send", None),  # a malformed frame sent mid-stream
        ("recv", refusal()),  # its error, unnumbered
        *(("recv", e) for e in events[3:]),
    ]
    (pair,) = pair_exchanges(frames)
    assert pair.events == events and pair.done


def test_beta_replies_and_unasked_responses_are_left_out() -> None:
    steered = full_stream("resp_1")
    successor = full_stream("resp_2")  # the automatic successor: no create asked for it
    accepted = {
        "type": "response.steer.accepted",
        "sequence_number": 2,
        "steer": {"id": "steer_1", "previous_response_id": "resp_1"},
    }
    frames = [
        ("send", create()),
        *(("recv", e) for e in steered[:2]),
        ("send", {"type": "response.steer", "previous_response_id": "resp_1", "input": "x"}),
        ("recv", accepted),
        *(("recv", e) for e in steered[2:]),
        *(("recv", e) for e in successor),
    ]
    (pair,) = pair_exchanges(frames)
    assert pair.events == steered
    assert judge_recorded(frames) == []


def test_an_unfinished_exchange_is_not_judged() -> None:
    events = full_stream("resp_1")
    for event in events:
        if "response" in event:
            event["response"]["previous_response_id"] = "resp_other"
    cut = [("send", create()), *(("recv", e) for e in events[:-1])]
    assert [p.done for p in pair_exchanges(cut)] == [False]
    assert judge_recorded(cut) == []
    whole = [*cut, ("recv", events[-1])]
    assert [v.rule_id for v in judge_recorded(whole)] == ["response.previous_response_id"]
