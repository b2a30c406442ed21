"""What both transports yield: server events stamped with their arrival time."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any, NamedTuple

from harness.errors import WsmodeError
from harness.protocol import wire


class TimedEvent(NamedTuple):
    """One server event and when its last byte was read off the socket.

    A named tuple, not a dataclass: one is built per event on the hot path, and a tuple is
    built in half the time of a frozen dataclass, immutable all the same.
    """

    event: dict[str, Any]
    received_ns: int  # time.perf_counter_ns() when the frame/SSE event was read off the socket
    size_bytes: int  # bytes of the frame (WS) or of the SSE event block (HTTP)

    @property
    def type(self) -> str:
        return str(self.event.get("type", ""))


class TransportError(WsmodeError):
    """The target misbehaved at the transport level: refused, closed, stalled or sent garbage."""


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


# the C scanner json.loads calls (JSONDecoder.scan_once is not in the type stubs)
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads_json(text: str) -> Any:
    """`json.loads(text)`, minus its wrapper's cost when `text` is one bare JSON value.

    msgspec parses first where installed (`wire.fast_decode`); what it refuses goes on below.

    The C scanner `json.loads` ends up in, called directly; any text it does not consume whole
    (leading or trailing whitespace, extra data, invalid JSON) goes through `json.loads`, so the
    result and the errors are exactly those of `json.loads`.
    """
    with contextlib.suppress(ValueError):
        return wire.fast_decode(text)  # msgspec, where installed: 3x faster on an event
    try:
        value, end = _scan_json(text, 0)
    except StopIteration:
        return json.loads(text)
    if end != len(text):
        return json.loads(text)
    return value
