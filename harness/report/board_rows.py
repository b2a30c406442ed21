"""The leaderboard's data: runs grouped by workload, one row per implementation in each group.

- **Groups.** Latency runs (bench and load) are grouped by kind and workload identity
  (`harness.results.workload`); a group ranks its rows, and nothing is pooled across groups.
- **Rows.** Within a group, one row per implementation identity: the canonical name
  (`harness.results.identity`: `127.0.0.1:8000`, its slug and `localhost:8000` are one server).
  Latency columns come from the HdrHistograms of the row's runs merged (a distributed run ranks
  like a single-process one); with several runs, the min–max of the per-run values is its
  spread. A run that produced no ok turn at all is *failed*: listed and marked, never data.
- **Speedup.** The median of the per-rollout e2e ratios http/ws over the row's runs, with a
  bootstrap 95 % interval from MIN_INTERVAL_PAIRS pairs on (fewer: the median alone, and why).
  A run whose ws turns carried far less input than its http turns (`results.work`) is flagged
  *unequal work*: its speedup is not a saving, so the row shows the flag instead of a figure.
  Below that, every rollout pair is judged on its own (`results.work.work_check`): pairs whose
  input per turn differs beyond the tolerance, or that ran fewer turns, are named and left out
  of the speedup, and the count of equal-work pairs stands beside it.
- **Marks.** A row says what failed: its failed rollouts (of all replayed), its unequal pairs,
  and its ok turns when they are fewer than another row's of the same group.
- **Conformance.** Joined by identity: the latest certify run of the same canonical name; a
  certificate of another version than the measured one, or none at all, is shown as missing
  with the reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.report.gate import paired_speedups
from harness.results import stats
from harness.results.compare import MIN_INTERVAL_PAIRS
from harness.results.histograms import LatencyHistogram, MetricSet
from harness.results.identity import canonical_target, version_number
from harness.results.schema import (
    SCHEMA_VERSION,
    TTFT_DEFINITIONS,
    is_client_certificate,
    parse_time,
    ttft_definition,
)
from harness.results.work import equal_work_records, unequal_work, work_check
from harness.results.workload import (
    describe_workload,
    latency_kind,
    latency_payload,
    workload_key,
)

TTFT_DEFINITION = TTFT_DEFINITIONS[SCHEMA_VERSION]  # what this wsmode's ttft_ms means
RANK_MODE = "ws"
SPEEDUP_BASELINE = "http"


@dataclasses.dataclass
class Run:
    """One input results file and where its copy lives in the board."""

    source: Path
    result: dict[str, Any]
    copy_name: str = ""
    anchor: str = ""

    @property
    def kind(self) -> str:
        return latency_kind(self.result)

    @property
    def identity(self) -> str:
        return canonical_target(self.result)

    @property
    def version(self) -> str | None:
        version = self.result["target"].get("version")
        return str(version) if version else None

    @property
    def failure(self) -> str | None:
        """Why a latency run counts as failed (no ok turn in any mode), else None."""
        if self.kind == "certify":
            return None
        samples = latency_payload(self.result)["samples"]
        if any(s.get("ok") for s in samples):
            return None
        errors = [str(s.get("error")) for s in samples if s.get("error")]
        return "no ok turn" + (f" (first error: {errors[0][:120]})" if errors else "")

    def unequal_work(self) -> str | None:
        """The unequal-work message of this run's ws vs http comparison, if flagged."""
        if self.kind == "certify":
            return None
        payload = latency_payload(self.result)
        for comp in payload.get("comparisons", []):
            if (comp.get("baseline_mode"), comp.get("mode")) == (SPEEDUP_BASELINE, RANK_MODE):
                flag = comp.get("unequal_work")
                if isinstance(flag, Mapping):
                    return str(flag.get("message"))
        for flag in payload.get("unequal_work", []):  # load results
            if flag.get("mode") == RANK_MODE:
                return str(flag.get("message"))
        if "comparisons" in payload and self.kind == "bench":  # older files: judge the samples
            flag = unequal_work(payload["samples"], SPEEDUP_BASELINE, RANK_MODE)
            return str(flag["message"]) if flag else None
        return None

    def work(self) -> dict[str, Any] | None:
        """The per-pair equal-work verdict of ws vs http: as recorded, else judged from the
        samples (older files); None for a run with no rollout pairs."""
        if self.kind != "bench":
            return None
        payload = latency_payload(self.result)
        for comp in payload.get("comparisons", []):
            pair = (comp.get("baseline_mode"), comp.get("mode"))
            if pair == (SPEEDUP_BASELINE, RANK_MODE) and isinstance(comp.get("work"), Mapping):
                return dict(comp["work"])
        rollouts = payload.get("rollouts") or []
        if not rollouts:
            return None
        return work_check(rollouts, payload["samples"], SPEEDUP_BASELINE, RANK_MODE)

    def rollout_counts(self) -> tuple[int, int]:
        """(failed rollouts, rollouts replayed) over every mode of a latency run."""
        if self.kind == "certify":
            return 0, 0
        rollouts = latency_payload(self.result).get("rollouts") or []
        return sum(1 for r in rollouts if not r.get("ok")), len(rollouts)

    def ok_turns(self) -> int:
        if self.kind == "certify":
            return 0
        return sum(1 for s in latency_payload(self.result)["samples"] if s.get("ok"))


