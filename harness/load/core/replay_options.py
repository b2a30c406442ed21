"""Where a rollout is replayed (`Endpoint`) and how (`ReplayOptions`): what the rollout driver,
its requests and its session read."""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.load.core.modes import Mode, parse_mode
from harness.load.core.target_watch import DEFAULT_EVENT_TIMEOUT_S, DEFAULT_TURN_TIMEOUT_S

#: the output a function call the trace does not have is answered with
GENERIC_OUTPUT = "ok"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a rollout is replayed: the WS URL and/or the HTTP base URL (`.../v1`)."""

    ws_url: str | None = None
    http_url: str | None = None
    api_key: str | None = None
    beta_header: bool = False

    def for_mode(self, mode: Mode) -> str:
        url = self.ws_url if mode == "ws" else self.http_url
        if not url:
            kind = "WebSocket" if mode == "ws" else "HTTP"
            raise ValueError(f"mode {mode!r} needs a {kind} URL")
        return url


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    mode: Mode = "ws"
    time_scale: float = 0.0  # fraction of the recorded tool time actually waited
    send_script: bool = True  # send the recorded output as `wsmode.script` (reference server)
    prewarm: bool = False  # ws: codex-style `generate: false` warm-up before turn 0
    store: bool | None = None  # default: false for ws/http; http-chained always stores
    include_reasoning: bool = True  # http: resend emitted reasoning items (id, summary, encrypted)
    model: str | None = None  # the model every request names; default: the rollout's
    seed: int | None = None  # `wsmode.seed`; default: the rollout's seed
    max_turns: int | None = None  # replay only the first N turns
    turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S
    event_timeout_s: float = DEFAULT_EVENT_TIMEOUT_S  # one event; silence ends the turn here
    connect_timeout_s: float = 10.0
    generic_output: str = GENERIC_OUTPUT
    # a line put before the instructions so that no other variant or run shares this one's
    # prompt prefix in the target's prefix cache (results.work); None: the trace's instructions
    cache_salt: str | None = None
    # max_output_tokens = the turn's recorded output tokens x this; None: no cap sent
    output_cap_scale: float | None = 1.0
    # sent on every create where the recorded turn allows (rollout_requests.sampling_fields):
    # what makes a sampling model's modes comparable; None: the target's default
    temperature: float | None = None
    sampling_seed: int | None = None  # `seed`, for a target that honours it (vLLM)

    @property
    def read_timeout_s(self) -> float:
        """Each read of an HTTP stream: the event timeout (silence), within the turn's."""
        return min(self.event_timeout_s, self.turn_timeout_s)

    def __post_init__(self) -> None:
        parse_mode(self.mode)
        if self.time_scale < 0:
            raise ValueError("time_scale must be >= 0")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError("max_turns must be >= 1")
        scale = self.output_cap_scale
        if scale is not None and not (math.isfinite(scale) and scale > 0):
            raise ValueError("output_cap_scale must be > 0 (None lifts the cap)")

    @property
    def effective_store(self) -> bool:
        if self.mode == "http-chained":
            return True
        return bool(self.store)
