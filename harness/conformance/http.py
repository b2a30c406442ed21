"""HTTP side of the checks: `POST /responses` (SSE or JSON) and retrieve, recorded in the wire log.

The transport's `SseClient` does the HTTP (every wait bounded); this module records each request,
reply and SSE block in the wire log, and keeps what a checker needs beyond the parsed events: the
status, the content type, each block's `event:` name and whether a `[DONE]` sentinel appeared.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.wirelog import WireLog, identity_headers
from harness.errors import TransportError
from harness.protocol import wire
from harness.transport.failures import HttpStatusError, TargetTimeout
from harness.transport.received import TimedEvent
from harness.transport.sse import HttpReply, SseClient
from harness.transport.sse_wire import block_fields, parse_event

__all__ = ["HttpReply", "RecordingHttp", "SseStream"]


@dataclass
class SseStream:
    status: int
    content_type: str
    events: list[TimedEvent] = field(default_factory=list)
    event_names: list[str | None] = field(default_factory=list)  # each block's `event:` line
    saw_done: bool = False
    body: bytes = b""  # the error body when status != 2xx
    sent_ns: int = 0


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
        self.base_url = base_url.rstrip("/")
        self.log = log
        self.label = label
        self.timeout_s = timeout_s
        self.authorized = bool(api_key)
        self.client = SseClient(base_url, api_key=api_key, timeout_s=timeout_s)

    async def aclose(self) -> None:
        await self.client.close()

    def _log_request(self, method: str, path: str, content: bytes | None) -> None:
        auth = "Bearer <redacted>" if self.authorized else "(none)"
        text = f"{method} {self.base_url}{path}\nAuthorization: {auth}"
        if content:
            text += "\n\n" + content.decode("utf-8", "replace")
        self.log.add(self.label, "send", "http", text, size=len(content or b""))

    def _log_reply(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.log.add(
            self.label,
            "recv",
            "http",
            f"HTTP {status} {headers.get('content-type', '')}{identity_headers(headers)}\n"
            + body.decode("utf-8", "replace"),
            size=len(body),
        )

    def _log_failure(self, exc: TransportError) -> None:
        kind = "timeout" if isinstance(exc, TargetTimeout) else "error"
        self.log.add(self.label, "meta", kind, str(exc))

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
                reply = await self.client.request(method, path, content, headers=headers)
        except TimeoutError:
            exc: TransportError = TargetTimeout(
                f"{method} {path}: no reply within {self.timeout_s:g} s"
            )
            self._log_failure(exc)
            raise exc from None
        except TransportError as exc:
            self._log_failure(exc)
            raise
        self._log_reply(reply.status, reply.headers, reply.body)
        return reply

    async def stream(
        self,
        body: Mapping[str, Any],
        *,
        total_timeout_s: float,
        headers: Mapping[str, str] | None = None,
    ) -> SseStream:
        """POST with stream:true and read every SSE block until the server ends the stream.

        Each read waits at most the client's `timeout_s`; the whole stream `total_timeout_s`.
        """
        self._log_request("POST", "/responses", wire.dumps({**body, "stream": True}).encode())
        result = SseStream(0, "")

        def sent(at_ns: int) -> None:
            result.sent_ns = at_ns

        def head(status: int, reply_headers: dict[str, str]) -> None:
            result.status = status
            result.content_type = reply_headers.get("content-type", "")
            shown = f"HTTP {status} {result.content_type}{identity_headers(reply_headers)}"
            self.log.add(self.label, "recv", "http", shown, size=0)

        blocks = self.client.stream_blocks(body, headers=headers, on_sent=sent, on_head=head)
        try:
            async with asyncio.timeout(total_timeout_s):
                async for block, received_ns in blocks:
                    self._block(result, block, received_ns)
        except HttpStatusError as exc:
            result.status = exc.status
            result.content_type = exc.headers.get("content-type", "")
            result.body = exc.body
            self._log_reply(exc.status, exc.headers, exc.body)
        except TimeoutError:
            timeout = TargetTimeout(f"SSE stream not finished within {total_timeout_s:g} s")
            self._log_failure(timeout)
            raise timeout from None
        except TransportError as exc:
            self._log_failure(exc)
            raise
        finally:
            await blocks.aclose()  # hands the connection back (or closes it) now
        return result

    def _block(self, result: SseStream, block: bytes, received_ns: int) -> None:
        self.log.add(self.label, "recv", "sse", block.decode("utf-8", "replace"), at_ns=received_ns)
        name, data = block_fields(block)
        if data is None:
            return
        if data.strip() == b"[DONE]":
            result.saw_done = True
            return
        result.events.append(TimedEvent(parse_event(data), received_ns, len(block) + 2))
        result.event_names.append(name)
