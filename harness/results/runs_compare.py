"""Runs side by side (`wsmode results compare A B [C...]`): per mode and per metric, each run's
percentiles with a bootstrap interval on the median, and each later run against the first.

The gate answers "did B regress from A?" with pass/fail; this answers "how do these runs
differ?", for any number of runs, and says when they are not comparable:

- **per metric** (ttft_ms, itl_ms, tpot_ms, turn_e2e_ms from the ok turns, rollout_e2e_ms from
  the ok rollouts): n, p50 with a seeded percentile-bootstrap 95 % interval, p90, p99, and for
  every run after the first the change of p50 (and of p90) against the first run's, with an
  interval from resampling both runs independently (`stats.bootstrap_relative_change`);
- **paired rollouts**: where two bench runs replayed the same rollout ids, the median
  per-rollout e2e ratio first / later run with its interval (`compare.paired_values`,
  `compare.median_ci`), the unit the bench's own comparisons use;
- the turn **error rate** and, where a run carries `--slo`, its **goodput**;
- **equal work**: the workload identities (`workload.workload_differences`: corpus, rollouts,
  shape, model, concurrency, profile, ...) and, per mode, the tokens each run's turns made the
  target process (`work.unequal_work`, both ways: a run that did less work, or more). A run
  that differs is compared anyway and flagged, since the user asked to see it.

Pure: it reads results documents (and their file names) and returns plain data; the text and
HTML renderers are `harness.report.runs_report`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import InputError
from harness.results import compare as cmp
from harness.results import stats
from harness.results.work import unequal_work
from harness.results.workload import latency_payload, workload_differences

TURN_METRICS = ("ttft_ms", "itl_ms", "tpot_ms", "turn_e2e_ms")
ROLLOUT_METRIC = "rollout_e2e_ms"
METRICS = (*TURN_METRICS, ROLLOUT_METRIC)
#: no interval on fewer values (the same rule as the paired comparisons)
MIN_INTERVAL_VALUES = cmp.MIN_INTERVAL_PAIRS


class CompareInputError(InputError, ValueError):
    """The files cannot be compared (the CLI says it in one line, exit 2)."""


@dataclass(frozen=True, slots=True)
class RunInfo:
    name: str  # A, B, C, ...
    label: str
    target: str
    kind: str
    started_at: str
    source: str  # the file it was read from


@dataclass(slots=True)
class Cell:
    """One run's figures of one metric in one mode."""

    n: int
    p50: float | None = None
    p50_ci: tuple[float, float] | None = None
    p90: float | None = None
    p99: float | None = None
    # against the first run, in %: p50 and p90 of this run / the first run's - 1
    p50_change_pct: float | None = None
    p50_change_ci: tuple[float, float] | None = None
    p90_change_pct: float | None = None


@dataclass(slots=True)
class MetricRow:
    metric: str
    cells: list[Cell | None]  # one per run; None: the mode is not in that run


@dataclass(slots=True)
class PairedRatio:
    """First run / later run per-rollout e2e, paired by rollout id (> 1: the later is faster)."""

    run: str
    pairs: int
    median: float | None
    ci95: tuple[float, float] | None


@dataclass(slots=True)
class ModeComparison:
    mode: str
    metrics: list[MetricRow] = field(default_factory=list)
    error_rate_pct: list[float | None] = field(default_factory=list)
    goodput: list[float | None] = field(default_factory=list)  # turn goodput, where --slo
    paired: list[PairedRatio] = field(default_factory=list)
    unequal_work: list[str] = field(default_factory=list)


@dataclass(slots=True)
class RunsComparison:
    runs: list[RunInfo]
    modes: list[ModeComparison]
    workload_notes: list[str]  # how the runs' workloads differ from the first's

    @property
    def equal_work(self) -> bool:
        return not self.workload_notes and not any(m.unequal_work for m in self.modes)


