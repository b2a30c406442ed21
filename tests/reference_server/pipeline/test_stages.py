"""The turn's stage functions on their own: resolve's cache view, render reuse, route reuse."""

from __future__ import annotations

import random
from typing import Any

from harness.protocol.cache import CachePolicy, ResponseCache
from harness.protocol.requests import CreateRequest, parse_create
from reference_server.cost_profiles import load_cost_profile
from reference_server.pipeline.prepare import (
    CheckedItems,
    render_prompt,
    route_request,
    screen_input,
    validate_input,
)
from reference_server.pipeline.stages import StageLog
from reference_server.pipeline.turn_cache import TurnCache
from reference_server.state.conversation import Conversation
from reference_server.state.render import render_full
from reference_server.state.route import resolve_route
from reference_server.state.safety import SafetyState
from reference_server.state.validate import ValidationState


def stages() -> StageLog:
    return StageLog(load_cost_profile("zero"), random.Random(0))


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def request(*texts: str, **fields: Any) -> CreateRequest:
    body = {"model": "m", "input": [user(t) for t in texts], **fields}
    return parse_create(body, transport="ws")


def entry(response_id: str, *texts: str, tenant: str = "t") -> Conversation:
    items = tuple(user(t) for t in texts)
    return Conversation(
        response={"id": response_id, "model": "m"},
        items=items,
        tools=(),
        rendering=render_full(items),
        instructions=None,
        prefix=(),
        prefix_root=0,
        item_keys=(),
        validation=ValidationState.initial(),
        safety=SafetyState.initial(),
        route=resolve_route("m", tenant),
        tenant=tenant,
        store=False,
        size_bytes=10,
    )


def test_turn_cache_reads_refresh_recency_unless_fifo() -> None:
    for refresh, survivor in ((True, "a"), (False, "b")):
        cache: ResponseCache[Conversation] = ResponseCache(CachePolicy(depth=2))
        view = TurnCache(cache, refresh_on_read=refresh)
        view.replace(entry("a"))
        view.replace(entry("b"))
        assert view.lookup("a") is not None
        assert view.replace(entry("c")) == 1
        assert survivor in cache and "c" in cache


def test_turn_cache_finds_forks_and_reads_nothing_when_disabled() -> None:
    lane: ResponseCache[Conversation] = ResponseCache()
    other: ResponseCache[Conversation] = ResponseCache()
    other.put("p", entry("p"))
    assert TurnCache(lane, (other,)).lookup("p") is not None
    assert TurnCache(lane, (other,), enabled=False).lookup("p") is None
    assert TurnCache(None).lookup("p") is None and not TurnCache(None).evict("p")


def test_incremental_checks_and_render_cache_match_the_full_pass() -> None:
    parent = entry("p", "first turn")
    turn = request("second turn", instructions="be brief")
    cached = render_prompt(turn, parent, "t", render_cache=True, stages=stages())
    full = render_prompt(turn, parent, "t", render_cache=False, stages=stages())
    for incremental in (True, False):
        checked = CheckedItems.of(parent, turn.input, incremental=incremental)
        assert len(checked.items) == (1 if incremental else 2)
        validate_input(checked, cached.rendering, stages())
        screen_input(checked, cached.rendering, stages())  # not blocked: a SafetyBlock raises
    assert cached.rendering.tokens() == full.rendering.tokens()
    assert cached.item_keys == full.item_keys and cached.prefix == full.prefix
    assert cached.rendered_tokens < full.rendered_tokens


def test_route_is_reused_only_for_the_same_model() -> None:
    parent_route = resolve_route("gpt-5", "t")
    reused = route_request("gpt-5", "t", parent_route, reuse=True, stages=stages())
    assert reused is parent_route
    other = route_request("gpt-5-codex", "t", parent_route, reuse=True, stages=stages())
    assert other.model == "gpt-5-codex-2026-09-15"
    hop = route_request("gpt-5", "t", parent_route, reuse=False, stages=stages())
    assert hop == parent_route and hop is not parent_route
