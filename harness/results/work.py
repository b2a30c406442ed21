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
- **One diverging rollout.** A median hides a third of the rollouts differing. `judge_pairs`
  judges every rollout pair (the n-th replay of a rollout in the baseline mode and in the
  compared one, both ok) on its own: the pair did equal work when both ran the same number of
  turns and the compared mode's mean input per turn is within `WORK_TOLERANCE` of the
  baseline's; each pair names its worst turn. `work_check` is the stored verdict (how many
  pairs were equal, each unequal one named) and `equal_work_records` leaves the unequal pairs
  out of the records a speedup is computed from.

Reads the plain `samples[]` records of a results file, so a saved run is judged like a live one.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

#: a mode's median per-turn input under this fraction of the baseline's: not the same work
UNEQUAL_WORK_RATIO: Final = 0.8
UNEQUAL_WORK = "unequal work"
#: a rollout pair whose mean input per turn differs by more than this fraction: not equal work
#: (the same conversation differs by a few tokens between modes: 13,027 +- 3 per turn)
WORK_TOLERANCE: Final = 0.05


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


@dataclass(frozen=True, slots=True)
class PairWork:
    """One rollout pair's work: its ok turns and input per turn in either mode, the worst turn."""

    rollout_id: str
    occurrence: int  # the n-th replay of the rollout in each mode (repeats)
    baseline_turns: int
    mode_turns: int
    baseline_input_per_turn: float
    mode_input_per_turn: float
    worst_turn: tuple[int, int, int] | None  # (turn index, baseline input, mode input)
    tolerance: float = WORK_TOLERANCE

    @property
    def ratio(self) -> float:
        """The compared mode's input per turn over the baseline's (1.0 when neither reports)."""
        if self.baseline_input_per_turn <= 0:
            return 1.0 if self.mode_input_per_turn <= 0 else math.inf
        return self.mode_input_per_turn / self.baseline_input_per_turn

    @property
    def equal(self) -> bool:
        return self.baseline_turns == self.mode_turns and abs(self.ratio - 1) <= self.tolerance

    def to_dict(self) -> dict[str, Any]:
        worst = self.worst_turn
        return {
            "rollout_id": self.rollout_id,
            "occurrence": self.occurrence,
            "baseline_turns": self.baseline_turns,
            "mode_turns": self.mode_turns,
            "baseline_input_per_turn": round(self.baseline_input_per_turn, 1),
            "mode_input_per_turn": round(self.mode_input_per_turn, 1),
            "ratio": round(self.ratio, 4) if math.isfinite(self.ratio) else None,
            "worst_turn": (
                None
                if worst is None
                else {"turn_index": worst[0], "baseline": worst[1], "mode": worst[2]}
            ),
        }

    def describe(self, baseline: str, mode: str) -> str:
        text = f"{self.rollout_id}"
        if self.occurrence:
            text += f" (repeat {self.occurrence + 1})"
        if self.baseline_turns != self.mode_turns:
            text += f": {self.mode_turns} turns in {mode} vs {self.baseline_turns} in {baseline}"
        else:
            text += (
                f": {self.mode_input_per_turn:,.0f} vs {self.baseline_input_per_turn:,.0f} input "
                f"tokens/turn ({mode} vs {baseline}, {_pct(self.ratio)})"
            )
        if self.worst_turn is not None and self.worst_turn[1] != self.worst_turn[2]:
            index, base, cur = self.worst_turn
            text += f"; worst turn {index}: {cur:,} vs {base:,}"
        return text


def _pct(ratio: float) -> str:
    return f"{ratio - 1:+.0%}" if math.isfinite(ratio) else "baseline reported 0"


def _occurrences(
    records: Iterable[Mapping[str, Any]], key: Any
) -> list[tuple[tuple[Any, ...], int, Mapping[str, Any]]]:
    """(key, occurrence, record): the n-th record with the same key is occurrence n."""
    counts: dict[tuple[Any, ...], int] = defaultdict(int)
    out = []
    for record in records:
        k = key(record)
        out.append((k, counts[k], record))
        counts[k] += 1
    return out


