"""Steers pending on one response are bounded in count and bytes, whether it runs or has stopped
for tool output (parked): over a bound the steer fails and returns its input (issue 42)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.transport.ws import WsClient
from reference_server.config import Limits

from ..conftest import TOOLS, ServerFactory, run
from .test_ws_session import TIMEOUT_S, slow_profile


def tool_create() -> dict[str, Any]:
    return {
        "type": "response.create",
        "model": "m",
        "store": False,
        "input": "read a.py",
        "tools": TOOLS,
        "tool_choice": {"type": "function", "name": "read_file"},
    }


def steer(response_id: str, text: str) -> dict[str, Any]:
    return {"type": "response.steer", "previous_response_id": response_id, "input": text}


async def steer_replies(client: WsClient, count: int) -> list[dict[str, Any]]:
    """The next `count` accepted/failed replies (pending and output events skipped)."""
    replies: list[dict[str, Any]] = []
    while len(replies) < count:
        event = (await client.recv(TIMEOUT_S)).event
        if event["type"] in ("response.steer.accepted", "response.steer.failed"):
            replies.append(event)
    return replies


async def parked(client: WsClient, text: str) -> str:
    """A response that stops for tool output with one steer (`text`) parked on it; its id."""
    await client.send_json(tool_create())
    while (event := (await client.recv(TIMEOUT_S)).event)["type"] != "response.created":
        pass
    response_id = str(event["response"]["id"])
    await client.send_json(steer(response_id, text))  # while it runs (the profile's 300 ms)
    while (await client.recv(TIMEOUT_S)).event["type"] != "response.steer.pending":
        pass
    return response_id


def test_the_steer_count_bound_holds_for_a_response_waiting_for_tool_output(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    limits = Limits(max_pending_steers=2)
    with make_server(profile=slow_profile(tmp_path), steer=True, limits=limits) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            response_id = await parked(client, "first")
            for text in ("second", "third", "fourth"):
                await client.send_json(steer(response_id, text))
            replies = await steer_replies(client, 3)
            assert [r["type"] for r in replies] == [
                "response.steer.accepted",
                "response.steer.failed",
                "response.steer.failed",
            ]
            assert replies[1]["error"]["code"] == "too_many_pending_steers"
            assert replies[1]["steer"]["input"] == "third", "a failure returns its input"
            await client.close()

        run(body())


def test_the_steer_byte_bound_holds_running_and_parked(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    limits = Limits(max_pending_steer_bytes=400)  # one ~270-byte frame, not two
    with make_server(profile=slow_profile(tmp_path), steer=True, limits=limits) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            response_id = await parked(client, "a" * 200)  # one is always taken, however big
            await client.send_json(steer(response_id, "b" * 200))
            await client.send_json(steer(response_id, "c"))  # small enough to fit beside it
            refused, taken = await steer_replies(client, 2)
            assert refused["type"] == "response.steer.failed"
            assert refused["error"]["code"] == "too_many_pending_steers"
            assert taken["type"] == "response.steer.accepted"
            await client.close()

        run(body())


def test_the_inject_byte_bound_refuses_whole_and_commits_nothing(
    make_server: ServerFactory,
) -> None:
    """Injected tool outputs become the response's context: over `max_inject_bytes` in all an
    inject fails with its input returned, and a smaller one still resumes the response."""
    from harness.protocol.beta import beta_problems

    limits = Limits(max_inject_bytes=600)
    with make_server(multi_agent=True, limits=limits) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            await client.send_json({**tool_create(), "multi_agent": {"enabled": True}})
            while True:
                event = (await client.recv(TIMEOUT_S)).event
                if event["type"] == "response.created":
                    response_id = event["response"]["id"]
                if event["type"] == "response.output_item.done":
                    call_id = event["item"]["call_id"]
                    break

            def inject(text: str) -> dict[str, Any]:
                item = {"type": "function_call_output", "call_id": call_id, "output": text}
                return {"type": "response.inject", "response_id": response_id, "input": [item]}

            await client.send_json(inject("x" * 800))
            while (failed := (await client.recv(TIMEOUT_S)).event)["type"] != (
                "response.inject.failed"
            ):
                pass
            assert failed["error"]["code"] == "inject_too_large"
            assert failed["input"][0]["output"] == "x" * 800, "a failure returns its input"
            assert beta_problems(failed) == []
            await client.send_json(inject("small"))
            events = []
            while (event := (await client.recv(TIMEOUT_S)).event)["type"] != "response.completed":
                events.append(event["type"])
            assert events[0] == "response.inject.created"
            outputs = [
                i for i in event["response"]["output"] if i["type"] == "function_call_output"
            ]
            assert [o["output"] for o in outputs] == ["small"], "nothing of the refused one"
            await client.close()

        run(body())
