"""The server connection's `send_texts`: several messages, one write, websockets' own guard."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

from reference_server.front.connection import StampedServerConnection

from ..conftest import run

Handler = Callable[[StampedServerConnection], Awaitable[None]]


async def _serve_one(handler: Handler, messages: int) -> list[str | bytes]:
    """Serve `handler` on loopback; a real client receives `messages` messages (or the close)."""
    async with serve(
        handler,  # type: ignore[arg-type]  # websockets' own types name its base class
        "127.0.0.1",
        0,
        create_connection=StampedServerConnection,
        ping_interval=None,
        compression=None,
    ) as server:
        port = server.sockets[0].getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}", ping_interval=None) as client:
            received: list[str | bytes] = []
            try:
                for _ in range(messages):
                    received.append(await asyncio.wait_for(client.recv(), timeout=10))
            except ConnectionClosed:
                pass
            return received


def test_several_texts_leave_in_one_write_as_separate_messages() -> None:
    writes: list[bytes] = []
    writes_for_the_texts: list[int] = []

    async def handler(connection: StampedServerConnection) -> None:
        transport = connection.transport
        write = transport.write

        def counted(data: bytes | bytearray | memoryview) -> None:  # the bytes go out unchanged
            writes.append(bytes(data))
            write(data)

        transport.write = counted  # type: ignore[method-assign]
        await connection.send_texts([b'{"n":1}', b'{"n":2}', b'{"n":3}'])
        writes_for_the_texts.append(len(writes))
        await connection.wait_closed()  # the client closes once it has the three

    received = run(_serve_one(handler, 3))
    assert received == ['{"n":1}', '{"n":2}', '{"n":3}']
    assert writes_for_the_texts == [1]


def test_a_closed_connection_refuses_texts_as_send_does() -> None:
    refusals: list[type[BaseException]] = []

    async def handler(connection: StampedServerConnection) -> None:
        await connection.close()
        for attempt in (connection.send_texts([b"{}"]), connection.send("{}")):
            try:
                await attempt
            except ConnectionClosed as closed:
                refusals.append(type(closed))

    assert run(_serve_one(handler, 1)) == []
    assert len(refusals) == 2 and refusals[0] is refusals[1]
