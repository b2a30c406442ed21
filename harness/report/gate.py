"""`wsmode gate`: compare a current results file against a baseline, noise-aware.

Bench results: for each mode and metric the gate takes the raw samples of both runs and asks how
much a percentile changed, current / baseline - 1, with a seeded bootstrap 95 % interval. It calls
a regression only when the whole interval lies beyond the allowed worsening (default +10 % at
p50, +20 % at p90), so run-to-run noise alone does not fail a build. A metric with fewer samples
than `min_samples` (default 30) on either side is `insufficient-data`: reported, and a failure
only with `--require-samples`. The turn error rate is compared too (in percentage points), and
with `--slo` in the current run its goodput per mode (report/gate_goodput.py).

Metrics (latency: higher is worse; speedup: lower is worse):
    ttft_ms, itl_ms, turn_e2e_ms (and tpot_ms when enabled) from `samples` with ok=true,
    rollout_e2e_ms from `rollouts` (e2e_ms, ok=true),
    speedup_vs_<baseline mode>: per-rollout e2e ratio baseline-mode / mode, paired by rollout_id.

Certify results: any MUST case that PASSes in the baseline but does not PASS in the current run
(or is missing from it) is a regression; with `--strict`, SHOULD cases too.

Load results (`wsmode load`) gate like bench results, against load results only. The gate
refuses to compare unlike things: two kinds (a bench with a load, either with a certify), or two
latency results of different workloads (the rollouts or request shape, profile, model, modes,
concurrency: `harness.results.workload`), with a one-line message and exit 2.

pytest-benchmark JSON (`pytest --benchmark-json`, a checkout's micro-benchmarks) gates per
benchmark on its median time per call, against pytest-benchmark JSON only: a regression is a
bootstrap interval wholly beyond the p50 limit, a median moved by more than the baseline's
interquartile range, and a fastest round slowed beyond the limit too (`report/gate_micro.py`).

Exit codes: 0 no regression, 1 regression, 2 bad input (unreadable file, unlike kinds or
workloads, invalid thresholds file).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.report.gate_goodput import gate_goodput
from harness.report.gate_report import CaseFinding, GateReport, MetricFinding
from harness.results import stats
from harness.results.schema import LATENCY_KINDS, ttft_definition
from harness.results.workload import latency_kind, latency_payload, workload_differences

LATENCY_METRICS = ("ttft_ms", "itl_ms", "tpot_ms", "turn_e2e_ms", "rollout_e2e_ms")
GATE_METRICS = (*LATENCY_METRICS, "speedup", "error_rate")
DEFAULT_ENABLED = frozenset(
    {"ttft_ms", "itl_ms", "turn_e2e_ms", "rollout_e2e_ms", "speedup", "error_rate"}
)
DEFAULT_THRESHOLDS_PCT = {50.0: 10.0, 90.0: 20.0, 99.0: 30.0}


class GateInputError(InputError):
    """Bad gate input: the gate cannot compare (exit code 2)."""


# -- configuration -----------------------------------------------------------------------------
@dataclasses.dataclass
class GateConfig:
    """What to compare and how strictly. Thresholds are allowed worsening in percent."""

    percentiles: tuple[float, ...] = (50.0, 90.0)
    thresholds_pct: dict[float, float] = dataclasses.field(
        default_factory=lambda: dict(DEFAULT_THRESHOLDS_PCT)
    )
    # metric -> {percentile: threshold_pct, or None to skip that percentile}
    metric_overrides: dict[str, dict[float, float | None]] = dataclasses.field(default_factory=dict)
    enabled: set[str] = dataclasses.field(default_factory=lambda: set(DEFAULT_ENABLED))
    min_samples: int = 30
    resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    error_rate_pp: float = 1.0

    def checks_for(self, metric: str) -> list[tuple[float, float]]:
        """(percentile, threshold_pct) pairs to check for `metric` (speedup_vs_x → speedup)."""
        family = "speedup" if metric.startswith("speedup") else metric
        overrides = self.metric_overrides.get(family, {})
        out: dict[float, float] = {}
        for p in self.percentiles:
            if p in overrides and overrides[p] is None:
                continue
            threshold = overrides.get(p)
            out[p] = threshold if threshold is not None else self.thresholds_pct[p]
        for p, threshold in overrides.items():
            if threshold is not None:
                out[p] = threshold
        return sorted(out.items())


def _parse_pct_key(key: str, where: str) -> float:
    if not key.startswith("p"):
        raise GateInputError(f"{where}: unknown key {key!r} (expected p50, p90, p99.9, ...)")
    try:
        p = float(key[1:])
    except ValueError:
        raise GateInputError(f"{where}: unknown key {key!r} (expected p50, p90, ...)") from None
    if not 0.0 < p <= 100.0:
        raise GateInputError(f"{where}: percentile {key!r} out of range")
    return p


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise GateInputError(f"{where}: expected a number, got {value!r}")
    if value < 0:
        raise GateInputError(f"{where}: limits are allowed worsening, >= 0; got {value!r}")
    return float(value)


def load_config(path: str | Path | None) -> GateConfig:
    """Read a thresholds TOML file (see results/README.md); None gives the defaults."""
    config = GateConfig()
    if path is None:
        return config
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GateInputError(f"{path}: cannot read thresholds: {exc}") from exc
    except RecursionError:  # tomllib recurses on nested arrays and inline tables
        raise GateInputError(f"{path}: cannot read thresholds: nested too deeply") from None
    return config_from_dict(data, str(path))


def config_from_dict(data: Mapping[str, Any], source: str = "thresholds") -> GateConfig:
    config = GateConfig()
    known = {"percentiles", "min_samples", "resamples", "seed", "error_rate_pp", "thresholds"}
    known |= {"metric"}
    for key in data:
        if key not in known:
            raise GateInputError(
                f"{source}: unknown key {key!r} (known: {', '.join(sorted(known))})"
            )
    if "percentiles" in data:
        ps = data["percentiles"]
        if not isinstance(ps, list) or not ps:
            raise GateInputError(f"{source}: percentiles must be a list like ['p50', 'p90']")
        config.percentiles = tuple(_parse_pct_key(str(p), f"{source}: percentiles") for p in ps)
    for key in ("min_samples", "resamples", "seed"):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise GateInputError(f"{source}: {key} must be a non-negative integer")
            setattr(config, key, value)
    if config.resamples < 100:
        raise GateInputError(f"{source}: resamples must be at least 100")
    if "error_rate_pp" in data:
        config.error_rate_pp = _number(data["error_rate_pp"], f"{source}: error_rate_pp")
    thresholds = data.get("thresholds", {})
    if not isinstance(thresholds, dict):
        raise GateInputError(f"{source}: [thresholds] must be a table")
    for key, value in thresholds.items():
        where = f"{source}: thresholds.{key}"
        config.thresholds_pct[_parse_pct_key(key, where)] = _number(value, where)
    metrics = data.get("metric", {})
    if not isinstance(metrics, dict):
        raise GateInputError(f"{source}: [metric.NAME] must be tables")
    for name, table in metrics.items():
        where = f"{source}: metric.{name}"
        if name not in GATE_METRICS:
            raise GateInputError(f"{where}: unknown metric (known: {', '.join(GATE_METRICS)})")
        if not isinstance(table, dict):
            raise GateInputError(f"{where}: must be a table")
        overrides: dict[float, float | None] = {}
        for key, value in table.items():
            if key == "enabled":
                if not isinstance(value, bool):
                    raise GateInputError(f"{where}.enabled: expected true or false")
                (config.enabled.add if value else config.enabled.discard)(name)
                continue
            if name == "error_rate":
                raise GateInputError(f"{where}: only 'enabled' (set the limit with error_rate_pp)")
            p = _parse_pct_key(key, where)
            overrides[p] = None if value is False else _number(value, f"{where}.{key}")
        config.metric_overrides[name] = overrides
        if "enabled" not in table:  # a section of its own switches a metric on (e.g. tpot_ms)
            config.enabled.add(name)
    for p in config.percentiles:
        if p not in config.thresholds_pct:
            raise GateInputError(f"{source}: no threshold for p{p:g}: add it under [thresholds]")
    return config


# -- extracting samples ------------------------------------------------------------------------
def _turn_samples(bench: Mapping[str, Any], mode: str, metric: str) -> list[float]:
    out = []
    for s in bench["samples"]:
        if s["mode"] == mode and s["ok"] and s.get(metric) is not None:
            out.append(float(s[metric]))
    return out


def _rollout_samples(bench: Mapping[str, Any], mode: str) -> list[float]:
    return [
        float(r["e2e_ms"])
        for r in bench["rollouts"]
        if r["mode"] == mode and r["ok"] and r["e2e_ms"] is not None
    ]


def paired_speedups(bench: Mapping[str, Any], baseline_mode: str, mode: str) -> list[float]:
    """Per-rollout e2e(baseline_mode) / e2e(mode), pairing the n-th occurrence of a rollout_id."""
    e2e: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in bench["rollouts"]:
        if r["ok"] and r["e2e_ms"] is not None:
            e2e[(r["mode"], r["rollout_id"])].append(float(r["e2e_ms"]))
    out = []
    for (m, rid), values in e2e.items():
        if m != mode:
            continue
        for base, cur in zip(e2e.get((baseline_mode, rid), []), values, strict=False):
            if cur > 0:
                out.append(base / cur)
    return out


def speedup_pairs(bench: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(baseline_mode, mode) pairs: those listed in comparisons, else every mode against http."""
    pairs = [(c["baseline_mode"], c["mode"]) for c in bench["comparisons"]]
    if not pairs and "http" in bench["modes"]:
        pairs = [("http", m) for m in bench["modes"] if m != "http"]
    return list(dict.fromkeys(pairs))


