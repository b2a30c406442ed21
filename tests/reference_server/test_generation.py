"""Engine-driven behaviour seen through the wire: limits, safety, scripted output, equivalence."""

from __future__ import annotations

from typing import Any

import pytest

from harness.transport.exchange import Exchange, ws_exchange
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer
from reference_server.config import Optimizations

from .conftest import TOOLS, ServerFactory, run, user


def turns(
    server: ReferenceServer, bodies: list[dict[str, Any]], *, chain: bool = True
) -> list[Exchange]:
    async def main() -> list[Exchange]:
        client = await WsClient.connect(server.ws_url)
        out: list[Exchange] = []
        try:
            for body in bodies:
                if chain and out and out[-1].response_id:
                    body = {**body, "previous_response_id": out[-1].response_id}
                out.append(await ws_exchange(client, body, timeout_s=10))
        finally:
            await client.close()
        return out

    return run(main())


def test_max_output_tokens_ends_incomplete(server: ReferenceServer) -> None:
    [exchange] = turns(
        server,
        [
            {
                "model": "m",
                "input": "hi",
                "max_output_tokens": 16,
                "wsmode": {"script": [{"type": "message", "tokens": 100}]},
            }
        ],
    )
    response = exchange.final_response
    assert response is not None and response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert response["usage"]["output_tokens"] == 16
    assert exchange.response is not None and exchange.response.violations == []


def test_flagged_input_fails_the_response(server: ReferenceServer) -> None:
    [exchange] = turns(server, [{"model": "m", "input": "please WSMODE-UNSAFE-INPUT now"}])
    assert [e.type for e in exchange.events] == ["response.created", "response.failed"]
    assert exchange.final_response is not None
    assert exchange.final_response["error"]["code"] == "invalid_prompt"


def test_flagged_output_ends_with_content_filter(server: ReferenceServer) -> None:
    script = [{"type": "message", "text": "here is WSMODE-UNSAFE-OUTPUT text"}]
    [exchange] = turns(server, [{"model": "m", "input": "hi", "wsmode": {"script": script}}])
    assert exchange.final_response is not None
    assert exchange.final_response["incomplete_details"] == {"reason": "content_filter"}
    assert "WSMODE-UNSAFE-OUTPUT" not in exchange.response.output_text()  # type: ignore[union-attr]


def test_scripted_output_is_reproduced_exactly(server: ReferenceServer) -> None:
    script = [
        {"type": "reasoning", "summary": "Look at the file first.", "tokens": 40},
        {
            "type": "function_call",
            "name": "read_file",
            "arguments": '{"path": "a.py"}',
            "call_id": "call_abc",
        },
    ]
    [exchange] = turns(server, [{"model": "m", "input": "hi", "wsmode": {"script": script}}])
    assert exchange.response is not None
    items = exchange.response.output_items()
    assert items[0]["summary"][0]["text"] == "Look at the file first."
    assert (items[1]["name"], items[1]["arguments"], items[1]["call_id"]) == (
        "read_file",
        '{"path": "a.py"}',
        "call_abc",
    )


CHAIN = [
    {"model": "m", "input": [user("fix the bug in parser.py")], "instructions": "Be brief."},
    {"model": "m", "input": [user("now run the tests")], "instructions": "Be brief."},
    # changed instructions and tools: the cached prefix must not be reused
    {"model": "m", "input": [user("and commit")], "instructions": "Be thorough.", "tools": TOOLS},
    {
        "model": "m",
        "input": [user("push it")],
        "instructions": "Be thorough.",
        "tools": TOOLS,
        "tool_choice": "none",
    },
]


@pytest.mark.parametrize(
    "disabled", ["render_cache", "incremental_checks", "routing_reuse", "connection_cache"]
)
def test_each_optimization_changes_cost_not_results(
    make_server: ServerFactory, disabled: str
) -> None:
    """A turn on the incremental path reports what a full pass reports (tokens, output)."""
    with make_server() as fast:
        optimized = turns(fast, CHAIN, chain=disabled != "connection_cache")
    with make_server(optimizations=Optimizations().without(disabled)) as slow:
        plain = turns(slow, CHAIN, chain=disabled != "connection_cache")
    for a, b in zip(optimized, plain, strict=True):
        assert a.final_response is not None and b.final_response is not None
        assert (
            a.final_response["usage"]["input_tokens"] == b.final_response["usage"]["input_tokens"]
        )
        assert a.response.output_text() == b.response.output_text()  # type: ignore[union-attr]


def test_scripted_refusal(server: ReferenceServer) -> None:
    script = [{"type": "message", "refusal": "I can't help with that."}]
    [exchange] = turns(server, [{"model": "m", "input": "hi", "wsmode": {"script": script}}])
    assert exchange.final_response is not None
    assert exchange.final_response["output"][0]["content"][0] == {
        "type": "refusal",
        "refusal": "I can't help with that.",
    }
    assert any(e.type == "response.refusal.delta" for e in exchange.events)
