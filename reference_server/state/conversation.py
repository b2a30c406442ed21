"""The state a response leaves behind: the connection cache's entry.

A `Conversation` holds everything a continuation needs so the server never re-processes the
history: the Response object, all input and output items of the chain, the tool definitions,
the rendered tokens, the validator's and the safety classifier's carried state, and the resolved
route. It is immutable, so several children (forks, depth-N caches) can share one parent.
The stages that read and build it are in `pipeline/` (resolve, prompt, remember).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reference_server.state.prefix import BlockKeys
from reference_server.state.render import Rendering
from reference_server.state.route import Route
from reference_server.state.safety import SafetyState
from reference_server.state.validate import ValidationState


@dataclass(frozen=True, slots=True)
class Conversation:
    response: dict[str, Any]  # the final Response object
    items: Sequence[dict[str, Any]]  # the chain: every input and output item, in order
    tools: tuple[dict[str, Any], ...]
    rendering: Rendering  # the rendered items (not the per-turn instructions/tools prefix)
    instructions: str | None  # this turn's instructions (not inherited; kept to reuse `prefix`)
    prefix: tuple[int, ...]  # rendered instructions + tools of this turn
    prefix_root: int  # key of the instructions/tools prefix the item keys chain from
    item_keys: Sequence[int]  # chained prefix key per rendered item (see PrefixCache)
    validation: ValidationState
    safety: SafetyState
    route: Route
    tenant: str
    store: bool
    size_bytes: int
    blocks: BlockKeys | None = None  # the token blocks of prompt + output (the block model)

    @property
    def response_id(self) -> str:
        return str(self.response["id"])
