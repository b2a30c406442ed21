"""`wsmode board`: a static latency leaderboard from results files.

One row per implementation (target name), ranked by TTFT p50 in `ws` mode. Latency columns come
from the HdrHistograms of all bench runs of a target merged together (so a distributed run, whose
histograms were merged from its workers, ranks the same way as a single-process one); when a
target has several runs, the min–max of the per-run values is shown as its spread. The WS speedup
is the median of the per-rollout e2e ratios http/ws over all runs, with a bootstrap 95 % interval.
Conformance is taken from the latest certify result of the same target.

Writes OUT/index.html (self-contained: inline CSS and SVG, no JS, nothing fetched),
OUT/leaderboard.md, and a copy of every input file under OUT/results/ that the rows link to.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from harness.report.gate import paired_speedups
from harness.report.svg import Bar, Series, bar_chart, cdf_chart, fmt_ms
from harness.results import stats
from harness.results.histograms import LatencyHistogram, MetricSet
from harness.results.page import html_page
from harness.results.schema import (
    SCHEMA_VERSION,
    TTFT_DEFINITIONS,
    ResultsSchemaError,
    load_result,
    parse_time,
    ttft_definition,
)
from harness.results.store import slug, timestamp_slug

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


@dataclasses.dataclass
class Spread:
    value: float
    low: float
    high: float
    runs: int


@dataclasses.dataclass
class Row:
    target: str
    bench_runs: list[Run] = dataclasses.field(default_factory=list)
    certify_runs: list[Run] = dataclasses.field(default_factory=list)
    rank: int | None = None
    ttft: LatencyHistogram | None = None
    ttft_p50: Spread | None = None
    ttft_p99: Spread | None = None
    ttft_legacy: bool = False  # TTFT from schema-v1 runs only (their mark: first output event)
    itl_p50: Spread | None = None
    rollout_p50: Spread | None = None
    speedup: tuple[float, float | None, float | None] | None = None  # median, ci low, ci high
    speedup_spread: Spread | None = None
    conformance: dict[str, int] | None = None

    @property
    def latest_certify(self) -> Run | None:
        if not self.certify_runs:
            return None
        return max(self.certify_runs, key=lambda r: parse_time(r.result["started_at"]))


# -- building ----------------------------------------------------------------------------------
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


def _mode_set(result: Mapping[str, Any], mode: str) -> MetricSet | None:
    entry = result["bench"]["modes"].get(mode)
    return MetricSet.from_dict(entry) if entry else None


def _spread(per_run: list[float], pooled: float) -> Spread:
    return Spread(pooled, min(per_run), max(per_run), len(per_run))


def build_rows(runs: Sequence[Run], *, seed: int = 0) -> list[Row]:
    rows: dict[str, Row] = {}
    for run in runs:
        name = run.result["target"]["name"]
        row = rows.setdefault(name, Row(target=name))
        (row.bench_runs if run.result["kind"] == "bench" else row.certify_runs).append(run)

    for row in rows.values():
        merged = MetricSet()
        per_run: dict[str, list[float]] = {k: [] for k in ("ttft50", "ttft99", "itl50", "e2e50")}
        ratios: list[float] = []
        run_speedups: list[float] = []
        # never pool two TTFT definitions: the current one wins, v1 runs only when alone
        current = [r for r in row.bench_runs if ttft_definition(r.result) == TTFT_DEFINITION]
        ttft_runs = current or row.bench_runs
        row.ttft_legacy = bool(row.bench_runs) and not current
        ttft_merged = MetricSet()
        for run in row.bench_runs:
            ms = _mode_set(run.result, RANK_MODE)
            if ms is not None:
                merged.merge(ms)
                if run in ttft_runs and "ttft_ms" in ms and ms["ttft_ms"].count:
                    ttft_merged.histogram("ttft_ms").merge(ms["ttft_ms"])
                    per_run["ttft50"].append(ms["ttft_ms"].percentile_ms(50))
                    per_run["ttft99"].append(ms["ttft_ms"].percentile_ms(99))
                if "itl_ms" in ms and ms["itl_ms"].count:
                    per_run["itl50"].append(ms["itl_ms"].percentile_ms(50))
                if "rollout_e2e_ms" in ms and ms["rollout_e2e_ms"].count:
                    per_run["e2e50"].append(ms["rollout_e2e_ms"].percentile_ms(50))
            bench = run.result["bench"]
            pairs = paired_speedups(bench, SPEEDUP_BASELINE, RANK_MODE)
            if pairs:
                ratios += pairs
                run_speedups.append(stats.median(pairs))
            else:
                for comp in bench["comparisons"]:
                    if (comp["baseline_mode"], comp["mode"]) == (SPEEDUP_BASELINE, RANK_MODE):
                        if comp["speedup_median"] is not None:
                            run_speedups.append(float(comp["speedup_median"]))
                        break
        if "ttft_ms" in ttft_merged:
            row.ttft = ttft_merged["ttft_ms"]
            row.ttft_p50 = _spread(per_run["ttft50"], row.ttft.percentile_ms(50))
            row.ttft_p99 = _spread(per_run["ttft99"], row.ttft.percentile_ms(99))
        if "itl_ms" in merged and merged["itl_ms"].count:
            row.itl_p50 = _spread(per_run["itl50"], merged["itl_ms"].percentile_ms(50))
        if "rollout_e2e_ms" in merged and merged["rollout_e2e_ms"].count:
            row.rollout_p50 = _spread(per_run["e2e50"], merged["rollout_e2e_ms"].percentile_ms(50))
        if ratios:
            row.speedup = stats.bootstrap_percentile_ci(ratios, 50, seed=seed)
        elif run_speedups:
            single = _single_comparison_ci(row.bench_runs) if len(run_speedups) == 1 else None
            row.speedup = (stats.median(run_speedups), *(single or (None, None)))
        if run_speedups:
            row.speedup_spread = _spread(run_speedups, row.speedup[0] if row.speedup else 0.0)
        latest = row.latest_certify
        if latest is not None:
            row.conformance = _conformance_counts(latest.result)

    ranked = sorted(
        (r for r in rows.values() if r.ttft_p50 is not None),
        key=lambda r: (r.ttft_p50.value if r.ttft_p50 else 0.0, r.target),
    )
    for i, r in enumerate(ranked, start=1):
        r.rank = i
    unranked = sorted((r for r in rows.values() if r.ttft_p50 is None), key=lambda r: r.target)
    return ranked + unranked


def _conformance_counts(result: Mapping[str, Any]) -> dict[str, Any]:
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


def _single_comparison_ci(runs: Sequence[Run]) -> tuple[float, float] | None:
    for run in runs:
        for comp in run.result["bench"]["comparisons"]:
            if (comp["baseline_mode"], comp["mode"]) == (SPEEDUP_BASELINE, RANK_MODE):
                ci = comp.get("ci95")
                if ci:
                    return float(ci[0]), float(ci[1])
    return None


# -- formatting --------------------------------------------------------------------------------
def _ms(spread: Spread | None) -> str:
    if spread is None:
        return "—"
    text = f"{fmt_ms(spread.value)} ms"
    if spread.runs > 1:
        text += f" ({fmt_ms(spread.low)}–{fmt_ms(spread.high)})"
    return text


def _speedup(row: Row) -> str:
    if row.speedup is None:
        return "—"
    median, lo, hi = row.speedup
    text = f"{median:.2f}×"
    if lo is not None and hi is not None:
        text += f" [{lo:.2f}–{hi:.2f}]"
    spread = row.speedup_spread
    if spread is not None and spread.runs > 1:
        text += f" ({spread.low:.2f}–{spread.high:.2f})"
    return text


def _conformance(row: Row) -> str:
    c = row.conformance
    if c is None:
        return "—"
    text = (
        f"MUST {c['must_passed']}/{c['must_total']} · SHOULD {c['should_passed']}/"
        f"{c['should_total']} run"
    )
    return text + (f" (upstream: {c['upstream']})" if c.get("upstream") else "")


def _environment_notes(runs: Sequence[Run]) -> list[str]:
    bench = [r.result for r in runs if r.result["kind"] == "bench"]
    notes = []
    for label, values in (
        ("profiles", {str(r["profile"]) for r in bench}),
        ("time scales", {str(r["bench"]["time_scale"]) for r in bench}),
        ("CPUs", {str(r["machine"]["cpu_model"]) for r in bench}),
    ):
        if len(values) > 1:
            notes.append(f"Runs differ in {label}: {', '.join(sorted(values))}.")
    return notes


_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1400px;padding:0 1rem;color:#222}
h1{margin-bottom:.2rem}.sub{color:#666;margin-top:0}
table{border-collapse:collapse;width:100%;margin:1rem 0;font-size:14px}
th,td{border-bottom:1px solid #ddd;padding:6px 6px;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.unranked td{color:#777}.note{background:#fff8e1;padding:6px 10px;border-left:3px solid #f0b400}
details{margin:.4rem 0}pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px}
.links{font-size:12px;white-space:nowrap}td.conf{white-space:nowrap}td.sp{white-space:normal}
.run{margin:.3rem 0;padding:2px 4px}.run:target{background:#fff3c4}
.plots svg{display:block;margin:1rem 0;max-width:100%;height:auto}
"""

