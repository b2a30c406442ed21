"""Paired comparisons between modes: speedup with a bootstrap CI, TTFT change, the speedup split.

Everything here reads the plain records a results file carries (`bench.rollouts[]`,
`bench.samples[]`), so it works on a live run and on a saved file alike.

**Pairing.** The n-th occurrence of a rollout id in mode A is paired with its n-th occurrence in
mode B (the rule of results/README.md), and only when both replays succeeded.

**Speedup.** Per rollout, e2e(baseline) / e2e(mode); the headline is the median ratio with a
seeded percentile-bootstrap 95 % interval (`harness.results.stats`, exact and deterministic for a
seed). It is given twice: on the end-to-end time (tool time counted at its recorded value) and on
the model-side time (API + inference, tool time left out), because with long tool waits the first
is diluted by time neither mode can change.

**TTFT improvement.** 1 - p50(TTFT of mode) / p50(TTFT of baseline), over all ok turns, in %,
with a cluster-bootstrap interval: rollouts (run in both modes) are drawn with replacement, each
with all its turns in both modes, so the interval respects that a rollout's turns are related.

**Speedup split.** Mean paired differences of model-side time telescope along the ablation
ladder ``http -> http-chained -> ws-nocache -> ws``:

- *input size* = http - http-chained: what sending only the new items (previous_response_id)
  saves over resending the whole history, minus what the server's store hydration costs instead;
- *transport* = http-chained - ws-nocache: HTTP request + SSE vs one WebSocket, the server doing
  the same work (hydrating from the store: ws-nocache runs with `connection_cache` off and
  store=true);
- *server-side cache* = ws-nocache - ws: what the connection-scoped cache saves (no hydration,
  incremental validation/safety/rendering, routing reuse).

**Tool-time sensitivity** (derived, labelled so): the per-rollout speedup if the client's tools
took a fraction f of their recorded time, (model_http + f·tool) / (model_ws + f·tool), from the
measured model-side times and the recorded tool time. It explains why an "agent loop" figure
(f → 0, fast tools) and an end-to-end figure with real tool waits (f = 1) differ so much.

The three add up to http - ws exactly (means are additive; medians are not). Shares are given
only when ws saves time overall, by at least `MIN_SHARE_SAVING` of http's model-side time (a
share of a loss, or of nearly nothing, means nothing: a 20 ms term of a 1.4 ms total read
"1382 %"). Each
optimization's share comes from switching it off in turn (`ws-no-<flag>` variants): its mean
paired slowdown over ws, as a fraction of the total http - ws saving.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.results import stats

DEFAULT_RESAMPLES = 2000
#: no interval from fewer pairs: a bootstrap of 2-4 values only restates them (`[1.026, 1.026]`
#: from two pairs), which reads as certainty it is not
MIN_INTERVAL_PAIRS = 5


def interval_note(pairs: int) -> str | None:
    """Why a comparison of `pairs` pairs carries no interval; None when it can carry one."""
    if pairs >= MIN_INTERVAL_PAIRS:
        return None
    noun = "pair" if pairs == 1 else "pairs"
    return f"{pairs} {noun}: too few for an interval (needs {MIN_INTERVAL_PAIRS})"


#: the http -> ws saving, as a fraction of http's mean model-side time per rollout, under
#: which no share of it is given
MIN_SHARE_SAVING = 0.01

LADDER = ("http", "http-chained", "ws-nocache", "ws")
SPLIT_TERMS = (
    ("input size", "http", "http-chained"),
    ("transport", "http-chained", "ws-nocache"),
    ("server-side cache", "ws-nocache", "ws"),
)


def paired_values(
    rollouts: Iterable[Mapping[str, Any]], baseline: str, mode: str, key: str = "e2e_ms"
) -> list[tuple[str, float, float]]:
    """(rollout_id, baseline value, mode value) for every pair of ok replays."""
    values: dict[tuple[str, str], list[float | None]] = defaultdict(list)
    for r in rollouts:
        value = r.get(key) if r.get("ok") else None
        values[(str(r["mode"]), str(r["rollout_id"]))].append(
            float(value) if isinstance(value, int | float) else None
        )
    out = []
    for (m, rid), cur_values in values.items():
        if m != mode:
            continue
        for base, cur in zip(values.get((baseline, rid), []), cur_values, strict=False):
            if base is not None and cur is not None:
                out.append((rid, base, cur))
    return out


def ratios(pairs: Sequence[tuple[str, float, float]]) -> list[float]:
    return [b / c for _, b, c in pairs if c > 0]


def median_ci(
    values: Sequence[float], *, seed: int = 0, resamples: int = DEFAULT_RESAMPLES
) -> tuple[float | None, list[float] | None]:
    """(median, [low, high] 95 % bootstrap interval); (None, None) for no values, and no
    interval from fewer than MIN_INTERVAL_PAIRS values."""
    if not values:
        return None, None
    if len(values) < MIN_INTERVAL_PAIRS:
        return stats.median(values), None
    point, low, high = stats.bootstrap_percentile_ci(values, 50.0, resamples=resamples, seed=seed)
    return point, [low, high]


def _ok_samples(
    samples: Iterable[Mapping[str, Any]], mode: str, key: str
) -> Iterator[tuple[str, float]]:
    """(rollout id, value of `key`) of each ok sample of `mode` that has one."""
    for s in samples:
        if s.get("mode") == mode and s.get("ok") and isinstance(s.get(key), int | float):
            yield str(s.get("rollout_id")), float(s[key])


def _ok_values(samples: Iterable[Mapping[str, Any]], mode: str, key: str) -> list[float]:
    return [value for _, value in _ok_samples(samples, mode, key)]


def _ok_values_by_rollout(
    samples: Iterable[Mapping[str, Any]], mode: str, key: str
) -> dict[str, list[float]]:
    by_rollout: dict[str, list[float]] = defaultdict(list)
    for rollout_id, value in _ok_samples(samples, mode, key):
        by_rollout[rollout_id].append(value)
    return by_rollout


@dataclass(frozen=True, slots=True)
class Comparison:
    baseline_mode: str
    mode: str
    pairs: int
    speedup_median: float | None
    ci95: list[float] | None
    model_speedup_median: float | None
    model_ci95: list[float] | None
    ttft_p50_baseline_ms: float | None
    ttft_p50_ms: float | None
    ttft_improvement_pct: float | None
    ttft_improvement_ci95_pct: list[float] | None
    per_rollout: list[tuple[str, float, float]]  # (rollout_id, e2e speedup, model speedup)
    # the per-pair equal-work verdict (results.work.work_check); the figures above are of its
    # equal pairs only
    work: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A `bench.comparisons[]` entry (extra keys allowed by the schema)."""
        return {
            "baseline_mode": self.baseline_mode,
            "mode": self.mode,
            "speedup_median": stats.round_or_none(self.speedup_median, 4),
            "ci95": _rl(self.ci95, 4),
            "ttft_improvement_pct": stats.round_or_none(self.ttft_improvement_pct, 2),
            "pairs": self.pairs,
            "model_speedup_median": stats.round_or_none(self.model_speedup_median, 4),
            "model_ci95": _rl(self.model_ci95, 4),
            "ttft_p50_baseline_ms": stats.round_or_none(self.ttft_p50_baseline_ms, 3),
            "ttft_p50_ms": stats.round_or_none(self.ttft_p50_ms, 3),
            "ttft_improvement_ci95_pct": _rl(self.ttft_improvement_ci95_pct, 2),
            "interval_note": interval_note(self.pairs),
            **({"work": self.work} if self.work is not None else {}),
        }


