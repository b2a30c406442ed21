"""The connection cache as one turn sees it (PROTOCOL.md §5.1).

A turn reads its parent from its lane's cache (or, for a fork, from another lane of the same
connection), evicts that parent when the turn fails, and puts its own entry in when it succeeds.
Over HTTP there is no cache. With the `connection_cache` optimization off nothing is read or put,
so every continuation hydrates from the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.protocol.cache import ResponseCache
from reference_server.state.conversation import Conversation


@dataclass(frozen=True, slots=True)
class TurnCache:
    cache: (
        ResponseCache[Conversation] | None
    )  # the lane's (or the shared-cache fault's); None: HTTP
    forks: tuple[ResponseCache[Conversation], ...] = ()  # the connection's other lanes
    enabled: bool = True  # the connection_cache optimization
    refresh_on_read: bool = True  # False under the cache-fifo fault: LRU degrades to FIFO

    def lookup(self, response_id: str) -> Conversation | None:
        if self.cache is None or not self.enabled:
            return None
        found = (
            self.cache.get(response_id) if self.refresh_on_read else self.cache.peek(response_id)
        )
        if found is None:  # a fork: the parent lives on another lane of this connection
            found = next((c.get(response_id) for c in self.forks if response_id in c), None)
        return found

    def evict(self, response_id: str) -> bool:
        """Drop a failed turn's parent (whether or not the cache is read: it may hold it)."""
        return self.cache is not None and self.cache.evict(response_id)

    def replace(self, entry: Conversation) -> int:
        """Put the turn's entry in; returns how many older entries it pushed out."""
        if self.cache is None or not self.enabled:
            return 0
        return len(self.cache.put(entry.response_id, entry, entry.size_bytes))
