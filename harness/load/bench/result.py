"""A bench run's results document: HdrHistograms per variant, the raw samples, the paired
comparisons against http, the speedup split and the ablation rows (harness.results schema).

Only ok turns and ok rollouts enter the latency histograms; failed turns are counted per
variant. The locust glue builds its results with the same `metric_sets` and `mode_entry`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.load.bench.config import BenchConfig
from harness.load.bench.recorded import recorded_vs_replayed
from harness.load.bench.variants import NOCACHE_VARIANT, OPTIMIZATION_FLAGS, Variant, ablation_name
from harness.load.core.measurements import RolloutResult, TurnResult, output_cap_summary
from harness.results import compare as cmp
from harness.results.histograms import MetricSet
from harness.results.schema import finish_result, new_result
from harness.results.stats import round_or_none as _r
from harness.results.work import token_summary, unequal_work
from harness.results.workload import bench_workload
from harness.traces.format import Rollout

# the error of a rollout cancelled at --duration-s (a suffix gives the limit)
CUT_ERROR = "cut at the duration limit"


@dataclass
class BenchRun:
    """One run: what it replays (config, variants, rollouts) and what came back."""

    config: BenchConfig
    variants: list[Variant]
    rollouts: list[Rollout]
    results: list[RolloutResult] = field(default_factory=list)
    target_name: str = "reference"
    target_url: str = ""
    target: dict[str, Any] = field(default_factory=dict)  # results.identity; else name + url
    started_at: str = ""
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the run could not do as asked
    # --engine-metrics: each variant's engine prefix-cache counters (engine_metrics.counter_delta)
    engine_cache: dict[str, dict[str, Any]] = field(default_factory=dict)

    def real_failures(self) -> list[RolloutResult]:
        """Failed rollouts other than those cut at the limit the user set (those are expected)."""
        return [r for r in self.results if not r.ok and not is_cut(r.error)]


def is_cut(error: str | None) -> bool:
    return (error or "").startswith(CUT_ERROR)


def metric_sets(results: Sequence[RolloutResult]) -> tuple[dict[str, MetricSet], Counter[str]]:
    """HdrHistograms per variant (ok turns / ok rollouts only) and failed turns per variant."""
    sets: dict[str, MetricSet] = {}
    failures: Counter[str] = Counter()
    for r in results:
        ms = sets.setdefault(r.mode, MetricSet())
        for t in r.turns:
            if t.ok:
                record_turn(ms, t)
            else:
                failures[r.mode] += 1
        if r.ok:
            ms.record_ms("rollout_e2e_ms", r.e2e_ms)
            ms.record_ms("rollout_model_ms", r.model_ms)
    return sets, failures


def record_turn(ms: MetricSet, t: TurnResult) -> None:
    """An ok turn's latencies into `ms` (the bench, the locust users and `wsmode load`)."""
    if t.ttft_ms is not None:
        ms.record_ms("ttft_ms", t.ttft_ms)
    if t.ttfe_ms is not None:
        ms.record_ms("ttfe_ms", t.ttfe_ms)
    for gap in t.itl_gaps_ms:
        ms.record_ms("itl_ms", gap)
    if t.tpot_ms is not None:
        ms.record_ms("tpot_ms", t.tpot_ms)
    if t.turn_e2e_ms is not None:
        ms.record_ms("turn_e2e_ms", t.turn_e2e_ms)
    if t.api_overhead_ms is not None:
        ms.record_ms("api_overhead_ms", max(t.api_overhead_ms, 0.0))
    for ack in t.inject_ack_ms:  # multi-agent turns (PROTOCOL.md §2.2)
        ms.record_ms("inject_ack_ms", ack)
    for resume in t.inject_resume_ms:
        ms.record_ms("inject_resume_ms", resume)


def mode_entry(ms: MetricSet, failures: int) -> dict[str, Any]:
    return {**ms.to_dict(), "summary": ms.summary(), "failures": failures}


def baseline_for(name: str, names: Sequence[str]) -> str | None:
    """The http variant `name` is compared with: `http`, or `http-cN` for a sweep's `x-cN`."""
    match = re.fullmatch(r"(.+)-c(\d+)", name)
    if match:
        base = f"http-c{match.group(2)}"
        return base if base in names and base != name else None
    return "http" if "http" in names and name != "http" else None