_COLUMNS = (
    "Rank",
    "Implementation",
    "TTFT p50",
    "TTFT p99",
    "ITL p50",
    "Rollout e2e p50",
    "WS speedup (95% CI)",
    "Conformance",
    "Runs",
)


def _cells(row: Row) -> list[str]:
    return [
        str(row.rank) if row.rank is not None else "—",
        row.target,
        _ms(row.ttft_p50) + (" †" if row.ttft_legacy else ""),
        _ms(row.ttft_p99) + (" †" if row.ttft_legacy else ""),
        _ms(row.itl_p50),
        _ms(row.rollout_p50),
        _speedup(row),
        _conformance(row),
        str(len(row.bench_runs)),
    ]


def render_html(rows: Sequence[Row], runs: Sequence[Run], *, title: str) -> str:
    out = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">Ranked by time to first token, median, in <code>{RANK_MODE}</code> mode. '
        "Values in parentheses are the min–max across repeat runs; the speedup is the median "
        f"per-rollout end-to-end ratio {SPEEDUP_BASELINE}/{RANK_MODE} with a bootstrap 95% "
        "interval. Conformance is the latest certify run: MUST and SHOULD cases passed of those "
        "run (not-applicable cases left out).</p>",
    ]
    out += [f'<p class="note">{escape(n)}</p>' for n in _environment_notes(runs)]
    if any(r.ttft_legacy for r in rows):
        out.append(
            '<p class="note">† only schema-v1 results: their TTFT is the time to the first '
            "output event (an item announcement counts), not to the first token.</p>"
        )
    out.append('<table id="leaderboard"><thead><tr>')
    out += [f"<th>{escape(c)}</th>" for c in _COLUMNS]
    out.append("<th>Details</th></tr></thead><tbody>")
    for row in rows:
        cls = "ranked" if row.rank is not None else "unranked"
        out.append(f'<tr class="{cls}" data-target="{escape(row.target)}">')
        for i, cell in enumerate(_cells(row)):
            klass = ' class="num"' if i in (0, 2, 3, 4, 5, 6, 8) else ""
            klass = ' class="conf"' if i == 7 else klass
            klass = ' class="num sp"' if i == 6 else klass
            out.append(f"<td{klass}>{escape(cell)}</td>")
        links = [
            f'<a href="results/{escape(r.copy_name)}">'
            f"{'' if r.result['kind'] == 'bench' else 'certify: '}{escape(r.result['label'])}</a>"
            f' (<a href="#{escape(r.anchor)}">env</a>)'
            for r in [*row.bench_runs, *row.certify_runs]
        ]
        out.append(f'<td class="links">{"<br>".join(links)}</td></tr>')
    out.append("</tbody></table>")

    ranked = [r for r in rows if r.ttft_p50 is not None]
    if ranked:
        bars = [
            Bar(
                r.target,
                r.ttft_p50.value,
                r.ttft_p50.low if r.ttft_p50.runs > 1 else None,
                r.ttft_p50.high if r.ttft_p50.runs > 1 else None,
            )
            for r in ranked
            if r.ttft_p50 is not None
        ]
        series = [Series(r.target, _cdf_points(r.ttft)) for r in ranked if r.ttft is not None]
        out.append('<section class="plots"><h2>Plots</h2>')
        out.append(bar_chart(bars, title="TTFT p50 (ws), whiskers: min–max across runs"))
        out.append(cdf_chart(series, title="TTFT distribution (ws), all runs merged"))
        out.append("</section>")

    out.append("<h2>Runs</h2>")
    for run in runs:
        r = run.result
        env = {
            "target": r["target"],
            "profile": r["profile"],
            "started_at": r["started_at"],
            "ended_at": r["ended_at"],
            "harness": r["harness"],
            "machine": r["machine"],
        }
        if r["kind"] == "bench":
            env["time_scale"] = r["bench"]["time_scale"]
        out.append(
            f'<div class="run" id="{escape(run.anchor)}"><details><summary>'
            f"{escape(r['target']['name'])} — "
            f"{escape(r['kind'])} <b>{escape(r['label'])}</b> ({escape(r['started_at'])}) · "
            f'<a href="results/{escape(run.copy_name)}">raw JSON</a></summary>'
            f"<h4>Environment</h4><pre>{escape(json.dumps(env, indent=2))}</pre>"
            f"<h4>Config</h4><pre>{escape(json.dumps(r['config'], indent=2))}</pre></details></div>"
        )
    return html_page(title=title, css=_CSS, body=out)


