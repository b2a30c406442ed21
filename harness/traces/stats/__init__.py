"""How a corpus's rollouts are shaped, and how far that is from a reference corpus:
``distributions`` measures (turns per session, tool calls per turn, input growth, append and
output tokens, tool latency), ``compare`` puts two corpora side by side (KS distance and quantile
ratios per distribution), ``report`` prints both; ``wsmode traces stats`` is the command."""

from __future__ import annotations

from harness.traces.stats.compare import Comparison, compare, ks_distance, quantile_ratios
from harness.traces.stats.distributions import DISTRIBUTIONS, CorpusShape, measure, summary

__all__ = [
    "DISTRIBUTIONS",
    "Comparison",
    "CorpusShape",
    "compare",
    "ks_distance",
    "measure",
    "quantile_ratios",
    "summary",
]
