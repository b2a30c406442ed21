"""The one-port front door: a connection's request head decides WebSocket or plain HTTP.

WebSocket mode and the HTTP/SSE baseline share one port and one path (docs/PROTOCOL.md §1: the
upgrade is a GET on the path that serves `POST /v1/responses`), so the server cannot know which
a connection is before its head arrives. `FrontDoor` buffers bytes until the blank line that ends
the head, then hands the transport and those bytes to its acceptor; from then on the acceptor's
protocol owns the connection. The WebSocket side is `websockets`' `Server.wrap()` pattern.
Used by the reference server and by the recorder's proxy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Protocol

from websockets.exceptions import SecurityError
from websockets.http11 import Request

from harness.protocol import wire
from harness.protocol.errors import ApiError

_HEAD_END = b"\r\n\r\n"
# After a refusal the rest of what the client sends is read and dropped for this long, so the
# answer reaches it instead of a reset (closing with unread bytes makes the kernel send RST).
LINGER_S = 2.0


class Acceptor(Protocol):
    """Takes over a connection once its head is in; `head` holds every byte read so far."""

    def accept_websocket(self, transport: asyncio.Transport, head: bytes) -> None: ...

    def accept_http(self, transport: asyncio.Transport, head: bytes) -> None: ...


class FrontDoor(asyncio.Protocol):
    """Reads a connection's request head, then hands the transport to WebSocket or HTTP.

    A head over `max_head_bytes` is answered 431 however it was split into reads
    (`answer_oversized=False`: the connection is just closed); with `head_timeout_s`, a head that
    takes longer is aborted. `admit_http`, when given, is asked before an HTTP request is handed
    over: False answers 503 (with Retry-After) without reading further. `waiting`, when given,
    holds every door whose connection is not handed over yet (a stopping server shuts them).
    """

    def __init__(
        self,
        acceptor: Acceptor,
        *,
        max_head_bytes: int,
        head_timeout_s: float | None = None,
        answer_oversized: bool = True,
        admit_http: Callable[[], bool] | None = None,
        waiting: WaitingDoors | None = None,
    ) -> None:
        self.acceptor = acceptor
        self.waiting = waiting
        self.admit_http = admit_http
        self.refused = False
        self.max_head_bytes = max_head_bytes
        self.head_timeout_s = head_timeout_s
        self.answer_oversized = answer_oversized
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.waiting is not None:
            self.waiting.enter(self, transport)
        if self.head_timeout_s is not None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.head_timeout_s, transport.abort)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        if self.refused:
            return  # lingering: dropped
        self.buffer += data
        end = self.buffer.find(_HEAD_END)
        if end < 0 or end + len(_HEAD_END) > self.max_head_bytes:
            if len(self.buffer) > self.max_head_bytes:
                self._refuse_oversized()
            return
        if self._timer is not None:
            self._timer.cancel()
        head = bytes(self.buffer)
        self._leave_waiting()  # a refusal below lingers on its own timer
        if is_websocket_upgrade(head[:end]):
            refusal = upgrade_refusal(head[: end + len(_HEAD_END)])
            if refusal is not None:  # websockets would close without an answer: answer it here
                refuse(self.transport, refusal)
                self.refused = True
                return
            self.acceptor.accept_websocket(self.transport, head)
        elif self.admit_http is not None and not self.admit_http():
            refuse(self.transport, _too_many_connections(), retry_after_s=1)
            self.refused = True
        else:
            self.acceptor.accept_http(self.transport, head)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._leave_waiting()

    def _leave_waiting(self) -> None:
        if self.waiting is not None:
            self.waiting.leave(self)

    def abort(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self.transport is not None:
            self.transport.abort()

    def _refuse_oversized(self) -> None:
        assert self.transport is not None
        self.refused = True
        if self._timer is not None:
            self._timer.cancel()
        if not self.answer_oversized:
            self.transport.close()
            return
        message = f"Request header fields exceed {self.max_head_bytes} bytes."
        refuse(self.transport, ApiError(431, "invalid_request_error", "headers_too_large", message))


class WaitingDoors:
    """The doors whose connection is not handed over yet, so that a stopping server can shut
    them: `shut()` resets each (nothing of theirs was accepted, and a reset tells the client
    now; left open, the socket outlives the event loop and the client waits out its handshake
    timeout), and so is a connection the loop accepted just before the listener closed, whose
    door opens only after."""

    def __init__(self) -> None:
        self._doors: set[FrontDoor] = set()
        self.shut_down = False

    def enter(self, door: FrontDoor, transport: asyncio.Transport) -> None:
        if self.shut_down:
            transport.abort()
        else:
            self._doors.add(door)

    def leave(self, door: FrontDoor) -> None:
        self._doors.discard(door)

    def shut(self) -> None:
        self.shut_down = True
        for door in list(self._doors):
            door.abort()
        self._doors.clear()


def refuse(
    transport: asyncio.Transport, error: ApiError, *, retry_after_s: int | None = None
) -> None:
    """Answer `error` as a whole HTTP/1.1 response with a JSON error body, then close: the
    write side at once, the connection after `LINGER_S` (meanwhile the caller drops input)."""
    body = wire.dumps(error.to_http_body()).encode()
    reason = _REASONS.get(error.status, "Error")
    extra = f"Retry-After: {retry_after_s}\r\n" if retry_after_s is not None else ""
    head = (
        f"HTTP/1.1 {error.status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n"
    )
    transport.write(head.encode("ascii") + body)
    if transport.can_write_eof():
        transport.write_eof()
    asyncio.get_running_loop().call_later(LINGER_S, transport.close)


_REASONS = {
    400: "Bad Request",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
    505: "HTTP Version Not Supported",
}


def _too_many_connections() -> ApiError:
    return ApiError(
        503, "server_error", "too_many_connections", "Too many open HTTP connections; retry."
    )


def upgrade_refusal(head: bytes) -> ApiError | None:
    """Why websockets' own parser (`Request.parse`, run here on the complete head) rejects an
    upgrade request, as an HTTP answer, or None when it accepts it. websockets closes the
    connection without any status on such a request, so the front door answers first: 431 for
    a header line or header count over its limits (8 KiB, 128), 400 otherwise (a POST or an
    HTTP/1.0 request asking for the upgrade, a body, a malformed header)."""
    parser = Request.parse(_line_reader(head))
    try:
        next(parser)  # the reader never waits: the head is complete
    except StopIteration:
        return None
    except SecurityError as exc:
        return ApiError(
            431, "invalid_request_error", "headers_too_large", f"Upgrade request refused: {exc}."
        )
    except Exception as exc:  # every parse failure is the client's bad request
        reason = str(exc)[:200]
        return ApiError(
            400, "invalid_request_error", "invalid_upgrade", f"Upgrade request refused: {reason}."
        )
    return ApiError(400, "invalid_request_error", "invalid_upgrade", "Incomplete upgrade request.")


def _line_reader(head: bytes) -> Callable[[int], Generator[None, None, bytes]]:
    """`read_line` as websockets' parsers call it, over bytes already received: a line longer
    than `max_bytes` raises RuntimeError (its parser's signal for "line too long")."""
    position = 0

    def read_line(max_bytes: int) -> Generator[None, None, bytes]:
        nonlocal position
        end = head.find(b"\n", position) + 1
        if end == 0:
            raise EOFError("the head ended inside a line")
        if end - position > max_bytes:
            raise RuntimeError(f"read {end - position} bytes, expected no more than {max_bytes}")
        line, position = head[position:end], end
        return line
        yield  # a generator, as the parser's `yield from` expects; never reached

    return read_line


def is_websocket_upgrade(head: bytes) -> bool:
    """Whether a request head (without its blank line) asks for `Upgrade: websocket`."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"upgrade" and b"websocket" in value.lower():
            return True
    return False
