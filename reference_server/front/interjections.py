"""The beta client events of one WebSocket connection: steers and injects (PROTOCOL.md §2.2).

Both are handled by the task that reads them, the moment they are read, never queued behind a
lane: a multi-agent response that waits for a tool output waits for exactly the inject a lane's
FIFO would hold behind it (the deadlock one implementer reported; the `queue-injects` fault
brings it back so the conformance suite can be shown to catch it).

- `response.steer` on a running single-agent response: `response.steer.accepted`, and the
  response ends at its next item boundary (`pipeline/live.py`). Then `settle` decides what the
  queued input becomes: the input of an automatic successor (the session runs it next on the
  lane, before anything queued), or, when the response stopped for client-owned tool output,
  `response.steer.pending` with the calls as `required_input` stubs; the input is then prepended
  to the lane's next create naming that parent (`before_create`).
- `response.inject` into a running multi-agent response: validated as a whole
  (`state/inject.py`), then committed (`response.inject.created`) or not at all
  (`response.inject.failed` returning the input).

Steers pending on one response are bounded in count and in frame bytes (one is always taken),
whether it runs or has stopped for tool output (parked): over either bound the steer fails with
`too_many_pending_steers`. An inject is never held: it is committed at once or refused, and a
response takes at most one output per call it waits for, and injects of at most
`max_inject_bytes` frame bytes in all (over it: `inject_too_large` [I], nothing committed).

Replies about a running response are numbered in its sequence; replies about no running response
(`response_not_found`, `response_already_completed`) carry `sequence_number` 0 [I].
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from harness.protocol.beta import (
    INJECT,
    STEER_PENDING_REASON,
    InvalidSteerInput,
    parse_inject,
    parse_steer,
    steer_event,
)
from harness.protocol.errors import ApiError
from harness.protocol.events import Event
from harness.protocol.requests import CreateRequest
from reference_server.pipeline.live import LiveResponse, Steer
from reference_server.pipeline.outbox import Send
from reference_server.pipeline.response import new_id
from reference_server.runtime.turn import TurnOutcome
from reference_server.state.inject import inject_problem

# Finished response ids remembered per connection (to tell "already completed" from "not found").
REMEMBERED_FINISHED = 256
_MESSAGES = {
    "response_not_found": "No response with id {id} on this connection.",
    "response_already_completed": "Response {id} has finished; it takes no more input.",
    "response_not_active": "Response {id} is no longer accepting input.",
    "steering_not_supported": "Response {id} does not support steering (multi-agent, or created "
    "with context_management compaction).",
    "too_many_pending_steers": "Too much steering input is pending for response {id}.",
    "inject_too_large": "Response {id} takes at most {why} bytes of injected tool output in all.",
    "successor_creation_failed": "The successor of response {id} could not be created: {why}",
}


def _message(code: str, response_id: str, why: str = "") -> str:
    return _MESSAGES[code].format(id=response_id, why=why)


@dataclass
class _Parked:
    """Steers waiting for the explicit continuation of a response that stopped for tool output."""

    live: LiveResponse
    required_input: list[dict[str, str]]
    steers: list[Steer] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Successor:
    """An automatic successor: the steered response's settings, the steers' input."""

    request: CreateRequest
    parent: LiveResponse
    steers: tuple[Steer, ...]


class Interjections:
    """One connection's running responses by id, and what steers and injects do to them."""

    def __init__(
        self,
        send: Send,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        *,
        max_pending_steers: int = 8,
        max_pending_steer_bytes: int = 1024 * 1024,
        max_inject_bytes: int = 16 * 1024 * 1024,
        queue_injects: bool = False,
        queue_steers: bool = False,
    ) -> None:
        self._send = send
        self._spawn = spawn
        self.max_pending_steers = max_pending_steers
        self.max_pending_steer_bytes = max_pending_steer_bytes
        self.steer_bytes: dict[str, int] = {}  # response id -> frame bytes of its pending steers
        self.max_inject_bytes = max_inject_bytes
        self.inject_bytes: dict[str, int] = {}  # response id -> frame bytes it has committed
        self._queue_injects = queue_injects  # the fault: an inject waits for its target's end
        self._queue_steers = queue_steers  # the fault: a steer waits for its target's end
        self.live: dict[str, LiveResponse] = {}
        self.finished: OrderedDict[str, str | None] = OrderedDict()  # id -> its lane
        self.parked: dict[str, _Parked] = {}

    # -- the registry the turn opens its response in (pipeline.live.LiveRegistry) ------------
    def open(self, live: LiveResponse) -> None:
        self.live[live.response_id] = live

    def discard(self, live: LiveResponse) -> None:
        self._end(live)

    def _end(self, live: LiveResponse) -> None:
        live.finished = True
        self.live.pop(live.response_id, None)
        self.inject_bytes.pop(live.response_id, None)
        self.finished[live.response_id] = live.stream_id
        while len(self.finished) > REMEMBERED_FINISHED:
            self.finished.popitem(last=False)
        live.ended.set()

    async def _standalone(self, event_type: str, target: str, **fields: Any) -> None:
        """A reply about no running response: numbered 0, on the target's lane if known."""
        event: Event = {"type": event_type, "sequence_number": 0, **fields}
        lane = self.finished.get(target)
        if lane is not None:
            event["stream_id"] = lane
        await self._send(event)

    def _gone(self, target: str) -> str:
        return "response_already_completed" if target in self.finished else "response_not_found"

    # -- response.steer ---------------------------------------------------------------------------
    def _over_bound(self, target: str, pending: int, size_bytes: int) -> bool:
        """Would one more steer of `size_bytes` pass the target's bounds (`pending` queued)?"""
        if pending >= self.max_pending_steers:
            return True
        held = self.steer_bytes.get(target, 0)
        return pending > 0 and held + size_bytes > self.max_pending_steer_bytes

    def _hold(self, target: str, size_bytes: int) -> None:
        self.steer_bytes[target] = self.steer_bytes.get(target, 0) + size_bytes

    async def on_steer(self, body: dict[str, Any], size_bytes: int = 0) -> None:
        """Raises InvalidRequest when the steer names no target (the session sends an error).
        `size_bytes`: its frame's, for the byte bound."""
        running = self.live.get(str(body.get("previous_response_id")))
        if running is not None and self._queue_steers:  # the fault: behind the target's end
            self._spawn(self._steer_after_end(running, body, size_bytes))
            return
        try:
            request = parse_steer(body)
        except InvalidSteerInput as bad:
            await self._steer_failed(
                None,
                None,
                bad.previous_response_id,
                bad.raw_input,
                "invalid_input",
                bad.error.message,
            )
            return
        target = request.previous_response_id
        steer = Steer(new_id("steer"), target, request.items, request.raw_input)
        live = self.live.get(target)
        if live is not None:
            code = live.steer_refusal()
            if code is None and self._over_bound(target, len(live.steers), size_bytes):
                code = "too_many_pending_steers"
            if code is not None:
                await self._steer_failed(live, None, target, steer.raw_input, code)
                return
            self._hold(target, size_bytes)
            live.queue_steer(steer)
            await live.reply("response.steer.accepted", steer=steer_event(steer.steer_id, target))
            return
        parked = self.parked.get(target)
        if parked is not None:  # it waits for its required input: so does this steer
            if self._over_bound(target, len(parked.steers), size_bytes):
                code = "too_many_pending_steers"
                await self._steer_failed(parked.live, None, target, steer.raw_input, code)
                return
            self._hold(target, size_bytes)
            parked.steers.append(steer)
            await parked.live.reply(
                "response.steer.accepted", steer=steer_event(steer.steer_id, target)
            )
            await self._pending(parked.live, steer, parked.required_input)
            return
        await self._steer_failed(None, None, target, steer.raw_input, self._gone(target))

    async def _steer_after_end(
        self, live: LiveResponse, body: dict[str, Any], size_bytes: int
    ) -> None:
        await live.ended.wait()
        await self.on_steer(body, size_bytes)

    async def _steer_failed(
        self,
        live: LiveResponse | None,
        steer_id: str | None,
        target: str,
        raw_input: Any,
        code: str,
        message: str | None = None,
    ) -> None:
        fields = {
            "error": {
                "type": "invalid_request_error",
                "code": code,
                "message": message or _message(code, target),
            },
            "steer": steer_event(steer_id, target, raw_input, failed=True),
        }
        if live is not None:
            await live.reply("response.steer.failed", **fields)
        else:
            await self._standalone("response.steer.failed", target, **fields)

    async def _pending(
        self, live: LiveResponse, steer: Steer, required_input: list[dict[str, str]]
    ) -> None:
        await live.reply(
            "response.steer.pending",
            reason=STEER_PENDING_REASON,
            required_input=required_input,
            steer=steer_event(steer.steer_id, steer.previous_response_id),
        )

    async def settle(self, outcome: TurnOutcome, request: CreateRequest) -> Successor | None:
        """The response has ended: what its queued steers become (see the module doc)."""
        live = outcome.live
        if live is None:
            return None
        self._end(live)
        steers = tuple(live.steers)
        if not steers:
            return None
        if not live.calls or outcome.status == "failed":  # they leave with the successor, or fail
            self.steer_bytes.pop(live.response_id, None)
        if outcome.status == "failed":
            for steer in steers:
                await self._fail_steer(live, steer, "response_not_active")
            return None
        if live.calls:
            stubs = [
                {"type": "function_call_output", "call_id": call_id, "name": name}
                for call_id, name in live.calls
            ]
            self.parked[live.response_id] = _Parked(live, stubs, list(steers))
            for steer in steers:
                await self._pending(live, steer, stubs)
            return None
        successor = dataclasses.replace(
            request,
            input=tuple(item for steer in steers for item in steer.items),
            previous_response_id=live.response_id,
            script=None,
            generate=True,
        )
        return Successor(successor, live, steers)

    async def successor_failed(self, successor: Successor, error: ApiError) -> None:
        for steer in successor.steers:
            await self._fail_steer(
                successor.parent, steer, "successor_creation_failed", error.message
            )

    async def _fail_steer(self, live: LiveResponse, steer: Steer, code: str, why: str = "") -> None:
        message = _message(code, steer.previous_response_id, why)
        await self._steer_failed(
            live, steer.steer_id, steer.previous_response_id, steer.raw_input, code, message
        )

    async def before_create(self, request: CreateRequest) -> CreateRequest:
        """A create on a lane with parked steers: their input goes first when it continues their
        response (in submission order); a create that continues another one ends them."""
        stream_id = request.stream_id
        for parent, parked in list(self.parked.items()):
            if parked.live.stream_id != stream_id:
                continue
            del self.parked[parent]
            self.steer_bytes.pop(parent, None)
            if request.previous_response_id == parent:
                queued = tuple(item for steer in parked.steers for item in steer.items)
                request = dataclasses.replace(request, input=(*queued, *request.input))
            else:
                for steer in parked.steers:
                    await self._fail_steer(parked.live, steer, "response_not_active")
        return request

    # -- response.inject --------------------------------------------------------------------------
    async def on_inject(self, body: dict[str, Any], size_bytes: int = 0) -> None:
        """Raises InvalidRequest when the inject names no target or has no input array.
        `size_bytes`: its frame's, for the byte bound."""
        inject = parse_inject(body)
        live = self.live.get(inject.response_id)
        if live is not None and self._queue_injects:  # the fault: behind the target's lane
            self._spawn(self._after_end(live, body, size_bytes))
            return
        await self._inject(inject.response_id, inject.items, live, size_bytes)

    async def _after_end(self, live: LiveResponse, body: dict[str, Any], size_bytes: int) -> None:
        await live.ended.wait()
        inject = parse_inject(body)
        live_now = self.live.get(inject.response_id)
        await self._inject(inject.response_id, inject.items, live_now, size_bytes)

    async def _inject(
        self, target: str, items: tuple[Any, ...], live: LiveResponse | None, size_bytes: int
    ) -> None:
        if live is None or live.finished:
            code = self._gone(target) if live is None else "response_already_completed"
            error = {"code": code, "message": _message(code, target)}
            if live is None:
                await self._standalone(
                    INJECT + ".failed", target, response_id=target, input=list(items), error=error
                )
            else:
                await live.reply(
                    INJECT + ".failed", response_id=target, input=list(items), error=error
                )
            return
        committed_bytes = self.inject_bytes.get(target, 0)
        if committed_bytes + size_bytes > self.max_inject_bytes:  # [I] its own code
            message = _message("inject_too_large", target, why=str(self.max_inject_bytes))
            error = {"code": "inject_too_large", "message": message}
            await live.reply(INJECT + ".failed", response_id=target, input=list(items), error=error)
            return
        problem = inject_problem(items, live.waiting)
        if problem is not None:  # [I] code invalid_input: nothing of it is committed
            error = {"code": "invalid_input", "message": problem}
            await live.reply(INJECT + ".failed", response_id=target, input=list(items), error=error)
            return
        self.inject_bytes[target] = committed_bytes + size_bytes
        created = live.emitter.beta_event(INJECT + ".created", response_id=target)
        live.commit(items)  # numbered first: the resumed output follows the reply
        await live.out.emit(created)
        await live.out.flush()
