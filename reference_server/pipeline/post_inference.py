"""Post-inference: billing and the store write, off the critical path with `async_post`.

The record is staged before the terminal event goes out, so a continuation from another socket
right after the terminal can hydrate it (PROTOCOL.md §5.1, "On a miss"); the durable commit and
the billing hop run after the terminal (or before it, on the critical path, with `async_post`
off).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from reference_server.engine.cost_profile import Profile
from reference_server.pipeline.stages import Counters
from reference_server.state.conversation import Conversation
from reference_server.store.persistence import Persistence, turn_record


@dataclass(frozen=True, slots=True)
class PostInference:
    """The stage for one server: what it bills into and stores with, given once."""

    persistence: Persistence
    profile: Profile
    metrics: Counters
    workers: int

    async def run(
        self,
        entry: Conversation,
        *,
        storing: bool,
        off_path: bool,
        parent: Conversation | None = None,
    ) -> None:
        """With several workers the store commit stays before the terminal (billing still runs
        after it): a staged record is visible to this process only, and the client's next
        request may land on another worker."""
        if storing:
            self.persistence.stage(
                entry.tenant, entry.response_id, stored_record(entry, parent), entry.items
            )
        if storing and off_path and self.workers > 1:
            await self._store(entry)
            storing = False
        if not storing and self.profile.stage_cost_s("billing", 1) == 0:
            self._bill(entry)  # nothing to wait for: no task, no trip through the loop
            return
        work = self._bill_and_store(entry, storing)
        if off_path:
            self.persistence.spawn(work)
        else:
            await work

    async def _bill_and_store(self, entry: Conversation, storing: bool) -> None:
        billing_s = self.profile.stage_cost_s("billing", 1)
        if billing_s > 0:  # a zero-cost stage takes no trip through the event loop
            await asyncio.sleep(billing_s)
        self._bill(entry)
        if storing:
            await self._store(entry)

    def _bill(self, entry: Conversation) -> None:
        self.metrics.inc("wsmode_billed_tokens_total", entry.response["usage"]["total_tokens"])

    async def _store(self, entry: Conversation) -> None:
        await asyncio.sleep(self.profile.stage_cost_s("store_write", 1))
        await self.persistence.commit(entry.tenant, entry.response_id)


def stored_record(entry: Conversation, parent: Conversation | None) -> dict[str, Any]:
    """What the store keeps: the turn's own items, linked to its parent when that is stored."""
    if parent is not None and parent.store:
        new_items = entry.items[len(parent.items) :]
        return turn_record(entry.response, new_items, parent.response_id, entry.size_bytes)
    return turn_record(entry.response, entry.items, None, entry.size_bytes)
