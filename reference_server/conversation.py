"""The state a response leaves behind: the connection cache's entry, and its prefix keys.

A `Conversation` holds everything a continuation needs so the server never re-processes the
history: the Response object, all input and output items of the chain, the tool definitions,
the rendered tokens, the validator's and the safety classifier's carried state, and the resolved
route. It is immutable, so several children (forks, depth-N caches) can share one parent.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.protocol.requests import CreateRequest
from reference_server.pipeline.render import Rendering
from reference_server.pipeline.safety import SafetyState
from reference_server.pipeline.validate import ValidationState

# Model aliases resolve to a canonical model and a serving pool, as a routing service would.
_MODEL_ALIASES = {"gpt-5": "gpt-5-2026-08-07", "gpt-5-codex": "gpt-5-codex-2026-09-15"}
_POOLS = ("pool-a", "pool-b", "pool-c", "pool-d")


@dataclass(frozen=True, slots=True)
class Route:
    """The resolved model and serving pool (reused from the cache instead of a routing hop)."""

    requested_model: str
    model: str
    pool: str


def resolve_route(model: str, tenant: str) -> Route:
    canonical = _MODEL_ALIASES.get(model, model)
    digest = hashlib.sha256(f"{tenant}\0{canonical}".encode()).digest()
    return Route(model, canonical, _POOLS[digest[0] % len(_POOLS)])


@dataclass(frozen=True, slots=True)
class Conversation:
    response: dict[str, Any]  # the final Response object
    items: tuple[dict[str, Any], ...]  # the chain: every input and output item, in order
    tools: tuple[dict[str, Any], ...]
    rendering: Rendering  # the rendered items (not the per-turn instructions/tools prefix)
    instructions: str | None  # this turn's instructions (not inherited; kept to reuse `prefix`)
    prefix: tuple[int, ...]  # rendered instructions + tools of this turn
    prefix_root: int  # key of the instructions/tools prefix the item keys chain from
    item_keys: tuple[int, ...]  # chained prefix key per rendered item (see PrefixCache)
    validation: ValidationState
    safety: SafetyState
    route: Route
    tenant: str
    store: bool
    size_bytes: int

    @property
    def response_id(self) -> str:
        return str(self.response["id"])

    def prefix_matches(self, request: CreateRequest) -> bool:
        """True when the request resends this turn's instructions and tools unchanged."""
        return (
            self.prefix_root != 0
            and request.instructions == self.instructions
            and request.tools == self.tools
        )


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
