"""Prefix keys: chained hashes of the rendered items, and the engine's KV prefix cache."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence


def chain_keys(
    root: int, chunks: Iterable[tuple[int, ...]], start: tuple[int, ...] = ()
) -> tuple[int, ...]:
    """Extend `start` with one chained key per chunk: key_i = hash(key_i-1, chunk_i)."""
    keys = list(start)
    previous = keys[-1] if keys else root
    for chunk in chunks:
        previous = hash((previous, chunk))
        keys.append(previous)
    return tuple(keys)


class PrefixCache:
    """The engine's KV prefix cache: which rendered prefixes were prefilled recently.

    Keys are chained (key_i covers items 0..i), so one key stands for its whole prefix and a
    lookup walks back from the newest key to the first hit: O(new items) for a continuation.
    It serves every transport alike (an HTTP full-history turn gets its cached prefix too, as
    with upstream prompt caching); only the *cost of computing the keys* differs: a WebSocket hit
    extends the parent's key chain with the new items, a full pass hashes the whole history.
    """

    def __init__(self, max_keys: int = 100_000) -> None:
        self.max_keys = max_keys
        self._keys: OrderedDict[int, int] = OrderedDict()  # prefix key -> its token count

    def match(self, keys: Sequence[int]) -> int:
        """Tokens of the longest cached prefix among `keys` (keys are cumulative)."""
        for key in reversed(keys):
            tokens = self._keys.get(key)
            if tokens is not None:
                self._keys.move_to_end(key)
                return tokens
        return 0

    def insert(self, key: int, tokens: int) -> None:
        self._keys[key] = tokens
        self._keys.move_to_end(key)
        if len(self._keys) > self.max_keys:
            self._keys.popitem(last=False)