def _cdf_points(hist: LatencyHistogram | None) -> list[tuple[float, float]]:
    return hist.cdf_ms() if hist is not None else []


def render_markdown(rows: Sequence[Row], runs: Sequence[Run], *, title: str) -> str:
    lines = [f"# {title}", "", f"Ranked by TTFT p50 in `{RANK_MODE}` mode.", ""]
    lines += [f"> {n}" for n in _environment_notes(runs)]
    lines.append("| " + " | ".join((*_COLUMNS, "Raw")) + " |")
    lines.append("|" + "---|" * (len(_COLUMNS) + 1))
    for row in rows:
        cells = [c.replace("|", "\\|") for c in _cells(row)]
        raw = ", ".join(
            f"[{r.result['kind']} {r.result['label']}](results/{r.copy_name})"
            for r in [*row.bench_runs, *row.certify_runs]
        )
        lines.append("| " + " | ".join([*cells, raw.replace("|", "\\|")]) + " |")
    return "\n".join(lines) + "\n"


# -- writing -----------------------------------------------------------------------------------
def load_runs(paths: Iterable[str | Path]) -> list[Run]:
    runs = []
    for path in collect_inputs(paths):
        runs.append(Run(source=path, result=load_result(path)))
    runs.sort(key=lambda r: (parse_time(r.result["started_at"]), str(r.source)))
    used: set[str] = set()
    for i, run in enumerate(runs, start=1):
        r = run.result
        base = (
            f"{r['kind']}-{slug(r['target']['name'])}-{timestamp_slug(r['started_at'])}-"
            f"{slug(r['label'])}"
        )
        name, n = f"{base}.json", 1
        while name in used:
            n += 1
            name = f"{base}-{n}.json"
        used.add(name)
        run.copy_name = name
        run.anchor = f"run-{i}"
    return runs


def write_board(
    paths: Iterable[str | Path], out_dir: str | Path, *, title: str = "wsmode latency leaderboard"
) -> list[Row]:
    """Render the board for `paths` into `out_dir`; returns the rows in displayed order."""
    runs = load_runs(paths)
    if not runs:
        raise ResultsSchemaError("no results files given")
    rows = build_rows(runs)
    out = Path(out_dir)
    (out / "results").mkdir(parents=True, exist_ok=True)
    for run in runs:
        shutil.copyfile(run.source, out / "results" / run.copy_name)
    (out / "index.html").write_text(render_html(rows, runs, title=title), encoding="utf-8")
    (out / "leaderboard.md").write_text(render_markdown(rows, runs, title=title), encoding="utf-8")
    return rows
