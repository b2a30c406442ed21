"""A rollout's session opens its WebSocket through a per-loop gate: however many rollouts start
at once, at most MAX_OPENING_HANDSHAKES handshakes are in flight (the rest queue, none fails)."""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request

from harness.load.core import session
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.core.session import Session


def test_opens_beyond_the_gate_queue_and_all_succeed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "MAX_OPENING_HANDSHAKES", 3)
    in_flight, most = 0, 0

    async def slow_upgrade(connection: ServerConnection, request: Request) -> None:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1

    async def hold(connection: ServerConnection) -> None:
        await connection.wait_closed()

    async def scenario() -> int:
        async with serve(hold, "127.0.0.1", 0, process_request=slow_upgrade) as server:
            port = server.sockets[0].getsockname()[1]
            endpoint = Endpoint(ws_url=f"ws://127.0.0.1:{port}/v1/responses")
            sessions = [Session(endpoint, ReplayOptions(mode="ws")) for _ in range(12)]
            await asyncio.gather(*(s.open() for s in sessions))
            opened = sum(s.ws is not None for s in sessions)
            for s in sessions:
                assert s.ws is not None
                await s.ws.close()
            return opened

    assert asyncio.run(scenario()) == 12
    assert most == 3, "the gate let more handshakes through at once, or never queued any"
