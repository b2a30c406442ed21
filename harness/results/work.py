"""Did two modes do the same work? Token accounting per turn, cache shares, the unequal-work flag.

A latency comparison between two modes means something only when both made the target do the
same work. Two ways it silently does not:

- **A warm cache.** A mode that runs after another against a server with a prefix cache finds
  the earlier mode's prompts cached. The load client therefore draws fresh prompts per run and
  per mode (`harness.load.fixed.load_spec`); what the target reports is recorded per turn anyway:
  `input_tokens`, `cached_tokens` (`usage.input_tokens_details.cached_tokens`, None when the
  target does not report it) and `uncached_tokens` = input - cached, the prefill it really did.
  `token_summary` gives a mode's cached share and the per-session cache-hit ratio (a session is
  a rollout or a load conversation: its turns' cached / input tokens).
- **A dropped context.** A target whose WebSocket continuations ignore the conversation answers
  each turn from the new items alone: fewer input tokens, less prefill, a "speedup" that is work
  not done. `unequal_work` pairs a mode's turns with the same turns of the baseline mode (same
  rollout id, turn index and occurrence) and flags the mode when its median per-turn input is
  under `UNEQUAL_WORK_RATIO` of the baseline's; such a comparison is printed, stored and shown on
  the board as "unequal work", and its speedup is never ranked.

Reads the plain `samples[]` records of a results file, so a saved run is judged like a live one.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

#: a mode's median per-turn input under this fraction of the baseline's: not the same work
UNEQUAL_WORK_RATIO: Final = 0.8
UNEQUAL_WORK = "unequal work"


def turn_tokens(sample: Mapping[str, Any]) -> tuple[int, int | None]:
    """(input tokens, cached tokens or None) of one sample; old files carry context_tokens."""
    value = sample.get("input_tokens", sample.get("context_tokens"))
    total = int(value) if isinstance(value, int) else 0
    cached = sample.get("cached_tokens")
    return total, int(cached) if isinstance(cached, int) else None


def token_fields(input_tokens: int, cached_tokens: int | None) -> dict[str, int | None]:
    """The per-turn token keys of a sample: input, cached (None: not reported), uncached."""
    uncached = None if cached_tokens is None else max(0, input_tokens - cached_tokens)
    return {
        "input_tokens": input_tokens,
        "cached_tokens": cached_tokens,
        "uncached_tokens": uncached,
    }


def token_summary(samples: Iterable[Mapping[str, Any]], mode: str) -> dict[str, Any]:
    """A mode's token accounting over its ok turns: totals, means per turn, the cached share and
    the per-session cache-hit ratio (median and mean over sessions). Cached figures are None
    when the target reported no cached tokens."""
    turns = 0
    total_input = total_cached = 0
    reported = 0
    sessions: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in samples:
        if s.get("mode") != mode or not s.get("ok"):
            continue
        tokens, cached = turn_tokens(s)
        turns += 1
        total_input += tokens
        if cached is not None:
            reported += 1
            total_cached += cached
            session = sessions[str(s.get("rollout_id"))]
            session[0] += tokens
            session[1] += cached
    ratios = [cached / tokens for tokens, cached in sessions.values() if tokens > 0]
    known = reported > 0
    return {
        "turns": turns,
        "input_tokens": total_input,
        "cached_tokens": total_cached if known else None,
        "uncached_tokens": total_input - total_cached if known else None,
        "input_tokens_per_turn": round(total_input / turns, 1) if turns else None,
        "uncached_tokens_per_turn": (
            round((total_input - total_cached) / turns, 1) if known and turns else None
        ),
        "cached_share": round(total_cached / total_input, 4) if known and total_input else None,
        "session_cache_hit_median": round(statistics.median(ratios), 4) if ratios else None,
        "session_cache_hit_mean": round(statistics.fmean(ratios), 4) if ratios else None,
        "sessions": len(ratios),
        "turns_reporting_cached": reported,
    }


def paired_turn_tokens(
    samples: Sequence[Mapping[str, Any]], baseline: str, mode: str
) -> list[tuple[str, int, int, int]]:
    """(rollout id, turn index, baseline input, mode input) for every turn ok in both modes,
    the n-th occurrence of a (rollout, turn) in one mode paired with its n-th in the other."""
    seen: dict[tuple[str, str, int], list[int | None]] = defaultdict(list)
    for s in samples:
        m = str(s.get("mode"))
        if m not in (baseline, mode):
            continue
        tokens, _ = turn_tokens(s)
        key = (m, str(s.get("rollout_id")), int(s.get("turn_index") or 0))
        seen[key].append(tokens if s.get("ok") else None)
    out = []
    for (m, rid, index), values in seen.items():
        if m != mode:
            continue
        for base, cur in zip(seen.get((baseline, rid, index), []), values, strict=False):
            if base is not None and cur is not None and base > 0:
                out.append((rid, index, base, cur))
    return out


def unequal_work(
    samples: Sequence[Mapping[str, Any]], baseline: str, mode: str
) -> dict[str, Any] | None:
    """The evidence that `mode` did less work than `baseline`, or None when it did the same
    (or no turn pairs up). The example is the pair with the largest deficit."""
    pairs = paired_turn_tokens(samples, baseline, mode)
    if not pairs:
        return None
    ratio = statistics.median(cur / base for _, _, base, cur in pairs)
    if ratio >= UNEQUAL_WORK_RATIO:
        return None
    rid, index, base, cur = max(pairs, key=lambda p: p[2] - p[3])
    return {
        "baseline_mode": baseline,
        "mode": mode,
        "input_tokens_ratio_median": round(ratio, 4),
        "pairs": len(pairs),
        "example": {"rollout_id": rid, "turn_index": index, "baseline": base, "mode": cur},
        "message": (
            f"{UNEQUAL_WORK}: {mode} turns carry {ratio:.0%} of the input tokens of the same "
            f"{baseline} turns (median of {len(pairs)} pairs; e.g. {rid} turn {index}: {cur:,} "
            f"vs {base:,}): the target did less work, so the speedup is not comparable"
        ),
    }


def describe_tokens(summary: Mapping[str, Any]) -> str:
    """A mode's token line for the console: input and uncached per turn, cached share, the
    per-session cache-hit ratio."""
    per_turn = summary.get("input_tokens_per_turn")
    if per_turn is None:
        return "no ok turn"
    text = f"{per_turn:,.0f} input tokens/turn"
    share = summary.get("cached_share")
    if share is None:
        return text + ", cached tokens not reported by the target"
    text += f", {summary['uncached_tokens_per_turn']:,.0f} uncached; cached share {share:.0%}"
    hit = summary.get("session_cache_hit_median")
    if hit is not None:
        text += f"; session cache-hit ratio median {hit:.0%} ({summary['sessions']} sessions)"
    return text
