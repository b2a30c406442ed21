"""Dead-target detection for the load harness: a turn that timed out asks the liveness probe
(harness.transport.liveness) whether the target still answers.

Every rollout against one target shares a `TargetWatch`: one probe at a time decides, and once
a probe finds the target dead every rollout stops at its next turn, and those not started end at
once, each with the probe's reason, instead of every turn in the run waiting out its own
timeout. A slow but live target passes the probe and the run goes on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Final

from harness.transport.liveness import PROBE_TIMEOUT_S, probe

DEFAULT_TURN_TIMEOUT_S: Final = 60.0  # certify's case timeout


@dataclass
class TargetWatch:
    """Shared by every rollout against one target: whether a probe found it dead."""

    dead_reason: str | None = None
    probes: int = 0
    probe_timeout_s: float = PROBE_TIMEOUT_S
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def after_timeout(self, url: str, mode: str, model: str, api_key: str | None) -> None:
        """Probe the target (one probe at a time; none once it is known dead)."""
        async with self._lock:
            if self.dead_reason is not None:
                return
            self.probes += 1
            reason = await probe(
                url, model=model, api_key=api_key, mode=mode, event_timeout_s=self.probe_timeout_s
            )
            if reason is not None:
                self.dead_reason = f"target stopped answering: {reason}"
