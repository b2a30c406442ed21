"""A client case's server behaviours at work (`faults.CaseBehaviour`, `wsmode certify-client`).

One `CaseScript` per server, shared by its connections: it numbers upgrades and creates across
connections ("the first upgrade", "create 1") and tells the front and the session what to do at
each point. What reaches the client goes through the server's own paths: a refusal is the front
door's JSON error answer, an error event is `protocol.errors`' (reshaped when the case asks for
the flat or string form), a failed response is the turn's failure path (`InjectedFailure`), an
incomplete one the engine's own truncation; the script only decides when.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from harness.protocol import errors
from harness.protocol.cache import ResponseCache
from harness.protocol.errors import ApiError
from harness.protocol.events import Event
from harness.protocol.requests import CreateRequest
from reference_server.hooks.faults import (
    AfterResponse,
    CaseBehaviour,
    InjectedFailure,
    flatten_error,
)
from reference_server.pipeline.outbox import Send
from reference_server.state.conversation import Conversation

_LIFECYCLE: Final = frozenset({"response.created", "response.queued", "response.in_progress"})
_TERMINAL: Final = frozenset({"response.completed", "response.failed", "response.incomplete"})
_ERROR_TYPES: Final = {401: "invalid_request_error", 429: "rate_limit_error"}
_MESSAGES: Final = {
    401: "Incorrect API key provided.",
    403: "Forbidden: this origin may not open WebSocket connections.",
    404: "Unknown path: no WebSocket endpoint here.",
    405: "Method not allowed: GET with Upgrade is not served here.",
    426: "WebSocket mode is not available here; use HTTP POST /v1/responses.",
    429: "Too many connections; retry after the Retry-After interval.",
    501: "Responses WebSocket mode is disabled on this server.",
}
UpgradeAction = Literal["accept", "drop"] | ApiError


@dataclass(frozen=True, slots=True)
class CreatePlan:
    """What the script made of one create: its number, and an error to answer instead."""

    index: int
    request: CreateRequest
    refusal: ApiError | None = None
    fail_after_deltas: int | None = None  # this response fails after that many deltas


def upgrade_refusal(status: int, code: str) -> ApiError:
    """The JSON error a refused upgrade carries (`{error: {type, code, message, param}}`)."""
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return ApiError(status, kind, code or None, _MESSAGES.get(status, "Upgrade refused."))


class CaseScript:
    def __init__(self, behaviour: CaseBehaviour) -> None:
        self.behaviour = behaviour
        self.upgrades = 0
        self.creates = 0
        self.continuations = 0
        self.cut_done = False  # drop_after_deltas (and an untargeted failure): once per server

    # -- before 101 -----------------------------------------------------------------------
    def next_upgrade(self) -> UpgradeAction:
        b, index = self.behaviour, self.upgrades
        self.upgrades += 1
        if index < b.close_before_101:
            return "drop"
        if index < b.close_before_101 + b.refuse_upgrades:
            return upgrade_refusal(b.refuse_status, b.refuse_code)
        return "accept"

    # -- a create ---------------------------------------------------------------------------
    def on_create(
        self, request: CreateRequest, cache: ResponseCache[Conversation] | None
    ) -> CreatePlan:
        b, index = self.behaviour, self.creates
        self.creates += 1
        if self._aimed(b.error_for_create, index, request) or (
            b.error_for_lane is not None and request.stream_id == b.error_for_lane
        ):
            error = errors.invalid_request(
                "Invalid prompt: the wsmode client case refuses this create.",
                code="invalid_prompt",
            )
            return CreatePlan(index, request, error)
        previous = request.previous_response_id
        if previous is not None and self.continuations < b.miss_continuations:
            self.continuations += 1
            if cache is not None:
                cache.evict(previous)  # the resolver answers previous_response_not_found
        if self._aimed(b.incomplete_for_create, index, request):
            request = dataclasses.replace(request, max_output_tokens=b.incomplete_cap_tokens)
        fail = b.fail_after_deltas if self._aimed(0, index, request) or not b.target_input else None
        return CreatePlan(index, request, fail_after_deltas=fail)

    def _aimed(self, numbered: int | None, index: int, request: CreateRequest) -> bool:
        """Is this create one the act aims at: the numbered one, or with `target_input` every
        create whose newest input item mentions it?"""
        if numbered is None:
            return False
        target = self.behaviour.target_input
        if target is None:
            return index == numbered
        return bool(request.input) and target in " ".join(_strings(request.input[-1]))

    def answer(self, request: CreateRequest) -> CreateRequest:
        """The request as the engine plans it: with `reply_tokens`, a short scripted message
        (whatever tools the client sent), on either transport."""
        tokens = self.behaviour.reply_tokens
        if tokens is None or request.script is not None:
            return request
        return dataclasses.replace(request, script=({"type": "message", "tokens": tokens},))

    def error_event(self, error: ApiError, stream_id: str | None) -> Event:
        """`error` as the case shapes it: nested (the API's), flat (openai-node's type), or a
        bare string in `error` (seen from proxies)."""
        event = error.to_event(stream_id=stream_id)
        shape = self.behaviour.error_shape
        if shape == "flat":
            return flatten_error(event)
        if shape == "string":
            return {
                "type": "error",
                **({"stream_id": stream_id} if stream_id is not None else {}),
                "error": f"{error.code}: {error.message}",
            }
        return event

    # -- a response on its way out ------------------------------------------------------------
    def response_send(self, send: Send, abort: Callable[[], None], plan: CreatePlan) -> Send:
        return _ResponseTap(self, send, abort, plan.fail_after_deltas)

    def after_response(self, index: int) -> AfterResponse | None:
        b = self.behaviour
        return b.after_response if b.after_response_index == index else None


class _ResponseTap:
    """One response's events through the case's mid-stream behaviours: a slow first output,
    `keepalive` events (numbered in the response's sequence, as live streams number them), a
    connection cut or a failure after N deltas."""

    def __init__(
        self, script: CaseScript, send: Send, abort: Callable[[], None], fail_after: int | None
    ) -> None:
        self.script = script
        self.fail_after = fail_after
        self.behaviour = script.behaviour
        self.send = send
        self.abort = abort
        self.waited = False
        self.deltas = 0
        self.numbered = 0  # events with a sequence number seen
        self.offset = 0  # keepalives inserted so far (later numbers shift by it)
        self.last_sent = -1  # the last sequence number sent
        self.failed = False  # after an injected failure: number on from the last one sent

    async def __call__(self, *events: Event) -> None:
        b = self.behaviour
        if b.drop_before_created and not self.script.cut_done:
            self.script.cut_done = True  # received, never answered: an ambiguous failure
            self.abort()
            return
        batch = list(events)
        if not self.waited and b.first_event_delay_s > 0:
            early = [e for e in batch if e.get("type") in _LIFECYCLE]
            if len(early) < len(batch):  # the first output: lifecycle now, the rest late
                self.waited = True
                if early:
                    await self.send(*early)
                    batch = batch[len(early) :]
                await asyncio.sleep(b.first_event_delay_s)
        out: list[Event] = []
        for event in batch:
            out.append(self._renumbered(event))
            if str(event.get("type", "")).endswith(".delta"):
                self.deltas += 1
                if self._cut_here(b.drop_after_deltas):
                    await self.send(*out)
                    self.abort()  # no close frame: the client sees 1006
                    return
                if self._fail_here():
                    await self.send(*out)
                    self.failed = True  # what the engine made after the cut is never sent
                    raise InjectedFailure(_failure(b.fail_code))
            if self._keepalive_due(event):
                out.append({"type": "keepalive", "sequence_number": self._next_number(out)})
                self.offset += 1
                self.last_sent += 1
        await self.send(*out)

    def _fail_here(self) -> bool:
        if self.fail_after is None or self.failed or self.deltas < self.fail_after:
            return False
        if self.behaviour.target_input is None:  # untargeted: the first response only
            if self.script.cut_done:
                return False
            self.script.cut_done = True
        return True

    def _cut_here(self, after: int | None) -> bool:
        if after is None or self.script.cut_done or self.deltas < after:
            return False
        self.script.cut_done = True
        return True

    def _renumbered(self, event: Event) -> Event:
        if event.get("type") == "response.created":
            self.offset, self.last_sent, self.failed = 0, -1, False  # numbering restarts
        seq = event.get("sequence_number")
        if not isinstance(seq, int):
            return event
        self.numbered += 1
        number = self.last_sent + 1 if self.failed else seq + self.offset
        self.last_sent = number
        return {**event, "sequence_number": number} if number != seq else event

    def _keepalive_due(self, event: Event) -> bool:
        every = self.behaviour.keepalive_every
        numbered = isinstance(event.get("sequence_number"), int)
        return bool(every) and numbered and not _is_last(event) and self.numbered % every == 0

    @staticmethod
    def _next_number(out: list[Event]) -> int:
        seq: Any = out[-1].get("sequence_number")
        return int(seq) + 1


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _is_last(event: Event) -> bool:
    return event.get("type") in _TERMINAL or event.get("type") == "error"


def _failure(code: str) -> ApiError:
    return errors.invalid_request(
        "The wsmode client case fails this response mid-stream.", code=code
    )
