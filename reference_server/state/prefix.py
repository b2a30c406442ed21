"""Prefix keys: chained hashes of the rendered items, and the engine's KV prefix cache."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from reference_server.state.chain_seq import ChainSeq

# One cached prefix: an OrderedDict slot and link node, an int key and an int value (measured
# with tracemalloc on CPython 3.11: ~175 bytes; rounded up so the bound holds).
ENTRY_BYTES: Final = 200
DEFAULT_MAX_BYTES: Final = 8 * 1024 * 1024


def chain_keys(
    root: int, chunks: Iterable[tuple[int, ...]], start: Sequence[int] = ()
) -> ChainSeq[int]:
    """Extend `start` with one chained key per chunk: key_i = hash(key_i-1, chunk_i)."""
    previous = start[-1] if start else root
    keys = []
    for chunk in chunks:
        previous = hash((previous, chunk))
        keys.append(previous)
    return ChainSeq.of(start).extended(keys)


class PrefixCache:
    """The engine's KV prefix cache: which rendered prefixes were prefilled recently.

    Keys are chained (key_i covers items 0..i), so one key stands for its whole prefix and a
    lookup walks back from the newest key to the first hit: O(new items) for a continuation.
    It serves every transport alike (an HTTP full-history turn gets its cached prefix too, as
    with upstream prompt caching); only the *cost of computing the keys* differs: a WebSocket hit
    extends the parent's key chain with the new items, a full pass hashes the whole history.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.max_keys = max(1, max_bytes // ENTRY_BYTES)
        self._keys: OrderedDict[int, int] = OrderedDict()  # prefix key -> its token count
        # the turns' lookups, as vLLM counts them (its /metrics), so a bench reads either
        # engine the same way: prompt tokens looked up, and found
        self.queried_tokens = 0
        self.hit_tokens = 0

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def total_bytes(self) -> int:
        return len(self._keys) * ENTRY_BYTES

    def match(self, keys: Sequence[int]) -> int:
        """Tokens of the longest cached prefix among `keys` (keys are cumulative)."""
        for key in reversed(keys):
            tokens = self._keys.get(key)
            if tokens is not None:
                self._keys.move_to_end(key)
                return tokens
        return 0

    def lookup(self, keys: Sequence[int], prompt_tokens: int, min_tokens: int = 0) -> int:
        """`match` for a turn's prompt of `prompt_tokens` tokens under the minimum rule,
        counted."""
        hit = cached_by_rule(self.match(keys), min_tokens)
        self.queried_tokens += prompt_tokens
        self.hit_tokens += hit
        return hit

    def insert(self, key: int, tokens: int) -> None:
        self._keys[key] = tokens
        self._keys.move_to_end(key)
        if len(self._keys) > self.max_keys:
            self._keys.popitem(last=False)


# The API's prompt-cache rules (PROTOCOL.md §5.6): a prompt's cached tokens are its longest
# cached token prefix, counted in 128-token blocks, and 0 below 1,024 tokens.
API_BLOCK_TOKENS: Final = 128
API_MIN_CACHED_TOKENS: Final = 1024


@dataclass(frozen=True, slots=True)
class BlockKeys:
    """Chained keys of a token stream's full blocks (key_b covers tokens 0..(b+1)*block), and
    the tokens after the last full block. Extending it hashes only the new tokens, so a
    continuation keys its new items alone, as the item keys do."""

    root: int
    block_tokens: int
    keys: ChainSeq[int]
    tail: tuple[int, ...] = ()

    @classmethod
    def start(cls, root: int, block_tokens: int) -> BlockKeys:
        return cls(root, block_tokens, ChainSeq())

    def extended(self, tokens: Iterable[int]) -> BlockKeys:
        buffer = [*self.tail, *tokens]
        size = self.block_tokens
        full = len(buffer) // size
        previous = self.keys[-1] if self.keys else self.root
        new_keys = []
        for block in range(full):
            previous = hash((previous, tuple(buffer[block * size : (block + 1) * size])))
            new_keys.append(previous)
        return BlockKeys(
            self.root, size, self.keys.extended(new_keys), tuple(buffer[full * size :])
        )

    def insert_into(self, cache: PrefixCache, from_block: int = 0) -> None:
        """Put blocks `from_block`.. in the prefix cache: each stands for its whole prefix."""
        size = self.block_tokens
        for index in range(max(0, from_block), len(self.keys)):
            cache.insert(self.keys[index], (index + 1) * size)


def cached_by_rule(matched_tokens: int, min_tokens: int) -> int:
    """What usage reports of a matched prefix: nothing below the API's minimum."""
    return matched_tokens if matched_tokens >= min_tokens else 0
