"""The h11 read loop: bytes from any source, in any pieces, until h11 has an event."""

from __future__ import annotations

import asyncio

import h11
import pytest

from harness.transport.h11_loop import H11Event, next_h11_event, read_within

REQUEST = b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"


def events_of(pieces: list[bytes]) -> list[H11Event]:
    remaining = list(pieces)

    async def read() -> bytes:
        return remaining.pop(0) if remaining else b""

    async def main() -> list[H11Event]:
        connection = h11.Connection(h11.SERVER)
        out = [await next_h11_event(connection, read)]
        while type(out[-1]) is not h11.EndOfMessage:
            out.append(await next_h11_event(connection, read))
        return out

    return asyncio.run(main())


def test_a_request_read_in_any_pieces_gives_the_same_events() -> None:
    whole = events_of([REQUEST])
    assert [type(e) for e in whole] == [h11.Request, h11.Data, h11.EndOfMessage]
    for split in range(1, len(REQUEST)):
        pieces = events_of([REQUEST[:split], REQUEST[split:]])
        assert type(pieces[0]) is h11.Request
        body = b"".join(bytes(e.data) for e in pieces if type(e) is h11.Data)
        assert body == b"hello", split


def test_the_end_of_the_stream_is_connection_closed_and_garbage_raises() -> None:
    async def main() -> None:
        async def eof() -> bytes:
            return b""

        assert type(await next_h11_event(h11.Connection(h11.SERVER), eof)) is h11.ConnectionClosed

        async def garbage() -> bytes:
            return b"\x00\x01 not http\r\n\r\n"

        with pytest.raises(h11.RemoteProtocolError):
            await next_h11_event(h11.Connection(h11.SERVER), garbage)

    asyncio.run(main())


def test_read_within_times_out_when_nothing_comes() -> None:
    async def main() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(b"abc")
        read = read_within(reader, 0.01)
        assert await read() == b"abc"
        with pytest.raises(TimeoutError):
            await read()

    asyncio.run(main())
