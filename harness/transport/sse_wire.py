"""The SSE wire format, sans-I/O: events to bytes, and bytes (any chunking) to events.

docs/PROTOCOL.md §3.1. No sockets, no asyncio, no clock: the reference server and the bench's
minimal server write with `encode_events`; the SSE client (`sse.py`), the conformance checker
and the recorder feed `SseParser` the de-chunked body bytes they read and stamp the events
themselves.

Writing: `event: <type>` and `data: <json>` per event, a blank line after each, no `[DONE]`.
Reading: blocks end at a blank line; lines end in LF, CRLF or CR (a CR at the end of a chunk
waits for the next one, in case an LF follows). Only `data:` lines matter, as in the official
SDK: they are joined by LF, leading spaces dropped; blocks without data (comments,
`event:`-only, keep-alives) and the `[DONE]` sentinel some servers send yield nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.protocol import wire
from harness.transport.failures import GarbageFrame
from harness.transport.received import loads_json

BLANK_LINE_BYTES = 2  # the "\n\n" that ends a block, counted in its size


class SseParser:
    """Incremental SSE framing: bytes in, (data payload, block size) out per complete event."""

    def __init__(self) -> None:
        self.buffer = b""
        self.cr_pending = False

    def feed(self, data: bytes) -> list[tuple[bytes, int]]:
        """(data payload, block size) of each block `data` completes that carries data."""
        out: list[tuple[bytes, int]] = []
        for block in self.blocks(data):
            raw = _block_data(block)
            if raw is not None:
                out.append((raw, len(block) + BLANK_LINE_BYTES))
        return out

    def blocks(self, data: bytes) -> list[bytes]:
        """The blocks `data` completes, whole: LF line ends, without their blank line."""
        if self.cr_pending:
            data = b"\r" + data
            self.cr_pending = False
        if b"\r" in data:
            if data.endswith(b"\r"):
                data = data[:-1]
                self.cr_pending = True
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buffer = self.buffer + data if self.buffer else data
        out: list[bytes] = []
        start = 0
        while True:
            end = buffer.find(b"\n\n", start)
            if end < 0:
                break
            out.append(buffer[start:end])
            start = end + BLANK_LINE_BYTES
        self.buffer = buffer[start:] if start else buffer
        return out

    def end(self) -> list[tuple[bytes, int]]:
        """At the end of the body: a last block without its blank line still counts."""
        size = len(self.buffer) + self.cr_pending
        block = self.end_block()
        raw = _block_data(block) if block is not None else None
        return [(raw, size)] if raw is not None else []

    def end_block(self) -> bytes | None:
        """At the end of the body: the last block if it came without its blank line."""
        rest = self.buffer + (b"\n" if self.cr_pending else b"")
        self.buffer = b""
        self.cr_pending = False
        return rest.rstrip(b"\n") if rest.strip() else None


def encode_events(events: Iterable[Mapping[str, Any]]) -> bytes:
    """Events as SSE blocks, in order, ready for the response body."""
    return "".join(f"event: {e['type']}\ndata: {wire.dumps(e)}\n\n" for e in events).encode()


def parse_event(raw: bytes) -> dict[str, Any]:
    """An SSE data payload as an event (a JSON object), else GarbageFrame."""
    try:
        event = loads_json(raw.decode())
    except ValueError:  # includes invalid UTF-8
        raise GarbageFrame("an SSE data line that is not JSON", raw) from None
    if not isinstance(event, dict):
        raise GarbageFrame("an SSE event that is not a JSON object", raw)
    return event


def block_fields(block: bytes) -> tuple[str | None, bytes | None]:
    """A block's `event:` name and its data (the `data:` lines joined by LF); None if absent."""
    name: str | None = None
    data_lines: list[bytes] = []
    for line in block.split(b"\n"):
        if line.startswith(b"event:"):
            name = line[6:].strip().decode("utf-8", "replace")
        elif line.startswith(b"data:"):
            data_lines.append(line[5:].lstrip())
    return name, b"\n".join(data_lines) if data_lines else None


def _block_data(block: bytes) -> bytes | None:
    if block.startswith(b"event:"):  # the usual shape (§3.1): one event line, one data line
        newline = block.find(b"\n")
        rest = block[newline + 1 :] if newline >= 0 else b""
        if rest.startswith(b"data:") and b"\n" not in rest:
            return _data(rest[5:].lstrip())
    _, data = block_fields(block)
    return _data(data) if data is not None else None


def _data(raw: bytes) -> bytes | None:
    return None if raw == b"[DONE]" else raw
