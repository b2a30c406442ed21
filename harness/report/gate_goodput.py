"""The gate's goodput findings: when the current run carries `--slo` targets
(harness.results.slo), each mode's turn goodput is recomputed for both runs under those same
targets, so a baseline measured without an SLO is judged by the current one's.

A mode regresses when the current run misses its SLO (a target's measured percentile beyond its
limit) or when its goodput fell by more than `GOODPUT_DROP_PP` percentage points from the
baseline's; a rise by as much is an improvement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.report.gate_report import MetricFinding
from harness.results.slo import mode_goodput, targets_of

#: the drop in turn goodput, in percentage points, that the gate calls a regression
GOODPUT_DROP_PP = 5.0
GOODPUT = "goodput"


def _of_mode(payload: Mapping[str, Any], mode: str, key: str) -> list[Mapping[str, Any]]:
    return [r for r in payload.get(key, []) if r.get("mode") == mode]


def gate_goodput(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[MetricFinding]:
    """One finding per mode of the current run's SLO section; none without one."""
    targets = targets_of(current.get("slo"))
    if not targets:
        return []
    findings = []
    for mode in current["slo"].get("modes", {}):
        got = [
            mode_goodput(targets, _of_mode(p, mode, "samples"), _of_mode(p, mode, "rollouts"))
            for p in (baseline, current)
        ]
        base, cur = (g["turn_goodput"] for g in got)
        f = MetricFinding(
            mode=mode,
            metric=GOODPUT,
            percentile=None,
            threshold_pct=GOODPUT_DROP_PP,
            n_baseline=got[0]["turns"],
            n_current=got[1]["turns"],
            baseline=None if base is None else 100.0 * base,
            current=None if cur is None else 100.0 * cur,
            higher_is_better=True,
        )
        missed = [a["target"] for a in got[1]["attainment"] if not a["met"]]
        if base is not None and cur is not None:
            f.change_pct = 100.0 * (cur - base)
        if cur is None:
            f.status, f.note = "insufficient-data", "no turns in the current run"
        elif missed:
            f.status, f.note = "regression", "SLO missed: " + ", ".join(missed)
        elif f.change_pct is not None and f.change_pct < -GOODPUT_DROP_PP:
            f.status = "regression"
        elif f.change_pct is not None and f.change_pct > GOODPUT_DROP_PP:
            f.status = "improvement"
        findings.append(f)
    return findings
