"""Per-turn stage accounting: real time measured, simulated production cost charged.

Each pipeline stage does its real work, then `charge()`s the profile's cost for the work units it
actually did. Charges accumulate and are paid in one sleep before the engine starts (one timer
instead of one per stage), and every stage's real + charged time is reported to the client and
to /metrics, so a turn's TTFT splits into API overhead and simulated inference.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Protocol

from reference_server.engine.cost_profile import Profile, Stage
from reference_server.engine.engine import Engine, Seed


class Counters(Protocol):
    """What the stages count into: the server's `metrics.ServerMetrics`. Named here by the two
    calls the stages make, so the pipeline never imports the server's front."""

    def inc(self, name: str, amount: float = 1, **labels: str) -> None: ...

    def record_tokens(self, count: int) -> None: ...


class StageLog:
    def __init__(self, profile: Profile, rng: random.Random | None) -> None:
        self.profile = profile
        self.rng = rng
        self.real_ms: dict[str, float] = {}
        self.charged_ms: dict[str, float] = {}
        self._unpaid_s = 0.0
        self._free = profile.is_zero and rng is None

    @classmethod
    def of_request(cls, engine: Engine, request_bytes: int, seed: Seed | None = None) -> StageLog:
        """A request's log, its frame's transfer and parse charged (the session or the HTTP
        handler did them). With the request's `seed`, a jittering profile's charges are jittered
        from its own `stages` stream (seeded only then: without jitter it would be wasted)."""
        profile = engine.profile
        jitter = None
        if seed is not None and profile.jitter_fraction:
            jitter = engine.rng(seed, "stages")
        stages = cls(profile, jitter)
        kib = request_bytes / 1024
        stages.charge("transfer", kib)
        stages.charge("parse", kib)
        return stages

    def took(self, name: str, started: float) -> None:
        """Add the real time since `started` (perf_counter()) to the stage (one call: a
        context manager costs ~1.5 us a use, several times a turn)."""
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.real_ms[name] = self.real_ms.get(name, 0.0) + elapsed_ms

    def charge(self, stage: Stage, work_units: float, *, name: str | None = None) -> None:
        key = name or stage
        if self._free:  # nothing to charge or draw: the stage is listed, at no cost
            self.charged_ms.setdefault(key, 0.0)
            return
        cost_s = self.profile.stage_cost_s(stage, work_units, rng=self.rng)
        self.charged_ms[key] = self.charged_ms.get(key, 0.0) + cost_s * 1000
        self._unpaid_s += cost_s

    async def pay(self) -> None:
        """Sleep off the charges accumulated so far (the simulated production work)."""
        due, self._unpaid_s = self._unpaid_s, 0.0
        if due > 0:
            await asyncio.sleep(due)

    def total_ms(self) -> dict[str, float]:
        names = self.real_ms.keys() | self.charged_ms.keys()
        return {
            n: round(self.real_ms.get(n, 0.0) + self.charged_ms.get(n, 0.0), 3)
            for n in sorted(names)
        }
