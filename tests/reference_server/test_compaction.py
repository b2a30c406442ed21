"""`POST /v1/responses/compact` and chains that start from its output (PROTOCOL.md §5.1), the
route table's reserved segments and the upgrade answers of a plain GET (§1.1).

One server for the module; each test makes its own requests.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import OpenAI

from harness.transport.exchange import Exchange, ws_exchange
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import ServerConfig

from .conftest import user

TIMEOUT_S = 10.0
HISTORY = [
    user("Remember the compaction code word: slate."),
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "OK."}]},
    {"role": "developer", "content": "Answer in one word."},
    user("Compress this conversation for later continuation."),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    data = Path(tmp_path_factory.mktemp("data"))
    config = ServerConfig(port=0, profile="zero", data_dir=data, self_check=True)
    with running_in_thread(config) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server: ReferenceServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.http_url, timeout=TIMEOUT_S) as client:
        yield client


def ws_turns(server: ReferenceServer, *bodies: dict[str, Any]) -> list[Exchange]:
    async def main() -> list[Exchange]:
        client = await WsClient.connect(server.ws_url)
        try:
            return [await ws_exchange(client, body, timeout_s=TIMEOUT_S) for body in bodies]
        finally:
            await client.close()

    return asyncio.run(main())


def test_the_sdk_compacts_and_gets_the_users_messages_then_one_compaction_item(
    server: ReferenceServer,
) -> None:
    client = OpenAI(api_key="sk-local", base_url=server.http_url, max_retries=0, timeout=10)
    compacted = client.responses.compact(model="gpt-5.4", input=HISTORY)  # type: ignore[arg-type]
    assert compacted.object == "response.compaction" and compacted.id.startswith("resp_")
    kinds = [(item.type, getattr(item, "role", None)) for item in compacted.output]
    assert kinds == [("message", "user"), ("message", "user"), ("compaction", None)]
    assert compacted.output[-1].id.startswith("cmp_")  # type: ignore[union-attr]
    usage = compacted.usage
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens


def test_a_websocket_chain_starts_from_the_compacted_output(
    server: ReferenceServer, http: httpx.Client
) -> None:
    long_answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "filler " * 3000}],
    }
    history = [*HISTORY[:1], long_answer, *HISTORY[1:]]
    compacted = http.post("/responses/compact", json={"model": "m", "input": history}).json()
    follow_up = user("Continue from here. Reply with exactly: compacted")
    full, from_compacted, by_id = ws_turns(
        server,
        {"model": "m", "store": False, "input": [*history, follow_up]},
        {"model": "m", "store": False, "input": [*compacted["output"], follow_up], "tools": []},
        {"model": "m", "input": [follow_up], "previous_response_id": compacted["id"]},
    )
    assert from_compacted.ok and from_compacted.final_response is not None
    assert from_compacted.final_response["previous_response_id"] is None
    # the compacted window is the cheaper context to continue from
    assert full.final_response is not None
    compacted_tokens = from_compacted.final_response["usage"]["input_tokens"]
    assert compacted_tokens < full.final_response["usage"]["input_tokens"] / 4
    # [I] a compaction is a context window, not a response: its id does not chain
    assert by_id.request_error is not None
    assert by_id.request_error.code == "previous_response_not_found"


def test_a_stored_chain_compacts_by_previous_response_id(http: httpx.Client) -> None:
    first = http.post("/responses", json={"model": "m", "input": HISTORY, "store": True}).json()
    compacted = http.post(
        "/responses/compact", json={"model": "m", "previous_response_id": first["id"]}
    ).json()
    users = [item for item in compacted["output"] if item.get("role") == "user"]
    assert len(users) == 2 and compacted["output"][-1]["type"] == "compaction"


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [
        ({"input": "Compact this."}, 400, "missing_required_parameter", "model"),
        ({"model": "m"}, 400, "missing_required_parameter", "input"),
        ({"model": "m", "input": 7}, 400, "invalid_type", "input"),
        (
            {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]},
            400,
            None,
            "input[0].content[0].text",
        ),
        (
            {"model": "m", "input": "x", "previous_response_id": "resp_nowhere"},
            400,
            "previous_response_not_found",
            "previous_response_id",
        ),
    ],
)
def test_a_bad_compaction_request_is_refused_with_the_field(
    http: httpx.Client, body: dict[str, Any], status: int, code: str | None, param: str
) -> None:
    reply = http.post("/responses/compact", json=body)
    error = reply.json()["error"]
    assert (reply.status_code, error["code"], error["param"]) == (status, code, param)
    assert error["type"] == "invalid_request_error"


def test_an_edited_or_foreign_compaction_item_is_refused(
    server: ReferenceServer, http: httpx.Client
) -> None:
    compacted = http.post("/responses/compact", json={"model": "m", "input": HISTORY}).json()
    item = compacted["output"][-1]
    edited = {**item, "encrypted_content": item["encrypted_content"][:-2] + "xx"}
    foreign = {**item, "encrypted_content": "gAAAAABp4W-p3Kxpz_xa3Gma5juy6Yi"}
    for bad in (edited, foreign):
        (turn,) = ws_turns(server, {"model": "m", "input": [user("hi"), bad], "store": False})
        assert turn.request_error is not None
        error = turn.request_error
        assert (error.status, error.code, error.param) == (
            400,
            "invalid_encrypted_content",
            "input[1].encrypted_content",
        )


def test_reserved_segments_are_endpoints_and_a_plain_get_must_upgrade(
    server: ReferenceServer, http: httpx.Client
) -> None:
    not_an_id = http.get("/responses/compact")
    assert not_an_id.status_code == 405 and not_an_id.headers["allow"] == "POST"
    without_v1 = httpx.get(f"http://127.0.0.1:{server.port}/responses/compact", timeout=TIMEOUT_S)
    assert without_v1.json()["error"]["code"] == "method_not_allowed"
    plain = http.get("/responses")
    assert plain.status_code == 426 and plain.headers["upgrade"] == "websocket"
    assert plain.json()["error"]["code"] == "websocket_upgrade_required"
    assert http.get("/responses/resp_unknown").status_code == 404
    assert http.get("/responses/a/b").status_code == 404
    assert http.delete("/responses/resp_x").status_code == 405


def _forged_compaction(depth: int) -> dict[str, Any]:
    """A compaction item sealed with the server's (public) key around a deep summary."""
    from reference_server.state import sealed

    body = base64.urlsafe_b64encode(
        ('{"summary":' + "[" * depth + "]" * depth + "}").encode()
    ).decode()
    body = body.rstrip("=")
    value = f"{sealed.SEAL_PREFIX}{body}.{sealed._digest('compaction', body)}"
    return {"type": "compaction", "encrypted_content": value}


@pytest.mark.parametrize("depth", [100, 250, 200_000])
def test_a_deep_forged_compaction_item_is_a_400_not_a_traceback(
    server: ReferenceServer, http: httpx.Client, depth: int
) -> None:
    body = {"model": "m", "input": [user("hi"), _forged_compaction(depth)], "store": False}
    reply = http.post("/responses", json=body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "invalid_encrypted_content",
        "input[1].encrypted_content",
    )
    (turn,) = ws_turns(server, body)
    assert turn.request_error is not None
    assert (turn.request_error.status, turn.request_error.code) == (
        400,
        "invalid_encrypted_content",
    )
