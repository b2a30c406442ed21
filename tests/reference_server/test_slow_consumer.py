"""A client that stops reading is cut off after the send-stall timeout, and its state is freed."""

from __future__ import annotations

import asyncio
import socket

from websockets.asyncio.client import connect

from reference_server.config import Limits

from .conftest import ServerFactory, run


def test_non_reading_client_is_cut_off(make_server: ServerFactory) -> None:
    limits = Limits(send_stall_timeout_s=0.5, max_output_tokens=400_000)
    with make_server(limits=limits) as server:

        async def body() -> None:
            sock = socket.create_connection(("127.0.0.1", server.port))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            connection = await connect(server.ws_url, sock=sock, max_size=None, ping_interval=None)
            await connection.send(
                '{"type":"response.create","model":"m","input":"big","store":false,'
                '"wsmode":{"script":[{"type":"message","tokens":300000}]}}'
            )
            connection.transport.pause_reading()  # stop reading: the server's sends back up
            for _ in range(200):
                if server.services.metrics.value("wsmode_send_stalls_total") >= 1:
                    break
                await asyncio.sleep(0.05)
            connection.transport.abort()
            for _ in range(100):
                if server.services.metrics.connections == 0:
                    break
                await asyncio.sleep(0.05)

        run(body())
        assert server.services.metrics.value("wsmode_send_stalls_total") == 1
        assert server.services.metrics.connections == 0 and server.services.metrics.in_flight == 0
