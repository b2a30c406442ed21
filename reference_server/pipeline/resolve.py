"""The resolve stage: what a request refers to, its parent and the items it names.

previous_response_id -> connection cache -> persistent store -> error. A cache hit hands the
turn its parent's carried state; a stored response (store=true) is hydrated, which re-validates,
re-classifies and re-renders the whole chain (the slow path); an id found in neither is
`previous_response_not_found` (PROTOCOL.md §5.1). A parent cached for another tenant is not a
hit.

Item references: `{"type": "item_reference", "id": ...}` stands for an item of the chain. A
client may name an earlier item by its id instead of resending it (openai-python 3.57
`ItemReference`). The id is looked up in the chain resolved (the connection cache's or the
store's entry) and in the request's own earlier items, and the item is put in the reference's
place, so every later stage sees the item itself. An id that names nothing is left in place:
validation refuses it (`item_not_found`, with the reference's `param`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.protocol import errors
from harness.protocol.cache import Resolution
from harness.protocol.items import item_type
from harness.protocol.requests import CreateRequest
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
    """The request with its item references replaced, and the parent it continues from (both
    None for a turn without previous_response_id)."""

    request: CreateRequest
    parent: Conversation | None = None
    resolution: Resolution | None = None


async def resolve(
    request: CreateRequest,
    tenant: str,
    cache: TurnCache,
    *,
    persistence: Persistence,
    metrics: Counters,
    stages: StageLog,
) -> Resolved:
    """Find the parent, then the referenced items; raises RequestRefused when the parent is
    neither cached nor stored."""
    previous_id = request.previous_response_id
    if previous_id is None:
        return Resolved(resolve_references(request, None))
    cached = cache.lookup(previous_id)
    if cached is not None and cached.tenant == tenant:
        metrics.inc("wsmode_cache_total", outcome="hit")
        return Resolved(resolve_references(request, cached), cached, Resolution.HIT)
    started = time.perf_counter()
    record = await persistence.hydrate(tenant, previous_id)
    stages.took("hydrate", started)
    if record is None:
        metrics.inc("wsmode_cache_total", outcome="miss")
        raise RequestRefused(errors.previous_response_not_found(previous_id))
    stages.charge("hydrate", 1)
    metrics.inc("wsmode_cache_total", outcome="hydrate")
    parent = hydrate(record, tenant, stages)
    return Resolved(resolve_references(request, parent), parent, Resolution.HYDRATE)


def resolve_references(request: CreateRequest, parent: Conversation | None) -> CreateRequest:
    """`request` with each item reference replaced by the item it names (when found)."""
    if not any(item_type(item) == "item_reference" for item in request.input):
        return request  # the common case costs one pass over the new items
    chain: Sequence[Mapping[str, Any]] = parent.items if parent is not None else ()
    resolved: list[dict[str, Any]] = []
    for item in request.input:
        if item_type(item) == "item_reference":
            found = _find(item.get("id"), resolved) or _find(item.get("id"), chain)
            resolved.append(dict(found) if found is not None else item)
        else:
            resolved.append(item)
    return dataclasses.replace(request, input=tuple(resolved))


def _find(item_id: object, items: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    if not isinstance(item_id, str):
        return None
    for index in range(len(items) - 1, -1, -1):  # the newest item of that id
        item = items[index]
        if item.get("id") == item_id and item_type(item) != "item_reference":
            return item
    return None


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
