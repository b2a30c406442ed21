"""The server's clock for a request starts when its first bytes arrived, not when it read them.

The server's event loop is held busy while a request arrives: the request waits in the socket,
and the server-stamped `ttft_ms` must include that wait (a stamp taken at the read would not).
A request larger than the socket's receive buffer cannot even arrive whole before the server
reads: only a stamp of the read its first bytes came in sees that wait. (The server's default
buffer is large enough for a whole request; the test runs with the kernel's small default.)
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from harness.transport import sockets
from harness.transport.exchange import sse_exchange, ws_exchange
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer
from reference_server.config import Limits

from .conftest import ServerFactory, run, user

BUSY_S = 0.3
pytestmark = pytest.mark.skipif(
    sockets.SO_TIMESTAMPNS is None, reason="no SO_TIMESTAMPNS on this platform"
)


def hold_server_loop(server: ReferenceServer) -> None:
    """Block the server's event loop for BUSY_S; returns once it is blocked."""
    assert server.loop is not None
    blocked = threading.Event()

    def busy() -> None:
        blocked.set()
        time.sleep(BUSY_S)

    server.loop.call_soon_threadsafe(busy)
    assert blocked.wait(5)


SIZES = {"small": 2, "large": 450_000}  # characters of input text; large > a receive buffer


def body(chars: int = 2) -> dict[str, Any]:
    return {"model": "m", "input": [user("hi " * (chars // 3) or "hi")], "store": False}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("transport", ["ws", "http"])
def test_server_ttft_counts_the_time_a_request_waited_to_be_read(
    make_server: ServerFactory, transport: str, size: str
) -> None:
    async def main(server: ReferenceServer) -> tuple[float, float]:
        if transport == "ws":
            client = await WsClient.connect(server.ws_url, timeout_s=10)
            try:
                await ws_exchange(client, body(), timeout_s=10)  # warm: the next one is cheap
                hold_server_loop(server)
                exchange = await ws_exchange(client, body(SIZES[size]), timeout_s=10)
            finally:
                await client.close()
        else:
            async with SseClient(server.http_url, timeout_s=10) as http:
                await sse_exchange(http, body(), timeout_s=10)
                hold_server_loop(server)
                exchange = await sse_exchange(http, body(SIZES[size]), timeout_s=10)
        assert exchange.ok, (exchange.request_error, exchange.transport_error)
        assert exchange.final_response is not None and exchange.ttft_ms
        return exchange.ttft_ms, exchange.final_response["wsmode"]["ttft_ms"]

    with make_server(limits=Limits(socket_receive_buffer_bytes=0)) as server:
        client_ttft_ms, server_ttft_ms = run(main(server))
    assert client_ttft_ms >= BUSY_S * 1000 * 0.9  # the client waited through the busy loop
    # ... and so did the server's clock: the request's bytes had arrived before it was read
    assert server_ttft_ms >= BUSY_S * 1000 * 0.5, (client_ttft_ms, server_ttft_ms)


def test_the_handshake_and_pings_before_a_request_do_not_start_its_clock(
    make_server: ServerFactory,
) -> None:
    """The server's interval lies inside the client's: it cannot start before the send."""

    async def main(server: ReferenceServer) -> tuple[float, float]:
        client = await WsClient.connect(server.ws_url, timeout_s=10)
        try:
            await asyncio.sleep(BUSY_S)  # idle after the handshake
            pong = await client.connection.ping()
            await asyncio.wait_for(pong, 10)
            await asyncio.sleep(BUSY_S)  # idle after a ping
            exchange = await ws_exchange(client, body(), timeout_s=10)
        finally:
            await client.close()
        assert exchange.ok and exchange.final_response is not None and exchange.ttft_ms
        return exchange.ttft_ms, exchange.final_response["wsmode"]["ttft_ms"]

    with make_server() as server:
        client_ttft_ms, server_ttft_ms = run(main(server))
    assert server_ttft_ms <= client_ttft_ms + 1.0, (client_ttft_ms, server_ttft_ms)


def test_the_server_marks_ttft_at_the_first_token_as_the_client_does(
    make_server: ServerFactory,
) -> None:
    """Hidden reasoning first: the item is announced long before its first summary token.

    The server's `ttft_ms` and `ttfe_ms` follow the client's definitions (one definition,
    `harness.protocol.timing_marks`): TTFE at the announcement, TTFT at the first token.
    """
    hidden_tokens, tokens_per_s = 20, 65  # legacy-65tps: ~300 ms of hidden decode
    script = [{"type": "reasoning", "summary": "Look first.", "tokens": hidden_tokens}]

    async def main(server: ReferenceServer) -> tuple[float, float, float, float]:
        client = await WsClient.connect(server.ws_url, timeout_s=10)
        try:
            request = {**body(), "wsmode": {"script": script}}
            exchange = await ws_exchange(client, request, timeout_s=10)
        finally:
            await client.close()
        assert exchange.ok and exchange.final_response is not None
        assert exchange.ttft_ms is not None and exchange.ttfe_ms is not None
        stamps = exchange.final_response["wsmode"]
        return exchange.ttfe_ms, exchange.ttft_ms, stamps["ttfe_ms"], stamps["ttft_ms"]

    with make_server(profile="legacy-65tps") as server:
        client_ttfe, client_ttft, server_ttfe, server_ttft = run(main(server))
    hidden_ms = hidden_tokens / tokens_per_s * 1000
    assert server_ttft - server_ttfe >= 0.5 * hidden_ms, (server_ttfe, server_ttft)
    assert client_ttft - client_ttfe >= 0.5 * hidden_ms, (client_ttfe, client_ttft)
    assert server_ttft <= client_ttft + 1.0  # the server's interval lies inside the client's