def compare(
    rollouts: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    baseline: str,
    mode: str,
    *,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> Comparison:
    pairs = paired_values(rollouts, baseline, mode, "e2e_ms")
    speedups = ratios(pairs)
    point, ci = median_ci(speedups, seed=seed, resamples=resamples)
    model_pairs = paired_values(rollouts, baseline, mode, "model_ms")
    model = ratios(model_pairs)
    m_point, m_ci = median_ci(model, seed=seed, resamples=resamples)
    base_ttft = _ok_values(samples, baseline, "ttft_ms")
    cur_ttft = _ok_values(samples, mode, "ttft_ms")
    base_p50 = stats.median(base_ttft) if base_ttft else None
    cur_p50 = stats.median(cur_ttft) if cur_ttft else None
    improvement: float | None = None
    improvement_ci: list[float] | None = None
    base_by_rollout = _ok_values_by_rollout(samples, baseline, "ttft_ms")
    cur_by_rollout = _ok_values_by_rollout(samples, mode, "ttft_ms")
    both = sorted(base_by_rollout.keys() & cur_by_rollout.keys())
    if base_p50 and cur_p50 is not None and len(both) < MIN_INTERVAL_PAIRS:
        improvement = 100.0 * (1.0 - cur_p50 / base_p50)  # a point, no interval
    elif both and base_p50:
        change, low, high = stats.cluster_bootstrap_relative_change(
            [base_by_rollout[r] for r in both],
            [cur_by_rollout[r] for r in both],
            50.0,
            resamples=resamples,
            seed=seed,
        )
        improvement = -100.0 * change
        improvement_ci = [-100.0 * high, -100.0 * low]
    return Comparison(
        baseline,
        mode,
        len(pairs),
        point,
        ci,
        m_point,
        m_ci,
        base_p50,
        cur_p50,
        improvement,
        improvement_ci,
        [
            (rid, b / c, mb / mc)
            for (rid, b, c), (_, mb, mc) in zip(pairs, model_pairs, strict=False)
            if c > 0 and mc > 0
        ],
    )


TOOL_TIME_FRACTIONS = (0.0, 0.1, 0.25, 0.5, 1.0)


def tool_time_sensitivity(
    rollouts: Sequence[Mapping[str, Any]],
    baseline: str,
    mode: str,
    fractions: Sequence[float] = TOOL_TIME_FRACTIONS,
) -> list[dict[str, Any]]:
    """Median paired speedup if tools took `f` of their recorded time (derived, module doc)."""
    tool: dict[str, list[float]] = defaultdict(list)
    for r in rollouts:
        if r.get("mode") == mode and r.get("ok") and isinstance(r.get("tool_wait_ms"), int | float):
            tool[str(r["rollout_id"])].append(float(r["tool_wait_ms"]))
    pairs = paired_values(rollouts, baseline, mode, "model_ms")
    seen: dict[str, int] = defaultdict(int)
    triples = []
    for rid, base, cur in pairs:
        waits = tool.get(rid, [])
        if seen[rid] < len(waits):
            triples.append((base, cur, waits[seen[rid]]))
        seen[rid] += 1
    rows = []
    for fraction in fractions:
        speedups = [
            (b + fraction * t) / (c + fraction * t) for b, c, t in triples if c + fraction * t > 0
        ]
        rows.append(
            {
                "tool_time_fraction": fraction,
                "speedup_median": stats.round_or_none(statistics.median(speedups), 4)
                if speedups
                else None,
                "pairs": len(speedups),
            }
        )
    return rows


@dataclass(frozen=True, slots=True)
class Term:
    name: str
    from_mode: str
    to_mode: str
    saved_ms: float | None  # mean paired model-side time saved per rollout
    share: float | None  # of the total http - ws saving
    pairs: int


def _mean_saving(rollouts: Sequence[Mapping[str, Any]], a: str, b: str) -> tuple[float | None, int]:
    pairs = paired_values(rollouts, a, b, "model_ms")
    if not pairs:
        return None, 0
    return statistics.fmean(x - y for _, x, y in pairs), len(pairs)


def share_base(rollouts: Sequence[Mapping[str, Any]], reference: str = "ws") -> float | None:
    """The http -> `reference` saving that shares are taken of, or None when it is a loss or
    too small a part of http's model-side time to divide (`MIN_SHARE_SAVING`)."""
    pairs = paired_values(rollouts, "http", reference, "model_ms")
    if not pairs:
        return None
    total = statistics.fmean(x - y for _, x, y in pairs)
    http_mean = statistics.fmean(x for _, x, _ in pairs)
    return total if total > 0 and total >= MIN_SHARE_SAVING * http_mean else None


def speedup_split(rollouts: Sequence[Mapping[str, Any]]) -> list[Term]:
    """The telescoping split of http - ws over the ladder modes present (module docstring).

    Without ws-nocache (no ablation run) the last two terms merge into one
    "transport + server-side cache" term from http-chained to ws; without http-chained the
    first merges in too. Terms always add up to http - ws.
    """
    present = {str(r.get("mode")) for r in rollouts}
    if "http" not in present or "ws" not in present:
        return []
    total = share_base(rollouts)
    names = {(a, b): name for name, a, b in SPLIT_TERMS}
    ladder = [m for m in LADDER if m in present]
    out = []
    for a, b in itertools.pairwise(ladder):
        i, j = LADDER.index(a), LADDER.index(b)
        name = " + ".join(names[(LADDER[k], LADDER[k + 1])] for k in range(i, j))
        saved, n = _mean_saving(rollouts, a, b)
        share = saved / total if saved is not None and total else None
        out.append(Term(name, a, b, saved, share, n))
    return out


@dataclass(frozen=True, slots=True)
class AblationRow:
    variant: str
    flag: str
    slowdown_ms: float | None  # mean paired model-side time added per rollout when off
    share: float | None  # of the total http - ws saving
    ttft_p50_ms: float | None
    ttft_delta_ms: float | None  # p50 TTFT change vs ws
    pairs: int
    turn_delta_ms: float | None = None  # median paired per-turn e2e difference vs ws (robust)


def ablation_rows(
    rollouts: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    flags: Mapping[str, str],
    *,
    reference: str = "ws",
) -> list[AblationRow]:
    """One row per `variant -> flag switched off`, measured against `reference`."""
    total = share_base(rollouts, reference)
    ref_ttft = _ok_values(samples, reference, "ttft_ms")
    ref_p50 = stats.median(ref_ttft) if ref_ttft else None
    rows = []
    for variant, flag in flags.items():
        slow, n = _mean_saving(rollouts, variant, reference)
        turn_deltas = [a - b for a, b in paired_turns(samples, variant, reference)]
        ttft = _ok_values(samples, variant, "ttft_ms")
        p50 = stats.median(ttft) if ttft else None
        rows.append(
            AblationRow(
                variant,
                flag,
                slow,
                slow / total if slow is not None and total else None,
                p50,
                p50 - ref_p50 if p50 is not None and ref_p50 is not None else None,
                n,
                statistics.median(turn_deltas) if turn_deltas else None,
            )
        )
    return rows


def paired_turns(
    samples: Iterable[Mapping[str, Any]], mode: str, baseline: str, key: str = "turn_e2e_ms"
) -> list[tuple[float, float]]:
    """(mode value, baseline value) of the same turn of the same replay (n-th occurrence)."""
    values: dict[tuple[str, str, int], list[float | None]] = defaultdict(list)
    for s in samples:
        value = s.get(key) if s.get("ok") else None
        ident = (str(s.get("mode")), str(s.get("rollout_id")), int(s.get("turn_index", -1)))
        values[ident].append(float(value) if isinstance(value, int | float) else None)
    out = []
    for (m, rid, turn), cur in values.items():
        if m != mode:
            continue
        for a, b in zip(cur, values.get((baseline, rid, turn), []), strict=False):
            if a is not None and b is not None:
                out.append((a, b))
    return out


def stage_means(samples: Iterable[Mapping[str, Any]], mode: str) -> dict[str, float]:
    """Mean server stage time per ok turn (ms, real + charged), from the reference server."""
    totals: dict[str, float] = defaultdict(float)
    turns = 0
    for s in samples:
        if s.get("mode") != mode or not s.get("ok"):
            continue
        stages = s.get("stages_ms")
        if not isinstance(stages, Mapping) or not stages:
            continue
        turns += 1
        for name, value in stages.items():
            if isinstance(value, int | float):
                totals[name] += float(value)
    return {name: total / turns for name, total in sorted(totals.items())} if turns else {}


def _rl(values: list[float] | None, digits: int) -> list[float] | None:
    return None if values is None else [round(v, digits) for v in values]
