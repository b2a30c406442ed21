"""How far one corpus's distributions are from a reference corpus's, per distribution:

* the two-sample Kolmogorov-Smirnov distance, ``sup |F_corpus(x) - F_reference(x)|``: 0 for
  the same distribution, 1 for samples that do not overlap at all; it reads the whole shape and
  is scale-free, but says nothing of direction;
* quantile ratios, corpus / reference at p10, p50, p90, p99 (nearest rank): the direction and
  size of a difference where it is (None where the reference quantile is 0).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.results.stats import percentile
from harness.traces.format import JSONObject
from harness.traces.stats.distributions import DISTRIBUTIONS, QUANTILES, CorpusShape


def ks_distance(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sample KS statistic of ``a`` and ``b`` (None when either is empty)."""
    if not a or not b:
        return None
    xs, ys = sorted(a), sorted(b)
    distance = 0.0
    for x in sorted(set(xs) | set(ys)):  # the empirical CDFs only step at sample values
        fa = bisect.bisect_right(xs, x) / len(xs)
        fb = bisect.bisect_right(ys, x) / len(ys)
        distance = max(distance, abs(fa - fb))
    return distance


def quantile_ratios(a: Sequence[float], b: Sequence[float]) -> dict[str, float | None]:
    """``a``'s quantile over ``b``'s, per quantile (None where ``b``'s is 0 or a sample is
    empty)."""
    ratios: dict[str, float | None] = {}
    xs, ys = sorted(a), sorted(b)
    for q in QUANTILES:
        if not xs or not ys:
            ratios[f"p{q}"] = None
            continue
        den = percentile(ys, q, is_sorted=True)
        num = percentile(xs, q, is_sorted=True)
        ratios[f"p{q}"] = round(num / den, 3) if den > 0 else None
    return ratios


@dataclass(frozen=True)
class Comparison:
    """Per distribution: (KS distance, quantile ratios corpus / reference)."""

    distances: Mapping[str, float | None]
    ratios: Mapping[str, Mapping[str, float | None]]

    def to_json(self) -> JSONObject:
        return {
            name: {
                "ks": None if self.distances[name] is None else round(self.distances[name] or 0, 3),
                "quantile_ratios": dict(self.ratios[name]),
            }
            for name in DISTRIBUTIONS
        }

    @property
    def worst(self) -> tuple[str, float] | None:
        """The distribution farthest from the reference by KS distance."""
        known = [(d, name) for name, d in self.distances.items() if d is not None]
        return None if not known else (max(known)[1], max(known)[0])


def compare(corpus: CorpusShape, reference: CorpusShape) -> Comparison:
    """``corpus`` against ``reference``, distribution by distribution."""
    return Comparison(
        distances={
            name: ks_distance(corpus.samples[name], reference.samples[name])
            for name in DISTRIBUTIONS
        },
        ratios={
            name: quantile_ratios(corpus.samples[name], reference.samples[name])
            for name in DISTRIBUTIONS
        },
    )
