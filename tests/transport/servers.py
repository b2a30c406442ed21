"""Tiny servers on 127.0.0.1 for the transport tests, and a WebSocket connection without a socket.

The servers speak just enough raw WebSocket / HTTP to misbehave on purpose: stall, close, send
garbage, split their bytes anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from websockets.client import ClientProtocol
from websockets.uri import parse_uri

from harness.transport.ws import StampedClientConnection
from tests.protocol.conftest import full_stream

T = TypeVar("T")
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@contextlib.asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[int]:
    """A TCP server on a free loopback port running `handler` per connection; yields the port."""
    tasks: set[asyncio.Task[None]] = set()

    async def wrapped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:  # torn down by `serve`: end quietly
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(wrapped, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# -- WebSocket ------------------------------------------------------------------------------------
def frame(payload: bytes, opcode: int = 0x1, *, fin: bool = True, rsv: int = 0) -> bytes:
    """One unmasked (server) frame."""
    first = (0x80 if fin else 0) | rsv | opcode
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", first, n)
    elif n < 65536:
        header = struct.pack("!BBH", first, 126, n)
    else:
        header = struct.pack("!BBQ", first, 127, n)
    return header + payload


def masked_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    mask = b"\x01\x02\x03\x04"
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    assert len(payload) < 126
    return struct.pack("!BB", 0x80 | opcode, 0x80 | len(payload)) + mask + body


def text(event: Any) -> bytes:
    return frame(json.dumps(event, separators=(",", ":")).encode())


def handshake_response(key: bytes) -> bytes:
    accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )


async def ws_accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    key = b""
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"sec-websocket-key:"):
            key = line.split(b":", 1)[1].strip()
    writer.write(handshake_response(key))
    await writer.drain()


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One masked client frame: (opcode, payload)."""
    b1, b2 = await reader.readexactly(2)
    n = b2 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    mask = await reader.readexactly(4)
    data = await reader.readexactly(n)
    return b1 & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(data))


async def until_closed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Send nothing (a stall), but answer the client's close so that it finishes at once."""
    while True:
        opcode, payload = await read_frame(reader)
        if opcode == 0x8:
            writer.write(frame(payload, 0x8))
            await writer.drain()
            return


def ws_server(on_request: Handler) -> contextlib.AbstractAsyncContextManager[int]:
    """Handshake, then `on_request` once the client's first frame (its request) is read."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await ws_accept(reader, writer)
        await read_frame(reader)
        await on_request(reader, writer)

    return serve(handler)


def response_frames() -> bytes:
    return b"".join(text(e) for e in full_stream())


# -- a StampedClientConnection driven by hand ---------------------------------------------------
class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.paused = False
        self.closing = False

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.closing = True

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True


def opened_connection(
    *, max_size: int | None = 2**20
) -> tuple[StampedClientConnection, FakeTransport]:
    """A StampedClientConnection past a real handshake, writing to a FakeTransport (needs loop)."""
    protocol = ClientProtocol(parse_uri("ws://example.invalid/"), max_size=max_size)
    connection = StampedClientConnection(protocol, ping_interval=None)
    transport = FakeTransport()
    connection.connection_made(transport)
    request = protocol.connect()
    protocol.send_request(request)
    connection.send_data()
    key = request.headers["Sec-WebSocket-Key"].encode()
    connection.data_received(handshake_response(key))
    assert connection.response is not None
    return connection, transport


def client_frames(transport: FakeTransport) -> list[tuple[int, bytes]]:
    """The frames the connection wrote (after the handshake request): (opcode, payload)."""
    out = []
    for chunk in transport.written:
        if chunk.startswith(b"GET "):
            continue
        data = chunk
        while data:
            opcode, n = data[0] & 0x0F, data[1] & 0x7F
            mask, rest = data[2:6], data[6:]
            out.append((opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(rest[:n]))))
            data = rest[n:]
    return out


# -- HTTP ------------------------------------------------------------------------------------------
async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """(head, body) of one request with a Content-Length body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await reader.readexactly(length)


def chunked(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def sse_block(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def sse_response(events: list[dict[str, Any]] | None = None) -> bytes:
    """A whole chunked SSE response (head, one chunk per event, end)."""
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    body = b"".join(chunked(sse_block(e)) for e in (events or full_stream()))
    return head + body + b"0\r\n\r\n"


def json_response(status: int, payload: Any, *, extra: bytes = b"") -> bytes:
    body = json.dumps(payload).encode()
    return (
        f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n".encode()
        + extra
        + b"\r\n"
        + body
    )
