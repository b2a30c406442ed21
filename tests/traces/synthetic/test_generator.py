"""The seeded rollout generator: determinism, each kind's shape, the documented distributions."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from harness.traces.format import Rollout, dumps_rollouts, validate_rollout
from harness.traces.synthetic.corpus import corpus_stats
from harness.traces.synthetic.generator import (
    CONTEXT_BOUNDS,
    INSTRUCTIONS_TOKENS,
    KINDS,
    TOOLS,
    TURNS_RANGE,
    derive_seed,
    generate_corpus,
    generate_rollout,
)
from harness.traces.synthetic.targets import UNCALIBRATED


@pytest.fixture(scope="module")
def sample() -> list[Rollout]:
    """Fifteen full-size rollouts (five per kind): enough to check the distributions."""
    return generate_corpus(15, seed=99)


def _schema_keys(tool_name: str) -> set[str]:
    tool = next(t for t in TOOLS if t["name"] == tool_name)
    return set(tool["parameters"]["required"])


def test_same_seed_same_trace_and_no_global_randomness() -> None:
    random.seed(1)
    first = generate_rollout("bug_fix", 42)
    random.seed(2)
    random.random()
    second = generate_rollout("bug_fix", 42)
    assert dumps_rollouts([first]) == dumps_rollouts([second])
    assert dumps_rollouts([first]) != dumps_rollouts([generate_rollout("bug_fix", 43)])
    assert first.id == f"gen-bug_fix-{42:016x}"
    assert first.seed == 42


def test_derive_seed_is_stable_across_processes() -> None:
    # sha256-based, so a fixed value (PYTHONHASHSEED cannot change it)
    assert derive_seed(0, 1) == derive_seed(0, 1)
    assert derive_seed(0, 1) != derive_seed(0, 2)
    expected = int.from_bytes(hashlib.sha256(b"20260:bug_fix:0").digest()[:8], "big") >> 1
    assert derive_seed(20260, "bug_fix", 0) == expected < 2**63


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_a_valid_tool_calling_rollout(kind: str) -> None:
    r = generate_rollout(kind, 7)
    validate_rollout(r)
    assert r.agent_kind == kind and r.source == "generated"
    low, high = TURNS_RANGE[kind]
    assert low <= len(r.turns) <= high
    assert r.turns[0].tool_wait_ms == 0
    assert [i["role"] for i in r.turns[0].input] == ["user", "user"]
    # every turn calls tools but the last (a final message) and the progress reports to the
    # user, each answered by a user message with no tool time before it
    replies = [t.index for t in r.turns[:-1] if not t.function_calls]
    for i in replies:
        assert r.turns[i].output[-1].type == "message"
        assert [x["role"] for x in r.turns[i + 1].input] == ["user"]
        assert r.turns[i + 1].tool_wait_ms == 0
    assert not r.turns[-1].function_calls
    assert r.turns[-1].output[-1].type == "message"
    assert all(t.tool_wait_ms > 0 for t in r.turns[1:] if t.index - 1 not in replies)
    # arguments are JSON objects with exactly the strict schema's keys
    for turn in r.turns:
        for call in turn.function_calls:
            assert set(json.loads(call.arguments)) == _schema_keys(call.name)
    # the agent verifies before answering: the last tool call is a passing test run
    [last_call] = r.turns[-2].function_calls
    assert last_call.name == "run_tests"
    [report] = r.turns[-1].input
    assert " passed in " in report["output"] and " failed" not in report["output"]


def test_test_fix_rollouts_loop_run_edit_rerun() -> None:
    r = generate_rollout("test_fix", 3)
    names = [c.name for t in r.turns for c in t.function_calls]
    assert names[0] == "run_tests" or "run_tests" in names[:3]
    assert names.count("run_tests") >= 3
    assert names.count("apply_patch") >= 2
    first_report = next(
        i["output"]
        for t in r.turns
        for i in t.input
        if i.get("type") == "function_call_output" and "test session starts" in i["output"]
    )
    assert "FAILURES" in first_report and " failed, " in first_report


def test_refactor_edits_several_files() -> None:
    r = generate_rollout("refactor", 5)
    patched = {
        line.split(": ", 1)[1]
        for t in r.turns
        for c in t.function_calls
        if c.name == "apply_patch"
        for line in json.loads(c.arguments)["patch"].split("\n")
        if line.startswith("*** Update File: ")
    }
    assert len(patched) >= 3


def test_distributions_match_the_documented_ranges(sample: list[Rollout]) -> None:
    stats = corpus_stats(sample)
    assert stats["by_kind"] == {"bug_fix": 5, "refactor": 5, "test_fix": 5}
    lo, hi = INSTRUCTIONS_TOKENS
    assert lo * 0.95 <= stats["instructions_tokens"]["min"]
    assert stats["instructions_tokens"]["max"] <= hi * 1.05
    assert stats["turns_per_rollout"]["min"] >= 20 and stats["turns_per_rollout"]["max"] <= 90
    # context grows to 30k-150k by the end
    assert CONTEXT_BOUNDS is not None
    assert CONTEXT_BOUNDS[0] <= stats["final_context_tokens"]["min"]
    assert stats["final_context_tokens"]["max"] <= CONTEXT_BOUNDS[1]
    # content-returning tool outputs: median ~450 (calibrated), tail past 8k
    reads = stats["tool_output_tokens_excluding_edits"]
    assert 300 <= reads["p50"] <= 700
    assert 8000 <= reads["max"] <= 24_100
    # model output per turn: median ~350 with reasoning on most turns, tail to ~8k
    out = stats["output_tokens_per_turn"]
    assert 250 <= out["p50"] <= 450 and 2000 <= out["max"] <= 8300
    # tool wait: sub-second median, seconds at p90, outside test runs; test runs longer
    other, tests = stats["tool_wait_ms_other_turns"], stats["tool_wait_ms_test_turns"]
    assert 150 <= other["p50"] <= 700 and 2000 <= other["p90"] <= 6500
    assert tests["p50"] > 2 * other["p50"]
    # ~20% of tool-calling turns issue 2-5 parallel calls
    assert 0.14 <= stats["parallel_call_turn_share"] <= 0.27
    counts = {len(t.function_calls) for r in sample for t in r.turns}
    assert counts == {0, 1, 2, 3, 4, 5}
    # about one non-final turn in seven answers the user instead of calling tools
    replies = [not t.function_calls for r in sample for t in r.turns[:-1]]
    assert 0.08 <= sum(replies) / len(replies) <= 0.22


def test_version_1_targets_give_version_1_rollouts() -> None:
    r = generate_rollout("refactor", 7, targets=UNCALIBRATED)
    assert r.meta["generator_version"] == 1 and "targets" not in r.meta
    low, high = UNCALIBRATED.turns_range["refactor"]
    assert low <= len(r.turns) <= high and (low, high) == (35, 80)
    assert all(t.function_calls for t in r.turns[:-1])  # version 1 never answers the user
    assert generate_rollout("refactor", 7).meta["generator_version"] == 2


def test_context_grows_monotonically(sample: list[Rollout]) -> None:
    for r in sample[:3]:
        series = [r.context_tokens_estimate(i) for i in range(len(r.turns) + 1)]
        assert series == sorted(series)
        assert series[-1] > 3 * series[0]


def test_tool_outputs_look_like_code_logs_and_listings(sample: list[Rollout]) -> None:
    r = sample[0]
    names: dict[str, str] = {}
    seen: dict[str, str] = {}
    for turn in r.turns:
        for item in turn.input:
            if item.get("type") == "function_call_output":
                seen.setdefault(names[item["call_id"]], item["output"])
        names = {c.call_id: c.name for c in turn.function_calls}
    assert "def " in seen["read_file"] and "\t" in seen["read_file"]
    assert "Success. Updated the following files" in seen["apply_patch"]
    if "run_tests" in seen:
        assert "test session starts" in seen["run_tests"]
    assert r.instructions is not None and "## " in r.instructions


def test_parameters_and_errors() -> None:
    short = generate_rollout("refactor", 1, n_turns=3, size_scale=0.1, context_bounds=None)
    assert len(short.turns) == 3
    validate_rollout(short)
    assert short.final_context_tokens < 10_000
    one = generate_rollout("bug_fix", 1, n_turns=1, context_bounds=None, rollout_id="x")
    assert one.id == "x" and not one.turns[0].function_calls
    with pytest.raises(ValueError, match="unknown rollout kind"):
        generate_rollout("feature", 1)
    with pytest.raises(ValueError, match="n_turns"):
        generate_rollout("bug_fix", 1, n_turns=0)


def test_small_bounds_truncate_tool_outputs() -> None:
    r = generate_rollout("bug_fix", 11, n_turns=30, context_bounds=(1000, 40_000))
    assert r.final_context_tokens <= 40_000
    outputs = [i["output"] for t in r.turns for i in t.input if "output" in i]
    assert any("[... output truncated:" in o for o in outputs)


def test_generate_corpus_cycles_kinds_with_derived_seeds() -> None:
    corpus = generate_corpus(4, seed=5, n_turns=3, size_scale=0.05, context_bounds=None)
    assert [r.agent_kind for r in corpus] == ["bug_fix", "refactor", "test_fix", "bug_fix"]
    assert [r.seed for r in corpus] == [derive_seed(5, i) for i in range(4)]
    assert len({r.id for r in corpus}) == 4
