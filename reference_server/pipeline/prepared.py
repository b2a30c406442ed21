"""What the stages before the engine produce: the resolved parent, checks, prompt and route."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.protocol.cache import Resolution
from harness.protocol.requests import CreateRequest
from reference_server.pipeline.checks import CheckedInput
from reference_server.pipeline.prompt import Prompt
from reference_server.pipeline.resolve import Resolved
from reference_server.state.chain_seq import ChainSeq
from reference_server.state.conversation import Conversation
from reference_server.state.route import Route


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    request: CreateRequest
    resolved: Resolved
    checked: CheckedInput
    prompt: Prompt
    route: Route

    @property
    def parent(self) -> Conversation | None:
        return self.resolved.parent

    @property
    def resolution(self) -> Resolution | None:
        return self.resolved.resolution

    @property
    def items(self) -> ChainSeq[dict[str, Any]]:
        """The chain's items: the parent's, then this request's input (O(input) to build)."""
        history = self.parent.items if self.parent is not None else ()
        return ChainSeq.of(history).extended(self.request.input)
