"""The events stage's way out: one response's events, rewritten by the event faults, batched.

Lifecycle events can be held to ride with the next write (`created` + `in_progress` with the
first output when the engine answers at once), so a response starts in one write, not two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from harness.protocol.events import Event
from reference_server.faults import EventFaults


class Send(Protocol):
    """Delivers events to the client; events given together go out in one write."""

    async def __call__(self, *events: Event) -> None: ...


class Outbox:
    def __init__(self, send: Send, faults: EventFaults) -> None:
        self._send = send
        self._faults = faults
        self._held: list[Event] = []  # lifecycle events waiting to ride with the next write

    async def emit(self, events: Event | Sequence[Event], *, hold: bool = False) -> None:
        """Send `events` (with any held ones) in one write, or hold them all for the next."""
        batch = [events] if isinstance(events, dict) else list(events)
        if self._faults:
            batch = [out for event in batch for out in self._faults.apply(event)]
        batch = [*self._held, *batch]
        self._held.clear()
        if hold:
            self._held.extend(batch)
        elif batch:
            await self._send(*batch)
