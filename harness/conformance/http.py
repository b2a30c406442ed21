"""HTTP side of the checks: `POST /responses` (SSE or JSON) and retrieve, recorded in the wire log.

The transport's `SseClient` yields parsed events only; a checker also needs the status line,
the content type, each block's `event:` name and whether a `[DONE]` sentinel appeared, so this
module reads the stream itself. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.conformance.wirelog import WireLog
from harness.protocol import wire
from harness.transport.events import GarbageFrame, TargetTimeout, TimedEvent, TransportError


@dataclass
class SseStream:
    status: int
    content_type: str
    events: list[TimedEvent] = field(default_factory=list)
    event_names: list[str | None] = field(default_factory=list)  # each block's `event:` line
    saw_done: bool = False
    body: bytes = b""  # the error body when status != 200
    sent_ns: int = 0


@dataclass
class HttpReply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


class RecordingHttp:
    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        log: WireLog,
        label: str,
        timeout_s: float,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.log = log
        self.label = label
        self.timeout_s = timeout_s
        self.authorized = bool(api_key)
        self.client = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=httpx.Timeout(timeout_s)
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    def _log_request(self, method: str, path: str, content: bytes | None) -> None:
        auth = "Bearer <redacted>" if self.authorized else "(none)"
        text = f"{method} {self.base_url}{path}\nAuthorization: {auth}"
        if content:
            text += "\n\n" + content.decode("utf-8", "replace")
        self.log.add(self.label, "send", "http", text, size=len(content or b""))

    async def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> HttpReply:
        content = wire.dumps(body).encode() if body is not None else None
        self._log_request(method, path, content)
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await self.client.request(
                    method,
                    path,
                    content=content,
                    headers={"content-type": "application/json", **(headers or {})},
                )
        except (TimeoutError, httpx.TimeoutException):
            self.log.add(self.label, "meta", "timeout", f"no reply within {self.timeout_s:g} s")
            raise TargetTimeout(f"{method} {path}: no reply within {self.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            self.log.add(self.label, "meta", "error", str(exc))
            raise TransportError(f"{method} {path}: {exc}") from None
        reply = HttpReply(response.status_code, dict(response.headers), response.content)
        self.log.add(
            self.label,
            "recv",
            "http",
            f"HTTP {reply.status} {reply.headers.get('content-type', '')}\n"
            + reply.body.decode("utf-8", "replace"),
            size=len(reply.body),
        )
        return reply

    async def stream(
        self,
        body: Mapping[str, Any],
        *,
        event_timeout_s: float,
        total_timeout_s: float,
        headers: Mapping[str, str] | None = None,
    ) -> SseStream:
        """POST with stream:true and read every SSE block until the server ends the stream."""
        content = wire.dumps({**body, "stream": True}).encode()
        self._log_request("POST", "/responses", content)
        sent_ns = time.perf_counter_ns()
        try:
            async with asyncio.timeout(total_timeout_s):
                return await self._read_stream(content, event_timeout_s, sent_ns, headers)
        except TimeoutError:
            self.log.add(self.label, "meta", "timeout", f"stream not done in {total_timeout_s:g} s")
            raise TargetTimeout(f"SSE stream not finished within {total_timeout_s:g} s") from None
        except httpx.TimeoutException:
            self.log.add(self.label, "meta", "timeout", f"no data within {event_timeout_s:g} s")
            raise TargetTimeout(f"SSE: no data within {event_timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            self.log.add(self.label, "meta", "error", str(exc))
            raise TransportError(f"SSE transport error: {exc}") from None

    async def _read_stream(
        self,
        content: bytes,
        event_timeout_s: float,
        sent_ns: int,
        headers: Mapping[str, str] | None,
    ) -> SseStream:
        async with self.client.stream(
            "POST",
            "/responses",
            content=content,
            headers={"content-type": "application/json", **(headers or {})},
            timeout=httpx.Timeout(event_timeout_s),
        ) as response:
            result = SseStream(
                response.status_code, response.headers.get("content-type", ""), sent_ns=sent_ns
            )
            if response.status_code != 200:
                result.body = await response.aread()
                self.log.add(
                    self.label,
                    "recv",
                    "http",
                    f"HTTP {result.status} {result.content_type}\n"
                    + result.body.decode("utf-8", "replace"),
                    size=len(result.body),
                )
                return result
            self.log.add(self.label, "recv", "http", f"HTTP 200 {result.content_type}", size=0)
            buffer = b""
            async for chunk in response.aiter_raw():
                received_ns = time.perf_counter_ns()
                buffer += chunk.replace(b"\r\n", b"\n")
                while (end := buffer.find(b"\n\n")) >= 0:
                    block, buffer = buffer[:end], buffer[end + 2 :]
                    self._block(result, block, received_ns)
            if buffer.strip():
                self._block(result, buffer, time.perf_counter_ns())
            return result

    def _block(self, result: SseStream, block: bytes, received_ns: int) -> None:
        self.log.add(self.label, "recv", "sse", block.decode("utf-8", "replace"), at_ns=received_ns)
        name: str | None = None
        data_lines: list[bytes] = []
        for line in block.split(b"\n"):
            if line.startswith(b"event:"):
                name = line[6:].strip().decode("utf-8", "replace")
            elif line.startswith(b"data:"):
                data_lines.append(line[5:].lstrip())
        if not data_lines:
            return
        raw = b"\n".join(data_lines)
        if raw.strip() == b"[DONE]":
            result.saw_done = True
            return
        try:
            event = json.loads(raw)
        except ValueError:
            raise GarbageFrame("an SSE data line that is not JSON", raw) from None
        if not isinstance(event, dict):
            raise GarbageFrame("an SSE event that is not a JSON object", raw)
        result.events.append(TimedEvent(event, received_ns, len(block) + 2))
        result.event_names.append(name)
