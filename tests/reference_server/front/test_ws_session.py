"""A WebSocket frame is parsed once: into its request, a beta event, or the refusal that answers
it (on the create's lane only when the create itself was refused)."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

from harness.protocol.beta import STEER
from harness.protocol.requests import CLIENT_EVENT_TYPES, CreateRequest
from harness.transport.ws import WsClient
from reference_server.config import Limits
from reference_server.front.ws_session import Unreadable, read_frame

from ..conftest import ServerFactory, run

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


# -- per-connection bounds in bytes, on real loopback sockets (issue 42) -------------------------
SLOW_START = """name = "slow-start"
decode_tokens_per_s = 1e9
burst_probability = 0.0
jitter_fraction = 0.0
load_factor = 1.0
queue_ms = 300.0
"""
TIMEOUT_S = 10.0


def slow_profile(tmp_path: Path) -> str:
    """Responses stay in flight ~300 ms, so creates sent back to back are pending together."""
    path = tmp_path / "slow-start.toml"
    path.write_text(SLOW_START, encoding="utf-8")
    return str(path)


def lane_create(stream_id: str, text: str = "x" * 1000, **fields: Any) -> dict[str, Any]:
    return {
        "type": "response.create",
        "model": "m",
        "store": False,
        "stream_id": stream_id,
        "input": text,
        **fields,
    }


async def terminal_or_error(client: WsClient) -> dict[str, Any]:
    while True:
        event = (await client.recv(TIMEOUT_S)).event
        if event["type"] in ("response.completed", "error"):
            return event


def test_creates_over_the_connections_byte_bound_get_429_and_others_are_unaffected(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    frame_bytes = len(json.dumps(lane_create("a")))
    limits = Limits(max_pending_bytes_per_connection=int(frame_bytes * 2.5))
    with make_server(profile=slow_profile(tmp_path), lanes=True, limits=limits) as server:

        async def body() -> None:
            greedy = await WsClient.connect(server.ws_url)
            other = await WsClient.connect(server.ws_url)
            for lane in ("a", "b", "c"):  # three lanes: the count bounds would take all three
                await greedy.send_json(lane_create(lane))
            await other.send_json(lane_create("a"))
            outcomes = [await terminal_or_error(greedy) for _ in range(3)]
            errors = [e for e in outcomes if e["type"] == "error"]
            assert len(errors) == 1 and errors[0]["stream_id"] == "c"
            assert errors[0]["status"] == 429
            assert errors[0]["error"]["code"] == "too_many_pending_responses"
            assert "bytes" in errors[0]["error"]["message"]
            assert (await terminal_or_error(other))["type"] == "response.completed"
            # the finished creates gave their bytes back: the refused lane is served now
            await greedy.send_json(lane_create("c"))
            assert (await terminal_or_error(greedy))["type"] == "response.completed"
            await greedy.close()
            await other.close()

        run(body())


def test_one_create_is_always_taken_whatever_the_byte_bound(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    with make_server(limits=Limits(max_pending_bytes_per_connection=1)) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            for _ in range(2):  # one after the other: each alone on the connection
                await client.send_json(lane_create("a") | {"stream_id": None})
                assert (await terminal_or_error(client))["type"] == "response.completed"
            await client.close()

        run(body())


def test_the_lanes_caches_together_keep_within_the_connections_byte_bound(
    make_server: ServerFactory,
) -> None:
    limits = Limits(max_cache_bytes_per_connection=1)  # room for the newest response only
    with make_server(lanes=True, limits=limits) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            await client.send_json(lane_create("a"))
            first = await terminal_or_error(client)
            await client.send_json(lane_create("b"))
            second = await terminal_or_error(client)
            assert first["type"] == second["type"] == "response.completed"
            # lane b was served last: lane a gave up its cached response for it
            await client.send_json(
                lane_create("b", "more", previous_response_id=second["response"]["id"])
            )
            assert (await terminal_or_error(client))["type"] == "response.completed"
            await client.send_json(
                lane_create("a", "more", previous_response_id=first["response"]["id"])
            )
            refused = await terminal_or_error(client)
            assert refused["type"] == "error"
            assert refused["error"]["code"] == "previous_response_not_found"
            await client.close()

        run(body())


def test_a_closed_connection_leaves_nothing_behind_in_the_server(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    with make_server(profile=slow_profile(tmp_path), lanes=True) as server:
        services = server.services

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            await client.send_json(lane_create("a"))
            await terminal_or_error(client)
            for _ in range(3):  # running and queued when the socket goes
                await client.send_json(lane_create("a"))
                await client.send_json(lane_create("b"))
            assert services.metrics.connections == 1 and len(services.live_caches) >= 1
            await client.close()
            deadline = asyncio.get_running_loop().time() + TIMEOUT_S
            while services.metrics.connections and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.01)

        run(body())
        gc.collect()  # the lanes' caches are held weakly by the gauges: gone with the session
        assert services.metrics.connections == 0
        assert services.metrics.queue_depth == 0
        assert len(services.live_caches) == 0