def _error_rate(bench: Mapping[str, Any], mode: str) -> tuple[float | None, int]:
    turns = [s for s in bench["samples"] if s["mode"] == mode]
    if not turns:
        return None, 0
    return 100.0 * sum(1 for s in turns if not s["ok"]) / len(turns), len(turns)


# -- comparing ---------------------------------------------------------------------------------
def compare_samples(
    mode: str,
    metric: str,
    base: Sequence[float],
    cur: Sequence[float],
    p: float,
    threshold_pct: float,
    config: GateConfig,
    *,
    higher_is_better: bool = False,
) -> MetricFinding:
    f = MetricFinding(
        mode=mode,
        metric=metric,
        percentile=p,
        threshold_pct=threshold_pct,
        n_baseline=len(base),
        n_current=len(cur),
        higher_is_better=higher_is_better,
    )
    if base:
        f.baseline = stats.percentile(base, p)
    if cur:
        f.current = stats.percentile(cur, p)
    if len(base) < config.min_samples or len(cur) < config.min_samples:
        f.status = "insufficient-data"
        f.note = f"needs >= {config.min_samples} samples per run"
        return f
    try:
        point, lo, hi = stats.bootstrap_relative_change(
            base, cur, p, resamples=config.resamples, seed=config.seed
        )
    except ValueError as exc:
        f.status = "insufficient-data"
        f.note = str(exc)
        return f
    f.change_pct, f.ci_pct = 100.0 * point, (100.0 * lo, 100.0 * hi)
    f.p_value = stats.mann_whitney_u(base, cur)[1]
    # "worse" is up for latencies, down for speedups
    worse_lo, worse_hi, worse_point = (
        (-f.ci_pct[1], -f.ci_pct[0], -f.change_pct)
        if higher_is_better
        else (f.ci_pct[0], f.ci_pct[1], f.change_pct)
    )
    if worse_lo > threshold_pct:
        f.status = "regression"
    elif worse_hi < -threshold_pct:
        f.status = "improvement"
    elif abs(worse_point) > threshold_pct:
        f.status = "noisy"
        f.note = "change beyond threshold but the 95% interval overlaps it"
    return f


