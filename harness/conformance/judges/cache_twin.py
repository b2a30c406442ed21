"""The cache twin: the protocol core's `ResponseCache` used as a model of the target's cache.

A target declaring depth N must answer every continuation the way a depth-N LRU cache (plus
its store, for store=true) would: `predict()` says HIT / HYDRATE / MISS before a request, the
`on_*` methods apply what the request did, exactly as the reference server's resolver does
(a hit refreshes the parent, every completed response becomes the most recent entry, a failed
continuation evicts its parent).
"""

from __future__ import annotations

from harness.protocol.cache import CachePolicy, Resolution, ResponseCache, resolution


class CacheTwin:
    def __init__(self, depth: int) -> None:
        self.cache: ResponseCache[None] = ResponseCache(CachePolicy(depth=max(depth, 1)))
        self.stored: set[str] = set()

    def predict(self, previous_id: str | None) -> Resolution | None:
        if previous_id is None:
            return None
        return resolution(cached=previous_id in self.cache, stored=previous_id in self.stored)

    def on_completed(self, previous_id: str | None, response_id: str, *, store: bool) -> None:
        if previous_id is not None and previous_id in self.cache:
            self.cache.get(previous_id)  # a hit refreshes the parent
        self.cache.put(response_id, None)
        if store:
            self.stored.add(response_id)

    def on_failed(self, previous_id: str | None) -> None:
        if previous_id is not None:
            self.cache.evict(previous_id)

    def describe(self) -> str:
        order = list(self.cache)
        return "cache (oldest first): " + (", ".join(_short(i) for i in order) or "empty")


def _short(response_id: str) -> str:
    return response_id if len(response_id) <= 14 else response_id[:10] + "…" + response_id[-4:]
