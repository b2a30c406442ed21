"""`wsmode gate` on pytest-benchmark JSON: the micro-benchmarks (`bench/micro/`) against a baseline.

A file is read as pytest-benchmark's when it carries its `machine_info` and `benchmarks` keys
(`--benchmark-json`, or a run saved with `--benchmark-save`). Benchmarks are paired by their
full name; for each the gate judges the median time per call, higher is worse, with the p50
limit of the thresholds (default +10 %). Machine noise moves a micro-benchmark's median between
two runs of the same code by more than its own sampling interval, so a regression must clear
both:

- the change: the bootstrap 95 % interval of the median's change lies wholly beyond the limit
  (when both runs kept every round, `--benchmark-save-data`, as `scripts/microbench` does, and
  have `min_samples` rounds; otherwise the point change alone must be beyond it), and
- the noise: the median moved by more than the baseline's interquartile range, and the fastest
  round moved beyond the limit too (a slower path slows every round; a busy machine slows the
  typical one: two runs of the same code here moved the median +59 % and the minimum -1 %).

A change beyond the limit that fails either test is `noisy`; a benchmark missing from one run,
or timed by another clock in it (CPU time against wall time), is `insufficient-data` (a failure
only with `--require-samples`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.report.gate import GateConfig, GateInputError, compare_samples
from harness.report.gate_report import GateReport, MetricFinding
from harness.results.schema import read_json_document

KIND = "micro"
METRIC = "time_us"  # per call, as pytest-benchmark's median (its JSON holds seconds)
_MAX_SAMPLES = 1_000  # rounds kept for the bootstrap: enough for a median, bounded in time


def read_if_micro(path: str | Path) -> dict[str, Any] | None:
    """The parsed file when it is pytest-benchmark JSON, else None (a results file or garbage,
    for the results reader to judge); GateInputError for a pytest-benchmark file gone wrong."""
    try:
        with Path(path).open("rb") as file:
            if b'"wsmode-results"' in file.read(4096):
                return None  # a results file (its schema comes first): read in pieces later
        data = read_json_document(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or not {"machine_info", "benchmarks"} <= data.keys():
        return None
    benchmarks = data["benchmarks"]
    if not isinstance(benchmarks, list) or not all(_well_formed(b) for b in benchmarks):
        raise GateInputError(
            f"{path}: pytest-benchmark JSON without a name, a median and a minimum per benchmark"
        )
    return data


def _well_formed(benchmark: Any) -> bool:
    if not isinstance(benchmark, dict) or not isinstance(benchmark.get("fullname"), str):
        return False
    stats = benchmark.get("stats")
    return isinstance(stats, dict) and all(
        isinstance(stats.get(key), int | float) for key in ("min", "median", "iqr", "rounds")
    )


def run_micro_gate(
    baseline: Mapping[str, Any] | None,
    current: Mapping[str, Any] | None,
    config: GateConfig,
    *,
    require_samples: bool = False,
) -> GateReport:
    """Compare two pytest-benchmark runs; GateInputError when only one of them is such a run."""
    if baseline is None or current is None:
        which = "baseline" if baseline is None else "current"
        raise GateInputError(
            f"cannot compare a pytest-benchmark run with a results file (the {which} is not "
            "pytest-benchmark JSON): the gate compares like with like"
        )
    report = GateReport(
        kind=KIND,
        baseline_label=_describe(baseline),
        current_label=_describe(current),
        require_samples=require_samples,
    )
    if _cpu(baseline) != _cpu(current):
        report.notes.append("the runs were measured on different CPUs")
    threshold = config.thresholds_pct.get(50.0, 10.0)
    base = {b["fullname"]: b for b in baseline["benchmarks"]}
    cur = {b["fullname"]: b for b in current["benchmarks"]}
    for name in dict.fromkeys([*base, *cur]):
        report.metrics.append(_compare(name, base.get(name), cur.get(name), threshold, config))
    return report


def _compare(
    name: str,
    base: Mapping[str, Any] | None,
    cur: Mapping[str, Any] | None,
    threshold_pct: float,
    config: GateConfig,
) -> MetricFinding:
    if base is None or cur is None:
        return MetricFinding(
            mode=name,
            metric=METRIC,
            percentile=50.0,
            threshold_pct=threshold_pct,
            n_baseline=0 if base is None else int(base["stats"]["rounds"]),
            n_current=0 if cur is None else int(cur["stats"]["rounds"]),
            baseline=None if base is None else _us(base["stats"]["median"]),
            current=None if cur is None else _us(cur["stats"]["median"]),
            status="insufficient-data",
            note=f"only in the {'current' if base is None else 'baseline'} run",
        )
    timers = _timer(base), _timer(cur)
    if timers[0] != timers[1]:  # CPU time and wall time are not one measure
        return MetricFinding(
            mode=name,
            metric=METRIC,
            percentile=50.0,
            threshold_pct=threshold_pct,
            n_baseline=int(base["stats"]["rounds"]),
            n_current=int(cur["stats"]["rounds"]),
            status="insufficient-data",
            note="timers differ: {} vs {}".format(*timers),
        )
    base_data, cur_data = _samples(base), _samples(cur)
    if len(base_data) >= config.min_samples and len(cur_data) >= config.min_samples:
        finding = compare_samples(name, METRIC, base_data, cur_data, 50.0, threshold_pct, config)
        finding.n_baseline = int(base["stats"]["rounds"])
        finding.n_current = int(cur["stats"]["rounds"])
    else:
        finding = _compare_summaries(name, base["stats"], cur["stats"], threshold_pct)
    _hold_to_noise(finding, base["stats"], cur["stats"])
    return finding


def _compare_summaries(
    name: str, base: Mapping[str, Any], cur: Mapping[str, Any], threshold_pct: float
) -> MetricFinding:
    """Without every round's time: the medians' change, no interval."""
    finding = MetricFinding(
        mode=name,
        metric=METRIC,
        percentile=50.0,
        threshold_pct=threshold_pct,
        n_baseline=int(base["rounds"]),
        n_current=int(cur["rounds"]),
        baseline=_us(base["median"]),
        current=_us(cur["median"]),
        note="summaries only (no --benchmark-save-data or too few rounds): no interval",
    )
    if finding.baseline is None or finding.current is None or finding.baseline <= 0:
        finding.status = "insufficient-data"
        return finding
    finding.change_pct = 100.0 * (finding.current / finding.baseline - 1.0)
    if finding.change_pct > threshold_pct:
        finding.status = "regression"
    elif finding.change_pct < -threshold_pct:
        finding.status = "improvement"
    return finding


def _hold_to_noise(finding: MetricFinding, base: Mapping[str, Any], cur: Mapping[str, Any]) -> None:
    """A change the baseline's own spread covers, or one its fastest round does not show, is
    noise, however tight its interval: a slower hot path slows every round, the fastest too,
    while a busy machine slows the typical round and seldom the fastest."""
    if finding.status not in ("regression", "improvement"):
        return
    assert finding.baseline is not None and finding.current is not None
    moved_us, iqr_us = abs(finding.current - finding.baseline), _us(base["iqr"])
    fastest_pct = 100.0 * (cur["min"] / base["min"] - 1.0) if base["min"] > 0 else 0.0
    worse = finding.status == "regression"
    if moved_us <= iqr_us:
        finding.note = (
            f"the median moved {moved_us:.3g} µs, within the baseline's IQR of {iqr_us:.3g} µs"
        )
    elif (
        (fastest_pct <= finding.threshold_pct) if worse else (fastest_pct >= -finding.threshold_pct)
    ):
        finding.note = f"the fastest round moved {fastest_pct:+.1f}%, within the limit"
    else:
        return
    finding.status = "noisy"


def _samples(benchmark: Mapping[str, Any]) -> Sequence[float]:
    """Every round's time per call in µs (empty when the run kept summaries only), at most
    _MAX_SAMPLES of them, drawn with a fixed seed."""
    data = benchmark["stats"].get("data")
    if not isinstance(data, list) or not all(isinstance(x, int | float) for x in data):
        return []
    if len(data) > _MAX_SAMPLES:
        data = random.Random(benchmark["fullname"]).sample(data, _MAX_SAMPLES)
    return [_us(x) for x in data]


def _timer(benchmark: Mapping[str, Any]) -> object:
    options = benchmark.get("options")
    return options.get("timer") if isinstance(options, dict) else None


def _us(seconds: float) -> float:
    return float(seconds) * 1e6


def _cpu(run: Mapping[str, Any]) -> object:
    cpu = run["machine_info"].get("cpu") if isinstance(run["machine_info"], dict) else None
    return cpu.get("brand_raw") if isinstance(cpu, dict) else None


def _describe(run: Mapping[str, Any]) -> str:
    commit = run.get("commit_info")
    commit = commit if isinstance(commit, dict) else {}
    at = str(commit.get("id") or "?")[:12] + (" (dirty)" if commit.get("dirty") else "")
    return f"pytest-benchmark {run.get('version', '?')}, commit {at} ({run.get('datetime', '?')})"