def gate_bench(
    baseline: Mapping[str, Any], current: Mapping[str, Any], config: GateConfig
) -> list[MetricFinding]:
    b, c = latency_payload(baseline), latency_payload(current)
    findings: list[MetricFinding] = []
    definitions = (ttft_definition(baseline), ttft_definition(current))
    modes = list(dict.fromkeys([*b["modes"], *c["modes"]]))
    for mode in modes:
        for metric in LATENCY_METRICS:
            if metric not in config.enabled:
                continue
            if metric == "rollout_e2e_ms":
                base, cur = _rollout_samples(b, mode), _rollout_samples(c, mode)
            else:
                base, cur = _turn_samples(b, mode, metric), _turn_samples(c, mode, metric)
            for p, threshold in config.checks_for(metric):
                finding = compare_samples(mode, metric, base, cur, p, threshold, config)
                if metric == "ttft_ms" and definitions[0] != definitions[1]:
                    finding.status = "insufficient-data"  # two different marks: not comparable
                    finding.note = "TTFT definitions differ: {} vs {}".format(*definitions)
                findings.append(finding)
        if "error_rate" in config.enabled:
            findings.append(_compare_error_rate(mode, b, c, config))
    if "speedup" in config.enabled:
        for base_mode, mode in dict.fromkeys([*speedup_pairs(b), *speedup_pairs(c)]):
            metric = f"speedup_vs_{base_mode}"
            base = paired_speedups(b, base_mode, mode)
            cur = paired_speedups(c, base_mode, mode)
            for p, threshold in config.checks_for(metric):
                findings.append(
                    compare_samples(
                        mode, metric, base, cur, p, threshold, config, higher_is_better=True
                    )
                )
    findings += gate_goodput(b, c)  # --slo: the current run's targets (report.gate_goodput)
    return findings


