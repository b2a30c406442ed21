"""The render stage: the prompt's tokens and its prefix keys.

With `render_cache` and a parent, the new items' tokens are appended to the parent's rendering
and the instructions/tools prefix is reused when the request resends it unchanged (it is not
inherited through previous_response_id, so clients resend it every turn). The prefix keys
extend the parent's key chain the same way; without a parent, everything is rendered and hashed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from harness.protocol import errors
from harness.protocol.requests import CreateRequest
from reference_server.pipeline.refusals import RequestRefused
from reference_server.pipeline.stages import StageLog
from reference_server.state.conversation import Conversation
from reference_server.state.prefix import chain_keys
from reference_server.state.render import Rendering, render_full, render_prefix


@dataclass(frozen=True, slots=True)
class Prompt:
    prefix: tuple[int, ...]  # the rendered instructions + tools
    prefix_root: int  # the key the item keys chain from
    rendering: Rendering  # the rendered items of the whole chain
    item_keys: Sequence[int]  # one chained prefix key per rendered item
    rendered_tokens: int  # tokens this turn actually rendered (what it is charged for)

    @property
    def token_count(self) -> int:
        return len(self.prefix) + self.rendering.token_count

    def charge(self, stages: StageLog) -> None:
        stages.charge("tokenize", self.rendered_tokens)

    def refuse_if_over(self, context_window_tokens: int) -> None:
        if self.token_count > context_window_tokens:
            error = errors.context_length_exceeded(self.token_count, context_window_tokens)
            raise RequestRefused(error)


def render_prompt(
    request: CreateRequest,
    parent: Conversation | None,
    tenant: str,
    *,
    render_cache: bool,
    stages: StageLog,
) -> Prompt:
    started = time.perf_counter()
    cached = parent if render_cache else None
    if cached is not None and _resends_prefix(cached, request):
        prefix, root, rendered_tokens = cached.prefix, cached.prefix_root, 0
    else:
        prefix = render_prefix(request.instructions, request.tools)
        root, rendered_tokens = hash((tenant, prefix)), len(prefix)
    if cached is not None:
        rendering = cached.rendering.append(request.input)
        rendered_tokens += rendering.token_count - cached.rendering.token_count
    else:
        history = parent.items if parent is not None else ()
        rendering = render_full((*history, *request.input))
        rendered_tokens += rendering.token_count
    if cached is not None and cached.item_keys and cached.prefix_root == root:
        new_chunks = rendering.chunks.tail(len(cached.item_keys))
        keys = chain_keys(root, new_chunks, cached.item_keys)
    else:
        keys = chain_keys(root, rendering.chunks)
    stages.took("tokenize", started)
    return Prompt(prefix, root, rendering, keys, rendered_tokens)


def _resends_prefix(parent: Conversation, request: CreateRequest) -> bool:
    """True when the request resends the parent turn's instructions and tools unchanged."""
    return (
        parent.prefix_root != 0
        and request.instructions == parent.instructions
        and request.tools == parent.tools
    )
