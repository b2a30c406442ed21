"""One WebSocket connection: per lane, a FIFO of `response.create`s with one response in flight.

A reader task accepts frames as fast as they come. A create for an idle lane (`stream_id`; the
default lane is `None`) is run at once by the task that read it: that task becomes the lane's
runner and hands the reading to a new task first, so no event-loop hop sits between a frame and
its turn (measured: ~20 us of a continuation's TTFT). A create for a busy lane joins the lane's
queue, which its runner works through in order before it goes idle. Each lane has its own cache
of recent responses; different lanes run concurrently, at most `max_active_lanes` at once.
Without `--lanes` only the default lane exists (PROTOCOL.md §5.2: strict FIFO, one in flight).
Queues are bounded in count (per lane) and in bytes (per connection: the creates running or
queued on all its lanes, and the lanes' caches together): over a bound the client gets an error,
never a silent drop, and no other connection notices. A connection that held many bytes trims
the allocator once it closes (runtime/memory.py: where the memory of a closed one went).
Request-scoped errors keep the socket open. All connection state lives and dies with this
object: a disconnect cancels the generation and frees the caches. The beta client events
(`response.steer` with `--steer`, `response.inject` with `--multi-agent`, PROTOCOL.md §2.2) are
handled by the task that reads them, at once, never queued behind a lane (`interjections.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from harness.errors import TransportError
from harness.protocol import errors, wire
from harness.protocol.beta import INJECT, STEER
from harness.protocol.cache import ResponseCache
from harness.protocol.errors import ApiError
from harness.protocol.events import Event
from harness.protocol.requests import (
    CLIENT_EVENT_TYPES,
    STREAM_ID_PATTERN,
    CreateRequest,
    InvalidRequest,
    Transport,
    parse_client_event,
    parse_create,
)
from reference_server.front.connection import StampedServerConnection
from reference_server.front.interjections import Interjections
from reference_server.pipeline.refusals import RequestRefused
from reference_server.runtime.logs import connection_id
from reference_server.runtime.services import Services
from reference_server.runtime.turn import TurnContext, TurnOutcome, TurnRunner
from reference_server.state.conversation import Conversation

log = logging.getLogger(__name__)

# websockets waits for the transport to drain only above its write limit (32 KiB by default), so
# a send that keeps the buffer below it returns at once and needs no timer (a timer per event
# costs more than the send).
_NEVER_BLOCKS_BYTES = 32 * 1024 - 64


SHUTDOWN_CLOSE_REASON = "server shutting down"  # the 1001's reason (a drain or a stop)


class ClientGone(TransportError, ConnectionError):
    """The client closed, or stopped reading past the send-stall timeout."""


@dataclass(frozen=True, slots=True)
class _Pending:
    request: CreateRequest
    received_at: float
    size_bytes: int


@dataclass
class _Lane:
    cache: ResponseCache[Conversation]
    queue: deque[_Pending] = field(default_factory=deque)  # behind the one in flight
    busy: bool = False  # a runner is working through this lane

    @property
    def waiting(self) -> int:
        return len(self.queue) + (1 if self.busy else 0)


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A frame refused as it is read: its error, on the create's lane when it names one."""

    error: ApiError
    stream_id: str | None = None
    previous_id: str | None = None  # a refused continuation still evicts its parent (§5.1)


def read_frame(
    text: str, accepted: frozenset[str], transport: Transport
) -> CreateRequest | tuple[str, dict[str, Any]] | Unreadable:
    """One text frame, parsed once: a `response.create` into its request (parsed as over
    `transport`), another accepted event (a beta steer or inject) into its type and body."""
    try:
        event_type, body = parse_client_event(wire.loads(text), accepted)
    except wire.WireFormatError as exc:
        return Unreadable(errors.invalid_json(str(exc), exc.param, exc.code))
    except InvalidRequest as exc:
        return Unreadable(exc.error)
    if event_type != "response.create":
        return event_type, body
    try:
        return parse_create(body, transport=transport)
    except InvalidRequest as exc:
        previous = body.get("previous_response_id")
        return Unreadable(
            exc.error, _lane_of(body), previous if isinstance(previous, str) else None
        )


