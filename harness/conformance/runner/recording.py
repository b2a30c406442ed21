"""A case's connections, recorded in its wire log: WebSocket (`RecordingWsClient`) and HTTP.

`RecordingWsClient` is the transport's `WsClient` with its `observe` hook filled in, plus the
events only a recorder cares about (handshake, refusal, pings, closes, timeouts).

`RecordingHttp` is the HTTP side of the checks: `POST /responses` (SSE or JSON) and retrieve.
The transport's `SseClient` does the HTTP (every wait bounded); this records each request, reply
and SSE block, and keeps what a checker needs beyond the parsed events: the status, the content
type, each block's `event:` name and whether a `[DONE]` sentinel appeared.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.certificates.wirelog import WireLog
from harness.errors import TransportError
from harness.protocol import wire
from harness.transport.failures import HttpStatusError, TargetClosed, TargetTimeout
from harness.transport.received import TimedEvent
from harness.transport.sse import HttpReply, SseClient
from harness.transport.sse_wire import block_fields, parse_event
from harness.transport.ws import BETA_HEADER, WsClient

__all__ = ["HttpReply", "RecordingHttp", "RecordingWsClient", "SseStream"]


def identity_headers(headers: Mapping[str, str]) -> str:
    """The reply headers that name the server and its version (`Server`, `x-...-version`), one
    per line with a leading newline, for the HTTP rows of the wire log; "" when none."""
    shown = [
        f"{k}: {v}"
        for k, v in headers.items()
        if k.lower() == "server" or (k.lower().startswith("x-") and k.lower().endswith("version"))
    ]
    return "".join("\n" + line for line in shown)


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


class RecordingWsClient(WsClient):
    """A WsClient whose frames, handshake, pings and close land in a WireLog."""

    def __init__(self, connection: Any, log: WireLog | None = None, label: str = "ws") -> None:
        super().__init__(connection)
        self.log = log if log is not None else WireLog()
        self.label = label
        self._close_logged = False

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        log: WireLog,
        label: str,
        api_key: str | None = None,
        beta_header: bool = False,
        extra_headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
    ) -> RecordingWsClient:
        shown = [f"GET {url}", f"Authorization: {'Bearer <redacted>' if api_key else '(none)'}"]
        if beta_header:
            shown.append(f"{BETA_HEADER[0]}: {BETA_HEADER[1]}")
        shown.extend(f"{k}: {v}" for k, v in (extra_headers or {}).items())
        log.add(label, "send", "upgrade", "\n".join(shown), size=0)
        try:
            client = await cls.connect(
                url,
                api_key=api_key,
                beta_header=beta_header,
                extra_headers=extra_headers,
                timeout_s=timeout_s,
            )
        except HttpStatusError as exc:
            body = exc.body.decode("utf-8", "replace")
            log.add(label, "recv", "refused", f"HTTP {exc.status}\n{body}", size=len(exc.body))
            raise
        except TransportError as exc:
            log.add(label, "meta", "error", str(exc), size=0)
            raise
        assert isinstance(client, RecordingWsClient)
        client.log = log
        client.label = label
        response = client.connection.response
        status = response.status_code if response is not None else 101
        headers = dict(response.headers) if response is not None else {}
        protocol = client.connection.subprotocol
        detail = [f"HTTP {status} (subprotocol: {protocol or 'none'})"]
        detail.extend(f"{k}: {v}" for k, v in headers.items())
        log.add(label, "recv", "open", "\n".join(detail), size=0)
        return client

    def observe(self, direction: str, data: str | bytes, at_ns: int) -> None:
        kind = "binary" if isinstance(data, bytes) else "text"
        self.log.add(self.label, "send" if direction == "send" else "recv", kind, data, at_ns=at_ns)

    def _log_close(self, text: str) -> None:
        """Log the peer's close once, however it was noticed (recv, wait_closed, close)."""
        if not self._close_logged:
            self._close_logged = True
            self.log.add(self.label, "recv", "close", text, size=0)

    async def recv(self, timeout_s: float) -> TimedEvent:
        try:
            return await super().recv(timeout_s)
        except TargetClosed as exc:
            self._log_close(f"code {exc.code} {exc.reason!r}")
            raise
        except TargetTimeout:
            self.log.add(self.label, "meta", "timeout", f"no frame within {timeout_s:g} s", size=0)
            raise

    async def wait_closed(self, timeout_s: float) -> tuple[int | None, str]:
        try:
            code, reason = await super().wait_closed(timeout_s)
        except TargetTimeout:
            self.log.add(
                self.label, "meta", "timeout", f"not closed within {timeout_s:g} s", size=0
            )
            raise
        self._log_close(f"code {code} {reason!r}")
        return code, reason

    async def ping(self, timeout_s: float) -> float:
        self.log.add(self.label, "send", "ping", "", size=0)
        try:
            rtt = await super().ping(timeout_s)
        except TargetTimeout:
            self.log.add(self.label, "meta", "timeout", f"no pong within {timeout_s:g} s", size=0)
            raise
        self.log.add(self.label, "recv", "pong", f"{rtt:.3f} ms round trip", size=0)
        return rtt

    async def close(self) -> None:
        if self.is_open:
            self.log.add(self.label, "send", "close", "code 1000", size=0)
            await super().close()
        received = self.close_received
        shown = f"code {received[0]} {received[1]!r}" if received else "no close frame received"
        self._log_close(shown)

    @property
    def close_received(self) -> tuple[int, str] | None:
        """The close frame the peer sent, if any (code, reason)."""
        frame = self.connection.protocol.close_rcvd
        return (frame.code, frame.reason) if frame is not None else None
