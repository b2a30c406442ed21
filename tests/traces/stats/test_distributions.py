"""The distributions a corpus is measured by: recorded token counts where a rollout has them,
else the project's tokenizer on what a replay sends; sessions join their chain restarts."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

from harness.protocol.tokenizer import count_tokens
from harness.traces.converters.tracelab import convert_tracelab
from harness.traces.format import load_traces
from harness.traces.stats import DISTRIBUTIONS, measure, summary
from harness.traces.stats.distributions import item_tokens

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "tests" / "data" / "tracelab" / "sanitized" / "round_trace.jsonl"
SMOKE = ROOT / "traces" / "smoke.jsonl"


def test_recorded_counts_are_used_where_every_turn_has_them() -> None:
    claude, codex = convert_tracelab(EXAMPLE)
    shape = measure([claude])
    assert (shape.rollouts, shape.sessions, shape.turns, shape.recorded_tokens) == (1, 1, 10, 1)
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()][:10]
    totals = [r["input_tokens_total"] for r in rows]
    growth = [b - a for a, b in itertools.pairwise(totals)]
    assert shape.samples["input_growth_tokens"] == tuple(map(float, growth))
    assert shape.samples["output_tokens"] == tuple(float(r["output_tokens"]) for r in rows)
    assert shape.samples["tool_calls_per_turn"] == (2, 1, 1, 1, 0, 1, 1, 1, 1, 0)
    # one latency per turn answering calls (8 of 10: turns 0 and 5 open with a user message)
    assert shape.samples["tool_latency_ms"] == (
        20098.0, 12684.0, 21467.0, 145.0, 16109.0, 2517.0, 130.0, 187.0,
    )  # fmt: skip
    # append tokens are what the turn sends: the first message, then outputs and messages
    assert shape.samples["append_tokens"][0] == 32272 - 27217
    assert measure([claude, codex]).samples["turns_per_session"] == (10.0, 9.0)


def test_without_recorded_counts_the_tokenizer_counts_what_a_replay_sends() -> None:
    rollout = load_traces(SMOKE)[0]
    assert not any("input_tokens" in t.observed for t in rollout.turns)
    shape = measure([rollout])
    base = count_tokens(rollout.instructions or "") + count_tokens(json.dumps(list(rollout.tools)))
    prompts = [
        base + sum(item_tokens(i) for i in rollout.full_history(n))
        for n in range(len(rollout.turns))
    ]
    assert shape.samples["input_growth_tokens"] == tuple(
        float(b - a) for a, b in itertools.pairwise(prompts)
    )
    assert shape.samples["output_tokens"] == tuple(float(t.output_tokens) for t in rollout.turns)
    assert shape.recorded_tokens == 0


def test_a_chain_restart_counts_with_its_session() -> None:
    first, second = convert_tracelab(EXAMPLE)
    restart = dataclasses.replace(second, meta={**second.meta, "continues": first.id})
    again = dataclasses.replace(second, id="x-s3", meta={"continues": restart.id})
    assert measure([first, restart, again]).samples["turns_per_session"] == (28.0,)


def test_summary_states_the_quantiles_and_an_empty_sample_has_none() -> None:
    s = summary([float(v) for v in range(1, 101)])
    assert (s["n"], s["p10"], s["p50"], s["p90"], s["p99"], s["max"], s["mean"]) == (
        100, 10.0, 50.0, 90.0, 99.0, 100.0, 50.5,
    )  # fmt: skip
    assert summary([]) == {"n": 0, "mean": None, "p10": None, "p50": None, "p90": None,
                           "p99": None, "max": None}  # fmt: skip
    assert set(measure([]).to_json()["distributions"]) == set(DISTRIBUTIONS)
