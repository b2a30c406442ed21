"""The server's connections, WebSocket (`websockets`' own) and HTTP, with socket arrival stamps.

Stamps come from the kernel (`harness.transport.sockets`: the time the bytes arrived, whenever
the event loop reads them), else from the read itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import DATA_OPCODES, Frame

from harness.transport.sockets import StampingSocket, arrival_ns


class StampedStreamProtocol(asyncio.StreamReaderProtocol):
    """asyncio's stream protocol, remembering when the bytes it was fed last arrived."""

    def __init__(self, reader: asyncio.StreamReader, sock: StampingSocket | None) -> None:
        super().__init__(reader)
        self._sock = sock
        self._arrival_ns = 0

    def data_received(self, data: bytes) -> None:
        self._arrival_ns = arrival_ns(self._sock, self._arrival_ns)
        super().data_received(data)

    def arrival(self) -> float:
        """perf_counter() seconds when the newest bytes read arrived (HTTP/1.1: no pipelining,
        so once a request body is complete, its last byte)."""
        return self._arrival_ns / 1e9 if self._arrival_ns else time.perf_counter()


class StampedConnection(ServerConnection):
    """Stamps each data message with the arrival of the bytes that completed it.

    A request's server-side clock (TTFT, API overhead) starts there, not when the session's task
    gets around to it: under load the two differ by the event loop's queueing delay.
    """

    def __init__(self, *args: Any, sock: StampingSocket | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arrivals: deque[float] = deque()  # one per complete data message, in order
        self._sock = sock
        self._chunk_ns = 0

    def data_received(self, data: bytes) -> None:
        self._chunk_ns = arrival_ns(self._sock, self._chunk_ns)
        super().data_received(data)

    def process_event(self, event: Any) -> None:
        if isinstance(event, Frame) and event.fin and event.opcode in DATA_OPCODES:
            self.arrivals.append(self._chunk_ns / 1e9)
        super().process_event(event)

    def arrival_of_next_message(self) -> float:
        return self.arrivals.popleft() if self.arrivals else time.perf_counter()

    async def send_texts(self, texts: Sequence[str]) -> None:
        """Send several text messages as one write: one syscall and one wake-up of the peer.

        Events the server emits back to back (created + in_progress, an item's done events) go
        out together; measured here, a loopback send costs ~0.1 ms, mostly waking the reader.
        Uses `send_context`, the same guard `send()` uses (websockets 15.x, pinned).
        """
        async with self.send_context():
            for text in texts:
                self.protocol.send_text(text.encode())

    def send_data(self) -> None:
        """As websockets' own, but consecutive frames are joined into one transport write."""
        pending: list[bytes] = []
        for data in self.protocol.data_to_send():
            if data:
                pending.append(data)
                continue
            if pending:
                self.transport.write(b"".join(pending))
                pending = []
            # The protocol asks for a half-close (empty chunk): what websockets does.
            if self.transport.can_write_eof():
                with contextlib.suppress(OSError, RuntimeError):
                    self.transport.write_eof()
            else:
                self.transport.close()
        if pending:
            self.transport.write(b"".join(pending))
