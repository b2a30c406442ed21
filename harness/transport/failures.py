"""How a connection to a target fails: the transport family of harness.errors.

Each is a `TransportError`: the target refused, closed, stalled or sent garbage. Mapped here from
what the sockets and the websockets and h11 libraries raise, at the layer's boundary.
"""

from __future__ import annotations

from harness.errors import TransportError


class TargetTimeout(TransportError):
    """A bounded wait ran out: the target stalled."""


class TargetClosed(TransportError):
    def __init__(self, message: str, code: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


class FrameTooLarge(TargetClosed):
    """The target sent a frame over the client's size limit; the client closed with 1009."""

    def __init__(self, size_bytes: int | None, limit_bytes: int | None) -> None:
        size = f"{size_bytes} bytes" if size_bytes is not None else "a size"
        super().__init__(
            f"oversized frame from the target: {size}, over the client's limit of "
            f"{limit_bytes} bytes (closed 1009)",
            1009,
            "message too big",
        )
        self.size_bytes = size_bytes
        self.limit_bytes = limit_bytes


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
