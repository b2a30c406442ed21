"""Token-shape synthesis: prompts sharing k hash_ids blocks share exactly k x 64 tokens, and a
replay on the reference server reuses what the recorded session reused."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.load.core.replay_options import ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.protocol.tokenizer import count_tokens, tokenize
from harness.traces.converters.kvcache import convert_kvcache
from harness.traces.converters.token_shape import BLOCK_TOKENS, fresh_text, prompt_text
from tests.load.replay_support import endpoint, reference_server, run
from tests.recorded import TRACE_SAMPLES, needs

SAMPLES = TRACE_SAMPLES


def shared_prefix(a: str, b: str) -> int:
    ta, tb = tokenize(a), tokenize(b)
    k = 0
    while k < min(len(ta), len(tb)) and ta[k] == tb[k]:
        k += 1
    return k


@pytest.mark.parametrize("shared", [0, 1, 3, 7])
def test_prompts_sharing_k_blocks_share_exactly_k_blocks_of_tokens(shared: int) -> None:
    common = list(range(100, 100 + shared))
    a = prompt_text("trace-x", [*common, 1, 2, 3], (shared + 3) * BLOCK_TOKENS - 5)
    b = prompt_text("trace-x", [*common, 7, 8], (shared + 2) * BLOCK_TOKENS)
    assert count_tokens(a) == (shared + 3) * BLOCK_TOKENS - 5
    assert count_tokens(b) == (shared + 2) * BLOCK_TOKENS
    assert abs(shared_prefix(a, b) - shared * BLOCK_TOKENS) <= 1


def test_scopes_keep_equal_ids_of_unrelated_sessions_apart() -> None:
    a = prompt_text("trace-a", [1, 2], 128)
    b = prompt_text("trace-b", [1, 2], 128)
    assert shared_prefix(a, b) <= 1


def test_a_prefix_of_a_prompt_is_the_same_text() -> None:
    ids = [5, 6, 7]
    assert prompt_text("s", ids, 192).startswith(prompt_text("s", ids, 100))
    assert count_tokens(fresh_text("s", "out:1", 37)) == 37


@needs(SAMPLES)
def test_replay_reports_cached_tokens_consistent_with_the_recorded_blocks(tmp_path: Path) -> None:
    rollout = convert_kvcache(SAMPLES / "kvcache-trace_0022.json")[0]
    with reference_server(tmp_path) as server:
        result = run(replay_rollout(rollout, endpoint(server), ReplayOptions(mode="ws")))
    assert result.ok, result.error
    previous_out = 0
    for replayed, turn in zip(result.turns, rollout.turns, strict=True):
        recorded_in = turn.observed["input_tokens"]
        recorded_cached = turn.observed["cached_tokens"]
        assert replayed.context_tokens is not None and replayed.cached_tokens is not None
        # the prompt is the recorded size plus the server's framing (tools, item headers)
        assert 0 <= replayed.context_tokens - recorded_in <= 64 + 16 * (2 * turn.index + 2)
        # what the session reused, the server reuses (and the previous output on top)
        assert recorded_cached <= replayed.cached_tokens <= replayed.context_tokens
        # beyond it: the previous output, the unhashed partial block and the framing
        slack = previous_out + BLOCK_TOKENS + 64 + 16 * (2 * turn.index + 2)
        assert replayed.cached_tokens - recorded_cached <= slack
        previous_out = turn.observed["output_tokens"]
