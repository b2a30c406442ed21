"""A WebSocket frame is parsed once: into its request, a beta event, or the refusal that answers
it (on the create's lane only when the create itself was refused)."""

from __future__ import annotations

import json

from harness.protocol.beta import STEER
from harness.protocol.requests import CLIENT_EVENT_TYPES, CreateRequest
from reference_server.front.ws_session import Unreadable, read_frame

ACCEPTED = CLIENT_EVENT_TYPES | {STEER}


def frame(**fields: object) -> str:
    return json.dumps({"type": "response.create", "model": "m", "input": "hi", **fields})


def test_a_create_becomes_its_request_parsed_as_over_the_transport_given() -> None:
    request = read_frame(frame(stream_id="a"), ACCEPTED, "ws")
    assert isinstance(request, CreateRequest) and request.stream_id == "a"
    refused = read_frame(frame(background=True), ACCEPTED, "ws")
    assert isinstance(refused, Unreadable) and refused.error.code == "unsupported_parameter"
    assert isinstance(read_frame(frame(background=True), ACCEPTED, "http"), CreateRequest)


def test_a_beta_event_becomes_its_type_and_body() -> None:
    event = read_frame(json.dumps({"type": STEER, "input": "x"}), ACCEPTED, "ws")
    assert event == (STEER, {"input": "x"})


def test_a_refused_create_is_answered_on_its_lane_and_nothing_else_is() -> None:
    bad_create = read_frame(frame(stream_id="a", temperature="hot"), ACCEPTED, "ws")
    assert isinstance(bad_create, Unreadable) and bad_create.stream_id == "a"
    unknown = json.dumps({"type": "response.cancel", "stream_id": "a"})
    for text, code in (("{not json", "invalid_json"), (unknown, "unknown_event_type")):
        refused = read_frame(text, ACCEPTED, "ws")
        assert isinstance(refused, Unreadable)
        assert refused.error.code == code and refused.stream_id is None
