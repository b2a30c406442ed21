from __future__ import annotations

from harness.protocol.cache import CachePolicy, Resolution, ResponseCache, resolution


def test_depth_one_keeps_only_the_most_recent() -> None:
    cache: ResponseCache[str] = ResponseCache()
    cache.put("a", "A")
    assert cache.put("b", "B") == ["a"]
    assert "a" not in cache and cache.get("b") == "B"


def test_lru_order_respects_reads() -> None:
    cache: ResponseCache[int] = ResponseCache(CachePolicy(depth=3))
    for i, key in enumerate("abc"):
        cache.put(key, i)
    cache.get("a")  # a becomes most recent
    assert cache.put("d", 3) == ["b"]
    assert list(cache) == ["c", "a", "d"]


def test_peek_does_not_refresh_recency() -> None:
    cache: ResponseCache[int] = ResponseCache(CachePolicy(depth=2))
    cache.put("a", 0)
    cache.put("b", 1)
    assert cache.peek("a") == 0 and cache.peek("zz") is None
    assert cache.put("c", 2) == ["a"]


def test_byte_bound_evicts_oldest_but_keeps_the_newest() -> None:
    cache: ResponseCache[None] = ResponseCache(CachePolicy(depth=10, max_bytes=100))
    cache.put("a", None, 60)
    assert cache.put("b", None, 60) == ["a"]
    assert cache.put("huge", None, 500) == ["b"]
    assert list(cache) == ["huge"] and cache.total_bytes == 500


def test_evict_and_resolution_rule() -> None:
    cache: ResponseCache[None] = ResponseCache()
    cache.put("a", None, 5)
    assert cache.evict("a") and not cache.evict("a") and cache.total_bytes == 0
    assert resolution(cached=True, stored=False) is Resolution.HIT
    assert resolution(cached=False, stored=True) is Resolution.HYDRATE
    assert resolution(cached=False, stored=False) is Resolution.MISS
