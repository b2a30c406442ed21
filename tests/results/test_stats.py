"""The cluster bootstrap of a relative percentile change (paired rollouts, turns inside)."""

from __future__ import annotations

import random

import pytest

from harness.results import stats


def clusters(seed: int, n: int, turns: int, scale: float) -> list[list[float]]:
    """`n` rollouts whose turns share one rollout-level level (strongly related turns)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        level = rng.lognormvariate(0.0, 0.8)
        out.append([scale * level * rng.uniform(0.95, 1.05) for _ in range(turns)])
    return out


def test_point_is_the_change_of_the_pooled_percentiles() -> None:
    base = [[10.0, 20.0], [30.0], [40.0, 50.0]]
    cur = [[5.0, 10.0], [15.0], [20.0, 25.0]]
    point, lo, hi = stats.cluster_bootstrap_relative_change(base, cur, 50.0, resamples=500)
    assert point == pytest.approx(-0.5)  # every value halved
    assert lo == pytest.approx(-0.5) and hi == pytest.approx(-0.5)  # in every resample too


def test_same_seed_same_interval_and_pairs_must_match() -> None:
    base, cur = clusters(1, 8, 20, 100.0), clusters(2, 8, 20, 60.0)
    first = stats.cluster_bootstrap_relative_change(base, cur, 50.0, seed=3)
    assert stats.cluster_bootstrap_relative_change(base, cur, 50.0, seed=3) == first
    with pytest.raises(ValueError, match="same"):
        stats.cluster_bootstrap_relative_change(base, cur[:-1], 50.0)


def test_related_turns_give_a_wider_interval_than_resampling_turns_one_by_one() -> None:
    base, cur = clusters(1, 8, 30, 100.0), clusters(2, 8, 30, 60.0)
    _, c_lo, c_hi = stats.cluster_bootstrap_relative_change(base, cur, 50.0, seed=0)
    flat_base = [v for c in base for v in c]
    flat_cur = [v for c in cur for v in c]
    _, i_lo, i_hi = stats.bootstrap_relative_change(flat_base, flat_cur, 50.0, seed=0)
    assert c_hi - c_lo > 1.5 * (i_hi - i_lo)


def test_round_or_none_rounds_a_figure_and_keeps_none() -> None:
    assert stats.round_or_none(1.23456) == 1.235  # three digits unless told
    assert stats.round_or_none(1.23456, 1) == 1.2
    assert stats.round_or_none(None) is None  # not measured stays not measured
