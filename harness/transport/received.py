"""What both transports yield: server events stamped with their arrival time."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any, NamedTuple

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


# the C scanner json.loads calls (JSONDecoder.scan_once is not in the type stubs)
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads_json(text: str) -> Any:
    """`json.loads(text)`, minus its wrapper's cost when `text` is one bare JSON value.

    msgspec parses first where installed (`wire.fast_decode`); what it refuses goes on below.

    The C scanner `json.loads` ends up in, called directly; any text it does not consume whole
    (leading or trailing whitespace, extra data, invalid JSON) goes through `json.loads`, so the
    result and the errors are exactly those of `json.loads`, except that nesting past
    `wire.DOCUMENT_MAX_DEPTH` is refused (WireFormatError) before either parser recurses.
    """
    with contextlib.suppress(ValueError):
        return wire.fast_decode(text)  # msgspec, where installed: 3x faster on an event
    if text.count("[") + text.count("{") > wire.DOCUMENT_MAX_DEPTH:
        # a target's frame of any depth: WireFormatError (a ValueError), never RecursionError
        wire.check_nesting(text, wire.DOCUMENT_MAX_DEPTH)
    try:
        value, end = _scan_json(text, 0)
    except StopIteration:
        return json.loads(text)
    if end != len(text):
        return json.loads(text)
    return value
