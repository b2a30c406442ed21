"""One request and the events it caused, over either transport, checked as they arrive.

An `Exchange` is what the conformance cases and the load driver both work from: the events
with arrival times, the protocol core's accumulator over them (violations, the reassembled
output, the function calls to answer), or the request-level error, or the transport failure.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.errors import TransportError
from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.errors import ApiError
from harness.protocol.request_rules import judge_exchange
from harness.protocol.requests import create_event
from harness.protocol.state import Phase
from harness.protocol.stream import RequestError, StreamAccumulator, is_request_error
from harness.protocol.timing_marks import (
    is_content_delta,
    is_first_token_candidate,
    is_output_event,
)
from harness.transport.failures import HttpStatusError, TargetTimeout
from harness.transport.received import TimedEvent
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient

_DONE = Phase.DONE


@dataclass
class Exchange:
    request: dict[str, Any]
    sent_ns: int
    events: list[TimedEvent] = field(default_factory=list)
    response: ResponseAccumulator | None = None
    request_error: ApiError | None = None
    transport_error: TransportError | None = None
    bytes_sent: int = 0

    @property
    def ok(self) -> bool:
        return self.response is not None and self.response.terminal_type == "response.completed"

    @property
    def first_output_ns(self) -> int | None:
        """Arrival of the first output event of any kind (the TTFE mark, `timing_marks`)."""
        for timed in self.events:
            if is_output_event(timed.event):
                return timed.received_ns
        return None

    @property
    def first_token_ns(self) -> int | None:
        """Arrival of the first event carrying generated content (the TTFT mark)."""
        for timed in self.events:
            if is_first_token_candidate(timed.event):
                return timed.received_ns
        return None

    @property
    def ttft_ms(self) -> float | None:
        """Request sent → first content token (`timing_marks.TTFT_DEFINITION`)."""
        first = self.first_token_ns
        return (first - self.sent_ns) / 1e6 if first is not None else None

    @property
    def ttfe_ms(self) -> float | None:
        """Request sent → first output event, announcements included (`TTFE_DEFINITION`)."""
        first = self.first_output_ns
        return (first - self.sent_ns) / 1e6 if first is not None else None

    @property
    def e2e_ms(self) -> float | None:
        return (self.events[-1].received_ns - self.sent_ns) / 1e6 if self.events else None

    def delta_gaps_ms(self) -> list[float]:
        """Gaps between consecutive content deltas (inter-token latency samples)."""
        stamps = [t.received_ns for t in self.events if is_content_delta(t.event)]
        return [(b - a) / 1e6 for a, b in itertools.pairwise(stamps)]

    @property
    def bytes_received(self) -> int:
        return sum(t.size_bytes for t in self.events)

    @property
    def final_response(self) -> dict[str, Any] | None:
        return self.response.response if self.response is not None and self.response.done else None

    @property
    def response_id(self) -> str | None:
        return self.response.response_id if self.response is not None else None


async def ws_exchange(
    client: WsClient,
    body: Mapping[str, Any],
    *,
    timeout_s: float,
    stream: StreamAccumulator | None = None,
    event_timeout_s: float | None = None,
) -> Exchange:
    """Send one `response.create` and read until its terminal or its request error.

    `sent_ns` is when the request's bytes were handed to the socket; `timeout_s` bounds the
    whole exchange (one deadline, however many events), `event_timeout_s` (if given) each
    wait for the next event (a silent target is found at once, not at the deadline).
    """
    stream = stream if stream is not None else StreamAccumulator()
    payload = create_event(**body)
    exchange = Exchange(dict(payload), time.perf_counter_ns())
    try:
        exchange.bytes_sent = await client.send_json(payload)
        exchange.sent_ns = client.last_sent_ns
        await read_until_done(
            client, exchange, stream, timeout_s=timeout_s, event_timeout_s=event_timeout_s
        )
    except TransportError as exc:
        exchange.transport_error = exc
        return exchange
    # the field rules that need the request (echo, lane, wall clock): once, at the end
    events = [timed.event for timed in exchange.events]
    judge_exchange(exchange.request, events, exchange.response, stream, now_s=time.time())
    return exchange


async def read_until_done(
    client: WsClient,
    exchange: Exchange,
    stream: StreamAccumulator,
    *,
    timeout_s: float,
    event_timeout_s: float | None = None,
) -> None:
    """Read events into `exchange` until its response ends or a request error arrives.

    One deadline for the whole exchange: events already read off the socket are taken without
    waiting, and only an empty queue waits (until the deadline, never longer; with
    `event_timeout_s`, never longer than that for one event either).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    append = exchange.events.append
    feed = stream.feed
    recv_nowait = client.recv_nowait
    try:
        while True:
            timed = recv_nowait()
            if timed is None:
                if event_timeout_s is None or deadline - loop.time() <= event_timeout_s:
                    timed = await client.recv_until(deadline)
                else:
                    try:
                        timed = await client.recv_until(loop.time() + event_timeout_s)
                    except TargetTimeout:
                        raise TargetSilent(
                            f"no event within {event_timeout_s:g} s (the target went silent)"
                        ) from None
            append(timed)
            routed = feed(timed.event)
            if isinstance(routed, ResponseAccumulator):
                exchange.response = routed
                if routed.phase is _DONE:
                    return
            elif isinstance(routed, RequestError):
                exchange.request_error = routed.error
                return
    except TargetSilent:
        raise
    except TargetTimeout:
        raise TargetTimeout(f"no terminal event within {timeout_s} s") from None
    finally:
        client.clear_deadline()


class TargetSilent(TargetTimeout):
    """No event within the event timeout (said as such, not as the whole exchange's deadline)."""


async def sse_exchange(client: SseClient, body: Mapping[str, Any], *, timeout_s: float) -> Exchange:
    """POST one streaming request and read its SSE events to the end.

    `sent_ns` is when the request's bytes were handed to the socket.
    """
    exchange = Exchange(dict(body), time.perf_counter_ns())
    accumulator = ResponseAccumulator()
    limit_ns = exchange.sent_ns + int(timeout_s * 1e9)

    def sent(at_ns: int) -> None:
        exchange.sent_ns = at_ns

    stream = client.stream(body, on_sent=sent)
    try:
        async for timed in stream:
            exchange.events.append(timed)
            if is_request_error(timed.event, accumulator):
                exchange.request_error = ApiError.from_event(timed.event)
                continue
            accumulator.feed(timed.event)
            exchange.response = accumulator
            if timed.received_ns > limit_ns:
                raise TargetTimeout(f"stream still running after {timeout_s} s")
    except HttpStatusError as exc:
        exchange.request_error = error_from_http(exc)
    except TransportError as exc:
        exchange.transport_error = exc
    finally:
        await stream.aclose()  # hands the connection back (or closes it) now, not at GC
    return exchange


def error_from_http(exc: HttpStatusError) -> ApiError:
    """The ApiError an HTTP error body carries (PROTOCOL.md §3.1)."""
    try:
        body = json.loads(exc.body)
        payload = body.get("error", {}) if isinstance(body, dict) else {}
    except ValueError:
        payload = {}
    return ApiError(
        exc.status,
        str(payload.get("type", "")),
        payload.get("code") if isinstance(payload.get("code"), str) else None,
        str(payload.get("message", exc.body[:200].decode("utf-8", "replace"))),
        payload.get("param") if isinstance(payload.get("param"), str) else None,
    )
