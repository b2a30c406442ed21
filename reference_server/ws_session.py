"""One WebSocket connection: a FIFO of `response.create`s with one response in flight.

The reader accepts frames as fast as they come and queues creates (bounded: over the bound the
client gets an error, never a silent drop); the worker runs them one at a time through the
`TurnRunner`. Request-scoped errors keep the socket open. The connection's cache lives and dies
with this object: a disconnect cancels the generation and frees the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from harness.protocol import errors, wire
from harness.protocol.cache import ResponseCache
from harness.protocol.errors import ApiError
from harness.protocol.events import Event
from harness.protocol.requests import (
    STREAM_ID_PATTERN,
    CreateRequest,
    InvalidRequest,
    Transport,
    parse_client_event,
    parse_create,
)
from reference_server.conversation import Conversation
from reference_server.faults import flatten_error
from reference_server.services import Services
from reference_server.turn import RequestRefused, TurnContext, TurnRunner


class ClientGone(ConnectionError):
    """The client closed, or stopped reading past the send-stall timeout."""


@dataclass(frozen=True, slots=True)
class _Pending:
    request: CreateRequest
    received_at: float
    size_bytes: int


class WebSocketSession:
    def __init__(self, services: Services, ws: ServerConnection, tenant: str) -> None:
        self.services = services
        self.config = services.config
        self.ws = ws
        self.tenant = tenant
        self.runner = TurnRunner(services)
        self.cache: ResponseCache[Conversation] = ResponseCache(self.config.cache)
        self.queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self.busy = False
        self.opened_at = time.monotonic()
        self._closing = False
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- lifecycle ------------------------------------------------------------------------
    async def run(self) -> None:
        metrics = self.services.metrics
        metrics.connections += 1
        metrics.inc("wsmode_connections_total")
        worker = asyncio.create_task(self._worker())
        lifetime = None
        if "ignore-lifetime" not in self.config.faults:
            lifetime = asyncio.get_running_loop().call_later(
                self.config.limits.connection_lifetime_s, self._on_lifetime_elapsed
            )
        try:
            async for message in self.ws:
                if not await self._on_message(message, time.perf_counter()):
                    break
        except ConnectionClosed:
            pass
        finally:
            if lifetime is not None:
                lifetime.cancel()
            worker.cancel()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(worker, *self._tasks, return_exceptions=True)
            metrics.queue_depth -= self.queue.qsize()
            self.cache.clear()
            metrics.connections -= 1

    def _expired(self) -> bool:
        if "ignore-lifetime" in self.config.faults:
            return False
        return time.monotonic() - self.opened_at >= self.config.limits.connection_lifetime_s

    def _on_lifetime_elapsed(self) -> None:
        if not self.busy and self.queue.empty():
            task = asyncio.get_running_loop().create_task(self._close_for_lifetime())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        # Otherwise the worker closes after the in-flight response ([I]: it is not cut).

    async def _close_for_lifetime(self) -> None:
        if self._closing:
            return
        self._closing = True
        error = errors.connection_limit_reached(self.config.limits.connection_lifetime_s)
        try:
            await self.send(self._error_event(error, None))
            await self.ws.close(CloseCode.NORMAL_CLOSURE, "connection lifetime reached")
        except ClientGone:
            pass

    # -- reading --------------------------------------------------------------------------
    async def _on_message(self, message: str | bytes, received_at: float) -> bool:
        """Handle one frame; False ends the connection."""
        if isinstance(message, bytes):
            error = errors.invalid_request(
                "Binary frames are not supported; send JSON events as text frames.",
                code="unsupported_frame",
            )
            await self.send_error(error, None)
            await self.ws.close(CloseCode.UNSUPPORTED_DATA, "binary frames are not supported")
            return False
        if self._closing:
            return False
        try:
            _, body = parse_client_event(wire.loads(message))
        except wire.WireFormatError as exc:
            await self.send_error(errors.invalid_json(str(exc)), None)
            return True
        except InvalidRequest as exc:
            await self.send_error(exc.error, None)
            return True
        # The accept-background fault parses as HTTP would, where background is allowed.
        transport: Transport = "http" if "accept-background" in self.config.faults else "ws"
        try:
            request = parse_create(body, transport=transport)
        except InvalidRequest as exc:
            await self.send_error(exc.error, _lane_of(body))
            return True
        if self._expired():
            await self._close_for_lifetime()
            return False
        if request.stream and "reject-stream-field" in self.config.faults:
            await self.send_error(
                errors.invalid_request("Unknown parameter: 'stream'.", param="stream"), None
            )
            return True
        return await self._enqueue(_Pending(request, received_at, len(message)))

    async def _enqueue(self, pending: _Pending) -> bool:
        faults = self.config.faults
        if "interleave-queued" in faults:
            task = asyncio.create_task(self._run_one(pending))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return True
        waiting = self.queue.qsize() + (1 if self.busy else 0)
        if "drop-queued" in faults and waiting:
            return True
        if waiting > self.config.limits.max_pending_per_connection:
            await self.send_error(
                errors.queue_full(self.config.limits.max_pending_per_connection),
                pending.request.stream_id,
            )
            return True
        self.queue.put_nowait(pending)
        self.services.metrics.queue_depth += 1
        return True

    # -- the worker: one response at a time -------------------------------------------------
    async def _worker(self) -> None:
        while True:
            pending = await self.queue.get()
            self.services.metrics.queue_depth -= 1
            self.busy = True
            try:
                if not await self._run_one(pending):
                    return
            finally:
                self.busy = False
            if self._expired() and self.queue.empty():
                await self._close_for_lifetime()
                return

    async def _run_one(self, pending: _Pending) -> bool:
        ctx = TurnContext("ws", self.tenant, self.cache, pending.received_at, pending.size_bytes)
        try:
            await self.runner.run(pending.request, ctx, self.send)
        except RequestRefused as refused:
            await self.send_error(refused.error, pending.request.stream_id)
            if "close-on-request-error" in self.config.faults:
                await self.ws.close(CloseCode.POLICY_VIOLATION, "request error")
                return False
        except ClientGone:
            return False
        return True

    # -- writing --------------------------------------------------------------------------
    async def send(self, event: Event) -> None:
        """Send one event; a client that stops reading is cut off after the stall timeout."""
        try:
            async with asyncio.timeout(self.config.limits.send_stall_timeout_s):
                await self.ws.send(wire.dumps(event))
        except TimeoutError:
            self.services.metrics.inc("wsmode_send_stalls_total")
            self.ws.transport.abort()  # 1008 cannot be delivered to a peer that does not read
            raise ClientGone("send stalled") from None
        except ConnectionClosed:
            raise ClientGone("connection closed") from None

    def _error_event(self, error: ApiError, stream_id: str | None) -> Event:
        event = error.to_event(stream_id=stream_id)
        return flatten_error(event) if "flat-error" in self.config.faults else event

    async def send_error(self, error: ApiError, stream_id: str | None) -> None:
        self.services.metrics.inc("wsmode_request_errors_total", code=str(error.code or error.type))
        with contextlib.suppress(ClientGone):
            await self.send(self._error_event(error, stream_id))


def _lane_of(body: dict[str, Any]) -> str | None:
    """The create's stream_id if it is well formed, so a refusal can be routed to its lane."""
    stream_id = body.get("stream_id")
    return stream_id if isinstance(stream_id, str) and STREAM_ID_PATTERN.match(stream_id) else None
