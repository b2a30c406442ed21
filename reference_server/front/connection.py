"""The server's connections, WebSocket (`websockets`' own) and HTTP, with socket arrival stamps.

Stamps come from the kernel (`harness.transport.sockets`: the time the bytes arrived, whenever
the event loop reads them), else from the read itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import DATA_OPCODES, Frame

from harness.transport.sockets import StampingSocket, arrival_ns


class StampedStreamProtocol(asyncio.StreamReaderProtocol):
    """asyncio's stream protocol, remembering when the current request's first bytes arrived."""

    def __init__(self, reader: asyncio.StreamReader, sock: StampingSocket | None) -> None:
        super().__init__(reader)
        self._sock = sock
        self._arrival_ns = 0  # the newest bytes
        self._first_ns = 0  # the first bytes since `next_request()`; 0: none yet

    def data_received(self, data: bytes) -> None:
        self._arrival_ns = arrival_ns(self._sock, self._arrival_ns)
        if not self._first_ns:
            self._first_ns = self._arrival_ns
        super().data_received(data)

    def next_request(self) -> None:
        """The current request is answered: bytes from now on belong to the next one."""
        self._first_ns = 0

    def request_arrival(self) -> float:
        """perf_counter() seconds when the current request's first bytes arrived."""
        stamp = self._first_ns or self._arrival_ns
        return stamp / 1e9 if stamp else time.perf_counter()


class StampedServerConnection(ServerConnection):
    """Stamps each data message with the arrival of its first bytes.

    A request's server-side clock (TTFT, API overhead) starts there: not when the session's task
    gets around to it, nor when its last byte could arrive. Under load those differ by the event
    loop's queueing delay, and for a request larger than the socket's receive window by the time
    the busy server took to make room for the rest.
    """

    def __init__(self, *args: Any, sock: StampingSocket | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arrivals: deque[float] = deque()  # one per complete data message, in order
        self._sock = sock
        self._chunk_ns = 0  # arrival of the chunk being parsed
        self._start_ns = 0  # arrival of the chunk the current frame began in; 0: between frames
        self._in_message = False  # inside a fragmented data message
        self.label = ""  # the observer's name for it (`ServerHooks.observer`), else empty
        # called once when the TCP connection ends, whatever ended it (the caps' release)
        self.on_lost: Callable[[], None] | None = None

    def connection_lost(self, exc: Exception | None) -> None:
        on_lost, self.on_lost = self.on_lost, None
        if on_lost is not None:
            on_lost()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._chunk_ns = arrival_ns(self._sock, self._chunk_ns)
        if not self._start_ns:  # the read begins with the first bytes of a frame
            self._start_ns = self._chunk_ns
        super().data_received(data)  # complete frames reach `process_event` from here
        if not self._start_ns and self.protocol.reader.buffer:
            self._start_ns = self._chunk_ns  # the chunk also began the next frame

    def process_event(self, event: Any) -> None:
        if isinstance(event, Frame) and event.opcode in DATA_OPCODES:
            self._in_message = not event.fin
            if event.fin:
                self.arrivals.append((self._start_ns or self._chunk_ns) / 1e9)
                self._start_ns = 0
        elif not self._in_message:
            self._start_ns = 0  # a control frame (or the handshake) between two messages
        super().process_event(event)

    def arrival_of_next_message(self) -> float:
        return self.arrivals.popleft() if self.arrivals else time.perf_counter()

    async def send_texts(self, texts: Sequence[bytes]) -> None:
        """Send several text messages as one write: one syscall and one wake-up of the peer.

        Events the server emits back to back (created + in_progress, an item's done events) go
        out together; measured here, a loopback send costs ~0.1 ms, mostly waking the reader.
        websockets (15.x) has no public call for several messages: `send()` takes one (an
        iterable is one fragmented message). So this is `send()` for several: the frames are
        made by the Sans-I/O protocol's `send_text` inside `send_context()`, the guard
        `send()` itself uses (state check, flow control, closing), and `send_data` joins them.
        """
        async with self.send_context():
            for text in texts:  # UTF-8 JSON (wire.dumps_bytes): framed as text
                self.protocol.send_text(text)

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
