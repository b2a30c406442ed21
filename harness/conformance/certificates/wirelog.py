"""The per-case wire log: every frame and HTTP exchange, with direction and time.

The case's connections write into it (harness.conformance.runner.recording); the reports show
it, compacted (wirelog_compact). Keys are never logged. Times are milliseconds since the case
started, taken where the transport took them (`perf_counter_ns` at the socket).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from harness.protocol.wire import loads_document

Direction = Literal["send", "recv", "meta"]
DEFAULT_MAX_CHARS = 4096
FULL_MAX_CHARS = 1 << 20  # --full-wire-log: frames kept whole up to 1 MiB


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
    """`text` cut to about `limit` characters in the middle, saying how much is gone."""
    if len(text) <= limit:
        return text
    head = max(limit * 2 // 3, 1)
    tail = max(limit - head, 0)
    gone = len(text) - head - tail
    return f"{text[:head]}…[{gone} of {len(text)} characters elided]…{text[len(text) - tail :]}"


# Members a finding quotes: never elided inside, whatever their size.
PROTECTED_KEYS: Final = frozenset(
    {"usage", "status", "error", "incomplete_details", "id", "type", "code", "sequence_number"}
)
LONG_FIELD_CHARS: Final = 240  # a longer string member is elided in the middle
LIST_KEEP: Final = 4  # a long list keeps its first and last LIST_KEEP // 2 ... items


def _elide_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, list):
        return [_elide_strings(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: v if k in PROTECTED_KEYS else _elide_strings(v, limit) for k, v in value.items()}
    return value


def _elide_lists(value: Any) -> Any:
    if isinstance(value, list):
        items = [_elide_lists(v) for v in value]
        if len(items) <= LIST_KEEP + 1:
            return items
        keep = LIST_KEEP // 2
        marker = f"…[{len(items) - 2 * keep} of {len(items)} items elided]…"
        return [*items[:keep], marker, *items[-keep:]]
    if isinstance(value, dict):
        return {k: v if k in PROTECTED_KEYS else _elide_lists(v) for k, v in value.items()}
    return value


def shorten_json(text: str, limit: int) -> str:
    """A JSON frame longer than `limit`, shortened without cutting what findings quote: long
    string members are elided in the middle (their length shown), then long lists, never
    inside `usage`, `status`, `error` and the other PROTECTED_KEYS. Non-JSON is clipped."""
    if len(text) <= limit:
        return text
    try:
        value = loads_document(text)  # a target's frame: depth bounded, never RecursionError
    except ValueError:
        return clip(text, limit)
    shortened = json.dumps(_elide_strings(value, LONG_FIELD_CHARS), ensure_ascii=False)
    if len(shortened) > limit:
        shortened = json.dumps(_elide_lists(json.loads(shortened)), ensure_ascii=False)
    return shortened


def printable(data: str | bytes, limit: int) -> str:
    if isinstance(data, bytes):
        shown = data[: limit // 2]
        more = f"… [{len(data) - len(shown)} more bytes]" if len(data) > len(shown) else ""
        return "0x" + shown.hex() + more
    return shorten_json(data, limit)


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
