"""WebSocket-mode client: one socket, JSON text frames out, time-stamped events in.

Every wait is bounded (connect, each receive, close), so a stalled or misbehaving target ends in a
`TransportError` subclass, never a hang. No compression is offered, like the official SDK.

Time stamps are taken at the socket. The connection runs on a `StampingSocket` (`sockets.py`),
so each chunk read carries the kernel's receive time (else the moment the event loop hands it
over), and `StampedClientConnection`, a websockets `ClientConnection`, queues every complete message
with the stamp of the chunk that completed it. That queue replaces websockets' own message
assembler: a message already read off the socket is taken without awaiting or scheduling
anything (`recv_nowait`), and only an empty queue waits, on one future, until a deadline
(`recv_until`; an exchange sets one deadline for all its events, not one timer per receive).
The send stamp is taken as the frame's bytes are handed to the socket (`last_sent_ns`).

Read messages only through `WsClient` (`recv*`, `wait_closed`): `connection.recv()` would wait
on websockets' assembler, which this connection never feeds.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    InvalidStatus,
    PayloadTooBig,
    WebSocketException,
)
from websockets.frames import OP_BINARY, OP_CONT, OP_TEXT, CloseCode, Frame
from websockets.protocol import OPEN, Event, Protocol
from websockets.streams import StreamReader
from websockets.uri import get_proxy, parse_uri

from harness.errors import TransportError
from harness.protocol import wire
from harness.transport.failures import (
    FrameTooLarge,
    GarbageFrame,
    HttpStatusError,
    TargetClosed,
    TargetTimeout,
)
from harness.transport.received import TimedEvent, loads_json
from harness.transport.sockets import StampingSocket, arrival_ns, open_socket, ssl_context

BETA_HEADER = ("OpenAI-Beta", "responses_websockets=2026-02-06")

# Reading pauses while this many bytes of messages wait unread, and resumes below the low mark.
# Generous on purpose: while reading runs, every message is stamped when it arrives, however far
# behind the consumer is; a paused socket would stamp late what waits in the kernel.
HIGH_WATER_BYTES = 16 * 1024 * 1024
LOW_WATER_BYTES = 4 * 1024 * 1024

Payload = bytes | bytearray | memoryview
Message = tuple[Payload, bool, int]  # payload, is text, arrival (perf_counter_ns)


class Binary(tuple[Payload]):
    """A binary message in the queue (text messages are queued as their bare payload)."""

    __slots__ = ()


class StampedClientConnection(ClientConnection):
    """A client connection that stamps messages at the socket and queues them itself.

    Frames are cut out of each chunk here: a complete, unfragmented, unmasked text frame (the
    only kind a conforming server sends in a stream of events) goes straight to the queue; any
    other frame (control frames, fragments, binary, reserved bits, too large) is handed, whole,
    to websockets' protocol, which checks and answers it as usual. The protocol therefore only
    ever sees whole frames, and this fast path runs only while its parser is verifiably idle
    between frames (`_parser_idle`); otherwise every byte goes through websockets.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sock: StampingSocket | None = None  # the source of kernel arrival stamps, if any
        # unread messages and their arrival stamps, side by side (no tuple per message)
        self.inbox: deque[Payload | Binary] = deque()
        self.arrivals: deque[int] = deque()
        self.inbox_bytes = 0
        self.waiter: asyncio.Future[None] | None = None  # the one reader waiting, if any
        self.chunk_ns = 0  # arrival of the chunk being parsed
        self.fragments: list[Payload] = []
        self.fragments_text = False
        self.reading_paused = False
        self.flow_control = True
        self.stamp_next_write = False
        self.write_ns = 0  # perf_counter_ns when the stamped write was handed to the socket
        self.fast = False  # cutting frames here (see the class docstring)
        self.pending = bytearray()  # the start of a frame not complete yet (fast path)
        self.pending_need = 0  # bytes `pending` must hold before a frame can be complete

    # -- receiving -----------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        self.chunk_ns = arrival_ns(self.sock, self.chunk_ns)
        if not self.fast:
            super().data_received(data)
            if self.response is not None and _parser_idle(self.protocol):
                self.fast = True
            return
        pending = self.pending
        if pending:
            pending += data
            if len(pending) < self.pending_need:
                return
            buffer: bytes | bytearray = bytes(pending)
            pending.clear()
        else:
            buffer = data
        self._cut_frames(buffer)

    def _cut_frames(self, buffer: bytes | bytearray) -> None:
        """Queue the simple text frames in `buffer`, hand others to websockets, keep the rest."""
        size = len(buffer)
        max_size = self.protocol.max_size
        limit = max_size if max_size is not None else 1 << 63
        fragmenting = self.protocol.cur_size is not None
        append = self.inbox.append
        append_arrival = self.arrivals.append
        stamp = self.chunk_ns
        queued = 0
        pos = 0
        need = 2  # bytes from `pos` needed before the frame there can be cut
        while size - pos >= 2:
            b0 = buffer[pos]
            b1 = buffer[pos + 1]
            length = b1 & 0x7F
            header = 2
            if length == 126:
                if size - pos < 4:
                    need = 4
                    break
                length = (buffer[pos + 2] << 8) | buffer[pos + 3]
                header = 4
            elif length == 127:
                if size - pos < 10:
                    need = 10
                    break
                length = int.from_bytes(buffer[pos + 2 : pos + 10], "big")
                header = 10
            if b1 & 0x80:
                header += 4  # a masked frame: websockets will refuse it
            if length > limit:  # websockets fails the connection (1009)
                if queued:
                    self._queued(queued)
                self._leave_fast_path(buffer[pos:])
                return
            end = pos + header + length
            if end > size:
                need = end - pos
                break
            if b0 == 0x81 and b1 < 0x80 and not fragmenting:
                append(buffer[pos + header : end])
                append_arrival(stamp)
                queued += length
                pos = end
                continue
            if queued:
                self._queued(queued)
                queued = 0
            super().data_received(bytes(buffer[pos:end]))  # exactly one whole frame
            pos = end
            if not _parser_idle(self.protocol):
                self._leave_fast_path(buffer[pos:])
                return
            fragmenting = self.protocol.cur_size is not None
        if pos < size:
            self.pending += buffer[pos:]
            self.pending_need = need
        if queued:
            self._queued(queued)

    def _leave_fast_path(self, rest: bytes | bytearray) -> None:
        self.fast = False
        self.pending.clear()
        if rest:
            super().data_received(bytes(rest))

    def eof_received(self) -> None:
        if self.pending:  # let websockets see the torn frame, as it would have
            rest = bytes(self.pending)
            self.pending.clear()
            self.fast = False
            super().data_received(rest)
        return super().eof_received()

    def _queued(self, size: int) -> None:
        self.inbox_bytes += size
        self.wake()
        if self.inbox_bytes > HIGH_WATER_BYTES and self.flow_control and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()

    def process_event(self, event: Event) -> None:
        if self.response is None or not isinstance(event, Frame):
            super().process_event(event)  # the handshake response
            return
        opcode = event.opcode
        if opcode is OP_TEXT or opcode is OP_BINARY:
            if event.fin:
                self._queue(event.data, opcode is OP_TEXT)
            else:
                self.fragments = [event.data]
                self.fragments_text = opcode is OP_TEXT
        elif opcode is OP_CONT:  # the protocol has checked that a fragmented message is open
            self.fragments.append(event.data)
            if event.fin:
                data = b"".join(self.fragments)
                self.fragments = []
                self._queue(data, self.fragments_text)
        else:
            super().process_event(event)  # pongs; pings and closes are answered by the protocol

    def _queue(self, data: Payload, text: bool) -> None:
        self.inbox.append(data if text else Binary((data,)))
        self.arrivals.append(self.chunk_ns)
        self._queued(len(data))

    def pop(self) -> Message | None:
        """The oldest unread message, or None; never waits."""
        if not self.inbox:
            return None
        data = self.inbox.popleft()
        received_ns = self.arrivals.popleft()
        if isinstance(data, Binary):
            self.dequeued(len(data[0]))
            return data[0], False, received_ns
        self.dequeued(len(data))
        return data, True, received_ns

    def dequeued(self, size: int) -> None:
        self.inbox_bytes -= size
        if self.reading_paused and self.inbox_bytes <= LOW_WATER_BYTES:
            self.reading_paused = False
            self.transport.resume_reading()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def stop_flow_control(self) -> None:
        """Read whatever comes (before a close: the peer's close frame must get through)."""
        self.flow_control = False
        if self.reading_paused:
            self.reading_paused = False
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.wake()

    @property
    def lost(self) -> bool:
        return self.connection_lost_waiter.done()

    # -- sending -------------------------------------------------------------------------------
    def send_data(self) -> None:
        if self.stamp_next_write:
            self.stamp_next_write = False
            self.write_ns = time.perf_counter_ns()
        super().send_data()


