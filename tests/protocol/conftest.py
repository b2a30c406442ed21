from __future__ import annotations

import copy
from typing import Any

import pytest

from harness.protocol.emitter import ResponseEmitter
from harness.protocol.events import response_object


def base_response(response_id: str = "resp_1") -> dict[str, Any]:
    return response_object(response_id, "m", created_at=1_700_000_000)


USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 4},
    "output_tokens": 3,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 13,
}


def full_stream(response_id: str = "resp_1") -> list[dict[str, Any]]:
    """A legal response with reasoning, a message and a function call."""
    emitter = ResponseEmitter(base_response(response_id), self_check=False)
    events = [emitter.created(), emitter.in_progress()]
    events += emitter.begin_reasoning("rs_1")
    events.append(emitter.summary_delta("think"))
    events += emitter.end_reasoning()
    events += emitter.begin_message("msg_1")
    events += [emitter.text_delta("Hel"), emitter.text_delta("lo")]
    events += emitter.end_message()
    events += emitter.begin_function_call("fc_1", "call_1", "read_file")
    events += [emitter.arguments_delta('{"path":'), emitter.arguments_delta('"a.py"}')]
    events += emitter.end_function_call()
    # a copy: tests edit the terminal's usage in place, and USAGE is shared by every module
    events.append(emitter.completed(copy.deepcopy(USAGE), completed_at=1_700_000_001))
    return events


@pytest.fixture
def stream() -> list[dict[str, Any]]:
    return full_stream()


def create(**fields: Any) -> dict[str, Any]:
    """A response.create frame."""
    return {"type": "response.create", "model": "m", **fields}


def on_lane(events: list[dict[str, Any]], stream_id: str | None) -> list[dict[str, Any]]:
    """A copy of `events` carrying `stream_id` (None: the default lane, no tag)."""
    out = copy.deepcopy(events)
    for event in out:
        event.pop("stream_id", None)
        if stream_id is not None:
            event["stream_id"] = stream_id
    return out
