"""Runs side by side (harness.results.runs_compare): each later run against the first, per mode
and metric, the paired rollouts, and the equal-work check both ways."""

from __future__ import annotations

from typing import Any

import pytest

from harness.results.runs_compare import CompareInputError, compare_runs


def _metric(comparison: Any, mode: str, metric: str) -> Any:
    (mc,) = [m for m in comparison.modes if m.mode == mode]
    (row,) = [r for r in mc.metrics if r.metric == metric]
    return mc, row


def test_a_known_shift_is_found_with_an_interval_that_excludes_zero(synth: Any) -> None:
    a = synth.bench(seed=1)
    b = synth.bench(seed=2, scale={"ws": {"ttft_ms": 1.5}})
    comparison = compare_runs([a, b], ["a.json", "b.json"])
    assert [r.name for r in comparison.runs] == ["A", "B"] and comparison.equal_work
    _, ttft = _metric(comparison, "ws", "ttft_ms")
    first, later = ttft.cells
    assert first.n == later.n == 400 and first.p50_change_pct is None
    assert first.p50_ci[0] <= first.p50 <= first.p50_ci[1]
    assert later.p50_change_ci[0] > 30 and later.p50_change_ci[1] < 70  # 1.5x: +50 %
    _, http_ttft = _metric(comparison, "http", "ttft_ms")
    low, high = http_ttft.cells[1].p50_change_ci
    assert low < 0 < high  # http unchanged: its interval spans zero
    mc, _ = _metric(comparison, "ws", "rollout_e2e_ms")
    (paired,) = mc.paired
    assert paired.run == "B" and paired.pairs == 40 and paired.median < 1  # B is slower
    assert mc.error_rate_pct == [0.0, 0.0] and mc.goodput == [None, None]


def test_a_mode_missing_from_a_run_is_shown_as_not_run(synth: Any) -> None:
    a = synth.bench(seed=1)
    b = synth.bench(seed=2, ttft_ms={"ws": 20.0})
    comparison = compare_runs([a, b])
    _, ttft = _metric(comparison, "http", "ttft_ms")
    assert ttft.cells[1] is None and ttft.cells[0] is not None
    assert not comparison.equal_work  # the modes differ: the workload identity says so
    assert any("modes" in note for note in comparison.workload_notes)


def test_unequal_work_is_flagged_both_ways(synth: Any) -> None:
    a = synth.bench(seed=1)
    b = synth.bench(seed=1)
    for s in b["bench"]["samples"]:
        if s["mode"] == "ws":
            s["context_tokens"] //= 2  # B's ws turns carried half the context
    comparison = compare_runs([a, b])
    (ws,) = [m for m in comparison.modes if m.mode == "ws"]
    (flag,) = ws.unequal_work
    assert flag.startswith(
        "unequal work: B ws turns carry 50% of the input tokens of the same A ws turns"
    )
    comparison = compare_runs([b, a])  # the other way round: A did more work than B
    (ws,) = [m for m in comparison.modes if m.mode == "ws"]
    assert len(ws.unequal_work) == 1 and not comparison.equal_work
    assert [m.unequal_work for m in comparison.modes if m.mode == "http"] == [[]]


def test_only_two_or_more_latency_results_compare(synth: Any) -> None:
    with pytest.raises(CompareInputError, match="at least two"):
        compare_runs([synth.bench()])
    certify = synth.certify({"1.1.x": ("MUST", "PASS")})
    with pytest.raises(CompareInputError, match=r"c\.json: a certify result has no latencies"):
        compare_runs([synth.bench(), certify], ["b.json", "c.json"])
