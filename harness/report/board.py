"""`wsmode board`: a static latency leaderboard from results files.

Runs are grouped by kind and workload (`harness.report.board_rows`): each group is a table of
its own, ranked by TTFT p50 in `ws` mode, and nothing is pooled across groups (a load run never
with a bench run, nor two concurrencies). One row per implementation: its canonical name (one
server, one name) and version; latency columns from the HdrHistograms of its runs merged, the
min–max across runs as the spread; the WS speedup (median per-rollout e2e ratio http/ws with a
bootstrap 95 % interval from 5 pairs on) unless a run was flagged *unequal work*; conformance
from the latest certify run of the same implementation, or why there is none. Failed runs (no
ok turn) are listed and marked, never counted as data.

Writes OUT/index.html (self-contained: inline CSS and SVG, no JS, nothing fetched; the table
fits a 1,280 px window), OUT/leaderboard.md, and a copy of every input file under OUT/results/
that the rows link to.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path

from harness.report.board_clients import render_clients_html, render_clients_markdown
from harness.report.board_rows import (
    RANK_MODE,
    SPEEDUP_BASELINE,
    Board,
    Group,
    Row,
    Run,
    Spread,
    build_board,
    build_rows,
    collect_inputs,
)
from harness.report.svg import Bar, Series, bar_chart, cdf_chart, fmt_ms
from harness.results.histograms import LatencyHistogram
from harness.results.identity import version_number
from harness.results.page import html_page
from harness.results.schema import REPORT_DROP, ResultsSchemaError, load_result, parse_time
from harness.results.slo import pooled_goodput
from harness.results.store import slug, timestamp_slug
from harness.results.workload import latency_payload

__all__ = ["Row", "Run", "build_rows", "load_runs", "render_html", "render_markdown", "write_board"]


# -- cells -------------------------------------------------------------------------------------
def _ms(spread: Spread | None) -> str:
    if spread is None:
        return "—"
    text = f"{fmt_ms(spread.value)} ms"
    if spread.runs > 1:
        text += f" ({fmt_ms(spread.low)}–{fmt_ms(spread.high)})"
    return text


def _speedup(row: Row) -> str:
    if row.unequal_work:
        return "unequal work"
    if row.speedup is None:
        return "—"
    median, lo, hi = row.speedup
    text = f"{median:.2f}×"
    if lo is not None and hi is not None:
        text += f" [{lo:.2f}–{hi:.2f}]"
    else:
        noun = "pair" if row.speedup_pairs == 1 else "pairs"
        text += f" ({row.speedup_pairs} {noun}: no interval)"
    spread = row.speedup_spread
    if spread is not None and spread.runs > 1:
        text += f" ({spread.low:.2f}–{spread.high:.2f})"
    if row.work_pairs:
        text += f" · {row.equal_pairs} of {row.work_pairs} pairs equal work"
    return text


def _marks(row: Row) -> str:
    """What the row's figures rest on and what failed: ok turns, failed rollouts, unequal
    pairs ('ok' when nothing did)."""
    if not row.rollouts:
        return "—"
    marks = []
    if row.failed_rollouts:
        marks.append(f"{row.failed_rollouts} of {row.rollouts} rollouts failed")
    unequal = row.work_pairs - row.equal_pairs
    if unequal:
        marks.append(f"{unequal} unequal pair{'s' if unequal > 1 else ''}")
    if row.fewer_turns_than is not None:
        marks.append(f"{row.ok_turns} ok turns (another row: {row.fewer_turns_than})")
    return "; ".join(marks) if marks else f"ok: {row.ok_turns} turns (all modes), none failed"


def _flagged(row: Row) -> bool:
    return bool(row.failed_rollouts or row.work_pairs != row.equal_pairs or row.fewer_turns_than)


def _certificate_marks(run: Run) -> str:
    """Marks a certificate carries beside its counts (the place for a partial run's mark)."""
    certify = run.result["certify"]
    marks = " (stopped early)" if certify.get("stopped") else ""
    partial = certify.get("partial")  # MUST cases not run: certify's summary.partial_of
    if isinstance(partial, dict):
        marks += f" · partial: {partial['must_not_run']} MUST not run"
    return marks


def _conformance(row: Row) -> str:
    c = row.conformance
    if c is None:
        return f"missing: {row.conformance_missing}" if row.conformance_missing else "—"
    text = (
        f"MUST {c['must_passed']}/{c['must_total']} · SHOULD {c['should_passed']}/"
        f"{c['should_total']} run"
    )
    latest = row.latest_certify
    text += _certificate_marks(latest) if latest is not None else ""
    return text + (f" (upstream: {c['upstream']})" if c.get("upstream") else "")


def _implementation(row: Row) -> str:
    versions = list(dict.fromkeys(version_number(v) or v for v in row.versions))
    return row.target + (f" ({', '.join(versions)})" if versions else "")


def _runs(row: Row) -> str:
    failed = f" (+{len(row.failed_runs)} failed)" if row.failed_runs else ""
    return f"{len(row.bench_runs)}{failed}"


_COLUMNS = (
    "Rank",
    "Implementation",
    "TTFT p50",
    "TTFT p99",
    "ITL p50",
    "Turn e2e p50",
    "Rollout e2e p50",
    "WS speedup (95% CI)",
    "Failures, work",
    "Conformance",
    "Runs",
)
_NUMERIC = frozenset({0, 2, 3, 4, 5, 6, 7, 10})


def _cells(row: Row) -> list[str]:
    legacy = " †" if row.ttft_legacy else ""
    return [
        str(row.rank) if row.rank is not None else "—",
        _implementation(row),
        _ms(row.ttft_p50) + legacy,
        _ms(row.ttft_p99) + legacy,
        _ms(row.itl_p50),
        _ms(row.turn_p50),
        _ms(row.rollout_p50),
        _speedup(row),
        _marks(row),
        _conformance(row),
        _runs(row),
    ]


def _environment_notes(runs: Sequence[Run]) -> list[str]:
    latency = [r.result for r in runs if r.kind != "certify"]
    notes = []
    for label, values in (("CPUs", {str(r["machine"]["cpu_model"]) for r in latency}),):
        if len(values) > 1:
            notes.append(f"Runs differ in {label}: {', '.join(sorted(values))}.")
    return notes


# -- HTML ----------------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1240px;padding:0 1rem;color:#222}
h1{margin-bottom:.2rem}.sub{color:#666;margin-top:0}h2{margin-top:2rem}
table{border-collapse:collapse;width:100%;margin:1rem 0;font-size:13px}
th,td{border-bottom:1px solid #ddd;padding:5px 4px;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.unranked td{color:#777}.note{background:#fff8e1;padding:6px 10px;border-left:3px solid #f0b400}
.flag{color:#a40000;font-weight:600}.failed{color:#a40000}
details{margin:.4rem 0}pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px}
.links{font-size:12px;overflow-wrap:anywhere}td.conf{min-width:9rem}
.run{margin:.3rem 0;padding:2px 4px}.run:target{background:#fff3c4}
.plots svg{display:block;margin:1rem 0;max-width:100%;height:auto}
"""


def _row_html(row: Row) -> list[str]:
    cls = "ranked" if row.rank is not None else "unranked"
    out = [f'<tr class="{cls}" data-target="{escape(row.target)}">']
    for i, cell in enumerate(_cells(row)):
        klass = "num" if i in _NUMERIC else "conf" if _COLUMNS[i] == "Conformance" else ""
        if cell in ("unequal work",) or cell.startswith("missing:"):
            klass += " flag"
        if _COLUMNS[i] == "Failures, work" and _flagged(row):
            klass += " flag"
        attr = f' class="{klass.strip()}"' if klass.strip() else ""
        title = ""
        if _COLUMNS[i].startswith("WS speedup") and row.unequal_work:
            title = f' title="{escape(row.unequal_work)}"'
        out.append(f"<td{attr}{title}>{escape(cell)}</td>")
    links = [
        f'<a href="results/{escape(r.copy_name)}">'
        f"{'certify: ' if r.kind == 'certify' else ''}{escape(r.result['label'])}</a>"
        f"{' <span class=failed>(failed)</span>' if r.failure else ''}"
        f' (<a href="#{escape(r.anchor)}">env</a>)'
        for r in [*row.bench_runs, *row.failed_runs, *row.certify_runs]
    ]
    out.append(f'<td class="links">{"<br>".join(links)}</td></tr>')
    return out


def _table_html(rows: Sequence[Row], table_id: str) -> list[str]:
    out = [f'<table id="{escape(table_id)}" class="board"><thead><tr>']
    out += [f"<th>{escape(c)}</th>" for c in _COLUMNS]
    out.append("<th>Details</th></tr></thead><tbody>")
    for row in rows:
        out += _row_html(row)
    out.append("</tbody></table>")
    return out


def _group_notes(group: Group) -> list[str]:
    notes = []
    for row in group.rows:
        if row.unequal_work:
            notes.append(f"{row.target}: {row.unequal_work}.")
        if row.failed_rollouts:
            notes.append(
                f"{row.target}: {row.failed_rollouts} of {row.rollouts} rollouts failed; its "
                "figures rest on the others (the raw files name each error)."
            )
        if row.unequal_pairs:
            notes.append(
                f"{row.target}: {len(row.unequal_pairs)} of {row.work_pairs} rollout pairs did "
                "not do equal work, left out of its speedup: " + "; ".join(row.unequal_pairs) + "."
            )
        if row.fewer_turns_than is not None:
            notes.append(
                f"{row.target}: rests on {row.ok_turns} ok turns, fewer than another row's "
                f"{row.fewer_turns_than}."
            )
        for run in row.failed_runs:
            notes.append(f"{row.target}: run {run.result['label']} failed ({run.failure}).")
        goodput = pooled_goodput((latency_payload(r.result) for r in row.bench_runs), RANK_MODE)
        if goodput:  # --slo runs (harness.results.slo)
            notes.append(f"{row.target}: goodput in {RANK_MODE} {goodput}.")
    return notes


def _groups_html(board: Board) -> list[str]:
    out = []
    for i, group in enumerate(board.groups, start=1):
        table_id = "leaderboard" if i == 1 else f"leaderboard-{i}"
        out.append(f"<h2>{escape(group.kind.capitalize())} workload {i}</h2>")
        out.append(f'<p class="sub">{escape(group.description)}</p>')
        out += [f'<p class="note">{escape(n)}</p>' for n in _group_notes(group)]
        out += _table_html(group.rows, table_id)
    return out


def _certified_only_html(board: Board) -> list[str]:
    if not board.certified_only:
        return []
    out = ["<h2>Certified, no latency run</h2>"]
    return out + _table_html(board.certified_only, "certified-only")


def _plots_html(board: Board) -> list[str]:
    out = []
    for i, group in enumerate(board.groups, start=1):
        ranked = [r for r in group.rows if r.ttft_p50 is not None]
        if not ranked:
            continue
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
        suffix = "" if len(board.groups) == 1 else f", workload {i}"
        out.append(
            bar_chart(bars, title=f"TTFT p50 ({RANK_MODE}{suffix}), whiskers: min–max across runs")
        )
        out.append(
            cdf_chart(series, title=f"TTFT distribution ({RANK_MODE}{suffix}), all runs merged")
        )
    return ['<section class="plots"><h2>Plots</h2>', *out, "</section>"] if out else []


def _runs_html(runs: Sequence[Run]) -> list[str]:
    out = ["<h2>Runs</h2>"]
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
        failed = (
            f" · <span class=failed>FAILED: {escape(run.failure)}</span>" if run.failure else ""
        )
        out.append(
            f'<div class="run" id="{escape(run.anchor)}"><details><summary>'
            f"{escape(run.identity)} — "
            f"{escape(run.kind)} <b>{escape(r['label'])}</b> ({escape(r['started_at'])}){failed} · "
            f'<a href="results/{escape(run.copy_name)}">raw JSON</a></summary>'
            f"<h4>Environment</h4><pre>{escape(json.dumps(env, indent=2))}</pre>"
            f"<h4>Config</h4><pre>{escape(json.dumps(r['config'], indent=2))}</pre></details></div>"
        )
    return out


def _reading() -> str:
    """How to read a table: the same words above the HTML and the Markdown board."""
    return (
        "One table per workload (kind, rollouts or request shape, profile, model, modes, "
        "concurrency): rows are compared within a table only. Ranked by time to first token, "
        f"median, in {RANK_MODE} mode. A latency is read from the row's runs merged; in "
        "parentheses the min–max of the same figure run by run (a tail percentile of small runs "
        "can lie outside it: merged, more samples reach further into the tail). ITL is the gap "
        "between content events as the client read them: 0 when a reply's events arrive in one "
        "read. The speedup is "
        f"the median per-rollout end-to-end ratio {SPEEDUP_BASELINE}/{RANK_MODE} with a "
        "bootstrap 95% interval (from 5 pairs on), over the rollout pairs that did equal work "
        "(same turns, input per turn within 5%; their count beside it), shown as unequal work "
        "when the ws turns carried far less input than the http ones. Failures, work: the "
        "rollouts that failed (of all replayed, every mode), the unequal pairs, and ok turns "
        "(every mode) fewer than another row's. "
        "Conformance is the latest certify run of the "
        "same implementation: MUST and SHOULD cases passed of those run (not-applicable cases "
        "left out). Failed runs are marked, not counted."
    )


def _intro_html(title: str, runs: Sequence[Run]) -> list[str]:
    out = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">{escape(_reading())}</p>',
    ]
    out += [f'<p class="note">{escape(n)}</p>' for n in _environment_notes(runs)]
    return out


def render_html(board: Board, runs: Sequence[Run], *, title: str) -> str:
    body = _intro_html(title, runs)
    if any(r.ttft_legacy for r in board.rows):
        body.append(
            '<p class="note">† only schema-v1 results: their TTFT is the time to the first '
            "output event (an item announcement counts), not to the first token.</p>"
        )
    # each section its own function, in page order
    for section in (
        _groups_html(board),
        _certified_only_html(board),
        render_clients_html(runs),  # client certificates (wsmode certify-client)
        _plots_html(board),
    ):
        body += section
    body += _runs_html(runs)
    return html_page(title=title, css=_CSS, body=body)


def _cdf_points(hist: LatencyHistogram | None) -> list[tuple[float, float]]:
    return hist.cdf_ms() if hist is not None else []


# -- Markdown ------------------------------------------------------------------------------------
def _markdown_table(rows: Sequence[Row]) -> list[str]:
    lines = ["| " + " | ".join((*_COLUMNS, "Raw")) + " |", "|" + "---|" * (len(_COLUMNS) + 1)]
    for row in rows:
        cells = [c.replace("|", "\\|") for c in _cells(row)]
        raw = ", ".join(
            f"[{r.kind} {r.result['label']}{' (failed)' if r.failure else ''}]"
            f"(results/{r.copy_name})"
            for r in [*row.bench_runs, *row.failed_runs, *row.certify_runs]
        )
        lines.append("| " + " | ".join([*cells, raw.replace("|", "\\|")]) + " |")
    return lines


def render_markdown(board: Board, runs: Sequence[Run], *, title: str) -> str:
    lines = [
        f"# {title}",
        "",
        _reading(),
        "",
    ]
    lines += [f"> {n}" for n in _environment_notes(runs)]
    for i, group in enumerate(board.groups, start=1):
        lines += ["", f"## {group.kind.capitalize()} workload {i}", "", group.description, ""]
        lines += [f"> {n}" for n in _group_notes(group)]
        lines += _markdown_table(group.rows)
    if board.certified_only:
        lines += ["", "## Certified, no latency run", ""]
        lines += _markdown_table(board.certified_only)
    lines += render_clients_markdown(runs)
    return "\n".join(lines) + "\n"


# -- writing -------------------------------------------------------------------------------------
def load_runs(paths: Iterable[str | Path]) -> list[Run]:
    runs = []
    for path in collect_inputs(paths):
        runs.append(Run(source=path, result=load_result(path, drop=REPORT_DROP)))
    runs.sort(key=lambda r: (parse_time(r.result["started_at"]), str(r.source)))
    used: set[str] = set()
    for i, run in enumerate(runs, start=1):
        r = run.result
        base = (
            f"{r['kind']}-{slug(run.identity)}-{timestamp_slug(r['started_at'])}-{slug(r['label'])}"
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
    board = build_board(runs)
    out = Path(out_dir)
    (out / "results").mkdir(parents=True, exist_ok=True)
    for run in runs:
        shutil.copyfile(run.source, out / "results" / run.copy_name)
    (out / "index.html").write_text(render_html(board, runs, title=title), encoding="utf-8")
    (out / "leaderboard.md").write_text(render_markdown(board, runs, title=title), encoding="utf-8")
    return board.rows
