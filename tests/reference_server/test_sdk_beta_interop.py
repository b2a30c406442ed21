"""openai-python 3.57, unmodified, steering and injecting against the reference server (§2.2).

The GA connection's `.response.steer()` and the beta connection's `.response.inject()` are what
the SDK ships for the two beta client events; the events come back as the SDK's own typed models
(`ResponseSteerAcceptedEvent`, `BetaResponseInjectCreatedEvent`, agent tags included).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import ServerConfig

from .conftest import TOOLS

MULTI_AGENT_HEADER = {"OpenAI-Beta": "responses_multi_agent=v1"}
PROFILE = """name = "slow-start"
decode_tokens_per_s = 1e9
burst_probability = 0.0
jitter_fraction = 0.0
load_factor = 1.0
queue_ms = 300.0
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    root = tmp_path_factory.mktemp("sdk-beta")
    (root / "slow-start.toml").write_text(PROFILE, encoding="utf-8")
    config = ServerConfig(
        port=0,
        profile=str(root / "slow-start.toml"),
        data_dir=root / "data",
        self_check=True,
        steer=True,
        multi_agent=True,
    )
    with running_in_thread(config) as srv:
        yield srv


def client_for(server: ReferenceServer) -> OpenAI:
    return OpenAI(api_key="sk-local", base_url=server.http_url, max_retries=0, timeout=30)


def test_the_sdk_steers_and_reads_the_successor(server: ReferenceServer) -> None:
    with client_for(server).responses.connect() as connection:
        connection.response.create(
            model="m", input="explain", reasoning={"effort": "low"}, store=False
        )
        # the first event raw: the SDK builds its models on first use, slower than the 300 ms
        # the response waits before its first token
        created = json.loads(connection.recv_bytes())
        assert created["type"] == "response.created"
        connection.response.steer(previous_response_id=created["response"]["id"], input="be brief")
        seen: list[Any] = []
        for event in connection:
            seen.append(event)
            if event.type == "response.steer.failed":
                raise AssertionError(f"the steer came too late: {event.error.code}")
            if event.type == "response.completed" and event.response.previous_response_id:
                break
    accepted = next(e for e in seen if e.type == "response.steer.accepted")
    assert type(accepted).__name__ == "ResponseSteerAcceptedEvent"
    steered = next(e for e in seen if e.type == "response.incomplete")
    assert steered.response.incomplete_details.reason == "steered"
    assert accepted.steer.previous_response_id == steered.response.id
    assert seen[-1].response.previous_response_id == steered.response.id


def test_the_beta_sdk_injects_a_tool_output_into_a_waiting_response(
    server: ReferenceServer,
) -> None:
    client = client_for(server)
    with client.beta.responses.connect(extra_headers=MULTI_AGENT_HEADER) as connection:
        connection.response.create(
            model="m",
            input="read a.py",
            tools=TOOLS,
            tool_choice={"type": "function", "name": "read_file"},
            multi_agent={"enabled": True},
            store=False,
        )
        seen: list[Any] = []
        response_id = ""
        for event in connection:
            seen.append(event)
            if event.type == "response.created":
                response_id = event.response.id
            if event.type == "response.output_item.done" and event.item.type == "function_call":
                output = {
                    "type": "function_call_output",
                    "call_id": event.item.call_id,
                    "output": "x = 1",
                }
                connection.response.inject(response_id=response_id, input=[output])
            if event.type == "response.completed":
                break
        late = [{"type": "function_call_output", "call_id": "call_x", "output": "late"}]
        connection.response.inject(response_id=response_id, input=late)
        failed = connection.recv()
    created = next(e for e in seen if e.type == "response.inject.created")
    assert type(created).__name__ == "BetaResponseInjectCreatedEvent"
    assert created.response_id == response_id
    assert seen[0].agent is not None and seen[0].agent.agent_name == "root"
    final = seen[-1].response
    assert [item.type for item in final.output] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    assert final.output[1].output == "x = 1"
    assert type(failed).__name__ == "BetaResponseInjectFailedEvent"
    assert failed.error.code == "response_already_completed"
    assert [item.call_id for item in failed.input] == ["call_x"]
