"""What a replay measures: one sample per turn (:class:`TurnResult`) and one record per rollout
(:class:`RolloutResult`), in the shapes of results/README.md (``bench.samples[]``,
``bench.rollouts[]``); the rollout driver (``harness.load.core.rollout_driver``) and
the fixed-shape load (``harness.load.fixed.conversations``) fill them.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from harness.load.core.modes import Mode
from harness.results.stats import round_or_none as _r
from harness.results.work import token_fields


@dataclass(slots=True)
class TurnResult:
    rollout_id: str
    mode: str  # the variant name the results file uses ("ws", "http", "ws-no-render-cache", ...)
    turn_index: int
    ok: bool
    error: str | None = None
    ttft_ms: float | None = None  # to the first content token (protocol.timing_marks)
    ttfe_ms: float | None = None  # to the first output event (announcements included)
    turn_e2e_ms: float | None = None
    itl_gaps_ms: list[float] = field(default_factory=list)
    tpot_ms: float | None = None
    bytes_sent: int = 0
    bytes_received: int = 0
    context_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int | None = None
    # server stamps (the reference server's `response.wsmode`), None when not offered
    inference_ttft_ms: float | None = None
    server_ttft_ms: float | None = None
    server_api_overhead_ms: float | None = None
    stages_ms: dict[str, float] = field(default_factory=dict)
    resolution: str | None = None
    decode_ms: float | None = None  # first to last output event, at the client
    post_ms: float | None = None  # last output event to the terminal
    start_lag_ms: float = 0.0  # open loop: actual - intended start (turn 0 only)
    prewarm_ms: float | None = None
    tool_wait_recorded_ms: float = 0.0
    tool_wait_waited_ms: float = 0.0
    emitted_call_ids: tuple[str, ...] = ()
    answered_call_ids: tuple[str, ...] = ()
    generic_answers: int = 0
    reproduced: bool | None = None  # None when no script was sent
    violations: tuple[str, ...] = ()  # MUST-level protocol rule ids seen in this turn
    # a multi-agent turn (trace version 2): its response.inject messages and their timings
    injects: int = 0
    inject_ack_ms: list[float] = field(default_factory=list)  # sent -> inject.created
    inject_resume_ms: list[float] = field(default_factory=list)  # sent -> next output event
    output_cap_tokens: int | None = None  # the max_output_tokens asked for (None: no cap)
    reached_output_cap: bool = False  # ended incomplete at that cap
    cut_call: bool = False  # emitted a function call the cap cut: the rollout ended here
    # epoch s when the turn was made (its start): latency over time beside --server-metrics
    started_at_s: float = field(default_factory=time.time)

    @property
    def itl_ms(self) -> float | None:
        return statistics.median(self.itl_gaps_ms) if self.itl_gaps_ms else None

    @property
    def api_overhead_ms(self) -> float | None:
        """Client TTFT minus the server's simulated inference TTFT (queue + prefill)."""
        if self.ttft_ms is None or self.inference_ttft_ms is None:
            return None
        return self.ttft_ms - self.inference_ttft_ms

    @property
    def inference_ms(self) -> float | None:
        if self.inference_ttft_ms is None or self.decode_ms is None:
            return None
        return self.inference_ttft_ms + self.decode_ms

    def to_sample(self) -> dict[str, Any]:
        """One `bench.samples[]` entry (results/README.md), with extra keys for the report."""
        return {
            "rollout_id": self.rollout_id,
            "mode": self.mode,
            "turn_index": self.turn_index,
            "ttft_ms": _r(self.ttft_ms),
            "ttfe_ms": _r(self.ttfe_ms),
            "itl_ms": _r(self.itl_ms),
            "tpot_ms": _r(self.tpot_ms),
            "turn_e2e_ms": _r(self.turn_e2e_ms),
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
            "context_tokens": self.context_tokens,
            "output_tokens": self.output_tokens,
            "api_overhead_ms": _r(self.api_overhead_ms),
            "ok": self.ok,
            "error": self.error,
            # extras: the tokens as the target reported them (input = context_tokens)
            **token_fields(self.context_tokens, self.cached_tokens),
            "inference_ttft_ms": _r(self.inference_ttft_ms),
            "server_ttft_ms": _r(self.server_ttft_ms),
            "inference_ms": _r(self.inference_ms),
            "stages_ms": self.stages_ms,
            "resolution": self.resolution,
            "start_lag_ms": _r(self.start_lag_ms),
            "prewarm_ms": _r(self.prewarm_ms),
            "tool_wait_recorded_ms": _r(self.tool_wait_recorded_ms),
            "tool_wait_waited_ms": _r(self.tool_wait_waited_ms),
            "reproduced": self.reproduced,
            "violations": list(self.violations),
            "injects": self.injects,
            "inject_ack_ms": _r(_median(self.inject_ack_ms)),
            "inject_resume_ms": _r(_median(self.inject_resume_ms)),
            "output_cap_tokens": self.output_cap_tokens,
            "reached_output_cap": self.reached_output_cap,
            "cut_call": self.cut_call,
            "started_at_s": round(self.started_at_s, 3),
        }


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(slots=True)
class RolloutResult:
    rollout_id: str
    mode: str
    protocol_mode: Mode
    turns: list[TurnResult] = field(default_factory=list)
    ok: bool = True
    error: str | None = None
    wall_ms: float = 0.0  # intended start -> last terminal
    connect_ms: float | None = None
    waited_tool_ms: float = 0.0
    recorded_tool_ms: float = 0.0
    start_lag_ms: float = 0.0
    time_scale: float = 0.0
    started_ns: int = 0  # perf_counter_ns at the actual start
    parent_rollout: str | None = None  # a sub-agent: the rollout it ran beside
    spawn_delay_ms: float | None = None  # a sub-agent: its start - its parent's turn end
    stopped: str | None = None  # why an ok rollout ended before its last turn (a cut call)

    @property
    def e2e_ms(self) -> float:
        """Wall time with the tool time counted at its recorded value."""
        return self.wall_ms - self.waited_tool_ms + self.recorded_tool_ms

    @property
    def model_ms(self) -> float:
        """Everything but tool time: API + inference."""
        return self.e2e_ms - self.recorded_tool_ms

    @property
    def inference_ms(self) -> float | None:
        values = [t.inference_ms for t in self.turns]
        if not values or any(v is None for v in values):
            return None
        return sum(v for v in values if v is not None)

    @property
    def api_ms(self) -> float | None:
        inference = self.inference_ms
        return None if inference is None else self.model_ms - inference

    def to_record(self) -> dict[str, Any]:
        """One `bench.rollouts[]` entry, with extra keys."""
        return {
            "rollout_id": self.rollout_id,
            "mode": self.mode,
            "e2e_ms": _r(self.e2e_ms),
            "api_ms": _r(self.api_ms),
            "inference_ms": _r(self.inference_ms),
            "tool_wait_ms": _r(self.recorded_tool_ms),
            "turns": len(self.turns),
            "ok": self.ok,
            # extras
            "error": self.error,
            "protocol_mode": self.protocol_mode,
            "model_ms": _r(self.model_ms),
            "wall_ms": _r(self.wall_ms),
            "waited_tool_ms": _r(self.waited_tool_ms),
            "connect_ms": _r(self.connect_ms),
            "start_lag_ms": _r(self.start_lag_ms),
            "time_scale": self.time_scale,
            "parent_rollout": self.parent_rollout,
            "spawn_delay_ms": _r(self.spawn_delay_ms),
            "stopped": self.stopped,
        }