def _rollout_key(r: Mapping[str, Any]) -> tuple[str, str]:
    return str(r.get("mode")), str(r.get("rollout_id"))


def _sample_key(s: Mapping[str, Any]) -> tuple[str, str, int]:
    return str(s.get("mode")), str(s.get("rollout_id")), int(s.get("turn_index") or 0)


def judge_pairs(
    rollouts: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    baseline: str,
    mode: str,
    *,
    tolerance: float = WORK_TOLERANCE,
) -> list[PairWork]:
    """Every rollout pair ok in both modes, judged on its own (module docstring)."""
    ok: dict[tuple[str, str, int], bool] = {
        (*k, n): bool(r.get("ok")) for k, n, r in _occurrences(rollouts, _rollout_key)
    }
    turns: dict[tuple[str, str, int], dict[int, int]] = defaultdict(dict)
    for (m, rid, index), n, s in _occurrences(samples, _sample_key):
        if s.get("ok"):
            turns[(m, rid, n)][index] = turn_tokens(s)[0]
    out = []
    for (m, rid, n), is_ok in ok.items():
        if m != mode or not is_ok or not ok.get((baseline, rid, n)):
            continue
        base, cur = turns.get((baseline, rid, n), {}), turns.get((mode, rid, n), {})
        both = sorted(base.keys() & cur.keys())
        base_total = sum(base[i] for i in both)
        cur_total = sum(cur[i] for i in both)
        worst = max(
            ((i, base[i], cur[i]) for i in both),
            key=lambda t: abs(t[2] - t[1]) / max(t[1], 1),
            default=None,
        )
        out.append(
            PairWork(
                rid,
                n,
                len(base),
                len(cur),
                base_total / len(both) if both else 0.0,
                cur_total / len(both) if both else 0.0,
                worst,
                tolerance,
            )
        )
    return out


def work_check(
    rollouts: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    baseline: str,
    mode: str,
    *,
    tolerance: float = WORK_TOLERANCE,
) -> dict[str, Any]:
    """The stored verdict of a comparison's pairs: how many did equal work, each other named."""
    pairs = judge_pairs(rollouts, samples, baseline, mode, tolerance=tolerance)
    unequal = [p for p in pairs if not p.equal]
    check: dict[str, Any] = {
        "tolerance": tolerance,
        "pairs": len(pairs),
        "equal_pairs": len(pairs) - len(unequal),
        "unequal": [p.to_dict() for p in unequal],
        "message": None,
    }
    if unequal:
        check["message"] = (
            f"{len(unequal)} of {len(pairs)} {mode} vs {baseline} pairs did not do equal work "
            f"(input per turn beyond +-{tolerance:.0%}, or fewer turns), left out of the "
            "speedup: " + "; ".join(p.describe(baseline, mode) for p in unequal)
        )
    return check


def equal_pairs_note(check: Mapping[str, Any] | None) -> str:
    """`17 of 18 pairs equal work`, the count printed beside a speedup ('' without a check)."""
    if not check:
        return ""
    return f"{check['equal_pairs']} of {check['pairs']} pairs equal work"


def equal_work_records(
    rollouts: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    baseline: str,
    mode: str,
    unequal: Iterable[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The rollout records and samples without the unequal pairs (both modes' replays of each),
    so the speedup and the TTFT change are computed on the pairs that did equal work."""
    dropped = {(str(u["rollout_id"]), int(u.get("occurrence") or 0)) for u in unequal}
    if not dropped:
        return list(rollouts), list(samples)
    keep_rollouts = [
        r
        for (m, rid), n, r in _occurrences(rollouts, _rollout_key)
        if m not in (baseline, mode) or (rid, n) not in dropped
    ]
    keep_samples = [
        s
        for (m, rid, _), n, s in _occurrences(samples, _sample_key)
        if m not in (baseline, mode) or (rid, n) not in dropped
    ]
    return keep_rollouts, keep_samples
