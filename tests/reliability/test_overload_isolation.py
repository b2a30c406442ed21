"""Overload answered, never dropped; tenants isolated; a client that vanishes frees its state."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from reference_server.config import Limits

from .cases import VALID
from .conftest import scripted

KEY_A, KEY_B = "sk-tenant-a-key", "sk-tenant-b-key"
ANSWERED = ("response.completed", "response.incomplete")  # VALID caps its output: incomplete


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _terminal(ws: Any) -> dict[str, Any]:
    while True:
        event: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if event["type"] in ("error", "response.completed", "response.incomplete"):
            return event


def test_over_the_connection_cap_the_upgrade_is_429_and_open_sockets_keep_working(
    thread_server: Any,
) -> None:
    with thread_server(limits=Limits(max_connections=2)) as server:

        async def body() -> None:
            held = [await connect(server.ws_url) for _ in range(2)]
            with pytest.raises(InvalidStatus) as refused:
                await connect(server.ws_url)
            assert refused.value.response.status_code == 429
            assert refused.value.response.headers["Retry-After"] == "1"
            for ws in held:
                await ws.send(json.dumps(VALID))
                assert (await _terminal(ws))["type"] in ANSWERED
                await ws.close()

        asyncio.run(body())


def test_a_full_queue_is_an_error_event_and_the_socket_stays_usable(thread_server: Any) -> None:
    limits = Limits(max_pending_per_connection=1)
    with thread_server(limits=limits, profile="spark-1000tps") as server:

        async def body() -> list[str]:
            async with connect(server.ws_url, max_size=None) as ws:
                for _ in range(5):  # one in flight, one queued, three over the bound
                    await ws.send(scripted(300, store=False))
                kinds: list[str] = []
                while kinds.count("response.completed") < 2:
                    event = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    if event["type"] in ("error", "response.completed"):
                        kinds.append(event["type"])
                await ws.send(json.dumps(VALID))
                kinds.append((await _terminal(ws))["type"])
                return kinds

        kinds = asyncio.run(body())
    assert kinds.count("error") == 3 and kinds[-1] in ANSWERED


def test_another_tenants_id_is_indistinguishable_from_a_random_one(thread_server: Any) -> None:
    with thread_server(api_keys=(KEY_A, KEY_B)) as server:

        async def continue_from(key: str, previous: str) -> dict[str, Any]:
            async with connect(server.ws_url, additional_headers=_auth(key)) as ws:
                await ws.send(json.dumps({**VALID, "previous_response_id": previous}))
                return await _terminal(ws)

        async def body() -> tuple[dict[str, Any], dict[str, Any], str]:
            async with connect(server.ws_url, additional_headers=_auth(KEY_A)) as ws:
                await ws.send(json.dumps({**VALID, "store": True}))
                owned = (await _terminal(ws))["response"]["id"]
            await asyncio.sleep(0.2)  # the store write lands after the terminal
            foreign = await continue_from(KEY_B, owned)
            random_id = "resp_" + "7" * 32
            missing = await continue_from(KEY_B, random_id)
            return foreign, missing, owned

        foreign, missing, owned = asyncio.run(body())
        assert foreign["error"]["code"] == missing["error"]["code"] == "previous_response_not_found"
        assert foreign["error"]["message"].replace(owned, "ID") == missing["error"][
            "message"
        ].replace("resp_" + "7" * 32, "ID")
        request = urllib.request.Request(
            f"{server.http_url}/responses/{owned}", headers=_auth(KEY_B)
        )
        with pytest.raises(urllib.error.HTTPError) as not_found:
            urllib.request.urlopen(request, timeout=5)
        assert not_found.value.code == 404
        request = urllib.request.Request(
            f"{server.http_url}/responses/{owned}", headers=_auth(KEY_A)
        )
        with urllib.request.urlopen(request, timeout=5) as reply:
            assert reply.status == 200


def test_a_client_that_vanishes_mid_stream_frees_its_state(thread_server: Any) -> None:
    with thread_server(profile="spark-1000tps") as server:

        async def body() -> None:
            ws = await connect(server.ws_url, max_size=None)
            await ws.send(scripted(20_000, store=False))
            assert json.loads(await ws.recv())["type"] == "response.created"
            ws.transport.abort()  # no close frame: the process on the other side died

        asyncio.run(body())
        metrics = server.services.metrics
        for _ in range(200):
            if metrics.connections == 0 and metrics.in_flight == 0:
                break
            time.sleep(0.02)
        assert (metrics.connections, metrics.in_flight, metrics.queue_depth) == (0, 0, 0)
        assert metrics.gauges["wsmode_connection_cache_entries"]() == 0
