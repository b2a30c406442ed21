"""The per-case wire log: every frame and HTTP exchange, with direction and time.

`RecordingWsClient` is the transport's `WsClient` with its `observe` hook filled in, plus the
events only a recorder cares about (handshake, refusal, pings, closes, timeouts). Keys are never
logged. Times are milliseconds since the case started, taken where the transport took them
(`perf_counter_ns` at the socket).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.transport.events import (
    HttpStatusError,
    TargetClosed,
    TargetTimeout,
    TimedEvent,
    TransportError,
)
from harness.transport.ws import BETA_HEADER, WsClient

Direction = Literal["send", "recv", "meta"]
DEFAULT_MAX_CHARS = 4096


@dataclass(frozen=True, slots=True)
class WireEntry:
    t_ms: float
    conn: str
    dir: Direction
    kind: str  # text, binary, open, refused, close, ping, pong, timeout, http, sse, note
    data: str
    bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "t_ms": self.t_ms,
            "conn": self.conn,
            "dir": self.dir,
            "kind": self.kind,
            "bytes": self.bytes,
            "data": self.data,
        }


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"


def printable(data: str | bytes, limit: int) -> str:
    if isinstance(data, bytes):
        shown = data[: limit // 2]
        more = f"… [{len(data) - len(shown)} more bytes]" if len(data) > len(shown) else ""
        return "0x" + shown.hex() + more
    return clip(data, limit)


class WireLog:
    def __init__(self, *, start_ns: int | None = None, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.start_ns = start_ns if start_ns is not None else time.perf_counter_ns()
        self.max_chars = max_chars
        self.entries: list[WireEntry] = []

    def add(
        self,
        conn: str,
        direction: Direction,
        kind: str,
        data: str | bytes,
        *,
        size: int | None = None,
        at_ns: int | None = None,
    ) -> None:
        at = at_ns if at_ns is not None else time.perf_counter_ns()
        length = size if size is not None else len(data)
        self.entries.append(
            WireEntry(
                round((at - self.start_ns) / 1e6, 3),
                conn,
                direction,
                kind,
                printable(data, self.max_chars),
                length,
            )
        )

    def note(self, conn: str, text: str) -> None:
        self.add(conn, "meta", "note", text, size=0)

    def as_list(self) -> list[dict[str, Any]]:
        return [entry.as_dict() for entry in self.entries]


def format_entries(entries: list[Mapping[str, Any]], limit: int = 300) -> str:
    """The wire log as plain text lines (JUnit system-out, terminal)."""
    arrows = {"send": "->", "recv": "<-", "meta": ".."}
    lines = []
    for entry in entries:
        data = str(entry.get("data", "")).replace("\n", "\\n")
        lines.append(
            f"{entry.get('t_ms', 0):>10.3f} ms  {entry.get('conn', ''):<6} "
            f"{arrows.get(str(entry.get('dir')), '  ')} {entry.get('kind', ''):<8} "
            f"{clip(data, limit)}"
        )
    return "\n".join(lines)


class RecordingWsClient(WsClient):
    """A WsClient whose frames, handshake, pings and close land in a WireLog."""

    def __init__(self, connection: Any, log: WireLog | None = None, label: str = "ws") -> None:
        super().__init__(connection)
        self.log = log if log is not None else WireLog()
        self.label = label

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

    async def recv(self, timeout_s: float) -> TimedEvent:
        try:
            return await super().recv(timeout_s)
        except TargetClosed as exc:
            self.log.add(self.label, "recv", "close", f"code {exc.code} {exc.reason!r}", size=0)
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
        self.log.add(self.label, "recv", "close", f"code {code} {reason!r}", size=0)
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
        if not self.is_open:
            return
        self.log.add(self.label, "send", "close", "code 1000", size=0)
        await super().close()
        received = self.close_received
        shown = f"code {received[0]} {received[1]!r}" if received else "no close frame received"
        self.log.add(self.label, "recv", "close", shown, size=0)

    @property
    def close_received(self) -> tuple[int, str] | None:
        """The close frame the peer sent, if any (code, reason)."""
        frame = self.connection.protocol.close_rcvd
        return (frame.code, frame.reason) if frame is not None else None
