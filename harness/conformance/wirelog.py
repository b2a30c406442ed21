"""The per-case wire log: every frame and HTTP exchange, with direction and time.

`RecordingWsClient` is the transport's `WsClient` with its `observe` hook filled in, plus the
events only a recorder cares about (handshake, refusal, pings, closes, timeouts). Keys are never
logged. Times are milliseconds since the case started, taken where the transport took them
(`perf_counter_ns` at the socket).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from harness.errors import TransportError
from harness.transport.failures import HttpStatusError, TargetClosed, TargetTimeout
from harness.transport.received import TimedEvent
from harness.transport.ws import BETA_HEADER, WsClient

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
        value = json.loads(text)
    except ValueError:
        return clip(text, limit)
    shortened = json.dumps(_elide_strings(value, LONG_FIELD_CHARS), ensure_ascii=False)
    if len(shortened) > limit:
        shortened = json.dumps(_elide_lists(json.loads(shortened)), ensure_ascii=False)
    return shortened


def identity_headers(headers: Mapping[str, str]) -> str:
    """The reply headers that name the server and its version (`Server`, `x-...-version`), one
    per line with a leading newline, for the HTTP rows of the wire log; "" when none."""
    shown = [
        f"{k}: {v}"
        for k, v in headers.items()
        if k.lower() == "server" or (k.lower().startswith("x-") and k.lower().endswith("version"))
    ]
    return "".join("\n" + line for line in shown)


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