@dataclasses.dataclass
class Spread:
    value: float
    low: float
    high: float
    runs: int


@dataclasses.dataclass
class Row:
    target: str
    bench_runs: list[Run] = dataclasses.field(default_factory=list)  # latency runs with data
    failed_runs: list[Run] = dataclasses.field(default_factory=list)
    certify_runs: list[Run] = dataclasses.field(default_factory=list)
    rank: int | None = None
    versions: list[str] = dataclasses.field(default_factory=list)
    ttft: LatencyHistogram | None = None
    ttft_p50: Spread | None = None
    ttft_p99: Spread | None = None
    ttft_legacy: bool = False  # TTFT from schema-v1 runs only (their mark: first output event)
    itl_p50: Spread | None = None
    turn_p50: Spread | None = None
    rollout_p50: Spread | None = None
    speedup: tuple[float, float | None, float | None] | None = None  # median, ci low, ci high
    speedup_pairs: int = 0
    speedup_spread: Spread | None = None
    unequal_work: str | None = None  # the flag's message: the speedup is not ranked
    work_pairs: int = 0  # rollout pairs judged (ws vs http, ok in both)
    equal_pairs: int = 0
    unequal_pairs: list[str] = dataclasses.field(default_factory=list)  # each named
    failed_rollouts: int = 0
    rollouts: int = 0
    ok_turns: int = 0
    fewer_turns_than: int | None = None  # the group's most ok turns, when this row has fewer
    conformance: dict[str, Any] | None = None
    conformance_missing: str | None = None  # why no certificate is shown

    @property
    def latest_certify(self) -> Run | None:
        if not self.certify_runs:
            return None
        return max(self.certify_runs, key=lambda r: parse_time(r.result["started_at"]))


@dataclasses.dataclass
class Group:
    """The runs of one kind and workload: ranked among themselves only."""

    key: str
    kind: str
    description: str
    rows: list[Row]

    @property
    def runs(self) -> list[Run]:
        return [r for row in self.rows for r in (*row.bench_runs, *row.failed_runs)]


@dataclasses.dataclass
class Board:
    groups: list[Group]
    certified_only: list[Row]  # implementations with a certificate and no latency run

    @property
    def rows(self) -> list[Row]:
        return [*(r for g in self.groups for r in g.rows), *self.certified_only]


# -- building ----------------------------------------------------------------------------------
def build_board(runs: Sequence[Run], *, seed: int = 0) -> Board:
    certify: dict[str, list[Run]] = {}
    grouped: dict[str, dict[str, Row]] = {}
    kinds: dict[str, tuple[str, str]] = {}
    for run in runs:
        if is_client_certificate(run.result):  # a client's: the board's clients section
            continue
        if run.kind == "certify":
            certify.setdefault(run.identity, []).append(run)
            continue
        key = workload_key(run.result)
        kinds.setdefault(key, (run.kind, describe_workload(run.result)))
        row = grouped.setdefault(key, {}).setdefault(run.identity, Row(target=run.identity))
        (row.failed_runs if run.failure else row.bench_runs).append(run)
    groups = []
    measured: set[str] = set()
    for key, rows in grouped.items():
        for row in rows.values():
            fill_row(row, seed=seed)
            join_conformance(row, certify.get(row.target, []))
            measured.add(row.target)
        most = max((row.ok_turns for row in rows.values()), default=0)
        for row in rows.values():
            row.fewer_turns_than = most if row.ok_turns < most else None
        kind, description = kinds[key]
        groups.append(Group(key, kind, description, rank(list(rows.values()))))
    groups.sort(key=lambda g: (g.kind, -len(g.rows), g.description))
    certified_only = []
    for name in sorted(set(certify) - measured):
        row = Row(target=name, certify_runs=certify[name])
        join_conformance(row, certify[name])
        certified_only.append(row)
    return Board(groups, certified_only)


