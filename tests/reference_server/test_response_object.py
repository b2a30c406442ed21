"""The Response object as production sends it (PROTOCOL.md §3.4), judged two ways:

* the member set is derived from the recorded api.openai.com corpus (`tests/recorded.py`): a
  member every Response recorded since its first appearance carries is one production sends;
  the reference server's Responses must carry each (the next member the API adds fails here);
* the official SDK's own pydantic models validate every event the server sends, with no
  validation error tolerated and every member the SDK does not declare reported.

One server for the module: every exchange below is independent of the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.conformance.check.offline_check import read_streams
from harness.conformance.judges.sdk_opinion import strict_problems
from harness.protocol.events import PRODUCTION_MEMBERS, TERMINAL_TYPES
from harness.protocol.extension import EXTENSION_FIELD
from harness.transport.exchange import Exchange, ws_exchange
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import ServerConfig
from tests.recorded import PROTOCOL_STREAMS, RECORDED, recorded

from .conftest import TOOLS, user

TIMEOUT_S = 10.0
STREAMS_SET = RECORDED / "streams-set1"
# Recordings of other servers (their READMEs and MANIFEST name them), and one api.openai.com
# recording whose Response its authors trimmed (it lacks error, instructions, tools, ...).
NOT_PRODUCTION = ("azure", "lmstudio", "github-copilot", "xai-", "openrouter", "thirdparty")
TRIMMED = ("pai-apply-patch-no-deltas-gpt54.jsonl",)


def production_responses() -> list[dict[str, Any]]:
    """Every terminal Response of the api.openai.com recordings, oldest first."""
    files = [
        path
        for root in (recorded(PROTOCOL_STREAMS), STREAMS_SET)
        if root.exists()
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and path.name not in ("README.md", "MANIFEST.json", *TRIMMED)
        and not any(mark in path.name for mark in NOT_PRODUCTION)
    ]
    found = [
        timed.event["response"]
        for path in files
        for stream in read_streams(path).streams
        for timed in stream.events
        if timed.event.get("type") in TERMINAL_TYPES
        and isinstance(timed.event.get("response"), dict)
    ]
    return sorted(found, key=lambda r: r.get("created_at") or 0)


def members_production_sends(responses: list[dict[str, Any]]) -> set[str]:
    """A member is one production sends when every Response recorded since the member first
    appeared carries it (so a member that comes with a request field, `conversation`, is not)."""
    sends = set()
    for member in set().union(*responses):
        first = next(i for i, r in enumerate(responses) if member in r)
        if all(member in r for r in responses[first:]):
            sends.add(member)
    return sends


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    data = tmp_path_factory.mktemp("data")
    config = ServerConfig(port=0, profile="zero", data_dir=Path(data), self_check=True)
    with running_in_thread(config) as srv:
        yield srv


ECHOED = {
    "presence_penalty": 0.5,
    "frequency_penalty": -0.25,
    "top_logprobs": 3,
    "max_tool_calls": 4,
    "safety_identifier": "user-7",
    "prompt_cache_key": "session-1",
    "prompt_cache_retention": "24h",
    "service_tier": "flex",
    "truncation": "auto",
    "user": "u-1",
    "text": {"format": {"type": "json_object"}, "verbosity": "low"},
    "reasoning": {"effort": "low", "summary": "auto"},
    "temperature": 0.2,
    "top_p": 0.9,
}
REQUESTS: dict[str, dict[str, Any]] = {
    "text": {"model": "m", "input": "Say hi.", "store": False},
    "function call": {
        "model": "m",
        "input": [user("read a.py")],
        "tools": TOOLS,
        "tool_choice": "required",
        "parallel_tool_calls": True,
    },
    "echoed members": {"model": "m", "input": "Think, then answer.", **ECHOED},
    "cut": {"model": "m", "input": "Write a long essay about tides.", "max_output_tokens": 16},
    "warm-up": {"model": "m", "input": [user("You are terse.")], "generate": False},
    "flagged input": {"model": "m", "input": "WSMODE-UNSAFE-INPUT"},
    "refused": {"model": "m", "input": [{"type": "message", "role": "robot", "content": "x"}]},
}


@pytest.fixture(scope="module")
def exchanges(server: ReferenceServer) -> dict[str, Exchange]:
    async def main() -> dict[str, Exchange]:
        client = await WsClient.connect(server.ws_url)
        try:
            return {
                name: await ws_exchange(client, body, timeout_s=TIMEOUT_S)
                for name, body in REQUESTS.items()
            }
        finally:
            await client.close()

    return asyncio.run(main())


def test_the_corpus_names_the_members_production_sends() -> None:
    sends = members_production_sends(production_responses())
    # both ways: the checker's SHOULD list (PRODUCTION_MEMBERS) is what production sends
    assert sends == set(PRODUCTION_MEMBERS), (
        f"the corpus adds {sorted(sends - PRODUCTION_MEMBERS)}, "
        f"drops {sorted(PRODUCTION_MEMBERS - sends)}"
    )


def test_every_response_the_server_sends_carries_the_production_members(
    exchanges: dict[str, Exchange], server: ReferenceServer
) -> None:
    sends = members_production_sends(production_responses())
    seen = 0
    for name, exchange in exchanges.items():
        for timed in exchange.events:
            response = timed.event.get("response")
            if isinstance(response, dict):
                seen += 1
                missing = sorted(sends - set(response))
                assert not missing, f"{name}: {timed.event['type']} lacks {missing}"
    with httpx.Client(base_url=server.http_url, timeout=TIMEOUT_S) as http:
        body = http.post("/responses", json={"model": "m", "input": "hi", "store": True}).json()
        stored = http.get(f"/responses/{body['id']}").json()
    assert not sorted(sends - set(body)) and not sorted(sends - set(stored))
    assert seen >= 2 * len(exchanges) - 2  # created and a terminal each; the refused has none


def test_members_hold_the_values_the_request_implies(exchanges: dict[str, Exchange]) -> None:
    echoed = exchanges["echoed members"].final_response
    assert echoed is not None
    for name in ("presence_penalty", "frequency_penalty", "top_logprobs", "max_tool_calls"):
        assert echoed[name] == ECHOED[name], name
    for name in ("safety_identifier", "prompt_cache_key", "prompt_cache_retention", "user"):
        assert echoed[name] == ECHOED[name], name
    assert (echoed["service_tier"], echoed["truncation"], echoed["background"]) == (
        "flex",
        "auto",
        False,
    )
    assert echoed["text"] == {"format": {"type": "json_object"}, "verbosity": "low"}
    assert echoed["reasoning"] == {"effort": "low", "summary": "auto"}
    text = exchanges["text"].final_response
    assert text is not None
    assert (text["presence_penalty"], text["top_logprobs"], text["max_tool_calls"]) == (0, 0, None)
    assert (text["service_tier"], text["prompt_cache_retention"], text["store"]) == (
        "default",
        "in_memory",
        False,
    )
    assert text["text"] == {"format": {"type": "text"}, "verbosity": "medium"}
    usage = text["usage"]["input_tokens_details"]
    assert usage["cache_write_tokens"] + usage["cached_tokens"] == text["usage"]["input_tokens"]


def test_tools_are_echoed_as_the_api_normalizes_them(exchanges: dict[str, Exchange]) -> None:
    final = exchanges["function call"].final_response
    assert final is not None
    (tool,) = final["tools"]
    assert tool == {**TOOLS[0], "strict": True}
    assert exchanges["function call"].response is not None


# Members openai-python 3.57's models do not declare, each one the server sends on purpose:
SDK_UNDECLARED = {
    # production sends them on every Response (the corpus test above); the SDK's Response
    # type has no field for them
    "response.store",
    "response.presence_penalty",
    "response.frequency_penalty",
    # production sends it on deltas (PROTOCOL.md §3.2); the SDK's delta events lack it
    "obfuscation",
    # the OpenAPI document requires it on function_call_arguments.done (PROTOCOL.md §3.2)
    "name",
    # wsmode's documented extension on the terminal Response (harness/protocol/extension.py)
    f"response.{EXTENSION_FIELD}",
}


def test_the_sdk_models_validate_every_event_with_nothing_tolerated(
    exchanges: dict[str, Exchange],
) -> None:
    problems = [
        (name, timed.event.get("type"), problem)
        for name, exchange in exchanges.items()
        for timed in exchange.events
        for problem in strict_problems(timed.event)
    ]
    assert all(e.events for e in exchanges.values())
    errors = [p for p in problems if not p[2].startswith("undeclared: ")]
    assert errors == []  # no validation error at all: a required member absent would be one
    undeclared = {p[2].removeprefix("undeclared: ") for p in problems}
    assert undeclared == SDK_UNDECLARED
    extension = {(n, t) for n, t, p in problems if p.endswith(f"response.{EXTENSION_FIELD}")}
    assert {t for _, t in extension} <= TERMINAL_TYPES  # the extension is on terminals only
