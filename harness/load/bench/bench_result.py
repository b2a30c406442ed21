"""A bench run's results document, built by the engine's one builder
(harness.load.core.results_document): HdrHistograms per variant, the raw samples, the paired
comparisons against http with their equal-work check, and what the bench adds: the speedup
split, the ablation rows, the output caps and the recorded-vs-replayed timings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.load.bench.bench_config import NOCACHE_VARIANT, BenchConfig
from harness.load.bench.output_caps import output_cap_summary
from harness.load.bench.recorded_timings import recorded_vs_replayed
from harness.load.bench.variants import OPTIMIZATION_FLAGS, Variant, ablation_name
from harness.load.core.measurements import RolloutResult
from harness.load.core.results_document import build_results, metric_sets, paired_comparisons
from harness.results import compare as cmp
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
    # --engine-metrics: each variant's engine prefix-cache counters (engine_cache.counter_delta)
    engine_cache: dict[str, dict[str, Any]] = field(default_factory=dict)
    # --server-metrics: the scraped series (harness.load.server_metrics), None without
    server_metrics: dict[str, Any] | None = None

    def real_failures(self) -> list[RolloutResult]:
        """Failed rollouts other than those cut at the limit the user set (those are expected)."""
        return [r for r in self.results if not r.ok and not is_cut(r.error)]


def is_cut(error: str | None) -> bool:
    return (error or "").startswith(CUT_ERROR)


def analyse(
    rollouts: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    *,
    seed: int,
) -> dict[str, Any]:
    """Comparisons against http, the speedup split and the ablation rows."""
    comparisons = paired_comparisons(rollouts, samples, names, seed=seed)
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
    config_section = _config_section(run)
    profile = config.profile if config.embedded else None
    sets, failures = metric_sets(run.results)
    samples = [t.to_sample() for r in run.results for t in r.turns]
    rollouts = [r.to_record() for r in run.results]
    analysis = analyse(rollouts, samples, names, seed=config.seed)
    caps = {name: output_cap_summary(samples, name) for name in names}
    sections: dict[str, Any] = {
        "comparisons": [
            {**c.to_dict(), "unequal_work": unequal_work(samples, c.baseline_mode, c.mode)}
            for c in analysis["comparisons"]
        ],
        "tokens": {name: token_summary(samples, name) for name in names},
        "output_caps": {name: summary for name, summary in caps.items() if summary},
    }
    if run.engine_cache:
        sections["engine_cache"] = {
            "metrics_url": config.engine_metrics_url,
            "variants": dict(run.engine_cache),
        }
    if run.server_metrics is not None:
        sections["server_metrics"] = run.server_metrics
    sections["analysis"] = {
        **_analysis_section(analysis),
        "recorded_vs_replayed": recorded_vs_replayed(run.rollouts, samples, names),
    }
    return build_results(
        "bench",
        label=config.label,
        target=run.target or {"url": run.target_url, "name": run.target_name},
        profile=profile,
        config=config_section,
        started_at=run.started_at or None,
        modes={name: (sets[name], failures[name]) for name in names},
        samples=samples,
        rollouts=rollouts,
        time_scale=config.time_scale,
        workload=bench_workload(config_section, profile),
        sections=sections,
        slo=config.observe.slo,
    )


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
