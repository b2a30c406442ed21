"""The h11 read loop, written once: feed the connection bytes until it has an event.

h11 is sans-I/O: `next_event()` answers NEED_DATA until it has been given enough bytes. Every
HTTP/1.1 user here (the SSE client, the reference server's HTTP side, the recorder's HTTP relay)
drives it the same way and differs only in where the bytes come from, so that is the argument.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import cast

import h11

READ_BYTES = 65536  # the most one read asks for

Read = Callable[[], Awaitable[bytes]]  # the next bytes received; b"" at the end of the stream
H11Event = h11.Event | type[h11.PAUSED]


async def next_h11_event(connection: h11.Connection, read: Read) -> H11Event:
    """The next event that is not NEED_DATA, reading as needed; h11's errors pass through."""
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return cast(H11Event, event)  # mypy cannot narrow a sentinel class by identity
        connection.receive_data(await read())


def read_within(reader: asyncio.StreamReader, timeout_s: float) -> Read:
    """Reads from `reader`, each bounded by `timeout_s` (TimeoutError when nothing comes)."""

    async def read() -> bytes:
        async with asyncio.timeout(timeout_s):
            return await reader.read(READ_BYTES)

    return read
