"""The last stage on the critical path: the turn's cache entry replaces its parent's.

The entry carries everything the next continuation needs (PROTOCOL.md §5.1): the chain's items
with this turn's output, the rendering and prefix keys extended by the output, the validator's
state (the output's call ids now pending), the classifier's state and the route. The decoded
output is in the KV cache too, so its prefix key goes into the engine's prefix cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from typing import Any

from harness.protocol import wire
from reference_server.engine.generation_plan import GenerationPlan, resplit_texts
from reference_server.pipeline.prepare import PreparedTurn
from reference_server.pipeline.stages import Counters
from reference_server.pipeline.turn_cache import TurnCache
from reference_server.state.conversation import Conversation
from reference_server.state.prefix import PrefixCache, chain_keys


def remember(
    prepared: PreparedTurn,
    tenant: str,
    output: list[dict[str, Any]],
    response: dict[str, Any],
    plan: GenerationPlan,
    *,
    cache: TurnCache,
    prefix_cache: PrefixCache,
    metrics: Counters,
) -> Conversation:
    """Build the turn's entry, key its output for the prefix cache, put it in the cache. The
    output is rendered from the token pieces the engine planned for its texts, so rendering it
    splits none of them again."""
    known_pieces = resplit_texts(plan.items)
    entry = next_entry(prepared, tenant, tuple(output), response, known_pieces)
    if entry.blocks is not None and prepared.prompt.blocks is not None:  # the output's blocks
        entry.blocks.insert_into(prefix_cache, len(prepared.prompt.blocks.keys))
    elif entry.item_keys:  # decoded output is in the KV cache too
        prefix_cache.insert(entry.item_keys[-1], len(entry.prefix) + entry.rendering.token_count)
    for _ in range(cache.replace(entry)):
        metrics.inc("wsmode_cache_evictions_total", reason="replaced")
    return entry


def next_entry(
    prepared: PreparedTurn,
    tenant: str,
    output_items: tuple[dict[str, Any], ...],
    response: dict[str, Any],
    known_pieces: Mapping[str, tuple[str, ...]],
) -> Conversation:
    request, prompt = prepared.request, prepared.prompt
    parent_size = prepared.parent.size_bytes if prepared.parent else 0
    new_size = len(wire.dumps_bytes([request.input, output_items]))  # the bytes they'd take
    rendering = prompt.rendering.append(output_items, known_pieces)
    # Keys for the output items too, so the next turn's prefix match covers them.
    new_chunks = rendering.chunks.tail(len(prompt.item_keys))
    return Conversation(
        response=response,
        items=prepared.items.extended(output_items),
        tools=request.tools,
        rendering=rendering,
        instructions=request.instructions,
        prefix=prompt.prefix,
        prefix_root=prompt.prefix_root,
        item_keys=chain_keys(prompt.prefix_root, new_chunks, prompt.item_keys),
        validation=prepared.validation.with_output(output_items),
        safety=prepared.safety,
        route=prepared.route,
        tenant=tenant,
        store=request.store,
        size_bytes=parent_size + new_size,
        blocks=None
        if prompt.blocks is None
        else prompt.blocks.extended(chain.from_iterable(new_chunks)),
    )
