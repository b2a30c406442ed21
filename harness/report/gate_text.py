"""`wsmode gate`'s report as text (the terminal) and as Markdown (a CI step summary)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.report.gate_report import GateReport, MetricFinding
from harness.results.table import Column, legend, render


def _fmt_value(f: MetricFinding, value: float | None) -> str:
    if value is None:
        return "—"
    if f.metric in ("error_rate", "goodput"):
        return f"{value:.2f}%"
    if f.metric.startswith("speedup"):
        return f"{value:.3f}×"
    if f.metric.endswith("_us"):  # a micro-benchmark's time per call
        return f"{value:.3f} µs" if value < 10 else f"{value:,.1f} µs"
    return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"


def _fmt_change(f: MetricFinding) -> str:
    if f.change_pct is None:
        return "—"
    unit = " pp" if f.metric in ("error_rate", "goodput") else "%"
    return f"{f.change_pct:+.1f}{unit}"


def _fmt_ci(f: MetricFinding) -> str:
    if f.ci_pct is None:
        return "—"
    return f"[{f.ci_pct[0]:+.1f}%, {f.ci_pct[1]:+.1f}%]"


def _fmt_threshold(f: MetricFinding) -> str:
    if f.metric == "error_rate":
        return f"+{f.threshold_pct:g} pp"
    if f.metric == "goodput":
        return f"-{f.threshold_pct:g} pp"
    sign = "-" if f.higher_is_better else "+"
    return f"{sign}{f.threshold_pct:g}%"


_STATUS_MARK = {
    "ok": "ok",
    "regression": "REGRESSION",
    "improvement": "improved",
    "noisy": "noisy",
    "insufficient-data": "insufficient-data",
}


def _metric_rows(report: GateReport) -> list[list[str]]:
    rows = []
    for f in report.metrics:
        rows.append(
            [
                f.mode,
                f.label,
                _fmt_value(f, f.baseline),
                _fmt_value(f, f.current),
                _fmt_change(f),
                _fmt_ci(f),
                _fmt_threshold(f),
                f"{f.n_baseline}/{f.n_current}",
                "—" if f.p_value is None else f"{f.p_value:.3g}",
                _STATUS_MARK[f.status],
            ]
        )
    return rows


_METRIC_HEADER = [
    "mode",
    "metric",
    "baseline",
    "current",
    "change",
    "95% CI",
    "limit",
    "n (b/c)",
    "MWU p",
    "status",
]
_CASE_HEADER = ["case", "level", "baseline", "current", "status"]
LATENCY_REPORT_KINDS = ("bench", "load", "micro")  # metrics rows; certify has case rows


def _case_rows(report: GateReport) -> list[list[str]]:
    return [
        [
            c.id,
            c.level,
            c.baseline,
            c.current,
            c.status.upper() if c.status == "regression" else c.status,
        ]
        for c in report.cases
    ]


def _verdict_line(report: GateReport) -> str:
    regressions = report.regressions
    if regressions:
        return f"FAIL: {len(regressions)} regression(s): {', '.join(regressions)}"
    insufficient = sum(1 for m in report.metrics if m.status == "insufficient-data")
    extra = f" ({insufficient} metric(s) with insufficient data)" if insufficient else ""
    return f"PASS: no regression{extra}"


def _table(report: GateReport) -> tuple[Sequence[str], list[list[str]]]:
    """The header and rows both renderings show: metrics for a bench, cases for certify."""
    if report.kind == "micro":  # one row per pytest-benchmark benchmark
        return ["benchmark", *_METRIC_HEADER[1:]], _metric_rows(report)
    if report.kind in LATENCY_REPORT_KINDS:
        return _METRIC_HEADER, _metric_rows(report)
    return _CASE_HEADER, _case_rows(report)


def render_text(report: GateReport) -> str:
    lines = [
        f"wsmode gate ({report.kind})",
        f"  baseline: {report.baseline_label}",
        f"  current:  {report.current_label}",
        "",
    ]
    header, rows = _table(report)
    if rows:
        if header is _METRIC_HEADER:  # named by mode and metric together, its status next
            mode_w = max(len(r[0]) for r in [header, *rows])
            header = [f"{header[0]:<{mode_w}}  {header[1]}", header[-1], *header[2:-1]]
            rows = [[f"{r[0]:<{mode_w}}  {r[1]}", r[-1], *r[2:-1]] for r in rows]
        columns = [Column(title, left=True) for title in header]
        lines += render(columns, rows, rule=True)  # column blocks when wider than the console
    else:
        lines.append("no case changed verdict" if report.kind == "certify" else "nothing compared")
    lines.append("")
    for note in report.notes:
        lines += legend(f"note: {note}")
    lines.append(_verdict_line(report))
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(report: GateReport) -> str:
    ok = not report.regressions
    lines = [
        f"## wsmode gate: {'✅ PASS' if ok else '❌ FAIL'}",
        "",
        f"- baseline: `{report.baseline_label}`",
        f"- current: `{report.current_label}`",
        "",
    ]
    header, rows = _table(report)
    if rows:
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for r in rows:
            cells = [_md_escape(v) for v in r]
            if r[-1] in ("REGRESSION",):
                cells[-1] = f"**{cells[-1]}**"
            lines.append("| " + " | ".join(cells) + " |")
    else:
        lines.append("_No case changed verdict._" if report.kind == "certify" else "_Nothing._")
    lines.append("")
    lines.extend(f"> note: {_md_escape(n)}" for n in report.notes)
    if report.notes:
        lines.append("")
    lines.append(f"**{_verdict_line(report)}**")
    if report.kind in LATENCY_REPORT_KINDS:
        lines += [
            "",
            "A regression is called only when the whole bootstrap 95% interval of the change lies "
            "beyond the limit; `noisy` means the point estimate is beyond it but the interval is "
            "not. MWU p is the Mann-Whitney U p-value (informational).",
        ]
        if report.kind == "micro":
            lines.append(
                "A micro-benchmark's median must also move by more than the baseline's "
                "interquartile range, and its fastest round beyond the limit too."
            )
    return "\n".join(lines) + "\n"
