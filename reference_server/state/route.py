"""The route a request takes: its canonical model and serving pool.

A routing service resolves model aliases and picks a pool; the resolution is carried in the
cache entry, so the route stage (`pipeline/prepare.py`) can reuse it for a continuation.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

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