def build_rows(runs: Sequence[Run], *, seed: int = 0) -> list[Row]:
    """Every row in displayed order: each group's, then the certified-only ones."""
    return build_board(runs, seed=seed).rows


def rank(rows: list[Row]) -> list[Row]:
    ranked = sorted(
        (r for r in rows if r.ttft_p50 is not None),
        key=lambda r: (r.ttft_p50.value if r.ttft_p50 else 0.0, r.target),
    )
    for i, r in enumerate(ranked, start=1):
        r.rank = i
    unranked = sorted((r for r in rows if r.ttft_p50 is None), key=lambda r: r.target)
    return ranked + unranked


def _mode_set(result: Mapping[str, Any], mode: str) -> MetricSet | None:
    entry = latency_payload(result)["modes"].get(mode)
    return MetricSet.from_dict(entry) if entry else None


def _spread(per_run: list[float], pooled: float) -> Spread:
    return Spread(pooled, min(per_run), max(per_run), len(per_run))


def fill_row(row: Row, *, seed: int = 0) -> None:
    """The row's latency columns and speedup from its runs with data."""
    row.versions = sorted({v for r in row.bench_runs if (v := r.version)})
    merged = MetricSet()
    per_run: dict[str, list[float]] = {k: [] for k in ("ttft50", "ttft99", "itl50", "turn50")}
    per_run["e2e50"] = []
    # never pool two TTFT definitions: the current one wins, v1 runs only when alone
    current = [r for r in row.bench_runs if ttft_definition(r.result) == TTFT_DEFINITION]
    ttft_runs = current or row.bench_runs
    row.ttft_legacy = bool(row.bench_runs) and not current
    ttft_merged = MetricSet()
    for run in row.bench_runs:
        ms = _mode_set(run.result, RANK_MODE)
        if ms is None:
            continue
        merged.merge(ms)
        if run in ttft_runs and "ttft_ms" in ms and ms["ttft_ms"].count:
            ttft_merged.histogram("ttft_ms").merge(ms["ttft_ms"])
            per_run["ttft50"].append(ms["ttft_ms"].percentile_ms(50))
            per_run["ttft99"].append(ms["ttft_ms"].percentile_ms(99))
        for metric, key in (("itl_ms", "itl50"), ("turn_e2e_ms", "turn50")):
            if metric in ms and ms[metric].count:
                per_run[key].append(ms[metric].percentile_ms(50))
        if "rollout_e2e_ms" in ms and ms["rollout_e2e_ms"].count:
            per_run["e2e50"].append(ms["rollout_e2e_ms"].percentile_ms(50))
    if "ttft_ms" in ttft_merged:
        row.ttft = ttft_merged["ttft_ms"]
        row.ttft_p50 = _spread(per_run["ttft50"], row.ttft.percentile_ms(50))
        row.ttft_p99 = _spread(per_run["ttft99"], row.ttft.percentile_ms(99))
    for metric, key, attr in (
        ("itl_ms", "itl50", "itl_p50"),
        ("turn_e2e_ms", "turn50", "turn_p50"),
        ("rollout_e2e_ms", "e2e50", "rollout_p50"),
    ):
        if metric in merged and merged[metric].count and per_run[key]:
            setattr(row, attr, _spread(per_run[key], merged[metric].percentile_ms(50)))
    for run in [*row.bench_runs, *row.failed_runs]:
        failed, total = run.rollout_counts()
        row.failed_rollouts += failed
        row.rollouts += total
        row.ok_turns += run.ok_turns()
    _fill_speedup(row, seed)


def _equal_payload(run: Run, row: Row) -> dict[str, Any]:
    """The run's payload without its unequal pairs (counted and named on `row`)."""
    payload = latency_payload(run.result)
    check = run.work()
    if check is None:
        return payload
    row.work_pairs += int(check["pairs"])
    row.equal_pairs += int(check["equal_pairs"])
    label = run.result.get("label")
    for pair in check["unequal"]:
        ratio = pair.get("ratio")
        turns = (pair["mode_turns"], pair["baseline_turns"])
        what = (
            f"{turns[0]} vs {turns[1]} turns"
            if turns[0] != turns[1]
            else f"input/turn {RANK_MODE}/{SPEEDUP_BASELINE} {ratio:.2f}"
            if ratio is not None
            else "input not comparable"
        )
        row.unequal_pairs.append(f"{pair['rollout_id']} ({label}: {what})")
    rollouts, samples = equal_work_records(
        payload.get("rollouts") or [],
        payload["samples"],
        SPEEDUP_BASELINE,
        RANK_MODE,
        check["unequal"],
    )
    return {**payload, "rollouts": rollouts, "samples": samples}


