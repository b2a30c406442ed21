"""The server's hooks behind one object: its faults, a client case's script, its observer.

All three exist for the harness, never for a client: `--fault` breaks a mechanism on purpose
(the kill matrix), a client case of `wsmode certify-client` scripts legal server behaviours a
client must survive, and an observer watches the wire. One `ServerHooks` per server
(`Services.hooks`) is what the front door, the session and the turn ask. Each hook is off unless
configured, and an off hook costs its caller one attribute read: `faults` are flags (with the
few derived ones a caller asks on every create or response worked out here once), `script` and
`observer` are None.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from harness.protocol.cache import ResponseCache
from harness.protocol.errors import ApiError
from harness.protocol.events import Event
from harness.protocol.requests import CreateRequest, Transport
from reference_server.hooks.case_script import CaseScript
from reference_server.hooks.faults import (
    AfterResponse,
    CaseBehaviour,
    EventFaults,
    FaultMemory,
    Faults,
    flatten_error,
)
from reference_server.hooks.observer import Direction, ServerObserver
from reference_server.pipeline.outbox import Send
from reference_server.state.conversation import Conversation

# The queue faults (interleave-queued, drop-queued): how long a response lingers after
# response.created. A zero-cost profile otherwise finishes it before a create sent meanwhile is
# read, and the fault would show only when the machine happens to be quiet; a real model takes
# this long anyway.
QUEUE_FAULT_LINGER_S: Final = 0.1


@dataclass(frozen=True, slots=True)
class HookedCreate:
    """What the hooks make of one WebSocket create: the request to run and how its events go
    out, or the error event that answers it instead."""

    request: CreateRequest
    send: Send
    refusal: Event | None = None
    case_index: int | None = None  # a client case's number for it (its act after the response)


class ServerHooks:
    def __init__(
        self,
        faults: Faults | None = None,
        script: CaseScript | None = None,
        observer: ServerObserver | None = None,
    ) -> None:
        self.faults = faults if faults is not None else Faults()
        self.script = script
        self.observer = observer  # `wsmode certify-client` sets it on the server it watches
        faults = self.faults
        self.rewrites_events = faults.rewrites_events
        self._fault_memory = FaultMemory()  # what the event faults carry across responses
        # the accept-background fault parses a create as HTTP would, where background is allowed
        self.create_transport: Transport = "http" if faults.accept_background else "ws"
        self._lingers = faults.interleave_queued or faults.drop_queued
        # whether `on_create` changes anything: a client case, or a queue fault
        self.acts_on_creates = script is not None or self._lingers

    @classmethod
    def of(cls, fault_names: Iterable[str], case: CaseBehaviour) -> ServerHooks:
        return cls(Faults.from_names(fault_names), CaseScript(case) if case.active else None)

    def record(self, conn: str, direction: Direction, kind: str, data: str | bytes) -> None:
        """Tell the observer, if one watches."""
        if self.observer is not None:
            self.observer.record(conn, direction, kind, data)

    # -- a response -------------------------------------------------------------------------
    def answer(self, request: CreateRequest) -> CreateRequest:
        """The request as the engine plans it (a client case may ask for short answers)."""
        return request if self.script is None else self.script.answer(request)

    def event_faults(self) -> EventFaults | None:
        """One response's event rewriter; None when no event fault is on."""
        return EventFaults(self.faults, self._fault_memory) if self.rewrites_events else None

    def error_event(self, error: ApiError, stream_id: str | None) -> Event:
        """A request-scoped error as the session sends it (flat under the flat-error fault)."""
        event = error.to_event(stream_id=stream_id)
        return flatten_error(event) if self.faults.flat_error else event

    # -- a WebSocket create -----------------------------------------------------------------
    def on_create(
        self,
        request: CreateRequest,
        cache: ResponseCache[Conversation],
        send: Send,
        abort: Callable[[], None],
    ) -> HookedCreate:
        """A client case's refusals, misses and mid-stream acts (`abort` cuts the connection),
        else the queue faults' lingering send."""
        if self.script is not None:
            plan = self.script.on_create(request, cache)
            if plan.refusal is not None:
                refusal = self.script.error_event(plan.refusal, request.stream_id)
                return HookedCreate(plan.request, send, refusal, plan.index)
            tapped = self.script.response_send(send, abort, plan)
            return HookedCreate(plan.request, tapped, case_index=plan.index)
        if self._lingers:
            return HookedCreate(request, _lingering(send))
        return HookedCreate(request, send)

    def after_response(self, case_index: int) -> tuple[AfterResponse, float] | None:
        """A client case's act on the idle socket once the response is out, and how long after
        it (so the terminal is read first)."""
        if self.script is None:
            return None
        act = self.script.after_response(case_index)
        return None if act is None else (act, self.script.behaviour.after_response_delay_s)


def _lingering(send: Send) -> Send:
    async def send_then_linger(*events: Event) -> None:
        await send(*events)
        if any(event.get("type") == "response.created" for event in events):
            await asyncio.sleep(QUEUE_FAULT_LINGER_S)

    return send_then_linger
