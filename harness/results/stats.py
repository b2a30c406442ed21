"""Small, dependency-free statistics for comparing latency samples.

Percentiles use the nearest-rank definition (the value at rank ceil(p/100 * n)), the same
definition HdrHistogram uses, so a percentile never invents a value that was not measured.

The bootstrap of a percentile is exact and O(1) per resample: drawing n values with replacement
from the sorted sample x(1) <= ... <= x(n) is drawing n uniforms u_i and taking x(floor(u_i*n)+1);
that map is monotone, so the k-th smallest of the resample is x(floor(U(k)*n)+1), where U(k), the
k-th order statistic of n uniforms, follows Beta(k, n-k+1). So each resample needs one
`betavariate` draw instead of n draws and a sort, and 2,000 resamples cost microseconds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0


def rank_for(p: float, n: int) -> int:
    """Nearest rank (1-based) of percentile p (0..100) in a sample of n."""
    if n < 1:
        raise ValueError("empty sample")
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile must be within 0..100, got {p}")
    return min(n, max(1, math.ceil(p / 100.0 * n - 1e-9)))


def percentile(values: Sequence[float], p: float, *, is_sorted: bool = False) -> float:
    """Nearest-rank percentile of `values`."""
    xs = values if is_sorted else sorted(values)
    return float(xs[rank_for(p, len(xs)) - 1])


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def round_or_none(value: float | None, digits: int = 3) -> float | None:
    """`value` rounded for a results file; None (not measured) stays None."""
    return None if value is None else round(value, digits)


def _bootstrap_percentiles(
    xs: Sequence[float], p: float, resamples: int, rng: random.Random
) -> list[float]:
    n = len(xs)
    k = rank_for(p, n)
    out = []
    for _ in range(resamples):
        u = rng.betavariate(k, n - k + 1)
        out.append(float(xs[min(n - 1, int(u * n))]))
    return out


def _quantile_interval(draws: list[float], confidence: float) -> tuple[float, float]:
    draws = sorted(draws)
    alpha = (1.0 - confidence) / 2.0
    lo = draws[min(len(draws) - 1, max(0, math.floor(alpha * len(draws))))]
    hi = draws[min(len(draws) - 1, max(0, math.ceil((1.0 - alpha) * len(draws)) - 1))]
    return lo, hi


def bootstrap_percentile_ci(
    values: Sequence[float],
    p: float,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """(point, low, high): percentile p of `values` with a percentile-bootstrap interval."""
    xs = sorted(values)
    rng = random.Random(seed)
    draws = _bootstrap_percentiles(xs, p, resamples, rng)
    lo, hi = _quantile_interval(draws, confidence)
    return percentile(xs, p, is_sorted=True), lo, hi


def bootstrap_relative_change(
    baseline: Sequence[float],
    current: Sequence[float],
    p: float,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """(point, low, high) of percentile_p(current) / percentile_p(baseline) - 1.

    The two samples are resampled independently (they come from separate runs).
    Raises ValueError when a baseline percentile is not positive (a ratio means nothing then).
    """
    bs, cs = sorted(baseline), sorted(current)
    base_point = percentile(bs, p, is_sorted=True)
    if base_point <= 0:
        raise ValueError("baseline percentile is not positive")
    point = percentile(cs, p, is_sorted=True) / base_point - 1.0
    rng = random.Random(seed)
    b_draws = _bootstrap_percentiles(bs, p, resamples, rng)
    c_draws = _bootstrap_percentiles(cs, p, resamples, rng)
    ratios = []
    for b, c in zip(b_draws, c_draws, strict=True):
        if b <= 0:
            raise ValueError("baseline sample has non-positive values at this percentile")
        ratios.append(c / b - 1.0)
    lo, hi = _quantile_interval(ratios, confidence)
    return point, lo, hi


def cluster_bootstrap_relative_change(
    baseline: Sequence[Sequence[float]],
    current: Sequence[Sequence[float]],
    p: float,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """(point, low, high) of percentile_p(current) / percentile_p(baseline) - 1, paired clusters.

    `baseline[i]` and `current[i]` hold the values of one cluster in each condition (a rollout's
    turns in two modes). A resample draws clusters with replacement and takes both sides of each:
    it keeps the pairing and the correlation among a cluster's values, which resampling values
    one by one would ignore (and so draw too narrow an interval).
    Raises ValueError when a baseline percentile is not positive.
    """
    if len(baseline) != len(current) or not baseline:
        raise ValueError("need the same, non-zero number of clusters on both sides")
    flat_base = [v for cluster in baseline for v in cluster]
    flat_cur = [v for cluster in current for v in cluster]
    if not flat_base or not flat_cur:
        raise ValueError("empty sample")
    base_point = percentile(flat_base, p)
    if base_point <= 0:
        raise ValueError("baseline percentile is not positive")
    point = percentile(flat_cur, p) / base_point - 1.0
    rng = random.Random(seed)
    n = len(baseline)
    ratios = []
    for _ in range(resamples):
        drawn = [rng.randrange(n) for _ in range(n)]
        b = [v for i in drawn for v in baseline[i]]
        c = [v for i in drawn for v in current[i]]
        if not b or not c:
            continue
        b_p = percentile(b, p)
        if b_p <= 0:
            raise ValueError("baseline sample has non-positive values at this percentile")
        ratios.append(percentile(c, p) / b_p - 1.0)
    lo, hi = _quantile_interval(ratios, confidence)
    return point, lo, hi


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """(U of `a`, two-sided p-value) by the normal approximation with tie correction."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("empty sample")
    pooled = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    ranks_a = 0.0
    tie_term = 0.0
    i = 0
    n = n1 + n2
    while i < n:
        j = i
        while j + 1 < n and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        avg_rank = (i + j) / 2.0 + 1.0
        t = j - i + 1
        tie_term += t**3 - t
        ranks_a += avg_rank * sum(1 for m in range(i, j + 1) if pooled[m][1] == 0)
        i = j + 1
    u = ranks_a - n1 * (n1 + 1) / 2.0
    mean = n1 * n2 / 2.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return u, 1.0
    z = (abs(u - mean) - 0.5) / math.sqrt(var)  # continuity correction
    return u, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0)))
