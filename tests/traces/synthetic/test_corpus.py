"""The committed corpus (traces/): the smoke set, the corpus files and the README's numbers are
what the generator makes today."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from harness.traces.format import Rollout, load_traces
from harness.traces.synthetic.corpus import CORPUS_LAYOUT, CORPUS_SEED, corpus_stats, generate_smoke
from harness.traces.synthetic.generator import CONTEXT_BOUNDS, KINDS, derive_seed, generate_rollout

TRACES = Path(__file__).resolve().parents[3] / "traces"


def test_smoke_file_is_the_generated_smoke_set() -> None:
    smoke = load_traces(TRACES / "smoke.jsonl")
    assert smoke == generate_smoke(CORPUS_SEED)
    assert [r.agent_kind for r in smoke] == list(KINDS)
    for r in smoke:
        assert len(r.turns) == 5
        assert r.final_context_tokens < 5000


def test_committed_corpus_loads_and_regenerates() -> None:
    corpus = load_traces(TRACES / "corpus")
    by_kind: dict[str, list[Rollout]] = {}
    for r in corpus:
        by_kind.setdefault(r.agent_kind, []).append(r)
    assert len(corpus) >= 24
    assert all(len(v) >= 8 for v in by_kind.values()) and set(by_kind) == set(KINDS)
    total_bytes = sum(f.stat().st_size for f in (TRACES / "corpus").glob("*.jsonl"))
    assert total_bytes < 25_000_000
    stats: Any = corpus_stats(corpus)
    assert CONTEXT_BOUNDS[0] <= stats["final_context_tokens"]["min"]
    assert stats["final_context_tokens"]["max"] <= CONTEXT_BOUNDS[1]
    # the first rollout of each kind is exactly what the generator makes today
    for _, kind, _count in CORPUS_LAYOUT:
        regenerated = generate_rollout(
            kind, derive_seed(CORPUS_SEED, kind, 0), rollout_id=f"corpus-{kind}-00"
        )
        assert by_kind[kind][0] == regenerated


def test_readme_documents_the_measured_numbers() -> None:
    readme = (TRACES / "README.md").read_text(encoding="utf-8")
    corpus = load_traces(TRACES / "corpus")
    stats = corpus_stats(corpus)
    assert f"{stats['rollouts']} rollouts" in readme
    assert f"{stats['turns_total']} turns" in readme
    assert "wsmode-trace" in readme and "tool_wait_ms" in readme
    median_out = statistics.median(t.output_tokens for r in corpus for t in r.turns)
    assert median_out == pytest.approx(stats["output_tokens_per_turn"]["p50"], abs=2)
