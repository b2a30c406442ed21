"""The resolve stage: previous_response_id -> connection cache -> persistent store -> error.

A cache hit hands the turn its parent's carried state; a stored response (store=true) is
hydrated, which re-validates, re-classifies and re-renders the whole chain (the slow path); an id
found in neither is `previous_response_not_found` (PROTOCOL.md §5.1). A parent cached for another
tenant is not a hit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from harness.protocol import errors
from harness.protocol.cache import Resolution
from reference_server.pipeline.refusals import RequestRefused
from reference_server.pipeline.stages import Counters, StageLog
from reference_server.pipeline.turn_cache import TurnCache
from reference_server.state.conversation import Conversation
from reference_server.state.render import render_full
from reference_server.state.route import resolve_route
from reference_server.state.safety import SafetyState, classify_input
from reference_server.state.validate import ValidationState, validate_items
from reference_server.store.persistence import Persistence


@dataclass(frozen=True, slots=True)
class Resolved:
    """The parent a turn continues from; both None for a turn without previous_response_id."""

    parent: Conversation | None = None
    resolution: Resolution | None = None


async def resolve_previous(
    previous_id: str | None,
    tenant: str,
    cache: TurnCache,
    *,
    persistence: Persistence,
    metrics: Counters,
    stages: StageLog,
) -> Resolved:
    """Find the parent; raises RequestRefused when it is neither cached nor stored."""
    if previous_id is None:
        return Resolved()
    cached = cache.lookup(previous_id)
    if cached is not None and cached.tenant == tenant:
        metrics.inc("wsmode_cache_total", outcome="hit")
        return Resolved(cached, Resolution.HIT)
    started = time.perf_counter()
    record = await persistence.hydrate(tenant, previous_id)
    stages.took("hydrate", started)
    if record is None:
        metrics.inc("wsmode_cache_total", outcome="miss")
        raise RequestRefused(errors.previous_response_not_found(previous_id))
    stages.charge("hydrate", 1)
    metrics.inc("wsmode_cache_total", outcome="hydrate")
    return Resolved(hydrate(record, tenant, stages), Resolution.HYDRATE)


def hydrate(record: dict[str, Any], tenant: str, stages: StageLog) -> Conversation:
    """The slow path: rebuild a cache entry from a stored record (re-validate, re-render)."""
    items = tuple(record["items"])
    started = time.perf_counter()
    validation, _ = validate_items(ValidationState.initial(), items)
    safety, _ = classify_input(SafetyState.initial(), items)
    rendering = render_full(items)
    stages.took("hydrate", started)
    stages.charge("validate_items", len(items), name="hydrate")
    stages.charge("safety", rendering.token_count, name="hydrate")
    stages.charge("tokenize", rendering.token_count, name="hydrate")
    response = record["response"]
    return Conversation(
        response=response,
        items=items,
        tools=tuple(response.get("tools") or ()),
        rendering=rendering,
        instructions=None,
        prefix=(),
        prefix_root=0,
        item_keys=(),
        validation=validation,
        safety=safety,
        route=resolve_route(str(response.get("model", "")), tenant),
        tenant=tenant,
        store=True,
        size_bytes=int(record.get("size_bytes", 0)),
    )
