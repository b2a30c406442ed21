"""The results file every load shape writes, built in one place: the per-turn measurements as
HdrHistograms per mode (variant), the samples and rollout records beside them, the comparisons
of each mode with its baseline, and the sections a shape adds (harness.results schema).

Only ok turns and ok rollouts enter the latency histograms; failed turns are counted per mode.

A comparison's unit is the pair: one rollout replayed in the baseline mode and in the compared
one (`paired_comparisons`). The bench and the locust users compare through it. Each pair's work
is judged beside the pairing (`results.work.work_check`): the pairs whose input per turn differs
beyond the tolerance (or that ran fewer turns) are named in the comparison's `work` and left out
of its speedup and TTFT change, so `pairs` counts the equal-work pairs.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from harness.load.core.measurements import RolloutResult, TurnResult
from harness.results import compare as cmp
from harness.results.histograms import MetricSet
from harness.results.schema import finish_result, new_result
from harness.results.slo import SloTarget, slo_section
from harness.results.work import equal_work_records, work_check


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


def mode_entry(ms: MetricSet, failures: int) -> dict[str, Any]:
    return {**ms.to_dict(), "summary": ms.summary(), "failures": failures}


def baseline_for(name: str, names: Sequence[str]) -> str | None:
    """The http variant `name` is compared with: `http`, or `http-cN` for a sweep's `x-cN`."""
    match = re.fullmatch(r"(.+)-c(\d+)", name)
    if match:
        base = f"http-c{match.group(2)}"
        return base if base in names and base != name else None
    return "http" if "http" in names and name != "http" else None


def paired_comparisons(
    rollouts: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    *,
    seed: int,
) -> list[cmp.Comparison]:
    """Each mode against its baseline (`baseline_for`), in the order of `names`: the rollouts
    replayed in both are the pairs (harness.results.compare pairs them by rollout id)."""
    comparisons = []
    for name in names:
        baseline = baseline_for(name, names)
        if baseline is None:
            continue
        check = work_check(rollouts, samples, baseline, name)
        kept_rollouts, kept_samples = equal_work_records(
            rollouts, samples, baseline, name, check["unequal"]
        )
        comparison = cmp.compare(kept_rollouts, kept_samples, baseline, name, seed=seed)
        comparisons.append(dataclasses.replace(comparison, work=check))
    return comparisons


def build_results(
    kind: str,
    *,
    label: str,
    target: Mapping[str, Any],
    profile: str | None,
    config: Mapping[str, Any],
    started_at: str | None,
    modes: Mapping[str, tuple[MetricSet, int]],
    samples: list[dict[str, Any]],
    rollouts: list[dict[str, Any]] | None = None,
    time_scale: float | None = None,
    workload: Mapping[str, Any] | None = None,
    sections: Mapping[str, Any] | None = None,
    slo: Sequence[SloTarget] = (),
) -> dict[str, Any]:
    """A validated results document of `kind` ("bench" or "load"): `modes` gives each mode's
    histograms and failed turns in table order; `sections` are the shape's own payload keys
    (comparisons, tokens, throughput, analysis, ...), in the order they are written; `slo`
    (--slo) adds each mode's goodput (harness.results.slo)."""
    result = new_result(
        kind, label=label, target=target, profile=profile, config=config, started_at=started_at
    )
    if workload is not None:
        result["workload"] = dict(workload)
    payload = result[kind]
    if time_scale is not None:
        payload["time_scale"] = time_scale
    for name, (ms, failures) in modes.items():
        payload["modes"][name] = mode_entry(ms, failures)
    payload["samples"] = samples
    if rollouts is not None:
        payload["rollouts"] = rollouts
    payload.update(sections or {})
    if slo:
        payload["slo"] = slo_section(slo, samples, rollouts or [], list(modes))
    return finish_result(result)
