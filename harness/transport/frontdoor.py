"""The one-port front door: a connection's request head decides WebSocket or plain HTTP.

WebSocket mode and the HTTP/SSE baseline share one port and one path (docs/PROTOCOL.md §1: the
upgrade is a GET on the path that serves `POST /v1/responses`), so the server cannot know which
a connection is before its head arrives. `FrontDoor` buffers bytes until the blank line that ends
the head, then hands the transport and those bytes to its acceptor; from then on the acceptor's
protocol owns the connection. The WebSocket side is `websockets`' `Server.wrap()` pattern.
Used by the reference server and by the recorder's proxy.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

_HEAD_END = b"\r\n\r\n"
_TOO_LARGE = b"431 Request Header Fields Too Large"


class Acceptor(Protocol):
    """Takes over a connection once its head is in; `head` holds every byte read so far."""

    def accept_websocket(self, transport: asyncio.Transport, head: bytes) -> None: ...

    def accept_http(self, transport: asyncio.Transport, head: bytes) -> None: ...


class FrontDoor(asyncio.Protocol):
    """Reads a connection's request head, then hands the transport to WebSocket or HTTP.

    A head over `max_head_bytes` is answered 431 (`answer_oversized=False`: the connection is
    just closed); with `head_timeout_s`, a head that takes longer is aborted.
    """

    def __init__(
        self,
        acceptor: Acceptor,
        *,
        max_head_bytes: int,
        head_timeout_s: float | None = None,
        answer_oversized: bool = True,
    ) -> None:
        self.acceptor = acceptor
        self.max_head_bytes = max_head_bytes
        self.head_timeout_s = head_timeout_s
        self.answer_oversized = answer_oversized
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.head_timeout_s is not None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.head_timeout_s, transport.abort)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.buffer += data
        end = self.buffer.find(_HEAD_END)
        if end < 0:
            if len(self.buffer) > self.max_head_bytes:
                self._refuse()
            return
        if self._timer is not None:
            self._timer.cancel()
        head = bytes(self.buffer)
        if is_websocket_upgrade(head[:end]):
            self.acceptor.accept_websocket(self.transport, head)
        else:
            self.acceptor.accept_http(self.transport, head)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _refuse(self) -> None:
        assert self.transport is not None
        if self.answer_oversized:
            self.transport.write(
                b"HTTP/1.1 " + _TOO_LARGE + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
        self.transport.close()


def is_websocket_upgrade(head: bytes) -> bool:
    """Whether a request head (without its blank line) asks for `Upgrade: websocket`."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"upgrade" and b"websocket" in value.lower():
            return True
    return False
