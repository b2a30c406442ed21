"""The server's clock for a request starts when the kernel had its bytes, not when it read them.

The server's event loop is held busy while a request arrives: the request waits in the socket,
and the server-stamped `ttft_ms` must include that wait (a stamp taken at the read would not).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from harness.transport import sockets
from harness.transport.exchange import sse_exchange, ws_exchange
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer

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


def body() -> dict[str, Any]:
    return {"model": "m", "input": [user("hi")], "store": False}


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_server_ttft_counts_the_time_a_request_waited_to_be_read(
    make_server: ServerFactory, transport: str
) -> None:
    async def main(server: ReferenceServer) -> tuple[float, float]:
        if transport == "ws":
            client = await WsClient.connect(server.ws_url, timeout_s=10)
            try:
                await ws_exchange(client, body(), timeout_s=10)  # warm: the next one is cheap
                hold_server_loop(server)
                exchange = await ws_exchange(client, body(), timeout_s=10)
            finally:
                await client.close()
        else:
            async with SseClient(server.http_url, timeout_s=10) as http:
                await sse_exchange(http, body(), timeout_s=10)
                hold_server_loop(server)
                exchange = await sse_exchange(http, body(), timeout_s=10)
        assert exchange.ok and exchange.final_response is not None and exchange.ttft_ms
        return exchange.ttft_ms, exchange.final_response["wsmode"]["ttft_ms"]

    with make_server() as server:
        client_ttft_ms, server_ttft_ms = run(main(server))
    assert client_ttft_ms >= BUSY_S * 1000 * 0.9  # the client waited through the busy loop
    # ... and so did the server's clock: the request's bytes had arrived before it was read
    assert server_ttft_ms >= BUSY_S * 1000 * 0.5, (client_ttft_ms, server_ttft_ms)