def analyse(
    rollouts: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    *,
    seed: int,
) -> dict[str, Any]:
    """Comparisons against http, the speedup split and the ablation rows."""
    comparisons = []
    for name in names:
        baseline = baseline_for(name, names)
        if baseline is not None:
            comparisons.append(cmp.compare(rollouts, samples, baseline, name, seed=seed))
    split = cmp.speedup_split(rollouts)
    flags = {ablation_name(f): f for f in OPTIMIZATION_FLAGS if ablation_name(f) in names}
    if NOCACHE_VARIANT in names:
        flags = {NOCACHE_VARIANT: "connection_cache", **flags}
    ablation = cmp.ablation_rows(rollouts, samples, flags) if flags and "ws" in names else []
    sensitivity = (
        cmp.tool_time_sensitivity(rollouts, "http", "ws") if {"http", "ws"} <= set(names) else []
    )
    return {
        "comparisons": comparisons,
        "tool_time_sensitivity": sensitivity,
        "split": split,
        "ablation": ablation,
        "stages_ms": {n: cmp.stage_means(samples, n) for n in names},
    }


def build_result(run: BenchRun) -> dict[str, Any]:
    """The validated results document of `run` (harness.results.schema, kind "bench")."""
    config = run.config
    # the variants' own order (not the order their results came in), so tables are stable
    replayed = {r.mode for r in run.results}
    names = [v.name for v in run.variants if v.name in replayed]
    names += sorted(replayed - set(names))
    result = new_result(
        "bench",
        label=config.label,
        target=run.target or {"url": run.target_url, "name": run.target_name},
        profile=config.profile if config.embedded else None,
        config=_config_section(run),
        started_at=run.started_at or None,
    )
    result["workload"] = bench_workload(result["config"], result["profile"])
    bench = result["bench"]
    bench["time_scale"] = config.time_scale
    sets, failures = metric_sets(run.results)
    for name in names:
        bench["modes"][name] = mode_entry(sets[name], failures[name])
    bench["samples"] = [t.to_sample() for r in run.results for t in r.turns]
    bench["rollouts"] = [r.to_record() for r in run.results]
    analysis = analyse(bench["rollouts"], bench["samples"], names, seed=config.seed)
    bench["comparisons"] = [
        {**c.to_dict(), "unequal_work": unequal_work(bench["samples"], c.baseline_mode, c.mode)}
        for c in analysis["comparisons"]
    ]
    bench["tokens"] = {name: token_summary(bench["samples"], name) for name in names}
    caps = {name: output_cap_summary(bench["samples"], name) for name in names}
    bench["output_caps"] = {name: summary for name, summary in caps.items() if summary}
    if run.engine_cache:
        bench["engine_cache"] = {
            "metrics_url": config.engine_metrics_url,
            "variants": dict(run.engine_cache),
        }
    bench["analysis"] = _analysis_section(analysis)
    bench["analysis"]["recorded_vs_replayed"] = recorded_vs_replayed(
        run.rollouts, bench["samples"], names
    )
    return finish_result(result)


def _config_section(run: BenchRun) -> dict[str, Any]:
    return {
        **run.config.to_json(),
        "rollouts": [r.id for r in run.rollouts],
        "variants": {
            v.name: {
                "mode": v.mode,
                "description": v.description,
                "store": v.options.effective_store,
                "disabled_optimizations": list(v.disabled),
            }
            for v in run.variants
        },
        "notes": run.notes,
        "warnings": run.warnings,
    }


def _analysis_section(analysis: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "tool_time_sensitivity": analysis["tool_time_sensitivity"],
        "split": [
            {
                "term": t.name,
                "from_mode": t.from_mode,
                "to_mode": t.to_mode,
                "saved_ms_per_rollout": _r(t.saved_ms),
                "share": _r(t.share, 4),
                "pairs": t.pairs,
            }
            for t in analysis["split"]
        ],
        "ablation": [
            {
                "variant": a.variant,
                "optimization": a.flag,
                "slowdown_ms_per_rollout": _r(a.slowdown_ms),
                "share": _r(a.share, 4),
                "ttft_p50_ms": _r(a.ttft_p50_ms),
                "ttft_delta_ms": _r(a.ttft_delta_ms),
                "turn_delta_ms_median": _r(a.turn_delta_ms),
                "pairs": a.pairs,
            }
            for a in analysis["ablation"]
        ],
        "stages_ms": {
            n: {k: round(v, 3) for k, v in stages.items()}
            for n, stages in analysis["stages_ms"].items()
        },
        "per_rollout_speedup": {
            c.mode: [[rid, round(e2e, 4), round(model, 4)] for rid, e2e, model in c.per_rollout]
            for c in analysis["comparisons"]
        },
    }
