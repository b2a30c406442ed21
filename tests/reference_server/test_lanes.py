"""Named lanes (stream_id): per-lane FIFO, lanes concurrent, limits, forks (PROTOCOL.md §5.2)."""

from __future__ import annotations

from typing import Any

from harness.transport.ws import WsClient
from reference_server.config import Limits

from .conftest import ServerFactory, run, user

TIMEOUT_S = 10.0


async def read_until(client: WsClient, count: int, kinds: set[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while sum(1 for e in events if e["type"] in kinds) < count:
        events.append((await client.recv(TIMEOUT_S)).event)
    return events


def test_lanes_run_concurrently_and_echo_their_stream_id(make_server: ServerFactory) -> None:
    with make_server(profile="spark-1000tps", lanes=True) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            script = {"script": [{"type": "message", "tokens": 200}]}
            for lane in ("a", "b"):
                await client.send_json(
                    {
                        "type": "response.create",
                        "model": "m",
                        "input": lane,
                        "stream_id": lane,
                        "wsmode": script,
                    }
                )
            events = await read_until(client, 2, {"response.completed"})
            await client.close()
            assert {e["stream_id"] for e in events} == {"a", "b"}
            created = [i for i, e in enumerate(events) if e["type"] == "response.created"]
            completed = [i for i, e in enumerate(events) if e["type"] == "response.completed"]
            assert created[1] < completed[0], "the second lane waited for the first"

        run(body())


def test_default_lane_events_omit_stream_id_and_lanes_off_refuses_it(
    make_server: ServerFactory,
) -> None:
    with make_server() as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            await client.send_json({"type": "response.create", "model": "m", "input": "x"})
            events = await read_until(client, 1, {"response.completed"})
            assert all("stream_id" not in e for e in events)
            await client.send_json(
                {"type": "response.create", "model": "m", "input": "x", "stream_id": "a"}
            )
            [error] = await read_until(client, 1, {"error"})
            assert error["error"]["param"] == "stream_id" and error["stream_id"] == "a"
            await client.close()

        run(body())


def test_lane_limit(make_server: ServerFactory) -> None:
    with make_server(lanes=True, limits=Limits(max_lanes=2)) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            for lane in ("a", "b", "c"):
                await client.send_json(
                    {"type": "response.create", "model": "m", "input": "x", "stream_id": lane}
                )
            events = await read_until(client, 3, {"response.completed", "error"})
            [error] = [e for e in events if e["type"] == "error"]
            assert error["error"]["code"] == "websocket_stream_limit_reached"
            assert error["stream_id"] == "c" and error["error"]["param"] == "stream_id"
            await client.close()

        run(body())


def test_cross_lane_fork_and_an_errored_fork_keeps_the_parent(make_server: ServerFactory) -> None:
    with make_server(lanes=True) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            await client.send_json(
                {
                    "type": "response.create",
                    "model": "m",
                    "input": "root",
                    "stream_id": "a",
                    "store": False,
                }
            )
            [done] = [
                e
                for e in await read_until(client, 1, {"response.completed"})
                if e["type"] == "response.completed"
            ]
            parent = done["response"]["id"]
            bad = {"type": "message", "role": "wizard", "content": "x"}
            await client.send_json(
                {
                    "type": "response.create",
                    "model": "m",
                    "input": [bad],
                    "stream_id": "b",
                    "previous_response_id": parent,
                    "store": False,
                }
            )
            [error] = await read_until(client, 1, {"error"})
            assert error["stream_id"] == "b"
            await client.send_json(
                {
                    "type": "response.create",
                    "model": "m",
                    "input": [user("fork")],
                    "stream_id": "c",
                    "previous_response_id": parent,
                    "store": False,
                }
            )
            events = await read_until(client, 1, {"response.completed", "error"})
            assert events[-1]["type"] == "response.completed", events[-1]
            assert events[-1]["response"]["previous_response_id"] == parent
            await client.close()

        run(body())
