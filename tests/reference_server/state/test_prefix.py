"""The engine's prefix cache is bounded in bytes and evicts the least recently used prefix."""

from __future__ import annotations

from reference_server.state.prefix import ENTRY_BYTES, BlockKeys, PrefixCache, cached_by_rule


def test_the_byte_bound_holds_and_the_least_recently_used_prefix_goes_first() -> None:
    cache = PrefixCache(max_bytes=3 * ENTRY_BYTES)
    for key in range(3):
        cache.insert(key, 100 + key)
    assert cache.match([0]) == 100  # key 0 is now the most recently used
    cache.insert(3, 103)
    assert len(cache) == 3 and cache.total_bytes <= cache.max_bytes
    assert cache.match([1]) == 0  # key 1 was the least recently used
    assert cache.match([0, 2, 3]) == 103  # the longest cached prefix wins


def test_block_keys_extend_as_they_would_from_scratch() -> None:
    tokens = list(range(1000))
    whole = BlockKeys.start(7, 128).extended(tokens)
    parts = BlockKeys.start(7, 128).extended(tokens[:300]).extended(tokens[300:])
    assert list(whole.keys) == list(parts.keys) and whole.tail == parts.tail
    assert len(whole.keys) == 7 and len(whole.tail) == 1000 - 7 * 128


def test_blocks_match_the_longest_shared_token_prefix_under_the_minimum_rule() -> None:
    cache = PrefixCache()
    BlockKeys.start(7, 128).extended(range(2000)).insert_into(cache)
    other = BlockKeys.start(7, 128).extended([*range(1500), *range(9000, 9500)])
    assert cache.match(other.keys) == 11 * 128  # 1,408: the full blocks before token 1,500
    assert cached_by_rule(cache.match(other.keys), 1024) == 1408
    short = BlockKeys.start(7, 128).extended([*range(900), 5, 5, 5, *range(2000)])
    assert cached_by_rule(cache.match(short.keys), 1024) == 0  # 896 shared: under the minimum
    assert cache.match(BlockKeys.start(8, 128).extended(range(2000)).keys) == 0  # another root
