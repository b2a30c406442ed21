"""How a variant's turns met the output caps they asked for: each turn asks
`max_output_tokens` = its recorded output length x --output-cap-scale (harness.load.core
.rollout_requests.output_cap_tokens); the bench reports the turns whose target produced more (it
ignored the cap) or less than asked (results `bench.output_caps`, and one console line each),
and the turns whose function call the cap cut anyway: each ended its rollout, in every mode
(harness.load.core.rollout_driver; docs/OUTPUT-CAPS.md).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any


def output_cap_summary(samples: Sequence[Mapping[str, Any]], mode: str) -> dict[str, Any] | None:
    """How a variant's ok turns met the `max_output_tokens` they asked for (each turn's recorded
    output length, scaled): how many asked, how many produced more (the target ignored the cap),
    how many stopped short of it, and the median output/cap ratio; None when no turn asked."""
    capped = [
        s
        for s in samples
        if s["mode"] == mode and s.get("ok") and isinstance(s.get("output_cap_tokens"), int)
    ]
    if not capped:
        return None
    over = [s for s in capped if s["output_tokens"] > s["output_cap_tokens"]]
    under = [s for s in capped if s["output_tokens"] < s["output_cap_tokens"]]
    cut = [s for s in capped if s.get("cut_call")]
    ratio = statistics.median(s["output_tokens"] / s["output_cap_tokens"] for s in capped)
    return {
        "turns": len(capped),
        "over_cap": len(over),
        "under_cap": len(under),
        "reached_cap": sum(1 for s in capped if s.get("reached_output_cap")),
        "output_to_cap_median": round(ratio, 4),
        "over_example": _cap_example(over),
        "under_example": _cap_example(under),
        "cut_calls": len(cut),
        "cut_call_example": _cap_example(cut),
    }


def _cap_example(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    if not samples:
        return None
    worst = max(samples, key=lambda s: abs(s["output_tokens"] - s["output_cap_tokens"]))
    return {
        "rollout_id": worst["rollout_id"],
        "turn_index": worst["turn_index"],
        "output_tokens": worst["output_tokens"],
        "cap": worst["output_cap_tokens"],
    }


def describe_output_caps(name: str, summary: Mapping[str, Any]) -> str:
    """A variant's output-cap line for the console."""
    text = (
        f"{name}: {summary['turns']} turns asked max_output_tokens; "
        f"{summary['over_cap']} produced more than asked"
    )
    over = summary.get("over_example")
    if over:
        text += (
            f" (the target ignored the cap; e.g. {over['rollout_id']} turn {over['turn_index']}:"
            f" {over['output_tokens']:,} for {over['cap']:,})"
        )
    text += f", {summary['under_cap']} less"
    under = summary.get("under_example")
    if under:
        text += (
            f" (e.g. {under['rollout_id']} turn {under['turn_index']}: {under['output_tokens']:,}"
            f" for {under['cap']:,})"
        )
    text += f"; output/cap median {summary['output_to_cap_median']:.2f}"
    cut = summary.get("cut_call_example")
    if summary.get("cut_calls") and cut:
        text += (
            f"; {summary['cut_calls']} cut a function call and ended the rollout there (e.g. "
            f"{cut['rollout_id']} turn {cut['turn_index']}, cap {cut['cap']:,}): never answered "
            "nor resent, the same in every mode"
        )
    return text
