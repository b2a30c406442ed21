"""The distance of a corpus from a reference: KS distance and quantile ratios."""

from __future__ import annotations

from pathlib import Path

from harness.traces.converters.tracelab import convert_tracelab
from harness.traces.stats import compare, ks_distance, measure, quantile_ratios

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "data" / "tracelab" / "sanitized" / "round_trace.jsonl"
)


def test_ks_distance() -> None:
    assert ks_distance([1, 2, 3], [3, 2, 1]) == 0.0
    assert ks_distance([1, 2], [5, 6, 7]) == 1.0
    # at x = 2 half of a is below, none of b
    assert ks_distance([1, 2, 3, 4], [3, 4, 5, 6]) == 0.5
    assert ks_distance([1, 1, 1, 2], [1, 2, 2, 2]) == 0.5  # ties step together
    assert ks_distance([], [1]) is None


def test_quantile_ratios() -> None:
    b = [float(v) for v in range(1, 101)]
    assert quantile_ratios([2 * v for v in b], b) == {
        "p10": 2.0,
        "p50": 2.0,
        "p90": 2.0,
        "p99": 2.0,
    }
    zeros = quantile_ratios([1.0] * 10, [0.0] * 9 + [5.0])
    assert zeros["p50"] is None and zeros["p99"] == 0.2
    assert quantile_ratios([], b) == {"p10": None, "p50": None, "p90": None, "p99": None}


def test_a_corpus_is_no_distance_from_itself_and_far_from_another() -> None:
    claude, codex = convert_tracelab(EXAMPLE)
    same = compare(measure([claude]), measure([claude]))
    assert all(d == 0.0 for d in same.distances.values())
    assert all(r in (1.0, None) for ratios in same.ratios.values() for r in ratios.values())
    other = compare(measure([codex]), measure([claude]))
    # Codex's prompts grow by less, its tools answer faster than Claude's in these sessions
    assert other.ratios["input_growth_tokens"]["p50"] is not None
    assert (other.ratios["tool_latency_ms"]["p50"] or 0) < 0.1
    assert other.worst is not None and other.worst[1] == max(
        d for d in other.distances.values() if d is not None
    )
    assert set(other.to_json()["tool_latency_ms"]) == {"ks", "quantile_ratios"}
