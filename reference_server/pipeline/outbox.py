"""The events stage's way out: one response's events, rewritten by the event faults, batched.

A response goes out in as few writes as its timing allows: each write costs a syscall and a
wake-up of the reader (measured on loopback: ~0.1 ms each, more than building the events).
Events are held until the engine would wait (`flush()` before every sleep), the first content
token is ready (the TTFT mark, by the one definition of `harness.protocol.timing_marks`,
stamped here as `first_token_at`: it goes out at once), the turn ends, or `MAX_HELD_EVENTS`
pile up. So what the engine produces back to back travels in one write: with no wait before
the first token, created, in_progress, the item's start (the TTFE mark) and the first delta
share one, and a second write would only add its cost (~50 us here) to the TTFT. Events are
never delayed past the moment the engine yields, so the decode schedule is unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from harness.protocol.events import Event
from harness.protocol.timing_marks import is_first_token_candidate

# A bound on one write (and on what a zero-latency response of 200k deltas holds in memory).
MAX_HELD_EVENTS = 256


class Send(Protocol):
    """Delivers events to the client; events given together go out in one write."""

    async def __call__(self, *events: Event) -> None: ...


class EventRewriter(Protocol):
    """The event faults (`hooks.faults.EventFaults`): false when none is active; else each
    outgoing event becomes the events that go out instead."""

    def __bool__(self) -> bool: ...

    def apply(self, event: Event) -> list[Event]: ...


class Outbox:
    def __init__(self, send: Send, faults: EventRewriter | None = None) -> None:
        self._send = send
        self._faults = faults if faults else None  # asked at every emit: asked once
        self._held: list[Event] = []  # events waiting to ride with the next write
        self.first_token_at: float | None = None  # perf_counter() at the first token's write

    async def emit(self, events: Event | Sequence[Event], *, hold: bool = False) -> None:
        """Queue `events`; write at once only what carries the first token (unless `hold`)."""
        batch = [events] if isinstance(events, dict) else list(events)
        if self._faults is not None:
            batch = [out for event in batch for out in self._faults.apply(event)]
        self._held.extend(batch)
        if hold:
            return
        if self.first_token_at is None:
            for event in batch:
                if is_first_token_candidate(event):
                    self.first_token_at = time.perf_counter()
                    await self.flush()
                    return
        if len(self._held) >= MAX_HELD_EVENTS:
            await self.flush()

    async def flush(self) -> None:
        """Write everything held, in one write."""
        if self._held:
            batch, self._held = self._held, []
            await self._send(*batch)
