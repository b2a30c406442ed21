"""Turn admission: at most one new turn starts (or ends) per event-loop iteration.

A burst of creates (1,000 clients sending at once) would otherwise run every new turn's
preparation and planning in one iteration of the loop, ~1-3 ms each, and every stream already
decoding would wait that whole iteration for its next delta: a second or more, as a batch of
prefills stalls decoding in an engine without a prefill budget. Admitted one per iteration,
the new turns queue (the wait counts in their TTFT, as an engine's admission queue does) while
the streams' wake-ups run between them. A turn that finds the gate open, as on any server not
in a burst, starts at once without waiting. A turn's bookkeeping after its last token (the
cache entry, the terminal) passes the same gate, its deltas sent first, so a burst of ends,
~1 ms each for a long reply, does not hold back the streams still decoding either.
"""

from __future__ import annotations

import asyncio
from collections import deque


class TurnAdmission:
    __slots__ = ("_busy", "_loop", "_owner", "_waiters")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._busy = False  # a turn was admitted in this iteration
        self._owner: asyncio.Task[object] | None = None  # the task of the turn admitted last
        self._waiters: deque[tuple[asyncio.Future[None], asyncio.Task[object] | None]] = deque()

    async def admit(self) -> None:
        """Return when this turn may go on: at once if no other went in this iteration."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests, benchmarks): nothing of an old one holds
            self._loop, self._busy, self._owner, self._waiters = loop, False, None, deque()
        task = asyncio.current_task()
        if not self._busy:
            self._busy, self._owner = True, task
            loop.call_soon(self._next)
            return
        if task is self._owner:  # the turn admitted last goes on (a reply with no wait in it)
            return
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append((waiter, task))
        await waiter  # a turn cancelled meanwhile (its client left) is skipped by _next

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def busy(self) -> bool:
        """Whether `admit()` would wait now (another turn went in this iteration)."""
        return (
            self._busy
            and self._loop is asyncio.get_running_loop()
            and self._owner is not asyncio.current_task()
        )

    def _next(self) -> None:
        """The next iteration: admit the next waiting turn, else open the gate."""
        while self._waiters:
            waiter, task = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self._owner = task
                assert self._loop is not None
                self._loop.call_soon(self._next)
                return
        self._busy, self._owner = False, None
