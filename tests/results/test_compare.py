"""Paired comparisons: pairing, seeded bootstrap CI, TTFT change, the telescoping split."""

from __future__ import annotations

import random

import pytest

from harness.results.compare import (
    ablation_rows,
    compare,
    median_ci,
    paired_values,
    speedup_split,
)


def _rollout(rid: str, mode: str, e2e: float, model: float, ok: bool = True) -> dict[str, object]:
    return {"rollout_id": rid, "mode": mode, "e2e_ms": e2e, "model_ms": model, "ok": ok}


def _sample(mode: str, ttft: float, ok: bool = True) -> dict[str, object]:
    return {"mode": mode, "ttft_ms": ttft, "ok": ok}


def test_bootstrap_ci_is_deterministic_for_a_seed() -> None:
    rng = random.Random(0)
    values = [rng.lognormvariate(0.2, 0.3) for _ in range(15)]
    a = median_ci(values, seed=7)
    assert a == median_ci(values, seed=7)
    point, ci = a
    assert ci is not None and point is not None and ci[0] <= point <= ci[1]
    assert any(median_ci(values, seed=s)[1] != ci for s in range(8, 20))
    assert median_ci([], seed=1) == (None, None)


def test_pairs_by_nth_occurrence_and_skips_failed_replays() -> None:
    rollouts = [
        _rollout("a", "http", 200, 100),
        _rollout("a", "ws", 100, 50),
        _rollout("b", "http", 300, 150),
        _rollout("b", "ws", 150, 75, ok=False),
        _rollout("a", "http", 220, 110),
        _rollout("a", "ws", 110, 55),
    ]
    pairs = paired_values(rollouts, "http", "ws")
    assert pairs == [("a", 200.0, 100.0), ("a", 220.0, 110.0)]


def test_compare_reports_speedup_and_ttft_improvement() -> None:
    rollouts = []
    for i in range(20):
        rollouts += [
            _rollout(f"r{i}", "http", 1000 + i, 500 + i),
            _rollout(f"r{i}", "ws", 800 + i, 250 + i),
        ]
    samples = [_sample("http", 200.0 + i % 5) for i in range(50)]
    samples += [_sample("ws", 100.0 + i % 5) for i in range(50)]
    samples.append(_sample("ws", 9999.0, ok=False))  # failed turns never count
    c = compare(rollouts, samples, "http", "ws", seed=1)
    assert c.pairs == 20
    assert c.speedup_median == pytest.approx(1010 / 810, rel=0.01)
    assert c.model_speedup_median == pytest.approx(2.0, rel=0.02)
    assert c.ci95 is not None and c.ci95[0] <= c.speedup_median <= c.ci95[1]
    assert c.ttft_improvement_pct == pytest.approx(100 * (1 - 102 / 202), abs=0.5)
    d = c.to_dict()
    assert d["baseline_mode"] == "http" and d["mode"] == "ws"
    assert compare(rollouts, samples, "http", "ws", seed=1) == c


def test_split_telescopes_to_the_total() -> None:
    model = {"http": 1000.0, "http-chained": 900.0, "ws-nocache": 700.0, "ws": 600.0}
    rollouts = [_rollout(f"r{i}", m, 5000 + v, v + i) for i in range(5) for m, v in model.items()]
    terms = speedup_split(rollouts)
    assert [t.name for t in terms] == ["input size", "transport", "server-side cache"]
    assert [t.saved_ms for t in terms] == pytest.approx([100.0, 200.0, 100.0])
    assert sum(t.share or 0 for t in terms) == pytest.approx(1.0)
    # without the ablation run the last two merge
    partial = speedup_split([r for r in rollouts if r["mode"] != "ws-nocache"])
    assert [t.name for t in partial] == ["input size", "transport + server-side cache"]
    assert sum(t.saved_ms or 0 for t in partial) == pytest.approx(400.0)


def test_ablation_rows_measure_each_flag_against_ws() -> None:
    rollouts = []
    for i in range(4):
        rollouts += [
            _rollout(f"r{i}", "http", 2000, 1000),
            _rollout(f"r{i}", "ws", 1600, 600),
            _rollout(f"r{i}", "ws-no-render-cache", 1700, 700),
        ]
    samples = [_sample("ws", 100.0), _sample("ws-no-render-cache", 130.0)]
    (row,) = ablation_rows(rollouts, samples, {"ws-no-render-cache": "render_cache"})
    assert row.slowdown_ms == pytest.approx(100.0)
    assert row.share == pytest.approx(0.25)
    assert row.ttft_delta_ms == pytest.approx(30.0)


def test_paired_turns_match_rollout_and_turn_index() -> None:
    from harness.results.compare import paired_turns

    samples = [
        {"mode": "ws", "rollout_id": "a", "turn_index": 0, "turn_e2e_ms": 10.0, "ok": True},
        {"mode": "ws", "rollout_id": "a", "turn_index": 1, "turn_e2e_ms": 20.0, "ok": True},
        {"mode": "x", "rollout_id": "a", "turn_index": 1, "turn_e2e_ms": 25.0, "ok": True},
        {"mode": "x", "rollout_id": "a", "turn_index": 0, "turn_e2e_ms": 99.0, "ok": False},
    ]
    assert paired_turns(samples, "x", "ws") == [(25.0, 20.0)]


def test_tool_time_sensitivity_is_derived_from_model_time_and_recorded_tools() -> None:
    from harness.results.compare import tool_time_sensitivity

    rollouts = [
        {"rollout_id": "r", "mode": "http", "ok": True, "model_ms": 200.0, "tool_wait_ms": 800.0},
        {"rollout_id": "r", "mode": "ws", "ok": True, "model_ms": 100.0, "tool_wait_ms": 800.0},
    ]
    rows = {
        r["tool_time_fraction"]: r["speedup_median"]
        for r in tool_time_sensitivity(rollouts, "http", "ws")
    }
    assert rows[0.0] == 2.0  # instant tools: the model-side ratio
    assert rows[1.0] == pytest.approx(1000.0 / 900.0, abs=1e-4)
    assert rows[0.5] == pytest.approx((200 + 400) / (100 + 400), abs=1e-4)


def test_no_shares_of_a_total_too_small_to_divide() -> None:
    """http -> ws saves 0.5 ms of 1,000: a 20 ms term would read as 4,000 %; no share is given."""
    model = {"http": 1000.0, "http-chained": 980.0, "ws": 999.5}
    rollouts = [_rollout(f"r{i}", m, 5000 + v, v) for i in range(5) for m, v in model.items()]
    terms = speedup_split(rollouts)
    assert [t.saved_ms for t in terms] == pytest.approx([20.0, -19.5])
    assert all(t.share is None for t in terms)
    # a saving of 2 % of http's model-side time is divided again
    model["ws"] = 980.0
    rollouts = [_rollout(f"r{i}", m, 5000 + v, v) for i in range(5) for m, v in model.items()]
    assert sum(t.share or 0 for t in speedup_split(rollouts)) == pytest.approx(1.0)
