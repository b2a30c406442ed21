"""HTTP client for the baseline: `POST /v1/responses` as SSE or JSON, and retrieve.

HTTP/1.1 by h11 over asyncio, with a small keep-alive pool per client (one base URL): building a
client costs nothing (no TLS context per client: one per process, built on first https use), so
a client per rollout is fine. Every wait is bounded: a free connection, the connect (and TLS
handshake), the response head, each read of the body. Errors before the stream are
`HttpStatusError` with the body.

SSE is parsed from the de-chunked body bytes by the sans-I/O `sse_wire.py`; each event is
stamped with the arrival of the bytes that completed it. Stamps are taken at the socket
(`sockets.py`: the kernel's receive time, else the moment the event loop hands the bytes over),
and the request's send stamp right before its bytes are written (`stream(on_sent=...)`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import time
import urllib.parse
import zlib
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import h11

from harness.errors import TransportError
from harness.protocol import wire
from harness.transport.failures import GarbageFrame, HttpStatusError, TargetClosed, TargetTimeout
from harness.transport.h11_loop import next_h11_event
from harness.transport.received import TimedEvent, loads_json
from harness.transport.sockets import StampingSocket, arrival_ns, open_socket, ssl_context
from harness.transport.sse_wire import SseParser, parse_event

MAX_BODY_BYTES = 64 * 1024 * 1024  # a JSON or error body larger than this is refused
_HIGH_WATER_BYTES = 4 * 1024 * 1024  # unread bytes before reading pauses
_LOW_WATER_BYTES = 1024 * 1024


class SseClient:
    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        max_connections: int = 256,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_connections = max(1, max_connections)
        self._secure = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._secure else 80)
        self._prefix = parts.path.rstrip("/")
        netloc = parts.netloc.rsplit("@", 1)[-1]
        headers = [
            (b"host", netloc.encode() if netloc.isascii() else netloc.encode("idna")),
            (b"user-agent", b"wsmode"),
            (b"accept-encoding", b"identity"),
        ]
        if api_key:
            headers.append((b"authorization", f"Bearer {api_key}".encode()))
        self._headers = headers
        self._idle: list[_Connection] = []  # keep-alive connections, most recent last
        self._open = 0  # connections in use or idle
        self._slot_waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._closed = False
        self.bytes_sent = 0
        self.bytes_received = 0
        self.connections_opened = 0  # TCP connections made (keep-alive reuse keeps this low)

    async def __aenter__(self) -> SseClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()
            self._open -= 1

    # -- requests --------------------------------------------------------------------------------
    async def stream(
        self, body: Mapping[str, Any], *, on_sent: Callable[[int], None] | None = None
    ) -> AsyncGenerator[TimedEvent, None]:
        """POST with stream:true; yields events until the server ends the stream.

        `on_sent` gets the request's send stamp (perf_counter_ns as its bytes went out). A non-2xx
        answer raises `HttpStatusError` with its body.
        """
        parser = SseParser()
        received_ns = 0
        async with contextlib.aclosing(self._stream_body(body, None, on_sent, None)) as chunks:
            async for data, received_ns in chunks:
                for raw, size in parser.feed(data):
                    yield TimedEvent(parse_event(raw), received_ns, size)
        for raw, size in parser.end():
            yield TimedEvent(parse_event(raw), received_ns, size)

    async def stream_blocks(
        self,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        on_sent: Callable[[int], None] | None = None,
        on_head: Callable[[int, dict[str, str]], None] | None = None,
    ) -> AsyncGenerator[tuple[bytes, int], None]:
        """As `stream`, for checkers: every SSE block whole, with the arrival of its last byte.

        A block's lines end in LF, without the blank line that ended it; comments, `event:`
        lines and `[DONE]` are all there. `on_head(status, headers)` sees a 2xx response's head
        before its first block; `headers` are added to the request's.
        """
        parser = SseParser()
        received_ns = 0
        body_chunks = self._stream_body(body, headers, on_sent, on_head)
        async with contextlib.aclosing(body_chunks) as chunks:
            async for data, received_ns in chunks:
                for block in parser.blocks(data):
                    yield block, received_ns
        last = parser.end_block()
        if last is not None:
            yield last, received_ns

    async def _stream_body(
        self,
        body: Mapping[str, Any],
        headers: Mapping[str, str] | None,
        on_sent: Callable[[int], None] | None,
        on_head: Callable[[int, dict[str, str]], None] | None,
    ) -> AsyncGenerator[tuple[bytes, int], None]:
        """The streaming POST: its body's bytes (de-chunked, decompressed), each with its stamp."""
        content = wire.dumps({**body, "stream": True}).encode()
        self.bytes_sent += len(content)
        request = self._request(b"POST", "/responses", content, b"text/event-stream", headers)
        connection, response, sent_ns = await self._open_exchange(request)
        if on_sent is not None:
            on_sent(sent_ns)
        reusable = False
        try:
            if not 200 <= response.status_code < 300:
                raw = await self._read_body(connection)
                reusable = connection.finish()
                raise HttpStatusError(response.status_code, raw, _headers(response))
            if on_head is not None:
                on_head(response.status_code, _headers(response))
            decoder = _decoder(response)
            while True:
                event = await self._next_body_event(connection)
                if type(event) is h11.Data:
                    data = bytes(event.data)
                    self.bytes_received += len(data)
                    if decoder is not None:
                        data = _decompress(decoder, data)
                    yield data, connection.chunk_ns
                elif type(event) is h11.EndOfMessage:
                    break
            if decoder is not None:
                tail = _decompress(decoder, None)
                if tail:
                    yield tail, connection.chunk_ns
            reusable = connection.finish()
        finally:
            self._release(connection, reusable)

    async def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST without streaming; returns the Response object."""
        return await self._json(b"POST", "/responses", wire.dumps(body).encode())

    async def retrieve(self, response_id: str) -> dict[str, Any]:
        return await self._json(b"GET", "/responses/" + urllib.parse.quote(response_id, safe=""))

    async def request(
        self,
        method: str,
        path: str,
        content: bytes | None = None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> HttpReply:
        """Any request, answered as it came: status, headers and the (decompressed) body."""
        if content is not None:
            self.bytes_sent += len(content)
        request = self._request(method.encode(), path, content, b"application/json", headers)
        connection, response, _ = await self._open_exchange(request)
        reusable = False
        try:
            raw = await self._read_body(connection)
            reusable = connection.finish()
        finally:
            self._release(connection, reusable)
        decoder = _decoder(response)
        if decoder is not None:
            raw = _decompress(decoder, raw) + _decompress(decoder, None)
        return HttpReply(response.status_code, _headers(response), raw)

    async def _json(self, method: bytes, path: str, content: bytes | None = None) -> dict[str, Any]:
        reply = await self.request(method.decode(), path, content)
        if not 200 <= reply.status < 300:
            raise HttpStatusError(reply.status, reply.body, reply.headers)
        try:
            payload = loads_json(reply.body.decode())
        except ValueError:
            raise GarbageFrame("a response body that is not JSON", reply.body) from None
        if not isinstance(payload, dict):
            raise GarbageFrame("a response body that is not a JSON object", reply.body)
        return payload

    def _request(
        self,
        method: bytes,
        path: str,
        content: bytes | None,
        accept: bytes,
        extra: Mapping[str, str] | None = None,
    ) -> _Request:
        headers = [*self._headers, (b"accept", accept)]
        if extra:
            headers += [(name.lower().encode(), value.encode()) for name, value in extra.items()]
        if content is not None:
            headers.append((b"content-type", b"application/json"))
            headers.append((b"content-length", str(len(content)).encode()))
        return _Request(method, (self._prefix + path).encode(), headers, content)

    # -- one exchange on a pooled connection -----------------------------------------------------
    async def _open_exchange(self, request: _Request) -> tuple[_Connection, h11.Response, int]:
        """Send `request` on a keep-alive connection and read the response head.

        A reused connection the server closed while it sat idle (nothing of a response came)
        is replaced by a new one, once.
        """
        for attempt in (1, 2):
            connection, reused = await self._acquire()
            try:
                sent_ns = await connection.send_request(request, self.timeout_s)
                response = await self._read_head(connection)
            except _ClosedBeforeResponse as exc:
                self._release(connection, False)
                if reused and attempt == 1:
                    continue
                raise TargetClosed(f"connection closed before the response: {exc}") from None
            except BaseException:
                self._release(connection, False)
                raise
            return connection, response, sent_ns
        raise AssertionError("unreachable")

    async def _read_head(self, connection: _Connection) -> h11.Response:
        while True:
            event = await self._next_event(connection, "response head")
            if type(event) is h11.Response:
                return event
            if type(event) is h11.ConnectionClosed:
                raise _ClosedBeforeResponse("the server closed the connection")

    async def _next_body_event(self, connection: _Connection) -> Any:
        event = await self._next_event(connection, "response data")
        if type(event) is h11.ConnectionClosed:
            raise TargetClosed("the server closed the connection mid-response")
        return event

    async def _next_event(self, connection: _Connection, what: str) -> Any:
        """The next h11 event, reading (bounded) as needed; protocol errors as TransportError."""
        try:
            return await next_h11_event(
                connection.h11, functools.partial(connection.read, self.timeout_s, what)
            )
        except h11.RemoteProtocolError as exc:
            if connection.received == 0 and connection.eof:
                raise _ClosedBeforeResponse(str(exc)) from None
            if connection.eof:
                raise TargetClosed(f"the server closed the connection: {exc}") from None
            raise TransportError(f"malformed HTTP response: {exc}") from None
        except RuntimeError as exc:  # h11 fed bytes after the end of the stream
            raise TransportError(f"HTTP connection unusable: {exc}") from None

    async def _read_body(self, connection: _Connection) -> bytes:
        pieces: list[bytes] = []
        size = 0
        while True:
            event = await self._next_body_event(connection)
            if type(event) is h11.Data:
                pieces.append(bytes(event.data))
                size += len(event.data)
                self.bytes_received += len(event.data)
                if size > MAX_BODY_BYTES:
                    raise TransportError(f"response body over {MAX_BODY_BYTES} bytes")
            elif type(event) is h11.EndOfMessage:
                return b"".join(pieces)

    # -- the pool -------------------------------------------------------------------------------
    async def _acquire(self) -> tuple[_Connection, bool]:
        """(a connection, whether it is a reused one); waits (bounded) for a free slot."""
        if self._closed:
            raise TransportError("the client is closed")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        while True:
            while self._idle:
                connection = self._idle.pop()
                if connection.idle_ok():
                    return connection, True
                connection.close()
                self._open -= 1
            if self._open < self.max_connections:
                break
            waiter = loop.create_future()
            self._slot_waiters.append(waiter)
            try:
                async with asyncio.timeout_at(deadline):
                    await waiter
            except TimeoutError:
                raise TargetTimeout(
                    f"no free connection within {self.timeout_s} s ({self.max_connections} in use)"
                ) from None
            finally:
                if waiter in self._slot_waiters:
                    self._slot_waiters.remove(waiter)
        self._open += 1
        try:
            connection = await self._connect()
        except BaseException:
            self._open -= 1
            self._wake_slot_waiter()
            raise
        return connection, False

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        where = f"{self._host}:{self._port}"
        try:
            async with asyncio.timeout(self.timeout_s):
                sock = await open_socket(self._host, self._port)
                try:
                    protocol = _StampingProtocol(sock)
                    if self._secure:
                        await loop.create_connection(
                            lambda: protocol,
                            sock=sock,
                            ssl=ssl_context(),
                            server_hostname=self._host,
                            ssl_handshake_timeout=self.timeout_s,
                        )
                    else:
                        await loop.create_connection(lambda: protocol, sock=sock)
                except BaseException:
                    sock.close()
                    raise
        except TimeoutError:
            raise TargetTimeout(f"cannot connect to {where} within {self.timeout_s} s") from None
        except OSError as exc:  # the cause kept: its errno
            raise TransportError(f"cannot connect to {where}: {exc}") from exc
        self.connections_opened += 1
        return _Connection(protocol)

    def _release(self, connection: _Connection, reusable: bool) -> None:
        if reusable and not self._closed and connection.idle_ok():
            self._idle.append(connection)
        else:
            connection.close()
            self._open -= 1
        self._wake_slot_waiter()

    def _wake_slot_waiter(self) -> None:
        while self._slot_waiters:
            waiter = self._slot_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


@dataclass
class HttpReply:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


class _ClosedBeforeResponse(Exception):
    """The connection ended before any byte of a response."""


class _Request:
    __slots__ = ("content", "headers", "method", "target")

    def __init__(
        self,
        method: bytes,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        content: bytes | None,
    ) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.content = content


class _StampingProtocol(asyncio.Protocol):
    """Bytes in, each chunk with its arrival stamp; flow control both ways."""

    def __init__(self, sock: StampingSocket) -> None:
        self.sock = sock
        self.transport: asyncio.Transport | None = None
        self.chunks: collections.deque[tuple[bytes, int]] = collections.deque()
        self.buffered = 0
        self.last_ns = 0
        self.eof = False
        self.lost = False
        self.error: Exception | None = None
        self.reading_paused = False
        self.writing_paused = False
        self.waiter: asyncio.Future[None] | None = None
        self.drain_waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.last_ns = arrival_ns(self.sock, self.last_ns)
        self.chunks.append((data, self.last_ns))
        self.buffered += len(data)
        self._wake()
        if self.buffered > _HIGH_WATER_BYTES and not self.reading_paused:
            self.reading_paused = True
            assert self.transport is not None
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.eof = True
        self.error = exc
        self._wake()
        if self.drain_waiter is not None and not self.drain_waiter.done():
            self.drain_waiter.set_result(None)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self.drain_waiter is not None and not self.drain_waiter.done():
            self.drain_waiter.set_result(None)

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def pop(self) -> tuple[bytes, int] | None:
        if not self.chunks:
            return None
        chunk = self.chunks.popleft()
        self.buffered -= len(chunk[0])
        if self.reading_paused and self.buffered <= _LOW_WATER_BYTES:
            self.reading_paused = False
            assert self.transport is not None
            self.transport.resume_reading()
        return chunk


class _Connection:
    """One keep-alive HTTP/1.1 connection: h11's state machine over a stamping protocol."""

    def __init__(self, protocol: _StampingProtocol) -> None:
        self.protocol = protocol
        self.h11 = h11.Connection(h11.CLIENT)
        self.chunk_ns = 0  # arrival of the chunk h11 was fed last
        self.received = 0  # bytes received for the current exchange
        self.eof = False  # h11 has been told the stream ended

    def idle_ok(self) -> bool:
        """A pooled connection still usable: open, idle, and nothing unexpected received."""
        protocol = self.protocol
        return (
            not protocol.eof
            and not protocol.chunks
            and protocol.transport is not None
            and not protocol.transport.is_closing()
            and self.h11.our_state is h11.IDLE
            and self.h11.their_state is h11.IDLE
        )

    async def send_request(self, request: _Request, timeout_s: float) -> int:
        """Write the request; returns the stamp taken right before its bytes were written."""
        h = self.h11
        data = h.send(
            h11.Request(method=request.method, target=request.target, headers=request.headers)
        )
        assert data is not None
        if request.content is not None:
            body = h.send(h11.Data(data=request.content))
            assert body is not None
            data += body
        end = h.send(h11.EndOfMessage())
        assert end is not None
        data += end
        self.received = 0
        protocol = self.protocol
        transport = protocol.transport
        if transport is None or protocol.lost or transport.is_closing():
            raise _ClosedBeforeResponse("the connection is closed")
        sent_ns = time.perf_counter_ns()
        transport.write(data)
        if protocol.writing_paused:
            loop = asyncio.get_running_loop()
            protocol.drain_waiter = loop.create_future()
            try:
                async with asyncio.timeout(timeout_s):
                    await protocol.drain_waiter
            except TimeoutError:
                raise TargetTimeout(f"request not written within {timeout_s} s") from None
            finally:
                protocol.drain_waiter = None
        return sent_ns

    async def read(self, timeout_s: float, what: str) -> bytes:
        """The next chunk received (b"" at the end of the stream); TargetTimeout when none comes."""
        protocol = self.protocol
        chunk = protocol.pop()
        if chunk is None:
            if protocol.eof:
                self.eof = True
                return b""
            protocol.waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout_s):
                    await protocol.waiter
            except TimeoutError:
                raise TargetTimeout(f"no {what} within {timeout_s} s") from None
            finally:
                protocol.waiter = None
            chunk = protocol.pop()
            if chunk is None:
                self.eof = True
                return b""
        data, self.chunk_ns = chunk
        self.received += len(data)
        return data

    def finish(self) -> bool:
        """After a complete response: ready the next cycle; whether the connection is reusable."""
        h = self.h11
        if h.our_state is h11.DONE and h.their_state is h11.DONE:
            h.start_next_cycle()
            return True
        return False

    def close(self) -> None:
        transport = self.protocol.transport
        if transport is not None and not transport.is_closing():
            transport.close()


def _headers(response: h11.Response) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in response.headers}


def _decoder(response: h11.Response) -> Any:
    """A zlib decompressor for a gzip/deflate body (not asked for, but sent by some servers)."""
    for name, value in response.headers:
        if name == b"content-encoding":
            encoding = value.strip().lower()
            if encoding in (b"", b"identity"):
                return None
            if encoding in (b"gzip", b"x-gzip"):
                return zlib.decompressobj(16 + zlib.MAX_WBITS)
            if encoding == b"deflate":
                return zlib.decompressobj()
            raise TransportError(f"unsupported content-encoding {encoding.decode('latin-1')}")
    return None


def _decompress(decoder: Any, data: bytes | None) -> bytes:
    """More of a compressed body (None: the rest); GarbageFrame when it does not decompress."""
    try:
        return bytes(decoder.decompress(data) if data is not None else decoder.flush())
    except zlib.error:
        raise GarbageFrame("a response body that does not decompress", data or b"") from None
