"""Prompt-cache accounting in the API's rules (PROTOCOL.md §5.6), over real sockets: the longest
cached token prefix in 128-token blocks, 0 under 1,024 tokens; a profile with
`prompt_cache_block_tokens = 0` keeps the old whole-item model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from reference_server.app import ReferenceServer

from .conftest import ServerFactory

LONG = "The tide tables list each harbour's high and low water for the month. " * 150


def cached(server: ReferenceServer, text: str) -> tuple[int, int]:
    """(input_tokens, cached_tokens) of one HTTP create with `text` as its input."""
    with httpx.Client(base_url=server.http_url, timeout=10) as http:
        body: dict[str, Any] = {"model": "m", "input": text, "store": False}
        usage = http.post("/responses", json=body).json()["usage"]
    return usage["input_tokens"], usage["input_tokens_details"]["cached_tokens"]


def test_a_short_prompt_sent_twice_reports_nothing_cached(server: ReferenceServer) -> None:
    cached(server, "Say hello in one word.")
    tokens, hit = cached(server, "Say hello in one word.")
    assert 0 < tokens < 1024 and hit == 0


def test_a_shared_long_prefix_with_another_tail_is_cached_in_blocks(
    server: ReferenceServer,
) -> None:
    first_tokens, first_hit = cached(server, LONG + "First question: when is high water?")
    tokens, hit = cached(server, LONG + "A different tail: and low water?")
    assert first_hit == 0 and tokens > 1024
    assert hit >= 1024 and hit % 128 == 0 and hit <= min(first_tokens, tokens)
    assert tokens - hit < 128 + 40  # all but the last partial block and the differing tail


def test_the_whole_item_profile_keeps_the_old_model(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    profile = tmp_path / "items.toml"
    profile.write_text(
        'name = "items"\ndecode_tokens_per_s = 1e9\nprompt_cache_block_tokens = 0\n',
        encoding="utf-8",
    )
    with make_server(profile=str(profile)) as server:
        cached(server, "Say hello in one word.")
        tokens, hit = cached(server, "Say hello in one word.")
        _, tail_hit = cached(server, LONG + "another tail")
    assert hit == tokens  # the whole item matched, however short
    assert tail_hit == 0  # one item with a different tail: no whole-item match
