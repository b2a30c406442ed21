"""The route stage: which canonical model and serving pool answer a request.

A routing service resolves model aliases and picks a pool; with `routing_reuse` a continuation
reuses the resolution carried in its parent's cache entry instead of paying that hop again.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from reference_server.stages import StageLog

# Model aliases resolve to a canonical model and a serving pool, as a routing service would.
_MODEL_ALIASES = {"gpt-5": "gpt-5-2026-08-07", "gpt-5-codex": "gpt-5-codex-2026-09-15"}
_POOLS = ("pool-a", "pool-b", "pool-c", "pool-d")


@dataclass(frozen=True, slots=True)
class Route:
    """The resolved model and serving pool (reused from the cache instead of a routing hop)."""

    requested_model: str
    model: str
    pool: str


def resolve_route(model: str, tenant: str) -> Route:
    canonical = _MODEL_ALIASES.get(model, model)
    digest = hashlib.sha256(f"{tenant}\0{canonical}".encode()).digest()
    return Route(model, canonical, _POOLS[digest[0] % len(_POOLS)])


def route_request(
    model: str, tenant: str, parent_route: Route | None, *, reuse: bool, stages: StageLog
) -> Route:
    """The parent's route when it may be reused and names the same model, else a routing hop."""
    started = time.perf_counter()
    if reuse and parent_route is not None and parent_route.requested_model == model:
        stages.took("routing", started)
        return parent_route
    route = resolve_route(model, tenant)
    stages.charge("routing", 1)
    stages.took("routing", started)
    return route
