"""The bundled corpus (``traces/``): its layout and seed, the smoke and multi-agent sets, and the
statistics ``traces/README.md`` quotes (``corpus_stats``).

``python -m harness.traces.commands corpus --out traces`` regenerates it; every rollout comes from
``harness.traces.synthetic.generator`` with a seed derived from the corpus seed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from harness.traces.format import JSONObject, Rollout, dump_rollouts, estimate_tokens
from harness.traces.synthetic.generator import KINDS, derive_seed, generate_rollout
from harness.traces.synthetic.multi_agent import to_multi_agent
from harness.traces.synthetic.targets import CALIBRATED, UNCALIBRATED, Targets

__all__ = [
    "CORPUS_LAYOUT",
    "CORPUS_SEED",
    "corpus_rollouts",
    "corpus_stats",
    "generate_smoke",
    "write_corpus",
]

#: The committed corpus: (file name, kind, count) and the corpus seed.
CORPUS_SEED: Final = 20260
CORPUS_LAYOUT: Final = (
    ("bug_fix.jsonl", "bug_fix", 10),
    ("refactor.jsonl", "refactor", 10),
    ("test_fix.jsonl", "test_fix", 10),
)


def corpus_rollouts(
    kind: str, count: int, seed: int = CORPUS_SEED, targets: Targets = CALIBRATED
) -> list[Rollout]:
    """The committed corpus's rollouts of one kind (``corpus-<kind>-<i>``); other ``targets``
    give the same layout drawn from other distributions (the uncalibrated corpus)."""
    return [
        generate_rollout(
            kind, derive_seed(seed, kind, i), rollout_id=f"corpus-{kind}-{i:02d}", targets=targets
        )
        for i in range(count)
    ]


def write_corpus(out_dir: str | Path, seed: int = CORPUS_SEED) -> dict[str, int]:
    """Write ``corpus/*.jsonl``, ``smoke.jsonl`` and ``multi_agent.jsonl`` (the smoke set as
    multi-agent rollouts, trace version 2) under ``out_dir``; returns bytes per file."""
    out = Path(out_dir)
    sizes: dict[str, int] = {}
    for name, kind, count in CORPUS_LAYOUT:
        sizes[f"corpus/{name}"] = dump_rollouts(
            corpus_rollouts(kind, count, seed), out / "corpus" / name
        )
    smoke = generate_smoke(seed)
    sizes["smoke.jsonl"] = dump_rollouts(smoke, out / "smoke.jsonl")
    multi = [to_multi_agent(rollout) for rollout in smoke]
    sizes["multi_agent.jsonl"] = dump_rollouts(multi, out / "multi_agent.jsonl")
    return sizes


def generate_smoke(seed: int = 0) -> list[Rollout]:
    """Three short rollouts (one per kind, 5 turns, a few thousand tokens) for fast tests."""
    return [
        generate_rollout(
            kind,
            derive_seed(seed, "smoke", kind),
            n_turns=5,
            size_scale=0.08,
            context_bounds=None,
            rollout_id=f"smoke-{kind}",
            targets=UNCALIBRATED,  # fast-test fixtures: their shape is pinned, not calibrated
        )
        for kind in KINDS
    ]


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}

    def q(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1)

    return {
        "min": round(ordered[0], 1),
        "p50": q(0.5),
        "p90": q(0.9),
        "p99": q(0.99),
        "max": round(ordered[-1], 1),
    }


def corpus_stats(rollouts: Sequence[Rollout]) -> JSONObject:
    """Measured distributions of a set of rollouts (the numbers in traces/README.md)."""
    tool_outputs: list[float] = []
    read_outputs: list[float] = []  # outputs of tools that return content (not edit acks)
    waits: list[float] = []
    test_waits: list[float] = []  # turns answering a run_tests call
    other_waits: list[float] = []
    out_tokens: list[float] = []
    parallel = 0
    calls_turns = 0
    for r in rollouts:
        names: dict[str, str] = {}
        for t in r.turns:
            out_tokens.append(t.output_tokens)
            if t.answered_call_ids:  # a turn opened by a user message waited for no tool
                waits.append(t.tool_wait_ms)
                if "run_tests" in names.values():
                    test_waits.append(t.tool_wait_ms)
                else:
                    other_waits.append(t.tool_wait_ms)
            n_calls = len(t.function_calls)
            if n_calls:
                calls_turns += 1
                parallel += n_calls > 1
            for item in t.input:
                if item.get("type") == "function_call_output":
                    size = estimate_tokens(str(item["output"]))
                    tool_outputs.append(size)
                    if names.get(item["call_id"]) not in ("apply_patch", "write_file"):
                        read_outputs.append(size)
            names = {c.call_id: c.name for c in t.function_calls}
    by_kind: dict[str, int] = {}
    for r in rollouts:
        by_kind[r.agent_kind] = by_kind.get(r.agent_kind, 0) + 1
    turn_counts = [len(r.turns) for r in rollouts]
    return {
        "rollouts": len(rollouts),
        "by_kind": dict(sorted(by_kind.items())),
        "turns_total": sum(turn_counts),
        "turns_per_rollout": _quantiles(turn_counts),
        "instructions_tokens": _quantiles(
            [estimate_tokens(r.instructions or "") for r in rollouts]
        ),
        "first_turn_context_tokens": _quantiles([r.context_tokens_estimate(0) for r in rollouts]),
        "final_context_tokens": _quantiles([r.final_context_tokens for r in rollouts]),
        "tool_output_tokens": _quantiles(tool_outputs),
        "tool_output_tokens_excluding_edits": _quantiles(read_outputs),
        "output_tokens_per_turn": _quantiles(out_tokens),
        "tool_wait_ms": _quantiles(waits),
        "tool_wait_ms_mean": round(statistics.fmean(waits), 1) if waits else 0.0,
        "tool_wait_ms_test_turns": _quantiles(test_waits),
        "tool_wait_ms_other_turns": _quantiles(other_waits),
        "parallel_call_turn_share": round(parallel / calls_turns, 3) if calls_turns else 0.0,
    }
