"""The engine's own prefix-cache counters, read from its Prometheus `/metrics` around a variant.

`wsmode bench --engine-metrics URL` names the metrics page of the inference engine behind the
target (vLLM's `/metrics`: `vllm:prefix_cache_queries_total` and `vllm:prefix_cache_hits_total`,
both in tokens). The bench then replays its variants one after another and reads the counters
before and after each, so a variant's engine hit rate is its own: what the engine found in its
prefix cache, beside the cached tokens the target reported in `usage` (which a gateway may
drop or invent). The reference server counts the same (`wsmode_prefix_cache_queries_total`,
`wsmode_prefix_cache_hits_total`). Counters are summed over their label sets (one per model).
One GET of a few kB per variant, off the measured turns (`server_metrics.fetch_text`, the
fetch of `--server-metrics`, which also scrapes this URL as one of its sources: its series over
the whole run sit in the results beside these per-variant deltas).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import Any

from harness.errors import TargetError
from harness.load.prometheus_text import parse
from harness.load.server_metrics import fetch_text

SCRAPE_TIMEOUT_S = 10.0
# how a counter's name ends (without `_total`; any namespace before it: `vllm:`, `wsmode_`)
# -> our key
COUNTERS = {
    "prefix_cache_queries": "queried_tokens",
    "prefix_cache_hits": "hit_tokens",
    "prompt_tokens": "prompt_tokens",
    "generation_tokens": "generation_tokens",
}


class EngineMetricsError(TargetError, RuntimeError):
    """The engine's metrics page could not be read."""


def parse_counters(text: str) -> dict[str, float]:
    """The counters of :data:`COUNTERS` in a Prometheus text page, summed over label sets."""
    totals: dict[str, float] = {}
    for sample in parse(text, strict=False).samples:  # a page of another shape: its counters
        name = sample.name.removesuffix("_total")
        key = next((k for suffix, k in COUNTERS.items() if name.endswith(suffix)), None)
        if key is not None and math.isfinite(sample.value):
            totals[key] = totals.get(key, 0.0) + sample.value
    return totals


def counter_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, Any]:
    """What happened between two readings: tokens queried and hit, and the hit rate (None when
    the engine was asked nothing or does not count prefix-cache hits)."""
    delta = {key: after.get(key, 0.0) - before.get(key, 0.0) for key in COUNTERS.values()}
    queried, hits = delta["queried_tokens"], delta["hit_tokens"]
    return {
        **{key: round(value) for key, value in delta.items()},
        "hit_rate": round(hits / queried, 4) if queried > 0 else None,
        "counted": "queried_tokens" in after and "hit_tokens" in after,
    }


async def read_counters(url: str) -> dict[str, float]:
    """One reading of the engine's counters; raises EngineMetricsError when unreadable."""
    if not url.startswith(("http://", "https://")):
        raise EngineMetricsError(f"--engine-metrics: expected an http(s) URL, got {url!r}")
    try:
        text = await asyncio.to_thread(fetch_text, url)
    except (OSError, ValueError) as exc:
        raise EngineMetricsError(f"--engine-metrics: cannot read {url}: {exc}") from None
    return parse_counters(text)


def describe_engine_cache(name: str, entry: Mapping[str, Any]) -> str:
    """A variant's engine line for the console."""
    rate = entry.get("hit_rate")
    if not entry.get("counted"):
        return f"{name}: the engine's metrics have no prefix-cache counters"
    if rate is None:
        return f"{name}: the engine was asked no prompt tokens"
    return (
        f"{name}: {rate:.0%} of {entry['queried_tokens']:,} prompt tokens found in the engine's "
        f"prefix cache ({entry['hit_tokens']:,} hit)"
    )
