"""Turn admission: at most one new turn starts per event-loop iteration.

A burst of creates (1,000 clients sending at once) would otherwise run every new turn's
preparation and planning in one iteration of the loop, ~1-3 ms each, and every stream already
decoding would wait that whole iteration for its next delta: a second or more, as a batch of
prefills stalls decoding in an engine without a prefill budget. Admitted one per iteration,
the new turns queue (the wait counts in their TTFT, as an engine's admission queue does) while
the streams' wake-ups run between them. A turn that finds the gate open, as on any server not
in a burst, starts at once without waiting.
"""

from __future__ import annotations

import asyncio
from collections import deque


class TurnAdmission:
    __slots__ = ("_busy", "_loop", "_waiters")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._busy = False  # a turn was admitted in this iteration
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def admit(self) -> None:
        """Return when this turn may start: at once if no other started in this iteration."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests, benchmarks): nothing of an old one holds
            self._loop, self._busy, self._waiters = loop, False, deque()
        if not self._busy:
            self._busy = True
            loop.call_soon(self._next)
            return
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        await waiter  # a turn cancelled meanwhile (its client left) is skipped by _next

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def _next(self) -> None:
        """The next iteration: admit the next waiting turn, else open the gate."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                assert self._loop is not None
                self._loop.call_soon(self._next)
                return
        self._busy = False
