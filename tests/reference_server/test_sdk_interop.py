"""The official openai SDK, unmodified, against the reference server on loopback."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai import OpenAI

from reference_server.app import ReferenceServer

from .conftest import TOOLS, user

TERMINAL = {"response.completed", "response.failed", "response.incomplete", "error"}


def client_for(server: ReferenceServer) -> OpenAI:
    return OpenAI(api_key="sk-local", base_url=server.http_url, max_retries=0, timeout=30)


def until_terminal(connection: Any) -> tuple[list[str], Any]:
    types = []
    for event in connection:
        types.append(event.type)
        if event.type in TERMINAL:
            return types, event
    raise AssertionError("stream ended without a terminal event")


def test_warmup_then_continuation_with_only_new_items(server: ReferenceServer) -> None:
    client = client_for(server)
    with client.responses.connect() as connection:
        system = "You are helpful and brief. " * 300  # over the API's 1,024-token cache minimum
        connection.response.create(model="m", input=system, store=False, generate=False)
        types, warm = until_terminal(connection)
        assert types == ["response.created", "response.in_progress", "response.completed"]
        assert warm.response.output == []

        connection.response.create(
            model="m", store=False, previous_response_id=warm.response.id, input=[user("hi")]
        )
        types, done = until_terminal(connection)
        assert done.type == "response.completed"
        assert done.response.previous_response_id == warm.response.id
        assert "response.output_text.delta" in types
        text = done.response.output[0].content[0].text
        assert text and done.response.usage.output_tokens > 0
        # The warm-up's prompt is reused, counted in the API's 128-token blocks.
        cached = done.response.usage.input_tokens_details.cached_tokens
        assert cached >= 1024 and cached % 128 == 0


def test_function_call_round_trip(server: ReferenceServer) -> None:
    client = client_for(server)
    with client.responses.connect() as connection:
        connection.response.create(
            model="m", input=[user("read a.py")], tools=TOOLS, tool_choice="required", store=False
        )
        _, first = until_terminal(connection)
        calls = [item for item in first.response.output if item.type == "function_call"]
        assert calls and all(c.name == "read_file" for c in calls)
        assert all("path" in json.loads(c.arguments) for c in calls)

        outputs = [
            {"type": "function_call_output", "call_id": c.call_id, "output": "print('hi')"}
            for c in calls
        ]
        connection.response.create(
            model="m",
            input=outputs,
            tools=TOOLS,
            previous_response_id=first.response.id,
            store=False,
            tool_choice="none",
        )
        _, second = until_terminal(connection)
        assert second.type == "response.completed"
        assert second.response.output[0].type == "message"


def test_previous_response_not_found_arrives_as_an_error_event(server: ReferenceServer) -> None:
    client = client_for(server)
    with client.responses.connect() as connection:
        connection.response.create(
            model="m", input=[], previous_response_id="resp_missing", store=False
        )
        _, event = until_terminal(connection)
        assert event.type == "error"
        assert event.status == 400
        assert event.error.code == "previous_response_not_found"
        assert event.error.param == "previous_response_id"
        # the socket is still usable
        connection.response.create(model="m", input="again", store=False)
        _, event = until_terminal(connection)
        assert event.type == "response.completed"


def test_http_streaming_and_retrieve_of_a_stored_response(server: ReferenceServer) -> None:
    client = client_for(server)
    stream = client.responses.create(model="m", input="hello", stream=True, store=True)
    events = list(stream)
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    response_id = events[-1].response.id
    retrieved = client.responses.retrieve(response_id)
    assert retrieved.id == response_id and retrieved.status == "completed"
    assert retrieved.output[0].content[0].text == events[-1].response.output[0].content[0].text


def test_http_non_streaming_and_not_found(server: ReferenceServer) -> None:
    client = client_for(server)
    response = client.responses.create(model="m", input="hello", store=False)
    assert response.status == "completed" and response.output_text
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)  # store=false: never persisted


def test_sdk_stream_helper_accumulates_our_stream(server: ReferenceServer) -> None:
    """The SDK's own accumulator (strict about ordering) accepts the server's events."""
    client = client_for(server)
    with client.responses.stream(model="m", input=[user("read a.py")], tools=TOOLS) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.status == "completed" and final.output
