"""Cost profiles for the reference server's simulated work.

A profile says how long each piece of work *would* take in production: the engine's queue,
prefill and decode, and the API stages around it (parse, validate, safety, tokenize, routing,
hydrate, billing, store write, body transfer). The server does the real, small-scale work of
each stage and then charges the profile's cost for it, in proportion to the work it actually did
(bytes parsed, items validated, tokens classified or rendered). So a cached WebSocket turn that
touches 40 new tokens is charged for 40 tokens, and a full-history HTTP turn for all of them.

Every charge goes through :meth:`Profile.stage_cost_us`, so there is one place that says what a
stage costs, and how ``load_factor`` and ``jitter_fraction`` apply to it.

A profile is a pure value (no file, clock or I/O): the engine prices queue, prefill and decode
with it and the stage accounting (`pipeline/stages.py`) the API stages. Loading one (a bundled
name or a TOML file) is the server's business: `reference_server/cost_profiles.py`. The TOML
keys are the field names below (units are in the names). Unknown keys are an error, so a typo
cannot silently leave a cost at zero.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from harness.errors import UsageError

__all__ = ["STAGE_UNITS", "CostProfileError", "Profile", "Stage"]

Stage = Literal[
    "queue",
    "prefill_uncached",
    "prefill_cached",
    "parse",
    "transfer",
    "validate_items",
    "validate_tokens",
    "safety",
    "tokenize",
    "routing",
    "hydrate",
    "billing",
    "store_write",
]

# stage -> (profile field, microseconds per field unit, what one work unit is)
_STAGE_TABLE: Final[dict[str, tuple[str, float, str]]] = {
    "queue": ("queue_ms", 1000.0, "admission (1 per response)"),
    "prefill_uncached": ("prefill_us_per_uncached_token", 1.0, "uncached input token"),
    "prefill_cached": ("prefill_us_per_cached_token", 1.0, "cached input token"),
    "parse": ("parse_us_per_kib", 1.0, "KiB of request body parsed"),
    "transfer": ("transfer_us_per_kib", 1.0, "KiB of request body received"),
    "validate_items": ("validate_us_per_item", 1.0, "input item validated"),
    "validate_tokens": ("validate_us_per_token", 1.0, "input token validated"),
    "safety": ("safety_us_per_token", 1.0, "token scanned by the safety classifier"),
    "tokenize": ("tokenize_us_per_token", 1.0, "token rendered/tokenized"),
    "routing": ("routing_ms", 1000.0, "routing hop (1 per uncached resolution)"),
    "hydrate": ("hydrate_ms", 1000.0, "store load on a cache miss"),
    "billing": ("billing_ms", 1000.0, "billing write (1 per response)"),
    "store_write": ("store_write_ms", 1000.0, "store write (1 per stored response)"),
}

#: What one work unit of each stage is, for docs and reports.
STAGE_UNITS: Final[Mapping[str, str]] = {k: v[2] for k, v in _STAGE_TABLE.items()}

assert set(_STAGE_TABLE) == set(get_args(Stage))


class CostProfileError(UsageError, ValueError):
    """A profile file or override is malformed (unknown key, bad value, unknown name)."""


@dataclass(frozen=True)
class Profile:
    """Simulated costs. All durations are per unit of work; units are in the field names."""

    name: str
    # decode
    decode_tokens_per_s: float
    burst_tokens_per_s: float | None = None
    burst_probability: float = 0.0
    jitter_fraction: float = 0.0
    load_factor: float = 1.0
    # 0: every token due at a wake-up goes out in one delta; n > 0: at most n tokens per delta
    # (1: one delta per token, as a real engine streams them; the server event-ceiling bench).
    max_tokens_per_delta: float = 0.0
    # the server's bound on deltas per second over all its streams (`emission.DeltaPacer`):
    # past it, each stream's due tokens coalesce per tick; 0: no bound. Unused with a cap above.
    max_deltas_per_s: float = 5000.0
    # engine admission and prefill
    queue_ms: float = 0.0
    prefill_us_per_uncached_token: float = 0.0
    prefill_us_per_cached_token: float = 0.0
    # prompt caching (PROTOCOL.md §5.6): cached tokens are the longest cached token prefix in
    # blocks of this many tokens, 0 under the minimum (the API's rules: 128 and 1,024); a block
    # of 0 is the old whole-item model (an item's tokens match whole or not at all, no minimum)
    prompt_cache_block_tokens: float = 128.0
    prompt_cache_min_tokens: float = 1024.0
    # API stages
    parse_us_per_kib: float = 0.0
    transfer_us_per_kib: float = 0.0
    validate_us_per_item: float = 0.0
    validate_us_per_token: float = 0.0
    safety_us_per_token: float = 0.0
    tokenize_us_per_token: float = 0.0
    routing_ms: float = 0.0
    hydrate_ms: float = 0.0
    billing_ms: float = 0.0
    store_write_ms: float = 0.0
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise CostProfileError("profile name must be a non-empty string")
        if not isinstance(self.description, str):
            raise CostProfileError(f"{self.name}: description must be a string")
        for f in dataclasses.fields(self):
            if f.name in ("name", "description"):
                continue
            value = getattr(self, f.name)
            if value is None and f.name == "burst_tokens_per_s":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise CostProfileError(f"{self.name}: {f.name} must be a number, got {value!r}")
            if math.isnan(value) or value < 0:
                raise CostProfileError(f"{self.name}: {f.name} must be >= 0, got {value!r}")
            if math.isinf(value) and f.name not in ("decode_tokens_per_s", "burst_tokens_per_s"):
                raise CostProfileError(f"{self.name}: {f.name} must be finite")
        if self.decode_tokens_per_s <= 0:
            raise CostProfileError(f"{self.name}: decode_tokens_per_s must be > 0")
        if self.burst_tokens_per_s is not None and self.burst_tokens_per_s <= 0:
            raise CostProfileError(f"{self.name}: burst_tokens_per_s must be > 0 when set")
        if not 0.0 <= self.burst_probability <= 1.0:
            raise CostProfileError(f"{self.name}: burst_probability must be in [0, 1]")
        if self.burst_probability > 0 and self.burst_tokens_per_s is None:
            raise CostProfileError(f"{self.name}: burst_probability > 0 needs burst_tokens_per_s")
        if not 0.0 <= self.jitter_fraction < 1.0:
            raise CostProfileError(f"{self.name}: jitter_fraction must be in [0, 1)")
        _ = self.is_zero  # what every turn asks, worked out once here and not in a first turn

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, name: str | None = None) -> Profile:
        """Build from a TOML-shaped mapping; ``name`` is used when the mapping has none."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise CostProfileError(
                f"profile {data.get('name', name)!r}: unknown key(s) {', '.join(unknown)}; "
                f"known keys: {', '.join(sorted(known))}"
            )
        kwargs = dict(data)
        if "name" not in kwargs:
            if name is None:
                raise CostProfileError("profile has no name")
            kwargs["name"] = name
        if "decode_tokens_per_s" not in kwargs:
            raise CostProfileError(f"profile {kwargs['name']!r}: decode_tokens_per_s is required")
        return cls(**kwargs)

    def with_overrides(self, **overrides: Any) -> Profile:
        """A copy with some fields replaced (tests, CLI ``--profile-set key=value``)."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise CostProfileError(f"unknown profile field(s): {', '.join(unknown)}")
        return dataclasses.replace(self, **overrides)

    # -- costs --------------------------------------------------------------------------------

    def jitter(self, rng: random.Random | None) -> float:
        """A multiplicative jitter factor in ``[1 - j, 1 + j]`` (1.0 without an rng).

        With an rng it always consumes exactly one draw (even when the factor is 1.0), so the
        draws that follow do not depend on which costs happened to be zero.
        """
        if rng is None:
            return 1.0
        u = rng.random()
        return 1.0 + self.jitter_fraction * (2.0 * u - 1.0)

    def stage_cost_us(
        self, stage: Stage, work_units: float = 1.0, *, rng: random.Random | None = None
    ) -> float:
        """Microseconds to charge for ``work_units`` of ``stage`` (see :data:`STAGE_UNITS`).

        ``load_factor`` multiplies every stage cost (queue and prefill included; the decode
        rate is not affected). With an ``rng`` the cost is jittered by ``±jitter_fraction``.
        """
        try:
            per_unit = self._us_per_unit[stage]
        except KeyError:
            raise ValueError(
                f"unknown stage {stage!r}; stages: {', '.join(_STAGE_TABLE)}"
            ) from None
        if work_units < 0 or math.isnan(work_units):
            raise ValueError(f"work_units must be >= 0, got {work_units!r}")
        factor = self.jitter(rng)  # drawn first: one draw per call, whatever the work
        if per_unit == 0.0 or work_units == 0:
            return 0.0
        return per_unit * work_units * self.load_factor * factor

    @functools.cached_property
    def _us_per_unit(self) -> dict[str, float]:
        """Each stage's cost per work unit, in us (a turn charges ~10 stages: looked up once)."""
        return {
            stage: float(getattr(self, field_name)) * us_per_unit
            for stage, (field_name, us_per_unit, _) in _STAGE_TABLE.items()
        }

    def stage_cost_s(
        self, stage: Stage, work_units: float = 1.0, *, rng: random.Random | None = None
    ) -> float:
        """:meth:`stage_cost_us` in seconds."""
        return self.stage_cost_us(stage, work_units, rng=rng) / 1e6

    @functools.cached_property
    def is_zero(self) -> bool:
        """True when no stage costs anything (conformance/test profile)."""
        return not any(self._us_per_unit.values())
