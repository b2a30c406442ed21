"""What a connection may resolve a `previous_response_id` from: the cache model (PROTOCOL.md §5.1).

`ResponseCache` is the one LRU used everywhere: the reference server keeps its real entries in
it (depth 1 = "most recent response", as upstream; depth N and a byte bound are options), and
the conformance checker keeps `None` values in a twin to predict what a target must answer.
`resolution()` is the resolution rule itself: connection cache -> persisted store -> miss.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

from harness.options import cli, positive_int

V = TypeVar("V")


class Resolution(Enum):
    HIT = "hit"  # in this connection's cache: incremental path
    HYDRATE = "hydrate"  # not cached, but stored (store=true): slower, still works
    MISS = "miss"  # neither: previous_response_not_found


def resolution(*, cached: bool, stored: bool) -> Resolution:
    if cached:
        return Resolution.HIT
    return Resolution.HYDRATE if stored else Resolution.MISS


@dataclass(frozen=True, slots=True)
class CachePolicy:
    # `wsmode serve`'s options for the connection cache (harness.options): inert metadata
    depth: int = field(
        default=1,
        metadata=cli(
            "--cache-depth",
            dest="cache_depth",
            type=positive_int,
            help="responses kept per connection (LRU)",
        ),
    )
    max_bytes: int = field(
        default=16 * 1024 * 1024,
        metadata=cli(
            "--cache-max-bytes",
            dest="cache_max_bytes",
            type=positive_int,
            help="response state kept per connection, in bytes (LRU)",
        ),
    )

    def __post_init__(self) -> None:
        if self.depth < 1 or self.max_bytes < 1:
            raise ValueError("cache depth and byte bound must be positive")


class ResponseCache(Generic[V]):
    """An LRU of response states with a count bound (`depth`) and a byte bound."""

    def __init__(self, policy: CachePolicy = CachePolicy()) -> None:
        self.policy = policy
        self._entries: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self.total_bytes = 0

    def __contains__(self, response_id: object) -> bool:
        return response_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        """Ids from least to most recently used."""
        return iter(list(self._entries))

    def get(self, response_id: str) -> V | None:
        entry = self._entries.get(response_id)
        if entry is None:
            return None
        self._entries.move_to_end(response_id)
        return entry[0]

    def peek(self, response_id: str) -> V | None:
        """The value without refreshing its recency (what a FIFO cache would do on a hit)."""
        entry = self._entries.get(response_id)
        return entry[0] if entry is not None else None

    def put(self, response_id: str, value: V, size_bytes: int = 0) -> list[str]:
        """Insert as most recent; returns the ids evicted to respect the bounds."""
        self.evict(response_id)
        self._entries[response_id] = (value, size_bytes)
        self.total_bytes += size_bytes
        evicted: list[str] = []
        while len(self._entries) > 1 and (
            len(self._entries) > self.policy.depth or self.total_bytes > self.policy.max_bytes
        ):
            oldest, (_, size) = self._entries.popitem(last=False)
            self.total_bytes -= size
            evicted.append(oldest)
        return evicted

    def evict(self, response_id: str) -> bool:
        entry = self._entries.pop(response_id, None)
        if entry is None:
            return False
        self.total_bytes -= entry[1]
        return True

    def clear(self) -> None:
        self._entries.clear()
        self.total_bytes = 0
