"""HTTP client for the baseline: `POST /v1/responses` as SSE or JSON, and retrieve.

SSE is parsed from raw bytes (only `event:` and `data:` lines matter, as in the official SDK),
each event stamped at arrival. Every request has a timeout; errors before the stream are
`HttpStatusError` with the body.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from harness.protocol import wire
from harness.transport.events import (
    GarbageFrame,
    HttpStatusError,
    TargetTimeout,
    TimedEvent,
    TransportError,
)


class SseClient:
    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        max_connections: int = 256,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        )
        self.bytes_sent = 0
        self.bytes_received = 0

    async def __aenter__(self) -> SseClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.client.aclose()

    async def stream(self, body: Mapping[str, Any]) -> AsyncIterator[TimedEvent]:
        """POST with stream:true; yields events until the server ends the stream."""
        content = wire.dumps({**body, "stream": True}).encode()
        self.bytes_sent += len(content)
        try:
            async with self.client.stream(
                "POST", "/responses", content=content, headers={"content-type": "application/json"}
            ) as response:
                if response.status_code != 200:
                    raw = await response.aread()
                    self.bytes_received += len(raw)
                    raise HttpStatusError(response.status_code, raw, dict(response.headers))
                buffer = b""
                async for chunk in response.aiter_raw():
                    received_ns = time.perf_counter_ns()
                    self.bytes_received += len(chunk)
                    buffer += chunk
                    while True:
                        end = buffer.find(b"\n\n")
                        if end < 0:
                            break
                        block, buffer = buffer[:end], buffer[end + 2 :]
                        event = _parse_block(block)
                        if event is not None:
                            yield TimedEvent(event, received_ns, len(block) + 2)
        except httpx.TimeoutException:
            raise TargetTimeout("HTTP request timed out") from None
        except httpx.HTTPError as exc:
            raise TransportError(f"HTTP transport error: {exc}") from None

    async def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST without streaming; returns the Response object."""
        return await self._json("POST", "/responses", body)

    async def retrieve(self, response_id: str) -> dict[str, Any]:
        return await self._json("GET", f"/responses/{response_id}", None)

    async def _json(self, method: str, path: str, body: Mapping[str, Any] | None) -> dict[str, Any]:
        content = wire.dumps(body).encode() if body is not None else None
        try:
            response = await self.client.request(
                method, path, content=content, headers={"content-type": "application/json"}
            )
        except httpx.TimeoutException:
            raise TargetTimeout(f"{method} {path} timed out") from None
        except httpx.HTTPError as exc:
            raise TransportError(f"HTTP transport error: {exc}") from None
        self.bytes_received += len(response.content)
        if response.status_code != 200:
            raise HttpStatusError(response.status_code, response.content, dict(response.headers))
        try:
            payload = response.json()
        except ValueError:
            raise GarbageFrame("a response body that is not JSON", response.content) from None
        if not isinstance(payload, dict):
            raise GarbageFrame("a response body that is not a JSON object", response.content)
        return payload


def _parse_block(block: bytes) -> dict[str, Any] | None:
    data_lines = [line[5:].lstrip() for line in block.split(b"\n") if line.startswith(b"data:")]
    if not data_lines:
        return None
    raw = b"\n".join(data_lines)
    try:
        event = json.loads(raw)
    except ValueError:
        raise GarbageFrame("an SSE data line that is not JSON", raw) from None
    if not isinstance(event, dict):
        raise GarbageFrame("an SSE event that is not a JSON object", raw)
    return event
