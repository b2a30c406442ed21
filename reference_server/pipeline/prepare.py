"""The stages between a resolved request and the engine: render, validate, fit, screen, route.

`prepare` runs each once, in this order, and each refuses for itself:

- **render**: the prompt's tokens and prefix keys. With `render_cache` and a parent, the new
  items' tokens are appended to the parent's rendering and the instructions/tools prefix is
  reused when the request resends it unchanged (it is not inherited through
  previous_response_id, so clients resend it every turn); the prefix keys extend the parent's
  key chain the same way. Without a parent everything is rendered and hashed. Rendering takes
  any item, valid or not, and refuses nothing: it goes first so that the checks after it are
  charged for the tokens they read, which it counted.
- **validate**: the first invalid item is refused (`RequestRefused`, naming it).
- **fit**: a prompt over the context window is refused (`context_length_exceeded`).
- **screen**: the input classifier; flagged input is a `SafetyBlock` (a failed response).
- **route**: the canonical model and serving pool; with `routing_reuse` a continuation reuses
  the route carried in its parent's entry instead of paying the routing hop again.

So a request is refused for its first problem in the order the API reports them: an invalid
item, then a prompt over the window, then flagged input. With `incremental_checks` and a parent,
validate and screen read only the new items: the validator's state (the chain's call ids) and
the classifier's score ride in the parent's entry and give the verdicts of a full pass over the
history (property-tested); otherwise they read the whole history again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Protocol

from harness.protocol import errors
from harness.protocol.cache import Resolution
from harness.protocol.requests import CreateRequest
from reference_server.pipeline.refusals import RequestRefused, SafetyBlock
from reference_server.pipeline.resolve import Resolved
from reference_server.pipeline.stages import StageLog
from reference_server.state.chain_seq import ChainSeq
from reference_server.state.conversation import Conversation
from reference_server.state.prefix import BlockKeys, chain_keys
from reference_server.state.render import Rendering, render_full, render_prefix
from reference_server.state.route import Route, resolve_route
from reference_server.state.safety import SafetyState, classify_input
from reference_server.state.validate import ValidationState, validate_items


class Switches(Protocol):
    """The optimizations these stages honour (the server's `config.Optimizations`)."""

    @property
    def render_cache(self) -> bool: ...

    @property
    def incremental_checks(self) -> bool: ...

    @property
    def routing_reuse(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Prompt:
    prefix: tuple[int, ...]  # the rendered instructions + tools
    prefix_root: int  # the key the item keys chain from
    rendering: Rendering  # the rendered items of the whole chain
    item_keys: Sequence[int]  # one chained prefix key per rendered item
    rendered_tokens: int  # tokens this turn actually rendered (what it is charged for)
    blocks: BlockKeys | None = None  # the token blocks (the API's block model), else None

    @property
    def cache_keys(self) -> Sequence[int]:
        """What the prefix cache matches: token blocks, or whole items (the old model)."""
        return self.blocks.keys if self.blocks is not None else self.item_keys

    @property
    def token_count(self) -> int:
        return len(self.prefix) + self.rendering.token_count


@dataclass(frozen=True, slots=True)
class CheckedItems:
    """What validate and screen read: with incremental checks and a parent, the new items from
    the states the parent `carried`; else the whole history too, from scratch."""

    carried: Conversation | None
    items: tuple[dict[str, Any], ...]
    history: int  # how many of `items` are the history's (validation numbers them below 0)

    @classmethod
    def of(
        cls, parent: Conversation | None, new_items: Sequence[dict[str, Any]], *, incremental: bool
    ) -> CheckedItems:
        carried = parent if incremental else None
        history = parent.items if parent is not None and carried is None else ()
        return cls(carried, (*history, *new_items), len(history))


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """What the stages before the engine made of a request: everything the engine, the
    Response and the turn's cache entry need."""

    request: CreateRequest  # its item references replaced by their items
    parent: Conversation | None
    resolution: Resolution | None
    prompt: Prompt
    validation: ValidationState  # carried into this turn's cache entry
    safety: SafetyState
    route: Route

    @property
    def items(self) -> ChainSeq[dict[str, Any]]:
        """The chain's items: the parent's, then this request's input (O(input) to build)."""
        history = self.parent.items if self.parent is not None else ()
        return ChainSeq.of(history).extended(self.request.input)


def prepare(
    resolved: Resolved,
    tenant: str,
    stages: StageLog,
    *,
    switches: Switches,
    context_window_tokens: int,
    drop_context: bool = False,
    cache_block_tokens: int = 0,
) -> PreparedTurn:
    """Render, validate, fit, screen and route, each once; raises RequestRefused (SafetyBlock
    for flagged input). `drop_context` (a fault): the parent is resolved, its context unused."""
    request, parent = resolved.request, resolved.parent
    prompt = render_prompt(
        request,
        None if drop_context else parent,
        tenant,
        render_cache=switches.render_cache,
        stages=stages,
        cache_block_tokens=cache_block_tokens,
    )
    checked = CheckedItems.of(parent, request.input, incremental=switches.incremental_checks)
    validation = validate_input(checked, prompt.rendering, stages)
    if prompt.token_count > context_window_tokens:
        error = errors.context_length_exceeded(prompt.token_count, context_window_tokens)
        raise RequestRefused(error)
    safety = screen_input(checked, prompt.rendering, stages)
    parent_route = parent.route if parent is not None else None
    route = route_request(
        request.model, tenant, parent_route, reuse=switches.routing_reuse, stages=stages
    )
    return PreparedTurn(request, parent, resolved.resolution, prompt, validation, safety, route)


def render_prompt(
    request: CreateRequest,
    parent: Conversation | None,
    tenant: str,
    *,
    render_cache: bool,
    stages: StageLog,
    cache_block_tokens: int = 0,
) -> Prompt:
    """The render stage: charged for the tokens it rendered."""
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
    blocks = None
    if cache_block_tokens > 0:
        if cached is not None and cached.blocks is not None and cached.prefix_root == root:
            new_tokens = chain.from_iterable(rendering.chunks.tail(len(cached.item_keys)))
            blocks = cached.blocks.extended(new_tokens)
        else:  # the prefix's tokens lead the stream: a shared system prompt is a shared prefix
            start = BlockKeys.start(hash(tenant), cache_block_tokens)
            blocks = start.extended(chain(prefix, chain.from_iterable(rendering.chunks)))
    stages.took("tokenize", started)
    stages.charge("tokenize", rendered_tokens)
    return Prompt(prefix, root, rendering, keys, rendered_tokens, blocks)


def _resends_prefix(parent: Conversation, request: CreateRequest) -> bool:
    """True when the request resends the parent turn's instructions and tools unchanged."""
    return (
        parent.prefix_root != 0
        and request.instructions == parent.instructions
        and request.tools == parent.tools
    )


def validate_input(
    checked: CheckedItems, rendering: Rendering, stages: StageLog
) -> ValidationState:
    """The validate stage; raises RequestRefused naming the first invalid item. Charged per
    item and token read."""
    started = time.perf_counter()
    carried, items = checked.carried, checked.items
    start = carried.validation if carried is not None else ValidationState.initial()
    validation, problems = validate_items(start, items, first_index=-checked.history)
    stages.took("validate", started)
    if problems:
        first = problems[0]
        raise RequestRefused(
            errors.invalid_request(first.message, param=first.param, code=first.code)
        )
    stages.charge("validate_items", len(items), name="validate")
    stages.charge("validate_tokens", rendering.tail_token_count(len(items)), name="validate")
    return validation


def screen_input(checked: CheckedItems, rendering: Rendering, stages: StageLog) -> SafetyState:
    """The safety stage; raises SafetyBlock for flagged input. Charged per token read (a full
    pass reads the whole rendering)."""
    started = time.perf_counter()
    carried, items = checked.carried, checked.items
    scanned = carried.safety if carried is not None else SafetyState.initial()
    safety, verdict = classify_input(scanned, items)
    stages.took("safety", started)
    read = rendering.token_count if carried is None else rendering.tail_token_count(len(items))
    stages.charge("safety", read)
    if verdict.blocked:
        raise SafetyBlock(verdict.category or "unsafe content", verdict.rule_ids)
    return safety


def route_request(
    model: str, tenant: str, parent_route: Route | None, *, reuse: bool, stages: StageLog
) -> Route:
    """The route stage: the parent's route when it may be reused and names the same model,
    else a routing hop (`state/route.py`)."""
    started = time.perf_counter()
    if reuse and parent_route is not None and parent_route.requested_model == model:
        stages.took("routing", started)
        return parent_route
    route = resolve_route(model, tenant)
    stages.charge("routing", 1)
    stages.took("routing", started)
    return route
