"""What both transports yield: server events stamped with their arrival time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TimedEvent:
    event: dict[str, Any]
    received_ns: int  # time.perf_counter_ns() when the frame/SSE event was read off the socket
    size_bytes: int  # bytes of the frame (WS) or of the SSE event block (HTTP)

    @property
    def type(self) -> str:
        return str(self.event.get("type", ""))


class TransportError(Exception):
    """The target misbehaved at the transport level: refused, closed, stalled or sent garbage."""


class TargetTimeout(TransportError):
    """A bounded wait ran out: the target stalled."""


class TargetClosed(TransportError):
    def __init__(self, message: str, code: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


class HttpStatusError(TransportError):
    """A non-2xx HTTP answer (an upgrade refusal or an HTTP error), with its body."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}: {body[:200]!r}")
        self.status = status
        self.body = body
        self.headers = headers or {}


class GarbageFrame(TransportError):
    """A frame that is not a JSON object (or a binary frame)."""

    def __init__(self, message: str, raw: bytes | str) -> None:
        super().__init__(message)
        self.raw = raw
