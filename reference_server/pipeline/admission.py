"""Turn admission: at most a few new turns start (or end) per event-loop iteration.

A burst of creates (1,000 clients sending at once) would otherwise run every new turn's
preparation and planning in one iteration of the loop, ~1-3 ms each, and every stream already
decoding would wait that whole iteration for its next delta: a second or more, as a batch of
prefills stalls decoding in an engine without a prefill budget. Admitted a few per iteration,
the new turns queue (the wait counts in their TTFT, as an engine's admission queue does) while
the streams' wake-ups run between them. A turn that finds the gate open, as on any server not
in a burst, starts at once without waiting. A turn's bookkeeping after its last token (the
cache entry, the terminal) passes the same gate, its deltas sent first, so a burst of ends,
~1 ms each for a long reply, does not hold back the streams still decoding either.
"""

from __future__ import annotations

import asyncio
from collections import deque

PER_ITERATION = 8  # a burst's iteration holds ~8 turns' work (~25 ms for long replies)


class TurnAdmission:
    __slots__ = ("_admitted", "_loop", "_scheduled", "_waiters")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._admitted: set[asyncio.Task[object] | None] = set()  # in this iteration
        self._scheduled = False  # _next is due at the next iteration
        self._waiters: deque[tuple[asyncio.Future[None], asyncio.Task[object] | None]] = deque()

    async def admit(self) -> None:
        """Return when this turn may go on: at once if fewer than `PER_ITERATION` turns went in
        this iteration and none waits before it."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests, benchmarks): nothing of an old one holds
            self._loop, self._admitted, self._scheduled = loop, set(), False
            self._waiters = deque()
        task = asyncio.current_task()
        if task in self._admitted:  # admitted in this iteration: a reply with no wait in it
            return
        if len(self._admitted) < PER_ITERATION and not self._waiters:
            self._admitted.add(task)
            self._schedule()
            return
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append((waiter, task))
        await waiter  # a turn cancelled meanwhile (its client left) is skipped by _next

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def busy(self) -> bool:
        """Whether `admit()` would wait now."""
        if self._loop is not asyncio.get_running_loop():
            return False
        if asyncio.current_task() in self._admitted:
            return False
        return len(self._admitted) >= PER_ITERATION or bool(self._waiters)

    def _schedule(self) -> None:
        if not self._scheduled:
            assert self._loop is not None
            self._scheduled = True
            self._loop.call_soon(self._next)

    def _next(self) -> None:
        """The next iteration: admit the next waiting turns, up to `PER_ITERATION`."""
        self._scheduled = False
        self._admitted = set()
        while self._waiters and len(self._admitted) < PER_ITERATION:
            waiter, task = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self._admitted.add(task)
        if self._admitted:
            self._schedule()
