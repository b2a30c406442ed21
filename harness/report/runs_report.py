"""`wsmode results compare`'s report: the comparison of runs (harness.results.runs_compare) as
text for the terminal (within 100 columns) and as a self-contained HTML page (tables, and the
p50 of each metric per run as bars with their 95 % interval)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from harness.report.svg import Bar, bar_chart
from harness.results.page import html_page
from harness.results.runs_compare import Cell, ModeComparison, RunsComparison
from harness.results.table import Column, legend, render

_COLUMNS = (
    Column("metric", left=True),
    Column("run", left=True),
    Column("n"),
    Column("p50"),
    Column("95% CI"),
    Column("p90"),
    Column("p99"),
    Column("p50 vs A"),
    Column("95% CI "),
    Column("p90 vs A"),
)


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    # three or four significant digits, so ten columns fit the console
    if value < 10:
        return f"{value:.3f}"
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f}%"


def _interval(ci: tuple[float, float] | None, fmt: str = "ms") -> str:
    if ci is None:
        return "—"
    if fmt == "pct":
        return f"[{ci[0]:+.1f}, {ci[1]:+.1f}]%"
    return f"[{_ms(ci[0])}, {_ms(ci[1])}]"


def _cells(metric: str, run: str, cell: Cell | None, first: bool) -> list[str]:
    if cell is None:
        return [metric, run, "—", "not run", "", "", "", "", "", ""]
    return [
        metric,
        run,
        f"{cell.n:,}",
        _ms(cell.p50),
        _interval(cell.p50_ci),
        _ms(cell.p90),
        _ms(cell.p99),
        "" if first else _pct(cell.p50_change_pct),
        "" if first else _interval(cell.p50_change_ci, "pct"),
        "" if first else _pct(cell.p90_change_pct),
    ]


def _rows(mode: ModeComparison, names: Sequence[str]) -> list[list[str]]:
    rows = []
    for row in mode.metrics:
        for i, cell in enumerate(row.cells):
            rows.append(_cells(row.metric if i == 0 else "", names[i], cell, i == 0))
    return rows


def _share(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}%"


def _summary_lines(mode: ModeComparison, names: Sequence[str]) -> list[str]:
    """Failed turns, goodput and the paired rollouts of a mode, one line each."""
    lines = []
    errors = ", ".join(f"{n} {_share(v)}" for n, v in zip(names, mode.error_rate_pct, strict=True))
    lines.append(f"failed turns: {errors}")
    if any(g is not None for g in mode.goodput):
        goodput = ", ".join(
            f"{n} {_share(None if g is None else 100 * g, 1)}"
            for n, g in zip(names, mode.goodput, strict=True)
        )
        lines.append(f"goodput (--slo of each run): {goodput}")
    for p in mode.paired:
        ratio = "—" if p.median is None else f"{p.median:.3f}×"
        ci = "" if p.ci95 is None else f" (95% CI {p.ci95[0]:.3f}–{p.ci95[1]:.3f})"
        lines.append(
            f"paired rollouts, e2e {names[0]} / {p.run}: {ratio}{ci} over {p.pairs} rollouts"
        )
    return lines


def _mode_lines(mode: ModeComparison, names: Sequence[str]) -> list[str]:
    lines = [f"== {mode.mode} ==", *render(_COLUMNS, _rows(mode, names), rule=True)]
    for line in _summary_lines(mode, names):
        lines += legend(line)
    for flag in mode.unequal_work:
        lines += legend(f"UNEQUAL WORK: {flag}")
    return lines


def _header(comparison: RunsComparison) -> list[str]:
    lines = [f"wsmode results compare: {len(comparison.runs)} runs, each against run A"]
    for r in comparison.runs:
        lines += legend(
            f"{r.name}  {r.kind} {r.target} / {r.label} ({r.started_at}) {r.source}",
            indent="  ",
        )
    if comparison.equal_work:
        lines.append("equal work: the same workload, and the same tokens per turn")
    for note in comparison.workload_notes:
        lines += legend(f"NOT THE SAME WORKLOAD: {note}")
    return lines


LEGEND = (
    "ms; p50's 95% CI by percentile bootstrap; 'vs A' is this run's percentile / run A's - 1, "
    "its interval from resampling both runs independently; no interval under 5 values"
)


def render_text(comparison: RunsComparison) -> str:
    names = [r.name for r in comparison.runs]
    lines = _header(comparison)
    for mode in comparison.modes:
        lines += ["", *_mode_lines(mode, names)]
    lines += ["", *legend(LEGEND)]
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.6rem 0;font-size:13px}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:right}
th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}
.flag{color:#a40000;font-weight:600}.sub{color:#666}
svg{display:block;margin:.6rem 0;max-width:100%;height:auto}
"""


def _table_html(mode: ModeComparison, names: Sequence[str]) -> list[str]:
    out = ["<table><thead><tr>"]
    out += [f"<th>{escape(c.title.strip())}</th>" for c in _COLUMNS]
    out.append("</tr></thead><tbody>")
    for row in _rows(mode, names):
        out.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return out


def _charts_html(mode: ModeComparison, names: Sequence[str]) -> list[str]:
    out = []
    for row in mode.metrics:
        bars = [
            Bar(
                f"{names[i]}",
                cell.p50,
                cell.p50_ci[0] if cell.p50_ci else None,
                cell.p50_ci[1] if cell.p50_ci else None,
                series=i,
            )
            for i, cell in enumerate(row.cells)
            if cell is not None and cell.p50 is not None
        ]
        if bars:
            title = f"{mode.mode} {row.metric} p50 per run (whiskers: 95% CI)"
            out.append(bar_chart(bars, title=title, width=560))
    return out


def render_html(comparison: RunsComparison) -> str:
    names = [r.name for r in comparison.runs]
    body = [f"<h1>{escape(str(len(names)))} runs compared</h1>", "<ul>"]
    body += [
        f"<li><b>{escape(r.name)}</b> {escape(r.kind)} {escape(r.target)} / {escape(r.label)} "
        f'<span class="sub">({escape(r.started_at)}) {escape(r.source)}</span></li>'
        for r in comparison.runs
    ]
    body.append("</ul>")
    if comparison.equal_work:
        body.append("<p>Equal work: the same workload, and the same tokens per turn.</p>")
    body += [
        f'<p class="flag">Not the same workload: {escape(n)}</p>' for n in comparison.workload_notes
    ]
    for mode in comparison.modes:
        body.append(f"<h2>{escape(mode.mode)}</h2>")
        body += _table_html(mode, names)
        body += [f"<p>{escape(line)}</p>" for line in _summary_lines(mode, names)]
        body += [f'<p class="flag">Unequal work: {escape(f)}</p>' for f in mode.unequal_work]
        body += _charts_html(mode, names)
    body.append(f'<p class="sub">{escape(LEGEND)}.</p>')
    return html_page(title="wsmode: runs compared", css=_CSS, body=body)
