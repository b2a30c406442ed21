"""Dead-target detection for the load harness: a turn that timed out, or met a refused or
broken connection, asks the liveness probe (harness.transport.liveness_probe) whether the target
still answers.

Every rollout against one target shares a `TargetWatch`: one probe at a time decides, and once
a probe finds the target dead every turn in flight is given up (`race`), every rollout stops at
its next turn, and those not started end at once, each with the probe's reason, instead of every
turn in the run waiting out its own timeout or failing on its own. A slow but live target passes
the probe and the run goes on. `problem` classifies the death like the pre-run check
(harness.transport.target_check), so the command ends with the same kind of one line.

The bounds that make a target that stops mid-run end the run within a minute: a silent target is
found by the event timeout (10 s), one that streams forever or drips a delta every few seconds by
the turn timeout (30 s), one that refuses or drops connections at once; then one probe (at most
its event timeout) decides, and turns in flight are given up at once: 30 + 10 s, plus closing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Final, TypeVar

from harness.transport.failures import TargetTimeout
from harness.transport.liveness_probe import PROBE_TIMEOUT_S, probe_outcome
from harness.transport.target_check import TargetProblem, describe_failure

DEFAULT_TURN_TIMEOUT_S: Final = 30.0  # a whole turn: an endless or dripping stream ends here
DEFAULT_EVENT_TIMEOUT_S: Final = 10.0  # one event: a silent target ends here (certify's too)
T = TypeVar("T")


@dataclass
class TargetWatch:
    """Shared by every rollout against one target: whether a probe found it dead."""

    dead_reason: str | None = None
    problem: TargetProblem | None = None  # the death, classified (None while alive)
    probes: int = 0
    probe_timeout_s: float = PROBE_TIMEOUT_S
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _dead: asyncio.Event = field(default_factory=asyncio.Event)

    async def race(self, work: Awaitable[T]) -> T | None:
        """`work`'s result, or None when a probe finds the target dead first (`work` is then
        cancelled: a turn in flight against a dead target is given up at once)."""
        if self.dead_reason is not None:
            if asyncio.iscoroutine(work):
                work.close()
            return None
        task = asyncio.ensure_future(work)
        dead = asyncio.ensure_future(self._dead.wait())
        try:
            await asyncio.wait((task, dead), return_when=asyncio.FIRST_COMPLETED)
        finally:
            dead.cancel()
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.wait((task,))  # let it unwind (its sockets closed), without its result
        return None

    async def after_failure(self, url: str, mode: str, model: str, api_key: str | None) -> None:
        """Probe the target (one probe at a time; none once it is known dead)."""
        async with self._lock:
            if self.dead_reason is not None:
                return
            self.probes += 1
            outcome = await probe_outcome(
                url, model=model, api_key=api_key, mode=mode, event_timeout_s=self.probe_timeout_s
            )
            if outcome.failure is not None:
                self.dead_reason = f"target stopped answering: {outcome.failure}"
                error = outcome.error
                if error is not None and not isinstance(error, TargetTimeout):
                    # refused, reset, not resolved: said like the pre-run check says it
                    self.problem = describe_failure(error, url, mode)
                self._dead.set()
