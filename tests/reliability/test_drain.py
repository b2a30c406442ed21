"""SIGTERM drains: no new connections or creates, in-flight responses finish, then 1001, exit."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
import urllib.request
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from .conftest import TERMINAL_TYPES, scripted


async def _until_closed(ws: Any) -> tuple[list[dict[str, Any]], int | None]:
    """Every event until the server closes the socket, and the close code."""
    events, code, _ = await _until_closed_with_reason(ws)
    return events, code


async def _until_closed_with_reason(ws: Any) -> tuple[list[dict[str, Any]], int | None, str]:
    events: list[dict[str, Any]] = []
    try:
        while True:
            events.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
    except ConnectionClosed:
        pass
    return events, ws.close_code, ws.close_reason or ""


def test_sigterm_lets_a_stream_in_flight_finish_and_refuses_new_creates(child_server: Any) -> None:
    server = child_server("--drain-timeout-s", "20", profile="spark-1000tps")

    async def body() -> tuple[list[dict[str, Any]], int | None]:
        async with connect(server.ws_url, max_size=None) as ws:
            await ws.send(scripted(1500, store=False))  # ~1.5 s of decode at 1000 tok/s
            first = json.loads(await ws.recv())
            assert first["type"] == "response.created"
            server.process.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.2)
            await ws.send(scripted(5, store=False))  # arrives while draining
            with pytest.raises(OSError):
                await connect(server.ws_url, open_timeout=2)  # the listener is closed
            return await _until_closed(ws)

    events, close_code = asyncio.run(body())
    types = [event["type"] for event in events]
    assert types.count("response.completed") == 1  # the stream in flight finished
    refusals = [e for e in events if e["type"] == "error"]
    assert [e["error"]["code"] for e in refusals] == ["server_shutting_down"]
    assert close_code == 1001
    assert server.process.wait(15) == 0


def test_a_stream_longer_than_the_drain_timeout_hears_why_then_is_closed_1001(
    child_server: Any,
) -> None:
    server = child_server("--drain-timeout-s", "0.3", profile="spark-1000tps")

    async def body() -> tuple[list[dict[str, Any]], int | None, str]:
        async with connect(server.ws_url, max_size=None) as ws:
            await ws.send(scripted(60_000, store=False))  # a minute of decode
            assert json.loads(await ws.recv())["type"] == "response.created"
            server.process.send_signal(signal.SIGTERM)
            return await _until_closed_with_reason(ws)

    events, close_code, reason = asyncio.run(body())
    # the last event says why the response stopped: the documented error, no terminal before it
    assert events and events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "server_shutting_down"
    assert "drain deadline" in events[-1]["error"]["message"]
    assert not [e for e in events[:-1] if e["type"] in TERMINAL_TYPES]
    assert (close_code, reason) == (1001, "server shutting down")
    assert server.process.wait(15) == 0


def test_sigterm_lets_an_http_stream_in_flight_finish(child_server: Any) -> None:
    server = child_server("--drain-timeout-s", "20", profile="spark-1000tps")
    body = json.loads(scripted(1500, store=False, stream=True))
    body.pop("type")
    request = urllib.request.Request(
        f"{server.http_url}/responses", data=json.dumps(body).encode(), method="POST"
    )
    received: list[bytes] = []

    def post() -> None:
        with urllib.request.urlopen(request, timeout=30) as reply:
            received.append(reply.read())

    thread = threading.Thread(target=post)
    thread.start()
    time.sleep(0.5)  # the stream is under way (~1.5 s of decode)
    server.process.send_signal(signal.SIGTERM)
    thread.join(30)
    assert received and b"event: response.completed\n" in received[0]
    assert server.process.wait(15) == 0


def test_an_http_stream_longer_than_the_drain_timeout_hears_why_before_it_ends(
    child_server: Any,
) -> None:
    server = child_server("--drain-timeout-s", "0.3", profile="spark-1000tps")
    body = json.loads(scripted(60_000, store=False, stream=True))  # a minute of decode
    body.pop("type")
    request = urllib.request.Request(
        f"{server.http_url}/responses", data=json.dumps(body).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.readline() == b"event: response.created\n"
        server.process.send_signal(signal.SIGTERM)
        received = reply.read()  # the whole rest: the body ends (no reset, no hang)
    events = [
        json.loads(line.removeprefix(b"data: "))
        for line in received.splitlines()
        if line.startswith(b"data: ")
    ]
    # the last event says why the stream stopped: the documented error, no terminal before it
    assert events and events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "server_shutting_down"
    assert "drain deadline" in events[-1]["error"]["message"]
    assert not [e for e in events[:-1] if e["type"] in TERMINAL_TYPES]
    assert server.process.wait(15) == 0


def test_a_connection_whose_head_is_not_in_when_the_server_stops_is_reset(tmp_path: Any) -> None:
    """A client that connected but had not finished its request head when the server stopped
    learns at once (a reset or EOF), instead of waiting out its handshake timeout: nothing of
    its was accepted, and an open socket after the stop would look like a live server."""
    from reference_server.app import ReferenceServer
    from reference_server.config import ServerConfig

    async def body() -> bytes:
        config = ServerConfig(port=0, profile="zero", data_dir=tmp_path / "data")
        server = ReferenceServer(config)
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /v1/responses HTTP/1.1\r\nHost: x\r\n")  # no blank line yet
        await writer.drain()
        await asyncio.sleep(0.2)  # the server has accepted it and holds the partial head
        await server.stop()
        try:  # the head timer (10 s) would end it too: the bound is well below that
            return await asyncio.wait_for(reader.read(), 5)
        except ConnectionResetError:
            return b""
        finally:
            writer.close()

    assert asyncio.run(body()) == b""
