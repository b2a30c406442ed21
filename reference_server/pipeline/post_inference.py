"""Post-inference: billing and the store write, off the critical path with `async_post`.

The record is staged before the terminal event goes out, so a continuation from another socket
right after the terminal can hydrate it (PROTOCOL.md §5.1, "On a miss"); the durable commit and
the billing hop run after the terminal (or before it, on the critical path, with `async_post`
off).
"""

from __future__ import annotations

import asyncio
from typing import Any

from reference_server.conversation import Conversation
from reference_server.persistence import turn_record
from reference_server.services import Services


async def post_inference(
    entry: Conversation,
    *,
    storing: bool,
    off_path: bool,
    services: Services,
    parent: Conversation | None = None,
) -> None:
    """With several workers the store commit stays before the terminal (billing still runs
    after it): a staged record is visible to this process only, and the client's next request
    may land on another worker."""
    if storing:
        services.persistence.stage(
            entry.tenant, entry.response_id, stored_record(entry, parent), entry.items
        )
    if storing and off_path and services.config.workers > 1:
        await _store(entry, services)
        storing = False
    if not storing and services.profile.stage_cost_s("billing", 1) == 0:
        _bill(entry, services)  # nothing to wait for: no task, no trip through the loop
        return
    work = _bill_and_store(entry, storing, services)
    if off_path:
        services.persistence.spawn(work)
    else:
        await work


def stored_record(entry: Conversation, parent: Conversation | None) -> dict[str, Any]:
    """What the store keeps: the turn's own items, linked to its parent when that is stored."""
    if parent is not None and parent.store:
        new_items = entry.items[len(parent.items) :]
        return turn_record(entry.response, new_items, parent.response_id, entry.size_bytes)
    return turn_record(entry.response, entry.items, None, entry.size_bytes)


async def _bill_and_store(entry: Conversation, storing: bool, services: Services) -> None:
    billing_s = services.profile.stage_cost_s("billing", 1)
    if billing_s > 0:  # a zero-cost stage takes no trip through the event loop
        await asyncio.sleep(billing_s)
    _bill(entry, services)
    if storing:
        await _store(entry, services)


def _bill(entry: Conversation, services: Services) -> None:
    services.metrics.inc("wsmode_billed_tokens_total", entry.response["usage"]["total_tokens"])


async def _store(entry: Conversation, services: Services) -> None:
    await asyncio.sleep(services.profile.stage_cost_s("store_write", 1))
    await services.persistence.commit(entry.tenant, entry.response_id)
