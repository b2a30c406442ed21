"""WebSocket-mode client: one socket, JSON text frames out, time-stamped events in.

Every wait is bounded (connect, each receive, close), so a stalled or misbehaving target ends in a
`TransportError` subclass, never a hang. No compression is offered, like the official SDK.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from harness.protocol import wire
from harness.transport.events import (
    GarbageFrame,
    HttpStatusError,
    TargetClosed,
    TargetTimeout,
    TimedEvent,
    TransportError,
)

BETA_HEADER = ("OpenAI-Beta", "responses_websockets=2026-02-06")


class WsClient:
    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.bytes_sent = 0
        self.bytes_received = 0

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        api_key: str | None = None,
        beta_header: bool = False,
        extra_headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        max_size: int | None = 16 * 1024 * 1024,
    ) -> WsClient:
        headers: dict[str, str] = dict(extra_headers or {})
        if api_key is not None:
            headers["Authorization"] = f"Bearer {api_key}"
        if beta_header:
            headers[BETA_HEADER[0]] = BETA_HEADER[1]
        try:
            connection = await connect(
                url,
                additional_headers=headers,
                compression=None,
                open_timeout=timeout_s,
                max_size=max_size,
                ping_interval=None,  # the harness measures; it does not want extra traffic
                close_timeout=2,
                user_agent_header="wsmode",
            )
        except InvalidStatus as exc:
            response = exc.response
            raise HttpStatusError(
                response.status_code, response.body or b"", dict(response.headers)
            ) from None
        except TimeoutError:
            raise TargetTimeout(f"no WebSocket handshake from {url} within {timeout_s} s") from None
        except (OSError, WebSocketException) as exc:
            raise TransportError(f"cannot connect to {url}: {exc}") from None
        return cls(connection)

    async def send_json(self, payload: Mapping[str, Any]) -> int:
        return await self.send_text(wire.dumps(payload))

    def observe(self, direction: str, data: str | bytes, at_ns: int) -> None:
        """Hook for recorders (the conformance wire log): every frame sent or received."""

    async def send_text(self, text: str) -> int:
        self.observe("send", text, time.perf_counter_ns())
        try:
            await self.connection.send(text)
        except ConnectionClosed as exc:
            raise _closed(exc) from None
        self.bytes_sent += len(text)
        return len(text)

    async def send_bytes(self, data: bytes) -> None:
        self.observe("send", data, time.perf_counter_ns())
        try:
            await self.connection.send(data)
        except ConnectionClosed as exc:
            raise _closed(exc) from None

    async def recv(self, timeout_s: float) -> TimedEvent:
        """The next event; TargetTimeout, TargetClosed or GarbageFrame instead of hanging."""
        try:
            async with asyncio.timeout(timeout_s):
                raw = await self.connection.recv()
        except TimeoutError:
            raise TargetTimeout(f"no event within {timeout_s} s") from None
        except ConnectionClosed as exc:
            raise _closed(exc) from None
        received_ns = time.perf_counter_ns()
        self.observe("recv", raw, received_ns)
        self.bytes_received += len(raw)
        if isinstance(raw, bytes):
            raise GarbageFrame("binary frame from the server", raw)
        try:
            event = json.loads(raw)
        except ValueError:
            raise GarbageFrame("a text frame that is not JSON", raw) from None
        if not isinstance(event, dict):
            raise GarbageFrame("a JSON frame that is not an object", raw)
        return TimedEvent(event, received_ns, len(raw))

    async def wait_closed(self, timeout_s: float) -> tuple[int | None, str]:
        """Wait for the server to close; returns (code, reason). Frames in between are dropped."""
        try:
            async with asyncio.timeout(timeout_s):
                while True:
                    raw = await self.connection.recv()
                    self.observe("recv", raw, time.perf_counter_ns())
        except ConnectionClosed as exc:
            received = exc.rcvd
            return (received.code, received.reason) if received else (None, "")
        except TimeoutError:
            raise TargetTimeout(f"connection not closed within {timeout_s} s") from None

    async def ping(self, timeout_s: float) -> float:
        """Round-trip time of a WebSocket ping, in ms."""
        start = time.perf_counter()
        try:
            waiter = await self.connection.ping()
            async with asyncio.timeout(timeout_s):
                await waiter
        except TimeoutError:
            raise TargetTimeout(f"no pong within {timeout_s} s") from None
        except ConnectionClosed as exc:
            raise _closed(exc) from None
        return (time.perf_counter() - start) * 1000

    @property
    def is_open(self) -> bool:
        return self.connection.close_code is None

    async def close(self) -> None:
        try:
            async with asyncio.timeout(3):
                await self.connection.close()
        except (TimeoutError, ConnectionClosed, OSError):
            self.connection.transport.abort()


def _closed(exc: ConnectionClosed) -> TargetClosed:
    received = exc.rcvd
    code = received.code if received else None
    reason = received.reason if received else ""
    return TargetClosed(f"connection closed (code {code}, reason {reason!r})", code, reason)
