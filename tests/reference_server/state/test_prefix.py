"""The engine's prefix cache is bounded in bytes and evicts the least recently used prefix."""

from __future__ import annotations

from reference_server.state.prefix import ENTRY_BYTES, PrefixCache


def test_the_byte_bound_holds_and_the_least_recently_used_prefix_goes_first() -> None:
    cache = PrefixCache(max_bytes=3 * ENTRY_BYTES)
    for key in range(3):
        cache.insert(key, 100 + key)
    assert cache.match([0]) == 100  # key 0 is now the most recently used
    cache.insert(3, 103)
    assert len(cache) == 3 and cache.total_bytes <= cache.max_bytes
    assert cache.match([1]) == 0  # key 1 was the least recently used
    assert cache.match([0, 2, 3]) == 103  # the longest cached prefix wins
