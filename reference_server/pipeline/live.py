"""A running response that client events reach while it streams (PROTOCOL.md §2.2).

Two beta client events act on a response that is still generating: a `response.steer` queues
user input on it, a `response.inject` commits client-owned tool outputs into it. The session
finds the `LiveResponse` by id the moment such an event is read (never behind the lane's queue:
the response may be waiting for exactly that inject). The decode loop asks it at every item
boundary what to do (`before_item`):

- **multi-agent** (`multi_agent.enabled`): every function call is client-owned; the agent that
  made it waits before its next non-call item (or its end) until the call's output is committed.
  Committed outputs are listed as `function_call_output` output items, in commit order, and
  the agent reads them before it goes on (`prefill_s`: the profile's prefill of their tokens).
  A response that waits longer than `required_input_timeout_s` fails (`required_input_timeout`).
- **steered** (single-agent only): with a steer queued, the response ends at the next item
  boundary that follows an item (a safe output boundary: at least one item is out); the
  session then runs the automatic successor, or, when the response stopped for client-owned
  tool output (it emitted calls), reports the steer pending.

Replies (`reply`) are numbered in the response's own sequence and written at once.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from harness.errors import ServerError
from harness.protocol.emitter import ResponseEmitter
from reference_server.pipeline.outbox import Outbox
from reference_server.pipeline.response import new_id

Boundary = Literal["go", "stop"]


@dataclass(frozen=True, slots=True)
class Steer:
    """One accepted steering submission: queued until its successor's response.created."""

    steer_id: str
    previous_response_id: str
    items: tuple[dict[str, Any], ...]
    raw_input: Any  # as sent: a failure returns it


class RequiredInputTimeout(ServerError):
    """A multi-agent response waited too long for an injected tool output."""


class LiveRegistry(Protocol):
    """Where a connection finds its running responses by id (the session's `Interjections`)."""

    def open(self, live: LiveResponse) -> None: ...

    def discard(self, live: LiveResponse) -> None: ...


class LiveResponse:
    def __init__(
        self,
        emitter: ResponseEmitter,
        out: Outbox,
        *,
        multi_agent: bool,
        max_pending_steers: int,
        required_input_timeout_s: float,
        prefill_s: Callable[[Sequence[dict[str, Any]]], float] | None = None,
        compaction: bool = False,
    ) -> None:
        self.emitter = emitter
        self.compaction = compaction  # created with context_management compaction
        self.prefill_s = prefill_s  # what reading committed outputs costs before resuming
        self.out = out
        self.multi_agent = multi_agent
        self.max_pending_steers = max_pending_steers
        self.required_input_timeout_s = required_input_timeout_s
        self.calls: list[tuple[str, str]] = []  # (call_id, name) of every call emitted
        self.waiting: dict[str, str | None] = {}  # call_id -> its agent: awaiting an output
        self.steers: list[Steer] = []
        self.finished = False  # the terminal is out: it takes no more input
        self.stopped_early = False  # a steer ended it before its last item
        self.paused_s = 0.0  # time spent waiting for injected outputs (the decode clock shifts)
        self._agents: dict[str, str | None] = {}  # call_id -> agent, for the listed outputs
        self._committed: deque[dict[str, Any]] = deque()  # committed, not yet listed
        self._wake = asyncio.Event()
        self.ended = asyncio.Event()  # set once the session has settled it

    @property
    def response_id(self) -> str:
        return self.emitter.response_id

    @property
    def stream_id(self) -> str | None:
        return self.emitter.stream_id

    async def reply(self, event_type: str, **fields: Any) -> None:
        """Send a reply to a steer or inject about this response, in its sequence, now."""
        await self.out.emit(self.emitter.beta_event(event_type, **fields))
        await self.out.flush()

    # -- steering ---------------------------------------------------------------------------
    def steer_refusal(self) -> str | None:
        """The steer.failed code if this response cannot take a steer now; None: it can."""
        if self.finished:
            return "response_already_completed"
        if self.multi_agent or self.compaction:
            # "supported only for single-agent responses"; responses with context_management
            # compaction "do not support steering" (the steering guide)
            return "steering_not_supported"
        if len(self.steers) >= self.max_pending_steers:
            return "too_many_pending_steers"
        return None

    def queue_steer(self, steer: Steer) -> None:
        self.steers.append(steer)

    # -- injection --------------------------------------------------------------------------
    def commit(self, items: tuple[Any, ...]) -> None:
        """Commit validated tool outputs (all of them: the caller validated every one)."""
        for item in items:
            self.waiting.pop(item["call_id"], None)
            self._committed.append(item)
        self._wake.set()

    # -- the decode loop's questions -------------------------------------------------------------
    def call_emitted(self, call_id: str, name: str, agent: str | None) -> None:
        self.calls.append((call_id, name))
        self._agents[call_id] = agent
        if self.multi_agent:
            self.waiting[call_id] = agent

    async def before_item(self, next_kind: str | None, *, first: bool = False) -> Boundary:
        """At an item boundary (`next_kind` None: after the last item; `first`: before the
        first): list what was committed, wait for outstanding tool outputs unless another call
        follows, stop for a steer [I]: at the first boundary after it that follows an item."""
        await self._list_committed()
        if self.waiting and next_kind != "function_call":
            await self._wait_for_outputs()
        if self.steers and next_kind is not None and not first:
            self.stopped_early = True
            return "stop"
        return "go"

    async def _list_committed(self, read: list[dict[str, Any]] | None = None) -> None:
        while self._committed:
            item = self._committed.popleft()
            if read is not None:
                read.append(item)
            call_id = item["call_id"]
            await self.out.emit(
                self.emitter.function_call_output(
                    new_id("fco"), call_id, item.get("output"), agent=self._agents.get(call_id)
                )
            )

    async def _wait_for_outputs(self) -> None:
        started = time.perf_counter()
        deadline = started + self.required_input_timeout_s
        await self.out.flush()  # everything before the pause is on its way
        read: list[dict[str, Any]] = []
        while self.waiting:
            self._wake.clear()
            remaining = deadline - time.perf_counter()
            try:
                async with asyncio.timeout(max(remaining, 0.0)):
                    await self._wake.wait()
            except TimeoutError:
                raise RequiredInputTimeout(
                    f"No tool output for call(s) {', '.join(sorted(self.waiting))} within "
                    f"{self.required_input_timeout_s:g} s."
                ) from None
            await self._list_committed(read)
        cost_s = self.prefill_s(read) if self.prefill_s is not None and read else 0.0
        if cost_s > 0:  # the agent reads the outputs before its next token
            await self.out.flush()
            await asyncio.sleep(cost_s)
        self.paused_s += time.perf_counter() - started
