"""The HTTP side of the one port: `POST /v1/responses` (JSON or SSE), compaction, retrieve,
health, metrics.

HTTP/1.1 is parsed by h11 (sans-I/O) over asyncio streams. SSE framing follows PROTOCOL.md §3.1:
`event: <type>` and `data: <json>` per event, no `[DONE]`; errors before the first event are
ordinary HTTP errors with an `{"error": {...}}` body.

Routes below `/v1/responses` (`/v1` optional): the collection itself (POST creates; a GET
without `Upgrade` is 426, PROTOCOL.md §1.1), the reserved segments (`compact`), and
`/{response_id}` (GET; with `?stream=true&starting_after=N` for a background response) and
`/{response_id}/cancel` (POST, background responses: `runtime/background.py`). A reserved
segment is an endpoint, never an id: `GET /v1/responses/compact` is 405, not a lookup of a
response named "compact".
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import h11

from harness.protocol import errors, wire
from harness.protocol.errors import ApiError
from harness.protocol.events import Event
from harness.protocol.requests import CreateRequest, InvalidRequest, parse_compact, parse_create
from harness.transport.h11_loop import H11Event, next_h11_event, read_within
from harness.transport.sse_wire import encode_events
from reference_server.front.api_headers import api_headers
from reference_server.front.auth import KeyRing
from reference_server.front.connection import StampedStreamProtocol
from reference_server.pipeline.outbox import Send
from reference_server.pipeline.refusals import RequestRefused
from reference_server.runtime.background import BackgroundRun
from reference_server.runtime.logs import connection_id
from reference_server.runtime.services import Services
from reference_server.runtime.turn import TurnContext, TurnRunner

_HTTP_VERSIONS = (b"1.0", b"1.1")
_RESPONSES_PATH = re.compile(r"^(?:/v1)?/responses(?:/(?P<rest>.*))?$")
_RESPONSE_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_CANCEL = re.compile(r"(?P<id>[A-Za-z0-9_.-]{1,128})/cancel")  # a background response's
#: Segments after `/responses` that name an endpoint (the API's), never a response id.
RESERVED_SEGMENTS = frozenset({"compact"})
KEEP_ALIVE_TIMEOUT_S = 5.0
# RFC 9110 §15.5.22: a 426 names the protocol to upgrade to
_UPGRADE_HEADERS = [("upgrade", "websocket"), ("connection", "Upgrade")]


class _Gone(ConnectionError):
    pass


class _TooLarge(Exception):
    """The body is over the limit: 413 has been answered and the rest read and dropped."""


class HttpConnection:
    def __init__(
        self,
        services: Services,
        keyring: KeyRing,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        stamps: StampedStreamProtocol | None = None,
    ) -> None:
        self.services = services
        self.stamps = stamps  # when each request's first bytes arrived
        self.keyring = keyring
        self.reader = reader
        self.writer = writer
        self.limits = services.config.limits
        self.h11 = h11.Connection(
            h11.SERVER, max_incomplete_event_size=self.limits.max_http_header_bytes
        )
        self.runner = TurnRunner(services)
        self.busy = False  # handling a request (a drain waits for it)
        self.connection_id = connection_id("http")
        self._declared_length = 0  # the current request's Content-Length (0: none or chunked)
        self._started_at = time.perf_counter()  # the current request's head was read

    async def serve(self) -> None:
        try:
            while True:
                # a keep-alive wait, then the head: bounded as a whole, not only per read
                async with asyncio.timeout(KEEP_ALIVE_TIMEOUT_S + self.limits.handshake_timeout_s):
                    event = await self._next_event(KEEP_ALIVE_TIMEOUT_S)
                if not isinstance(event, h11.Request):
                    break
                self.busy = True
                try:
                    await self._handle(event)
                finally:
                    self.busy = False
                if self.h11.our_state is not h11.DONE or self.h11.their_state is not h11.DONE:
                    break
                self.h11.start_next_cycle()
        except h11.RemoteProtocolError as exc:
            await self._refuse_malformed(exc)
        except (_Gone, TimeoutError, ConnectionError):
            pass
        finally:
            self.writer.close()

    def close_for_shutdown(self, cut_after_s: float) -> None:
        """The server stops (the drain deadline passed, or `stop()`): a request still being
        answered hears `server_shutting_down`, as a WebSocket lane does. An SSE stream under way
        gets it as its last event and the body ends there; a request not yet answered gets it as
        a 503. Written at once, without awaiting, so the caller cancels the handler's task right
        after and no event of the cut response follows the error."""
        if not self.busy:
            return
        error = errors.server_shutting_down(cut_after_s=cut_after_s)
        with contextlib.suppress(h11.LocalProtocolError):
            if self.h11.our_state is h11.SEND_BODY:  # only an SSE stream is written in parts
                data = self.h11.send(h11.Data(data=encode_events([error.to_event()])))
                self.writer.write(data + self.h11.send(h11.EndOfMessage()))
            elif self.h11.our_state is h11.SEND_RESPONSE:
                self.writer.write(self._error_bytes(error, close=True))

    async def _refuse_malformed(self, exc: h11.RemoteProtocolError) -> None:
        """A request h11 cannot parse: 400 (or 431 for an oversized head), then close."""
        if self.h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return  # a response is already under way: closing is all that is left
        status = exc.error_status_hint
        code = "headers_too_large" if status == 431 else "malformed_request"
        message = "Request header fields too large." if status == 431 else "Malformed HTTP request."
        with contextlib.suppress(_Gone, h11.LocalProtocolError):
            await self._error(ApiError(status, "invalid_request_error", code, message), close=True)

    async def _next_event(self, timeout_s: float) -> H11Event:
        return await next_h11_event(self.h11, read_within(self.reader, timeout_s))

    async def _read_body(self) -> bytes:
        """The body; TimeoutError past the request deadline. A body over the size limit raises
        `_TooLarge` once the 413 is answered (at once, however large the body) and the rest of
        the body has been read and dropped within the deadline, so the client, which may still
        be sending, reads the 413 instead of a connection reset."""
        async with asyncio.timeout(self.limits.http_request_deadline_s):
            body = await self._read_body_chunks()
            if body is not None:
                return body
        raise _TooLarge

    async def _read_body_chunks(self) -> bytes | None:
        limit = self.limits.max_message_bytes
        chunks: list[bytes] = []
        size = 0
        if self._declared_length > limit:  # known from the head: answer before any body byte
            await self._refuse_too_large()
        while True:
            event = await self._next_event(self.limits.handshake_timeout_s)
            if isinstance(event, h11.Data):
                if size <= limit < size + len(event.data) and self._declared_length <= limit:
                    await self._refuse_too_large()  # a chunked body that grew over the limit
                size += len(event.data)
                if size <= limit:
                    chunks.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks) if size <= limit else None
            else:
                raise _Gone("connection ended inside a request body")

    async def _refuse_too_large(self) -> None:
        error = ApiError(
            413,
            "invalid_request_error",
            "request_too_large",
            f"Request body exceeds {self.limits.max_message_bytes} bytes.",
        )
        await self._error(error, close=True)

    # -- routing --------------------------------------------------------------------------
    async def _handle(self, request: h11.Request) -> None:
        self._declared_length = _content_length(request)
        self._started_at = time.perf_counter()
        try:
            await self._route(request)
        except _TooLarge:
            pass  # answered 413; the connection closes
        except TimeoutError:  # the body did not arrive within the request deadline
            if self.h11.our_state is not h11.SEND_RESPONSE:
                raise _Gone("the request deadline passed after the answer") from None
            deadline_s = self.limits.http_request_deadline_s
            message = f"The request was not received within {deadline_s:g} s."
            error = ApiError(408, "invalid_request_error", "request_timeout", message)
            await self._error(error, close=True)

    async def _route(self, request: h11.Request) -> None:
        if request.http_version not in _HTTP_VERSIONS:
            version = request.http_version.decode("ascii", "replace")[:16]
            message = f"HTTP/{version} is not supported; use HTTP/1.1."
            error = ApiError(505, "invalid_request_error", "http_version_not_supported", message)
            await self._error(error, close=True)
            return
        method = request.method.decode("ascii", "replace")
        path, _, query_text = request.target.decode("ascii", "replace").partition("?")
        query = dict(urllib.parse.parse_qsl(query_text))
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
        if path == "/healthz" and method == "GET":
            await self._drain_body()
            await self._json(200, {"status": "ok"})
            return
        if path == "/metrics" and method == "GET":
            await self._drain_body()
            await self._send(
                200, self.services.metrics.render().encode(), "text/plain; version=0.0.4"
            )
            return
        tenant = self.keyring.authenticate(headers.get("authorization"))
        if tenant is None:
            await self._drain_body()
            await self._error(errors.unauthorized())
            return
        matched = _RESPONSES_PATH.match(path)
        rest = matched["rest"] if matched else None
        cancel = _CANCEL.fullmatch(rest) if rest is not None else None
        if matched is None or (
            rest is not None
            and rest not in RESERVED_SEGMENTS
            and not _RESPONSE_ID.fullmatch(rest)
            and cancel is None
        ):
            await self._drain_body()
            await self._error(
                ApiError(404, "invalid_request_error", "not_found", f"Unknown path '{path[:128]}'.")
            )
        elif rest is None and method == "POST":
            await self._create(tenant)
        elif rest is None and method == "GET":
            await self._drain_body()
            await self._error(errors.upgrade_required(), extra=_UPGRADE_HEADERS)
        elif rest == "compact" and method == "POST":
            await self._compact(tenant)
        elif cancel is not None and method == "POST":
            await self._drain_body()
            await self._cancel(tenant, cancel["id"])
        elif rest is not None and rest not in RESERVED_SEGMENTS and not cancel and method == "GET":
            await self._drain_body()
            await self._retrieve(tenant, rest, query)
        else:
            allowed = (
                "POST" if rest in RESERVED_SEGMENTS or cancel else "GET" if rest else "GET, POST"
            )
            await self._drain_body()
            await self._error(
                ApiError(
                    405,
                    "invalid_request_error",
                    "method_not_allowed",
                    f"Method {method[:16]} not allowed on '{path[:128]}' (allowed: {allowed}).",
                ),
                extra=[("allow", allowed)],
            )

    async def _drain_body(self) -> None:
        if self.h11.their_state is h11.SEND_BODY:
            await self._read_body()

    async def _retrieve(self, tenant: str, response_id: str, query: dict[str, str]) -> None:
        """`GET /v1/responses/{id}`: a background run's latest state (or its events after
        `starting_after` with `stream=true`), else the stored response."""
        run = self.services.background.get(tenant, response_id)
        if query.get("stream") == "true":
            after = query.get("starting_after", "-1")
            if run is None or not after.lstrip("-").isdigit():
                await self._error(
                    errors.invalid_request(
                        "Only background responses can be streamed, from an integer "
                        "'starting_after'.",
                        param="stream" if run is None else "starting_after",
                    )
                )
                return
            await self._stream_run(run, int(after))
            return
        if run is not None:
            await self._json(200, run.response)
            return
        record = await self.services.persistence.get(tenant, response_id)
        if record is None:
            await self._error(
                ApiError(
                    404,
                    "invalid_request_error",
                    None,
                    f"No response found with id '{response_id}'.",
                    "response_id",
                )
            )
            return
        await self._json(200, record["response"])

    async def _read_request(
        self, parse: Callable[[dict[str, Any]], CreateRequest]
    ) -> tuple[CreateRequest, int, float] | None:
        """The body parsed by `parse`, its size and arrival; None once an error is answered."""
        body = await self._read_body()
        if self.services.draining:
            await self._error(errors.server_shutting_down())
            return None
        received_at = self.stamps.request_arrival() if self.stamps else time.perf_counter()
        try:
            payload = wire.loads(body)
            if not isinstance(payload, dict):
                raise InvalidRequest(
                    errors.invalid_request("Expected a JSON object as the request body.")
                )
            return parse(payload), len(body), received_at
        except wire.WireFormatError as exc:
            await self._error(errors.invalid_json(str(exc), exc.param, exc.code))
        except InvalidRequest as exc:
            await self._error(exc.error)
        return None

    async def _compact(self, tenant: str) -> None:
        """`POST /v1/responses/compact` (PROTOCOL.md §5.1): a compacted window, as JSON."""
        read = await self._read_request(parse_compact)
        if read is None:
            return
        request, size, received_at = read
        ctx = TurnContext("http", tenant, None, received_at, size, connection_id=self.connection_id)
        try:
            compacted = await self.runner.compact(request, ctx)
        except RequestRefused as refused:
            await self._error(refused.error)
            return
        await self._json(200, compacted)

    async def _cancel(self, tenant: str, response_id: str) -> None:
        """`POST /v1/responses/{id}/cancel`: a background run stops (`cancelled`); one that
        has ended is answered as it ended [I]."""
        response = await self.services.background.cancel(tenant, response_id)
        if response is not None:
            await self._json(200, response)
            return
        stored = await self.services.persistence.get(tenant, response_id)
        message = (
            "Only background responses can be cancelled."
            if stored is not None
            else f"No response found with id '{response_id}'."
        )
        status = 400 if stored is not None else 404
        await self._error(ApiError(status, "invalid_request_error", None, message, "response_id"))

    async def _stream_run(self, run: BackgroundRun, after: int) -> None:
        """A background run's events after sequence number `after`, as SSE, to its end."""
        self.writer.write(self.h11.send(h11.Response(status_code=200, headers=self._sse_head())))
        async for events in run.follow(after):
            await self._write(self.h11.send(h11.Data(data=encode_events(events))))
        await self._write_last(self.h11.send(h11.EndOfMessage()))

    def _sse_head(self) -> list[tuple[str, str]]:
        return [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
            *api_headers(self._started_at),
        ]

    async def _create_background(self, request: CreateRequest, ctx: TurnContext) -> None:
        """`background: true` (PROTOCOL.md §5.5): answered once the response is queued; the
        turn runs on whatever this request does next."""
        try:
            run = await self.services.background.start(
                ctx.tenant, request, lambda send: self.runner.run(request, ctx, send)
            )
        except RequestRefused as refused:
            await self._error(refused.error)
            return
        if request.stream:
            await self._stream_run(run, -1)
        else:
            await self._json(200, run.events[0]["response"])

    async def _create(self, tenant: str) -> None:
        read = await self._read_request(lambda payload: parse_create(payload, transport="http"))
        if read is None:
            return
        request, size, received_at = read
        ctx = TurnContext("http", tenant, None, received_at, size, connection_id=self.connection_id)
        if request.background:
            await self._create_background(request, ctx)
            return
        started = False

        async def send_sse(*events: Event) -> None:
            nonlocal started
            if not started:
                started = True
                self.writer.write(
                    self.h11.send(h11.Response(status_code=200, headers=self._sse_head()))
                )
            await self._write(self.h11.send(h11.Data(data=encode_events(events))))

        async def discard(*events: Event) -> None:
            return None

        send: Send = send_sse if request.stream else discard
        try:
            outcome = await self.runner.run(request, ctx, send)
        except RequestRefused as refused:
            if started:  # cannot happen: refusals come before the first event
                raise _Gone("refused after streaming began") from None
            await self._error(refused.error)
            return
        if request.stream:
            await self._write_last(self.h11.send(h11.EndOfMessage()))
            return
        response = outcome.response
        if outcome.status == "failed" and response.get("error"):
            error = response["error"]
            await self._error(
                ApiError(400, "invalid_request_error", error.get("code"), error.get("message", ""))
            )
            return
        await self._json(200, response)

    # -- writing --------------------------------------------------------------------------
    async def _write(self, data: bytes) -> None:
        self.writer.write(data)
        try:
            async with asyncio.timeout(self.limits.send_stall_timeout_s):
                await self.writer.drain()
        except (TimeoutError, ConnectionError):
            self.writer.transport.abort()
            raise _Gone("client stopped reading") from None

    async def _write_last(self, data: bytes) -> None:
        """Write a response's last bytes: whatever arrives from now on is the next request's
        (HTTP/1.1 clients do not pipeline), even while this write still waits to drain."""
        if self.stamps is not None:
            self.stamps.next_request()
        await self._write(data)

    async def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        await self._write_last(self._response_bytes(status, body, content_type, extra))

    def _response_bytes(
        self,
        status: int,
        body: bytes,
        content_type: str,
        extra: list[tuple[str, str]] | None = None,
    ) -> bytes:
        headers = [
            ("content-type", content_type),
            ("content-length", str(len(body))),
            *api_headers(self._started_at),
            *(extra or []),
        ]
        data = self.h11.send(h11.Response(status_code=status, headers=headers))
        return data + self.h11.send(h11.Data(data=body)) + self.h11.send(h11.EndOfMessage())

    async def _json(self, status: int, payload: Any) -> None:
        await self._send(status, wire.dumps(payload).encode(), "application/json")

    async def _error(
        self, error: ApiError, *, close: bool = False, extra: list[tuple[str, str]] | None = None
    ) -> None:
        await self._write_last(self._error_bytes(error, close=close, extra=extra))

    def _error_bytes(
        self, error: ApiError, *, close: bool = False, extra: list[tuple[str, str]] | None = None
    ) -> bytes:
        self.services.metrics.inc("wsmode_request_errors_total", code=str(error.code or error.type))
        extra = list(extra or [])
        if error.status in (429, 503):
            extra.append(("retry-after", "1"))
        if close:
            extra.append(("connection", "close"))
        body = wire.dumps(error.to_http_body()).encode()
        return self._response_bytes(error.status, body, "application/json", extra)


def _content_length(request: h11.Request) -> int:
    """The request's Content-Length (h11 has checked it is a number), else 0."""
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)
    return 0