def run_name(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else f"R{index + 1}"


def _turn_values(payload: Mapping[str, Any], mode: str, metric: str) -> list[float]:
    return [
        float(s[metric])
        for s in payload.get("samples", [])
        if s.get("mode") == mode and s.get("ok") and isinstance(s.get(metric), int | float)
    ]


def _rollout_values(payload: Mapping[str, Any], mode: str) -> list[float]:
    return [
        float(r["e2e_ms"])
        for r in payload.get("rollouts", [])
        if r.get("mode") == mode and r.get("ok") and isinstance(r.get("e2e_ms"), int | float)
    ]


def _values(payload: Mapping[str, Any], mode: str, metric: str) -> list[float]:
    if metric == ROLLOUT_METRIC:
        return _rollout_values(payload, mode)
    return _turn_values(payload, mode, metric)


def _cell(values: Sequence[float], first: Sequence[float] | None, seed: int) -> Cell:
    cell = Cell(n=len(values))
    if not values:
        return cell
    cell.p50 = stats.percentile(sorted(values), 50)
    cell.p90 = stats.percentile(sorted(values), 90)
    cell.p99 = stats.percentile(sorted(values), 99)
    if len(values) >= MIN_INTERVAL_VALUES:
        _, low, high = stats.bootstrap_percentile_ci(values, 50, seed=seed)
        cell.p50_ci = (low, high)
    if first:
        try:
            point, low, high = stats.bootstrap_relative_change(first, values, 50, seed=seed)
            cell.p50_change_pct = 100.0 * point
            if min(len(first), len(values)) >= MIN_INTERVAL_VALUES:
                cell.p50_change_ci = (100.0 * low, 100.0 * high)
            base90 = stats.percentile(sorted(first), 90)
            if base90 > 0 and cell.p90 is not None:
                cell.p90_change_pct = 100.0 * (cell.p90 / base90 - 1.0)
        except ValueError:  # a first-run percentile of 0: a ratio means nothing
            pass
    return cell


def _error_rate(payload: Mapping[str, Any], mode: str) -> float | None:
    turns = [s for s in payload.get("samples", []) if s.get("mode") == mode]
    if not turns:
        return None
    return 100.0 * sum(1 for s in turns if not s.get("ok")) / len(turns)


def _goodput(payload: Mapping[str, Any], mode: str) -> float | None:
    entry = (payload.get("slo") or {}).get("modes", {}).get(mode)
    value = entry.get("turn_goodput") if entry else None
    return float(value) if isinstance(value, int | float) else None


def _relabelled(payload: Mapping[str, Any], mode: str, as_mode: str, key: str) -> list[Any]:
    return [{**r, "mode": as_mode} for r in payload.get(key, []) if r.get("mode") == mode]


def _paired(
    first: Mapping[str, Any], later: Mapping[str, Any], mode: str, name: str, seed: int
) -> PairedRatio | None:
    records = [
        *_relabelled(first, mode, "first", "rollouts"),
        *_relabelled(later, mode, "later", "rollouts"),
    ]
    pairs = cmp.paired_values(records, "first", "later")
    if not pairs:
        return None
    median, ci = cmp.median_ci(cmp.ratios(pairs), seed=seed)
    return PairedRatio(name, len(pairs), median, (ci[0], ci[1]) if ci else None)


def _work_flags(
    first: Mapping[str, Any], later: Mapping[str, Any], mode: str, names: tuple[str, str]
) -> list[str]:
    """Both ways: the later run did less work than the first, or more."""
    a, b = (f"{names[0]} {mode}", f"{names[1]} {mode}")
    samples = [
        *_relabelled(first, mode, a, "samples"),
        *_relabelled(later, mode, b, "samples"),
    ]
    return [flag for x, y in ((a, b), (b, a)) if (flag := _unequal(samples, x, y))]


def _unequal(samples: Sequence[Mapping[str, Any]], baseline: str, mode: str) -> str | None:
    flag = unequal_work(samples, baseline, mode)
    return str(flag["message"]) if flag else None


def compare_runs(
    results: Sequence[Mapping[str, Any]], sources: Sequence[str] = (), *, seed: int = 0
) -> RunsComparison:
    """The comparison of two or more bench or load results, the first being the reference."""
    if len(results) < 2:
        raise CompareInputError("give at least two results files to compare")
    for i, result in enumerate(results):
        if result.get("kind") not in ("bench", "load"):
            where = sources[i] if i < len(sources) else f"run {run_name(i)}"
            raise CompareInputError(
                f"{where}: a {result.get('kind')} result has no latencies to compare (bench or "
                "load results only)"
            )
    runs = [
        RunInfo(
            run_name(i),
            str(r.get("label")),
            str(r["target"]["name"]),
            str(r["kind"]),
            str(r.get("started_at")),
            sources[i] if i < len(sources) else "",
        )
        for i, r in enumerate(results)
    ]
    payloads = [latency_payload(r) for r in results]
    workload_notes = [
        f"{runs[i].name} differs from {runs[0].name}: " + "; ".join(diffs)
        for i, r in enumerate(results[1:], start=1)
        if (diffs := workload_differences(results[0], r))
    ]
    modes = list(dict.fromkeys(m for p in payloads for m in p.get("modes", {})))
    out = []
    for mode in modes:
        mc = ModeComparison(mode)
        for metric in METRICS:
            first = _values(payloads[0], mode, metric) if mode in payloads[0]["modes"] else None
            cells: list[Cell | None] = []
            for i, p in enumerate(payloads):
                if mode not in p.get("modes", {}):
                    cells.append(None)
                    continue
                cells.append(_cell(_values(p, mode, metric), first if i else None, seed))
            if any(c is not None and c.n for c in cells):
                mc.metrics.append(MetricRow(metric, cells))
        mc.error_rate_pct = [_error_rate(p, mode) for p in payloads]
        mc.goodput = [_goodput(p, mode) for p in payloads]
        for i, p in enumerate(payloads[1:], start=1):
            paired = _paired(payloads[0], p, mode, runs[i].name, seed)
            if paired is not None:
                mc.paired.append(paired)
            mc.unequal_work += _work_flags(payloads[0], p, mode, (runs[0].name, runs[i].name))
        out.append(mc)
    return RunsComparison(runs, out, workload_notes)