def _compare_error_rate(
    mode: str, b: Mapping[str, Any], c: Mapping[str, Any], config: GateConfig
) -> MetricFinding:
    base_rate, n_base = _error_rate(b, mode)
    cur_rate, n_cur = _error_rate(c, mode)
    f = MetricFinding(
        mode=mode,
        metric="error_rate",
        percentile=None,
        threshold_pct=config.error_rate_pp,
        n_baseline=n_base,
        n_current=n_cur,
        baseline=base_rate,
        current=cur_rate,
    )
    if base_rate is None or cur_rate is None:
        f.status = "insufficient-data"
        f.note = "mode missing from one run"
        return f
    f.change_pct = cur_rate - base_rate
    if f.change_pct > config.error_rate_pp:
        f.status = "regression"
    elif f.change_pct < -config.error_rate_pp:
        f.status = "improvement"
    return f


def gate_certify(
    baseline: Mapping[str, Any], current: Mapping[str, Any], *, strict: bool = False
) -> list[CaseFinding]:
    gated_levels = {"MUST", "SHOULD"} if strict else {"MUST"}
    cur_cases = {case["id"]: case for case in current["certify"]["cases"]}
    findings = []
    seen = set()
    for case in baseline["certify"]["cases"]:
        seen.add(case["id"])
        now = cur_cases.get(case["id"])
        now_verdict = now["verdict"] if now else "MISSING"
        if now_verdict == case["verdict"]:
            continue
        if case["verdict"] == "PASS" and case["level"] in gated_levels:
            status = "regression"
        elif now_verdict == "PASS":
            status = "fixed"
        else:
            status = "changed"
        findings.append(
            CaseFinding(case["id"], case["level"], case["verdict"], now_verdict, status)
        )
    for case_id, case in cur_cases.items():
        if case_id not in seen:
            findings.append(CaseFinding(case_id, case["level"], "—", case["verdict"], "new"))
    order = {"regression": 0, "changed": 1, "fixed": 2, "new": 3}
    findings.sort(key=lambda f: (order[f.status], f.id))
    return findings


def run_gate(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    config: GateConfig | None = None,
    *,
    require_samples: bool = False,
    strict: bool = False,
) -> GateReport:
    config = config or GateConfig()
    check_comparable(baseline, current)
    report = GateReport(
        kind=latency_kind(baseline),
        baseline_label=_describe(baseline),
        current_label=_describe(current),
        require_samples=require_samples,
    )
    for field in ("profile",):
        if baseline.get(field) != current.get(field):
            # results written before paths were made portable may hold absolute ones
            old, new = (_shown(r.get(field)) for r in (baseline, current))
            report.notes.append(f"{field} differs: baseline {old!r}, current {new!r}")
    if baseline["target"]["name"] != current["target"]["name"]:
        report.notes.append(
            f"targets differ: {baseline['target']['name']!r} vs {current['target']['name']!r}"
        )
    if baseline["machine"].get("cpu_model") != current["machine"].get("cpu_model"):
        report.notes.append("the runs were measured on different CPUs")
    if report.kind in LATENCY_KINDS:
        report.metrics = gate_bench(baseline, current, config)
        report.notes += [
            f"{f.mode} goodput: {f.note}"
            for f in report.metrics
            if f.metric == "goodput" and f.note
        ]
    else:
        report.cases = gate_certify(baseline, current, strict=strict)
    return report


def check_comparable(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    """Raise GateInputError (one line) unless the two results are of one kind and workload."""
    kinds = latency_kind(baseline), latency_kind(current)
    if kinds[0] != kinds[1]:
        raise GateInputError(
            f"cannot compare a {kinds[0]} baseline with a {kinds[1]} result: the gate compares "
            "like with like (bench with bench, load with load, certify with certify)"
        )
    if kinds[0] in LATENCY_KINDS:
        differences = workload_differences(baseline, current)
        if differences:
            raise GateInputError(
                f"cannot compare two {kinds[0]} results of different workloads: "
                + "; ".join(differences)
            )


def _shown(value: Any) -> Any:
    """A value as a note shows it: an absolute path by its file name only."""
    if isinstance(value, str) and value.startswith("/"):
        return Path(value).name
    return value


def _describe(result: Mapping[str, Any]) -> str:
    return f"{result['target']['name']} / {result['label']} ({result['started_at']})"