@dataclass(frozen=True, slots=True)
class _RunNow:
    """A create for an idle lane: the task that read it runs it."""

    lane: _Lane
    pending: _Pending


class WebSocketSession:
    def __init__(self, services: Services, ws: StampedServerConnection, tenant: str) -> None:
        self.services = services
        self.config = services.config
        self.hooks = services.hooks  # the faults, a client case's script, the observer
        self.faults = services.hooks.faults
        self.ws = ws
        self.tenant = tenant
        self.runner = TurnRunner(services)
        self.lanes: dict[str | None, _Lane] = {}
        self.active = asyncio.Semaphore(self.config.limits.max_active_lanes)
        self.opened_at = time.monotonic()
        self.pending_bytes = 0  # frame bytes of the creates running or queued, every lane
        self.peak_bytes = 0  # the most it held at once (pending creates and cached state)
        self.connection_id = ws.label or connection_id("ws")
        self._closing = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reading_done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        beta = ({STEER} if self.config.steer else set()) | (
            {INJECT} if self.config.multi_agent else set()
        )
        self.accepted = CLIENT_EVENT_TYPES | beta  # client event types this server serves
        self.interjections = (
            Interjections(
                self.send,
                self._spawn,
                max_pending_steers=self.config.limits.max_pending_steers,
                max_pending_steer_bytes=self.config.limits.max_pending_steer_bytes,
                max_inject_bytes=self.config.limits.max_inject_bytes,
                queue_injects=self.faults.queue_injects,
                queue_steers=self.faults.queue_steers,
            )
            if beta
            else None
        )

    # -- lifecycle ------------------------------------------------------------------------
    async def run(self) -> None:
        metrics = self.services.metrics
        metrics.connections += 1
        metrics.inc("wsmode_connections_total")
        lifetime = None
        if not self.faults.ignore_lifetime:
            lifetime = asyncio.get_running_loop().call_later(
                self.config.limits.connection_lifetime_s, self._on_lifetime_elapsed
            )
        self._spawn(self._read())
        try:
            await self._reading_done  # readers come and go; the last one sets this
        finally:
            if not self._reading_done.done():  # run() was cancelled: no reader starts after this
                self._reading_done.cancel()
            if lifetime is not None:
                lifetime.cancel()
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for lane in self.lanes.values():
                metrics.queue_depth -= len(lane.queue)
                lane.queue.clear()
                lane.cache.clear()
            self.lanes.clear()
            self.pending_bytes = 0
            metrics.connections -= 1
            self.services.memory_return.after_close(self.peak_bytes)
            if self.hooks.observer is not None:
                self.hooks.record(self.connection_id, "meta", "close", self._close_text())

    def _close_text(self) -> str:
        protocol = self.ws.protocol
        received, sent = protocol.close_rcvd, protocol.close_sent
        if received is None and sent is None:
            return "code 1006: the TCP connection ended without a close frame"
        first = "client" if received is not None and protocol.close_rcvd_then_sent else "server"
        frame = received if received is not None else sent
        assert frame is not None
        return f"code {frame.code} {frame.reason!r}, closed by the {first}"

    def idle(self) -> bool:
        """No response in flight or queued (what a drain waits for)."""
        return self._idle()

    def _idle(self) -> bool:
        return all(lane.waiting == 0 for lane in self.lanes.values())

    def _expired(self) -> bool:
        if self.faults.ignore_lifetime:
            return False
        return time.monotonic() - self.opened_at >= self.config.limits.connection_lifetime_s

    def _on_lifetime_elapsed(self) -> None:
        if self._idle():
            self._spawn(self._close_for_lifetime())
        # Otherwise the last busy worker closes after its response ([I]: it is not cut).

    async def _close_for_lifetime(self) -> None:
        if self._closing:
            return
        self._closing = True
        error = errors.connection_limit_reached(self.config.limits.connection_lifetime_s)
        with contextlib.suppress(ClientGone):
            await self.send(self.hooks.error_event(error, None))
            await self.ws.close(CloseCode.NORMAL_CLOSURE, "connection lifetime reached")

    async def close_for_shutdown(self, cut_after_s: float) -> None:
        """The server stops (the drain deadline passed, or `stop()`): every lane with a response
        still running or queued hears `server_shutting_down` first, then the socket closes
        1001 with a reason. Nothing is sent in between: the error and the close frame are
        written back to back, so no event of the cut response follows the error."""
        if self._closing:
            return
        self._closing = True
        busy = [stream_id for stream_id, lane in self.lanes.items() if lane.waiting]
        error = errors.server_shutting_down(cut_after_s=cut_after_s)
        with contextlib.suppress(ClientGone, ConnectionClosed):
            if busy:
                await self.send(*(self.hooks.error_event(error, stream_id) for stream_id in busy))
            await self.ws.close(CloseCode.GOING_AWAY, SHUTDOWN_CLOSE_REASON)

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- reading --------------------------------------------------------------------------
    async def _read(self) -> None:
        """Read frames until the connection ends, or until a create this task is to run."""
        try:
            while True:
                message = await self.ws.recv()
                if self.hooks.observer is not None:
                    kind = "binary" if isinstance(message, bytes) else "text"
                    self.hooks.record(self.connection_id, "in", kind, message)
                outcome = await self._on_message(message, self.ws.arrival_of_next_message())
                if isinstance(outcome, _RunNow):
                    # The reading goes on in a new task, created once this one first yields
                    # (creating it here would put a task's setup before the turn's first write).
                    asyncio.get_running_loop().call_soon(self._pass_the_reading_on)
                    await self._run_lane(outcome.lane, outcome.pending)
                    return
                if not outcome:
                    break
        except ConnectionClosed:
            pass
        except Exception as exc:  # a bug: the connection ends with it, as an uncaught one would
            if not self._reading_done.done():
                self._reading_done.set_exception(exc)
            return
        if not self._reading_done.done():
            self._reading_done.set_result(None)

    def _pass_the_reading_on(self) -> None:
        if not self._reading_done.done():  # not after the connection has ended
            self._spawn(self._read())

    async def _on_message(self, message: str | bytes, received_at: float) -> bool | _RunNow:
        """Handle one frame; False ends the connection, a `_RunNow` is for this task to run."""
        if isinstance(message, bytes):
            if self.faults.binary_crash:  # the receive loop dies: no error, no close frame
                self.ws.transport.abort()
                return False
            error = errors.invalid_request(
                "Binary frames are not supported; send JSON events as text frames.",
                code="unsupported_frame",
            )
            await self.send_error(error, None)
            await self.ws.close(CloseCode.UNSUPPORTED_DATA, "binary frames are not supported")
            return False
        if self._closing:
            return False
        request = read_frame(message, self.accepted, self.hooks.create_transport)
        if isinstance(request, Unreadable):
            if request.previous_id is not None:
                self._evict_refused(request.previous_id, request.stream_id)
            await self.send_error(request.error, request.stream_id)
            return True
        if not isinstance(request, CreateRequest):  # a steer or inject: at once, never queued
            return await self._interject(*request, len(message))
        if self._expired():
            await self._close_for_lifetime()
            return False
        if request.stream and self.faults.reject_stream_field:
            await self.send_error(
                errors.invalid_request("Unknown parameter: 'stream'.", param="stream"), None
            )
            return True
        return await self._enqueue(_Pending(request, received_at, len(message)))

    async def _interject(self, event_type: str, body: dict[str, Any], size_bytes: int) -> bool:
        assert self.interjections is not None
        try:
            if event_type == STEER:
                await self.interjections.on_steer(body, size_bytes)
            else:
                await self.interjections.on_inject(body, size_bytes)
        except InvalidRequest as exc:
            await self.send_error(exc.error, None)
        except ClientGone:
            return False
        return True

    def _lane(self, stream_id: str | None) -> _Lane | ApiError:
        lane = self.lanes.get(stream_id)
        if lane is not None:
            return lane
        if stream_id is not None and not self.config.lanes:
            return errors.invalid_request(
                "Named lanes (stream_id) are not enabled on this server.",
                param="stream_id",
                code="unsupported_parameter",
            )
        named = sum(1 for key in self.lanes if key is not None)
        if stream_id is not None and named >= self.config.limits.max_lanes:
            return errors.stream_limit_reached(stream_id, self.config.limits.max_lanes)
        lane = _Lane(ResponseCache(self.config.cache))
        self.services.live_caches.add(lane.cache)
        self.lanes[stream_id] = lane
        return lane

    async def _enqueue(self, pending: _Pending) -> bool | _RunNow:
        if self.services.draining:
            await self.send_error(errors.server_shutting_down(), pending.request.stream_id)
            return True
        lane = self._lane(pending.request.stream_id)
        if isinstance(lane, ApiError):
            await self.send_error(lane, pending.request.stream_id)
            return True
        if self.faults.interleave_queued:
            self._spawn(self._run_one(lane, pending))
            return True
        if self.faults.drop_queued and lane.waiting:
            return True
        limits = self.config.limits
        if lane.waiting > limits.max_pending_per_connection:
            error = errors.queue_full(limits.max_pending_per_connection)
            await self.send_error(error, pending.request.stream_id)
            return True
        # in bytes over every lane; one create is always taken (a lone one is bounded by the
        # message limit)
        if self.pending_bytes and (
            self.pending_bytes + pending.size_bytes > limits.max_pending_bytes_per_connection
        ):
            error = errors.queue_bytes_full(limits.max_pending_bytes_per_connection)
            await self.send_error(error, pending.request.stream_id)
            return True
        self.pending_bytes += pending.size_bytes
        self._note_held()
        if not lane.busy:
            lane.busy = True
            return _RunNow(lane, pending)
        lane.queue.append(pending)
        self.services.metrics.queue_depth += 1
        return True

    # -- the runners: one response at a time per lane ----------------------------------------
    async def _run_lane(self, lane: _Lane, pending: _Pending) -> None:
        """Run `pending`, then what queued behind it, in order; then the lane is idle."""
        try:
            while True:
                # the bound on active lanes only matters with several lanes
                async with self.active if self.config.lanes else contextlib.nullcontext():
                    try:
                        if not await self._run_one(lane, pending):
                            return
                    finally:
                        self.pending_bytes = max(0, self.pending_bytes - pending.size_bytes)
                self._bound_caches(lane)
                if not lane.queue:
                    break
                pending = lane.queue.popleft()
                self.services.metrics.queue_depth -= 1
        finally:
            lane.busy = False
        if self._expired() and self._idle():
            await self._close_for_lifetime()

    def _note_held(self) -> None:
        held = self.pending_bytes + sum(other.cache.total_bytes for other in self.lanes.values())
        self.peak_bytes = max(self.peak_bytes, held)

    def _bound_caches(self, lane: _Lane) -> None:
        """The lanes' caches together stay within `max_cache_bytes_per_connection`: the largest
        other lane gives up its oldest entries first (the lane just served keeps its newest)."""
        self._note_held()
        if len(self.lanes) < 2:
            return  # one lane: its own policy bounds it
        bound = self.config.limits.max_cache_bytes_per_connection
        total = sum(other.cache.total_bytes for other in self.lanes.values())
        while total > bound:
            others = [o for o in self.lanes.values() if o is not lane and len(o.cache)]
            if not others:
                break
            largest = max(others, key=lambda other: other.cache.total_bytes)
            before = largest.cache.total_bytes
            largest.cache.evict(next(iter(largest.cache)))
            self.services.metrics.inc("wsmode_cache_evictions_total", reason="connection_bytes")
            total -= before - largest.cache.total_bytes

    async def _run_one(self, lane: _Lane, pending: _Pending) -> bool:
        forks = tuple(other.cache for other in self.lanes.values() if other is not lane)
        ctx = TurnContext(
            "ws",
            self.tenant,
            lane.cache,
            pending.received_at,
            pending.size_bytes,
            forks,
            self.connection_id,
            self.interjections,
        )
        request, send, case_index = pending.request, self.send, None
        if self.hooks.acts_on_creates:  # a client case's refusals, misses and acts; queue faults
            hooked = self.hooks.on_create(request, lane.cache, send, self.ws.transport.abort)
            if hooked.refusal is not None:
                with contextlib.suppress(ClientGone):
                    await self.send(hooked.refusal)
                return True
            request, send, case_index = hooked.request, hooked.send, hooked.case_index
        try:
            if self.interjections is None:
                await self.runner.run(request, ctx, send)
                if case_index is not None:
                    return await self._after_response(case_index)
                return True
            request = await self.interjections.before_create(request)
            await self._settle(await self.runner.run(request, ctx, send), request, ctx)
        except RequestRefused as refused:
            await self.send_error(refused.error, pending.request.stream_id)
            if self.faults.close_on_request_error:
                await self.ws.close(CloseCode.POLICY_VIOLATION, "request error")
                return False
        except ClientGone:
            return False
        except Exception:  # a bug must cost one response, not the lane: its worker lives on
            log.exception("response failed inside the server (connection %s)", self.connection_id)
            self.runner.evict_parent(pending.request.previous_response_id, lane.cache)  # a 5xx
            await self.send_error(errors.server_error(), pending.request.stream_id)
        return True

    async def _after_response(self, case_index: int) -> bool:
        """A client case's act on the idle socket once a response is out; False: it is gone."""
        after = self.hooks.after_response(case_index)
        if after is None:
            return True
        act, delay_s = after
        await asyncio.sleep(delay_s)  # the terminal is read first
        if act == "drop":
            self.ws.transport.abort()  # no close frame: the client sees 1006
        else:
            await self.ws.close(CloseCode.GOING_AWAY, "server going away")
        return False

    async def _settle(self, outcome: TurnOutcome, request: CreateRequest, ctx: TurnContext) -> None:
        """After a response its steers settle: pending, or an automatic successor run now, on
        its lane before anything queued there (PROTOCOL.md §2.2)."""
        assert self.interjections is not None
        while (successor := await self.interjections.settle(outcome, request)) is not None:
            request = successor.request
            ctx = dataclasses.replace(ctx, received_at=time.perf_counter(), request_bytes=0)
            try:
                outcome = await self.runner.run(request, ctx, self.send)
            except RequestRefused as refused:
                await self.interjections.successor_failed(successor, refused.error)
                return

    def _evict_refused(self, previous_id: str, stream_id: str | None) -> None:
        """A create refused as it is read is a failed turn too: its parent leaves the lane's
        cache, as it does for a refusal in the pipeline (PROTOCOL.md §5.1)."""
        lane = self.lanes.get(stream_id)
        if lane is not None:
            self.runner.evict_parent(previous_id, lane.cache)

    # -- writing --------------------------------------------------------------------------
    async def send(self, *events: Event) -> None:
        """Send events in one write; a client that stops reading is cut off after the stall
        timeout."""
        texts = [wire.dumps_bytes(event) for event in events]
        size = sum(map(len, texts))
        if self.hooks.observer is not None:
            for text in texts:
                self.hooks.record(self.connection_id, "out", "text", text.decode())
        try:
            if self.ws.transport.get_write_buffer_size() + size < _NEVER_BLOCKS_BYTES:
                await self.ws.send_texts(texts)  # stays under the high-water mark: cannot stall
            else:
                async with asyncio.timeout(self.config.limits.send_stall_timeout_s):
                    await self.ws.send_texts(texts)
        except TimeoutError:
            self.services.metrics.inc("wsmode_send_stalls_total")
            self.ws.transport.abort()  # 1008 cannot be delivered to a peer that does not read
            raise ClientGone("send stalled") from None
        except ConnectionClosed:
            raise ClientGone("connection closed") from None

    async def send_error(self, error: ApiError, stream_id: str | None) -> None:
        self.services.metrics.inc("wsmode_request_errors_total", code=str(error.code or error.type))
        with contextlib.suppress(ClientGone):
            await self.send(self.hooks.error_event(error, stream_id))


def _lane_of(body: dict[str, Any]) -> str | None:
    """The create's stream_id if it is well formed, so a refusal can be routed to its lane."""
    stream_id = body.get("stream_id")
    return stream_id if isinstance(stream_id, str) and STREAM_ID_PATTERN.match(stream_id) else None