def _fill_speedup(row: Row, seed: int) -> None:
    flags = [flag for r in row.bench_runs if (flag := r.unequal_work())]
    equal_payloads = {id(r): _equal_payload(r, row) for r in row.bench_runs}
    if flags:
        row.unequal_work = flags[0]
        return
    ratios: list[float] = []
    run_speedups: list[float] = []
    for run in row.bench_runs:
        if run.kind != "bench":
            continue
        pairs = paired_speedups(equal_payloads[id(run)], SPEEDUP_BASELINE, RANK_MODE)
        if pairs:
            ratios += pairs
            run_speedups.append(stats.median(pairs))
    if not ratios:  # files that carry comparisons but no paired rollouts
        _fill_speedup_from_comparisons(row)
        return
    row.speedup_pairs = len(ratios)
    if len(ratios) >= MIN_INTERVAL_PAIRS:
        row.speedup = stats.bootstrap_percentile_ci(ratios, 50, seed=seed)
    elif ratios:
        row.speedup = (stats.median(ratios), None, None)
    if run_speedups and row.speedup is not None:
        row.speedup_spread = _spread(run_speedups, row.speedup[0])


def _fill_speedup_from_comparisons(row: Row) -> None:
    """The median of the runs' own ws-vs-http speedups; one run's interval only when it had
    enough pairs for one."""
    comps = [
        c
        for r in row.bench_runs
        for c in latency_payload(r.result).get("comparisons", [])
        if (c.get("baseline_mode"), c.get("mode")) == (SPEEDUP_BASELINE, RANK_MODE)
        and c.get("speedup_median") is not None
    ]
    if not comps:
        return
    medians = [float(c["speedup_median"]) for c in comps]
    pairs = sum(int(c.get("pairs") or 0) for c in comps)
    row.speedup_pairs = pairs
    ci = comps[0].get("ci95") if len(comps) == 1 and pairs >= MIN_INTERVAL_PAIRS else None
    low, high = (float(ci[0]), float(ci[1])) if ci else (None, None)
    row.speedup = (stats.median(medians), low, high)
    if len(medians) > 1:
        row.speedup_spread = _spread(medians, row.speedup[0])


def join_conformance(row: Row, certify_runs: Sequence[Run]) -> None:
    """The latest certificate of the row's implementation, or why there is none to show."""
    row.certify_runs = list(certify_runs)
    latest = row.latest_certify
    if latest is None:
        row.conformance_missing = f"no certify run of {row.target}"
        return
    measured = {n for v in row.versions if (n := version_number(v)) is not None}
    certified = version_number(latest.version)
    if measured and certified and certified not in measured:
        row.conformance_missing = (
            f"the certificate is of version {certified}, the runs of {', '.join(sorted(measured))}"
        )
        return
    row.conformance = conformance_counts(latest.result)


def conformance_counts(result: Mapping[str, Any]) -> dict[str, Any]:
    """MUST/SHOULD passed of the cases run (UNIMPLEMENTED ones were not applicable) and the
    declared upstream, so a gateway's row says what stood behind it."""
    summary = result["certify"]["summary"]
    cases = result["certify"]["cases"]
    counts: dict[str, Any] = {"upstream": str(result.get("config", {}).get("upstream") or "")}
    for level in ("must", "should"):
        skipped = sum(
            1 for c in cases if c["level"] == level.upper() and c["verdict"] == "UNIMPLEMENTED"
        )
        counts[f"{level}_passed"] = summary[f"{level}_passed"]
        counts[f"{level}_total"] = summary[f"{level}_total"] - skipped
    return counts


def collect_inputs(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; directories contribute every *.json below them (dot files skipped)."""
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files += [
                f
                for f in sorted(p.rglob("*.json"))
                if not any(part.startswith(".") for part in f.relative_to(p).parts)
            ]
        else:
            files.append(p)
    return list(dict.fromkeys(files))