class WsClient:
    def __init__(self, connection: StampedClientConnection) -> None:
        self.connection = connection
        self.bytes_sent = 0
        self.bytes_received = 0
        self.last_sent_ns = 0  # perf_counter_ns when the last frame sent was handed to the socket
        self._observing = type(self).observe is not WsClient.observe
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        api_key: str | None = None,
        beta_header: bool = False,
        extra_headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        max_size: int | None = 16 * 1024 * 1024,
    ) -> WsClient:
        headers: dict[str, str] = dict(extra_headers or {})
        if api_key is not None:
            headers["Authorization"] = f"Bearer {api_key}"
        if beta_header:
            headers[BETA_HEADER[0]] = BETA_HEADER[1]
        try:
            async with asyncio.timeout(timeout_s):
                connection = await _open(url, headers, max_size)
        except InvalidStatus as exc:
            response = exc.response
            raise HttpStatusError(
                response.status_code, response.body or b"", dict(response.headers)
            ) from None
        except TimeoutError:
            raise TargetTimeout(f"no WebSocket handshake from {url} within {timeout_s} s") from None
        except (OSError, WebSocketException, ValueError) as exc:  # the cause kept: its errno
            raise TransportError(f"cannot connect to {url}: {exc}") from exc
        assert isinstance(connection, StampedClientConnection)
        return cls(connection)

    # -- sending -------------------------------------------------------------------------------
    async def send_json(self, payload: Mapping[str, Any]) -> int:
        return await self.send_text(wire.dumps(payload))

    def observe(self, direction: str, data: str | bytes, at_ns: int) -> None:
        """Hook for recorders (the conformance wire log): every frame sent or received."""

    async def send_text(self, text: str) -> int:
        """Send one text frame; returns its payload bytes. Stamps `last_sent_ns`."""
        data = text.encode()
        await self._send(data, True, text)
        self.bytes_sent += len(data)
        return len(data)

    async def send_bytes(self, data: bytes) -> None:
        await self._send(data, False, data)

    async def _send(self, data: bytes, text: bool, shown: str | bytes) -> None:
        connection = self.connection
        connection.stamp_next_write = True
        try:
            await connection.send(data, text=text)
        except ConnectionClosed as exc:
            self.observe("send", shown, time.perf_counter_ns())
            raise _closed(exc) from None
        finally:
            connection.stamp_next_write = False
        self.last_sent_ns = connection.write_ns
        self.observe("send", shown, connection.write_ns)

    # -- receiving -----------------------------------------------------------------------------
    def recv_nowait(self) -> TimedEvent | None:
        """The next event already read off the socket, or None. GarbageFrame for a bad frame."""
        connection = self.connection
        inbox = connection.inbox
        if not inbox:
            return None
        data = inbox.popleft()
        received_ns = connection.arrivals.popleft()
        if isinstance(data, Binary):
            raw = bytes(data[0])
            connection.dequeued(len(raw))
            self.bytes_received += len(raw)
            self.observe("recv", raw, received_ns)
            raise GarbageFrame("binary frame from the server", raw)
        size = len(data)
        connection.inbox_bytes -= size
        if connection.reading_paused:
            connection.dequeued(0)
        self.bytes_received += size
        try:
            decoded = str(data, "utf-8")
        except UnicodeDecodeError as exc:
            raw = bytes(data)
            self.observe("recv", raw, received_ns)
            self._fail(CloseCode.INVALID_DATA, f"{exc.reason} at position {exc.start}")
            raise GarbageFrame("a text frame that is not valid UTF-8", raw) from None
        if self._observing:
            self.observe("recv", decoded, received_ns)
        try:
            event = loads_json(decoded)
        except ValueError:
            raise GarbageFrame("a text frame that is not JSON", decoded) from None
        if not isinstance(event, dict):
            raise GarbageFrame("a JSON frame that is not an object", decoded)
        return TimedEvent(event, received_ns, size)

    async def recv_until(self, deadline: float) -> TimedEvent:
        """The next event; TargetTimeout once `deadline` (event loop time) has passed.

        TargetClosed when the connection closed with nothing left to read, GarbageFrame for a
        frame that is not one JSON object.
        """
        while True:
            timed = self.recv_nowait()
            if timed is not None:
                return timed
            if self.connection.lost:
                raise _closed_now(self.connection)
            await self._wait(deadline)

    async def recv(self, timeout_s: float) -> TimedEvent:
        """The next event; TargetTimeout, TargetClosed or GarbageFrame instead of hanging."""
        timed = self.recv_nowait()
        if timed is not None:
            return timed
        try:
            return await self.recv_until(self.connection.loop.time() + timeout_s)
        except TargetTimeout:
            raise TargetTimeout(f"no event within {timeout_s} s") from None

    async def _wait(self, deadline: float) -> None:
        """Wait until a message is queued, the connection is lost or `deadline` passes.

        One timer serves every wait up to the same deadline; a wake-up from an earlier timer
        is harmless (the callers look again and wait again).
        """
        connection = self.connection
        loop = connection.loop
        if loop.time() >= deadline:
            raise TargetTimeout("deadline passed")
        if self._timer is None or self._timer_at > deadline:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_at(deadline, self._on_timer)
            self._timer_at = deadline
        waiter = connection.waiter = loop.create_future()
        try:
            await waiter
        finally:
            connection.waiter = None

    def _on_timer(self) -> None:
        self._timer = None
        self.connection.wake()

    def clear_deadline(self) -> None:
        """Drop the timer of the last deadline waited for (an exchange calls it when done)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fail(self, code: CloseCode, reason: str) -> None:
        """Fail the connection, as websockets does for a text frame that is not UTF-8."""
        connection = self.connection
        if connection.protocol.state is OPEN:
            connection.protocol.fail(code, reason)
            try:
                connection.send_data()
            except OSError:
                connection.transport.abort()

    async def wait_closed(self, timeout_s: float) -> tuple[int | None, str]:
        """Wait for the server to close; returns (code, reason). Frames in between are dropped."""
        connection = self.connection
        deadline = connection.loop.time() + timeout_s
        while True:
            while (message := connection.pop()) is not None:
                data, text, received_ns = message
                self.bytes_received += len(data)
                shown = str(data, "utf-8", "replace") if text else bytes(data)
                self.observe("recv", shown, received_ns)
            if connection.lost:
                received = connection.protocol.close_rcvd
                return (received.code, received.reason) if received else (None, "")
            try:
                await self._wait(deadline)
            except TargetTimeout:
                raise TargetTimeout(f"connection not closed within {timeout_s} s") from None

    async def ping(self, timeout_s: float) -> float:
        """Round-trip time of a WebSocket ping, in ms."""
        start = time.perf_counter()
        try:
            waiter = await self.connection.ping()
            async with asyncio.timeout(timeout_s):
                await waiter
        except TimeoutError:
            raise TargetTimeout(f"no pong within {timeout_s} s") from None
        except ConnectionClosed as exc:
            raise _closed(exc) from None
        return (time.perf_counter() - start) * 1000

    @property
    def is_open(self) -> bool:
        return self.connection.close_code is None

    async def close(self) -> None:
        self.clear_deadline()
        self.connection.stop_flow_control()
        try:
            async with asyncio.timeout(3):
                await self.connection.close()
        except (TimeoutError, ConnectionClosed, OSError):
            self.connection.transport.abort()


async def _open(url: str, headers: dict[str, str], max_size: int | None) -> StampedClientConnection:
    """Open the connection on a `StampingSocket` (kernel arrival stamps).

    Through a proxy, or when the server redirects the upgrade (websockets cannot follow a
    redirect on a socket it was given), websockets opens the connection itself instead, and
    messages are stamped when the event loop hands them over.
    """
    options: dict[str, Any] = {
        "additional_headers": headers,
        "compression": None,
        "max_size": max_size,
        "ping_interval": None,  # the harness measures; it does not want extra traffic
        "close_timeout": 2,
        "user_agent_header": "wsmode",
        "open_timeout": None,  # the caller bounds the whole opening
    }
    uri = parse_uri(url)
    if uri.secure:
        options["ssl"] = ssl_context()
    if get_proxy(uri) is None:
        sock = await open_socket(uri.host, uri.port)
        try:
            connection = await connect(
                url, sock=sock, create_connection=StampedClientConnection, **options
            )
        except ValueError as exc:
            sock.close()
            if not isinstance(exc.__cause__, InvalidStatus):  # not a redirect it cannot follow
                raise
        except BaseException:
            sock.close()  # websockets aborted its transport, if it had one
            raise
        else:
            assert isinstance(connection, StampedClientConnection)
            connection.sock = sock  # from here on (the handshake is stamped in user space)
            return connection
    connection = await connect(url, create_connection=StampedClientConnection, **options)
    assert isinstance(connection, StampedClientConnection)
    return connection


_AT_EOF = StreamReader.at_eof.__code__


def _parser_idle(protocol: Protocol) -> bool:
    """Whether websockets' frame parser waits between two frames with nothing buffered.

    Looks at the generator the parser is suspended in: between frames it is `at_eof`. Anything
    unexpected (another websockets version, a torn frame, a closing connection, an extension)
    reads as not idle, which only keeps the fast path off.
    """
    if protocol.state is not OPEN or protocol.reader.buffer or protocol.extensions:
        return False
    generator: Any = protocol.parser
    while (inner := getattr(generator, "gi_yieldfrom", None)) is not None:
        generator = inner
    return getattr(generator, "gi_code", None) is _AT_EOF


def _closed(exc: ConnectionClosed) -> TargetClosed:
    too_big = exc.__cause__
    if isinstance(too_big, PayloadTooBig):  # we failed the connection: the frame was too big
        return FrameTooLarge(too_big.size, too_big.max_size)
    received = exc.rcvd
    code = received.code if received else None
    reason = received.reason if received else ""
    return TargetClosed(f"connection closed (code {code}, reason {reason!r})", code, reason)


def _closed_now(connection: StampedClientConnection) -> TargetClosed:
    return _closed(connection.protocol.close_exc)
