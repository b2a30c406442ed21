"""The bench HTML report: one self-contained page (inline CSS and SVG, no JavaScript).

Plots: TTFT CDF per mode (from the HdrHistograms), TTFT against context length (from the raw
turn samples), and the per-rollout speedup against http. Tables: the summary per mode, the
comparisons, the speedup split and ablation (when run), the server's stage times, and the run's
configuration and machine, so the page says how the numbers were made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from harness.report.server_metrics_html import server_metrics_section
from harness.report.svg import Bar, Series, bar_chart, cdf_chart, color, fmt_ms
from harness.results.histograms import MetricSet
from harness.results.page import html_page
from harness.results.schema import ttft_definition

_FONT = 'font-family="system-ui, sans-serif" font-size="12"'
_CSS = """
body{font-family:system-ui,sans-serif;margin:24px;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:8px 0 20px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right;font-size:13px}
th{background:#f4f4f4}td.l,th.l{text-align:left}
.note{color:#555;font-size:13px}svg{margin:8px 0}
"""


def cdf_points(ms: MetricSet, metric: str) -> list[tuple[float, float]]:
    """The metric's CDF with zeros lifted to 1 µs, so the log axis can show them."""
    if metric not in ms:
        return []
    return [(max(value_ms, 1e-3), share) for value_ms, share in ms[metric].cdf_ms()]


def scatter_chart(
    series: Sequence[tuple[str, list[tuple[float, float]]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 720,
    height: int = 360,
    log_y: bool = True,
) -> str:
    """Points per series on a linear x axis and a (log) y axis, with a legend."""
    left, right, top, bottom = 64, 170, 34, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts if y > 0]
    x_max = max(xs) if xs else 1.0
    y_lo = min(ys) if ys else 1.0
    y_hi = max(ys) if ys else 10.0
    if log_y:
        lo, hi = float(math.floor(math.log10(y_lo))), float(math.ceil(math.log10(y_hi)))
        hi = hi if hi > lo else lo + 1.0
    else:
        lo, hi = 0.0, y_hi * 1.05

    def px(x: float) -> float:
        return left + x / (x_max * 1.02 or 1) * plot_w

    def py(y: float) -> float:
        value = math.log10(max(y, 1e-9)) if log_y else y
        return top + (1 - (value - lo) / (hi - lo)) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" class="plot scatter-chart">',
        f"<title>{escape(title)}</title>",
        f'<text x="8" y="20" {_FONT} font-weight="bold">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        f'stroke="#999"/>',
    ]
    if log_y:
        for decade in range(int(lo), int(hi) + 1):
            for m in (1, 2, 5):
                v = m * 10.0**decade
                if lo <= math.log10(v) <= hi:
                    y = py(v)
                    parts.append(
                        f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" '
                        f'stroke="#eee"/><text x="{left - 6}" y="{y + 4:.1f}" '
                        f'text-anchor="end" {_FONT} fill="#555">{v:g}</text>'
                    )
    step = _nice_step(x_max)
    tick = 0.0
    while tick <= x_max * 1.02:
        x = px(tick)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="#eee"/>'
            f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle" {_FONT} '
            f'fill="#555">{tick:g}</text>'
        )
        tick += step
    parts.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 6}" text-anchor="middle" {_FONT} '
        f'fill="#555">{escape(x_label)}</text>'
        f'<text x="14" y="{top + plot_h / 2:.0f}" text-anchor="middle" {_FONT} fill="#555" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.0f})">{escape(y_label)}</text>'
    )
    for i, (label, pts) in enumerate(series):
        for x, y in _thin_points(pts):
            parts.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2" fill="{color(i)}" '
                f'fill-opacity="0.55"/>'
            )
        ly = top + 8 + i * 18
        parts.append(
            f'<circle cx="{left + plot_w + 20}" cy="{ly}" r="4" fill="{color(i)}"/>'
            f'<text x="{left + plot_w + 30}" y="{ly + 4}" {_FONT}>{escape(label[:20])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _nice_step(vmax: float) -> float:
    if vmax <= 0:
        return 1.0
    raw = vmax / 6
    mag = 10 ** math.floor(math.log10(raw))
    return float(next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw))


def _thin_points(points: list[tuple[float, float]], limit: int = 1500) -> list[tuple[float, float]]:
    if len(points) <= limit:
        return points
    step = len(points) / limit
    return [points[int(i * step)] for i in range(limit)]


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], left: int = 1) -> str:
    head = "".join(
        f'<th class="{"l" if i < left else ""}">{escape(h)}</th>' for i, h in enumerate(headers)
    )
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="{"l" if i < left else ""}">{escape(_cell(v))}</td>'
            for i, v in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return fmt_ms(value) if abs(value) >= 0.001 else f"{value:.3g}"
    return str(value)


_TTFT_MEANING = {
    "first-content-token": "request sent → first event carrying generated content (text, "
    "reasoning, arguments, ...); TTFE = → first output event of any kind",
    "first-output-event": "request sent → first output event of any kind (an older results "
    "file, schema v1: item announcements count, so it reads lower than time to first token)",
}


def render_report(result: Mapping[str, Any]) -> str:
    bench = result["bench"]
    analysis = bench.get("analysis", {})
    sets = {name: MetricSet.from_dict(entry) for name, entry in bench["modes"].items()}
    main_modes = [m for m in bench["modes"] if m in ("ws", "http", "http-chained")]
    main_modes = main_modes or list(bench["modes"])
    parts = [
        *_head_section(result),
        *_latency_section(bench["modes"]),
        *_comparison_section(bench.get("comparisons", [])),
        *_recorded_section(analysis.get("recorded_vs_replayed", [])),
        *_ttft_section(bench, sets, main_modes),
        *_per_rollout_section(analysis.get("per_rollout_speedup", {}), main_modes),
        *_split_section(analysis),
        *_ablation_section(analysis.get("ablation", [])),
        *_stages_section(analysis),
        *server_metrics_section(bench),  # --server-metrics (report.server_metrics_html)
        *_run_section(result),
    ]
    return html_page(title=f"wsmode bench — {result['target']['name']}", css=_CSS, body=parts)


def _head_section(result: Mapping[str, Any]) -> list[str]:
    bench = result["bench"]
    config = result.get("config", {})
    parts = [
        f"<h1>wsmode bench — {escape(result['target']['name'])}</h1>",
        f"<p class='note'>{escape(result['started_at'])} → {escape(str(result['ended_at']))}; "
        f"profile {escape(str(result.get('profile')))}; time_scale {bench['time_scale']} "
        "(end-to-end figures count tool time at its recorded value); target "
        f"{escape(result['target']['url'])}</p>",
        f"<p class='note'>TTFT: {escape(_TTFT_MEANING.get(ttft_definition(result), ''))}</p>",
    ]
    notes = config.get("notes") or []
    if notes:
        parts.append(
            "<ul class='note'>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"
        )
    return parts


def _latency_section(modes: Mapping[str, Any]) -> list[str]:
    parts: list[str] = []
    rows = []
    for name, entry in modes.items():
        s = entry["summary"]
        rows.append(
            [
                name,
                s.get("ttft_ms", {}).get("count"),
                entry["failures"],
                *(s.get("ttft_ms", {}).get(p) for p in ("p50", "p90", "p99")),
                s.get("ttfe_ms", {}).get("p50"),
                s.get("itl_ms", {}).get("p50"),
                s.get("tpot_ms", {}).get("p50"),
                *(s.get("turn_e2e_ms", {}).get(p) for p in ("p50", "p99")),
                s.get("api_overhead_ms", {}).get("p50"),
                s.get("rollout_e2e_ms", {}).get("p50"),
                s.get("rollout_model_ms", {}).get("p50"),
            ]
        )
    parts.append("<h2>Latency per mode (ms)</h2>")
    parts.append(
        _table(
            [
                "mode",
                "turns ok",
                "failed",
                "TTFT p50",
                "p90",
                "p99",
                "TTFE p50",
                "ITL p50",
                "TPOT p50",
                "turn e2e p50",
                "p99",
                "API overhead p50",
                "rollout e2e p50",
                "model-side p50",
            ],
            rows,
        )
    )
    parts.append(
        "<p class='note'>ITL: the gap between content events as the client read them; 0 when "
        "a reply's events arrive in one read (a short HTTP reply often does), where TPOT is the "
        "decode figure.</p>"
    )
    return parts


def _comparison_section(comps: Sequence[Mapping[str, Any]]) -> list[str]:
    parts: list[str] = []
    if comps:
        parts.append("<h2>Paired comparisons against http</h2>")
        parts.append(
            _table(
                [
                    "mode",
                    "pairs",
                    "equal work",
                    "speedup e2e (median)",
                    "95% CI",
                    "speedup model-side",
                    "95% CI",
                    "TTFT p50 http",
                    "TTFT p50",
                    "TTFT improvement %",
                ],
                [
                    [
                        c["mode"],
                        c.get("pairs"),
                        _equal_work(c),
                        c["speedup_median"],
                        _ci(c.get("ci95")),
                        c.get("model_speedup_median"),
                        _ci(c.get("model_ci95")),
                        c.get("ttft_p50_baseline_ms"),
                        c.get("ttft_p50_ms"),
                        c.get("ttft_improvement_pct"),
                    ]
                    for c in comps
                ],
            )
        )
        parts.append(
            "<p class='note'>Speedup: per-rollout ratio e2e(http) / e2e(mode), median with a "
            "seeded percentile-bootstrap 95% interval; model-side leaves the recorded tool time "
            "out (API + inference only); both over the rollout pairs that did equal work "
            "(equal work: same turns, input per turn within the tolerance, of all ok pairs).</p>"
        )
        parts += [
            f"<p class='note'>UNEQUAL PAIRS: {escape(c['work']['message'])}</p>"
            for c in comps
            if isinstance(c.get("work"), Mapping) and c["work"].get("message")
        ]
    return parts


def _equal_work(comp: Mapping[str, Any]) -> str:
    work = comp.get("work")
    if not isinstance(work, Mapping):
        return "-"
    return f"{work['equal_pairs']} of {work['pairs']}"


def _ttft_section(
    bench: Mapping[str, Any], sets: Mapping[str, MetricSet], main_modes: Sequence[str]
) -> list[str]:
    parts: list[str] = []
    parts.append("<h2>TTFT distribution</h2>")
    parts.append(
        cdf_chart(
            [Series(name, cdf_points(ms, "ttft_ms")) for name, ms in sets.items()],
            title="TTFT CDF per mode",
        )
    )
    scatter = []
    for name in main_modes:
        pts = [
            (float(s["context_tokens"]) / 1000.0, float(s["ttft_ms"]))
            for s in bench["samples"]
            if s["mode"] == name and s["ok"] and isinstance(s.get("ttft_ms"), int | float)
        ]
        scatter.append((name, pts))
    parts.append(
        scatter_chart(
            scatter,
            title="TTFT vs context length",
            x_label="context (thousand input tokens)",
            y_label="TTFT ms (log)",
        )
    )
    return parts


def _per_rollout_section(per_rollout: Mapping[str, Any], main_modes: Sequence[str]) -> list[str]:
    parts: list[str] = []
    for mode, values in per_rollout.items():
        if values and mode in main_modes:
            bars = []
            for rid, e2e, *model in values:
                bars.append(Bar(f"{rid} e2e", float(e2e), series=0))
                if model:
                    bars.append(Bar(f"{rid} model", float(model[0]), series=1))
            parts.append(
                bar_chart(
                    bars,
                    title=f"Per-rollout speedup http / {mode}: end-to-end and model-side",
                    unit="× (1 = no change)",
                )
            )
    return parts


def _split_section(analysis: Mapping[str, Any]) -> list[str]:
    parts: list[str] = []
    split = [t for t in analysis.get("split", []) if t.get("saved_ms_per_rollout") is not None]
    if split:
        parts.append("<h2>Where the saving comes from</h2>")
        parts.append(
            _table(
                ["term", "from", "to", "saved ms / rollout", "share", "pairs"],
                [
                    [
                        t["term"],
                        t["from_mode"],
                        t["to_mode"],
                        t["saved_ms_per_rollout"],
                        _pct(t["share"]),
                        t["pairs"],
                    ]
                    for t in split
                ],
                left=3,
            )
        )
        parts.append(
            "<p class='note'>Mean paired differences of model-side time along http → "
            "http-chained → ws-nocache → ws. <b>Input size</b>: sending only new items with "
            "previous_response_id instead of the whole history (net of the store hydration the "
            "server then does). <b>Transport</b>: one WebSocket instead of an HTTP request + SSE "
            "per turn, the server doing the same hydration work. <b>Server-side cache</b>: the "
            "connection-scoped cache (no hydration, incremental checks and rendering, routing "
            "reuse). The terms add up to http − ws.</p>"
        )
    return parts


def _ablation_section(ablation: Sequence[Mapping[str, Any]]) -> list[str]:
    parts: list[str] = []
    if ablation:
        parts.append("<h2>Ablation: each optimization switched off in turn</h2>")
        parts.append(
            _table(
                [
                    "optimization",
                    "variant",
                    "+ms / rollout",
                    "share of http→ws",
                    "+ms / turn (median)",
                    "TTFT p50",
                    "ΔTTFT",
                ],
                [
                    [
                        a["optimization"],
                        a["variant"],
                        a["slowdown_ms_per_rollout"],
                        _pct(a["share"]),
                        a.get("turn_delta_ms_median"),
                        a["ttft_p50_ms"],
                        a["ttft_delta_ms"],
                    ]
                    for a in ablation
                ],
                left=2,
            )
        )
    return parts


def _stages_section(analysis: Mapping[str, Any]) -> list[str]:
    parts: list[str] = []
    stages = {k: v for k, v in analysis.get("stages_ms", {}).items() if v}
    if stages:
        names = sorted({n for v in stages.values() for n in v})
        parts.append("<h2>Server stage time per turn (mean ms, reference server stamps)</h2>")
        parts.append(
            _table(
                ["mode", *names],
                [[m, *(v.get(n, 0.0) for n in names)] for m, v in stages.items()],
            )
        )
    return parts


def _run_section(result: Mapping[str, Any]) -> list[str]:
    config = result.get("config", {})
    parts: list[str] = []
    parts.append("<h2>Run</h2>")
    parts.append(
        _table(
            ["key", "value"],
            [[k, _short(v)] for k, v in sorted(config.items()) if k != "notes"],
        )
    )
    machine = result.get("machine", {})
    harness = result.get("harness", {})
    parts.append(
        f"<p class='note'>machine: {escape(str(machine.get('cpu_model')))}, "
        f"{machine.get('cores')} cores, {escape(str(machine.get('python')))}; harness "
        f"{escape(str(harness.get('version')))} @ {escape(str(harness.get('commit')))}</p>"
    )
    return parts


def _recorded_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Recorded timings of the trace beside the replayed ones, per mode (when kept)."""
    if not rows:
        return []
    modes = list(rows[0]["replayed_p50_ms"])
    table = _table(
        ["metric", "turns", "recorded p50", *(f"{m} p50" for m in modes)],
        [
            [r["metric"], r["turns"], r["recorded_p50_ms"], *r["replayed_p50_ms"].values()]
            for r in rows
        ],
    )
    note = (
        "<p class='note'>Medians in ms over the turns whose trace kept the timing (observed "
        "ttft_ms, e2e_ms from the recording), beside the same turns replayed: how far the "
        "server profile is from the recorded service.</p>"
    )
    return ["<h2>Recorded vs replayed</h2>", table, note]


def _ci(ci: Any) -> str:
    if not isinstance(ci, list) or len(ci) != 2:
        return "-"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _pct(value: Any) -> str:
    return f"{100 * value:.0f}%" if isinstance(value, int | float) else "-"


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 300 else text[:297] + "..."


def write_report(result: Mapping[str, Any], path: str | Path) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_report(result), encoding="utf-8")
    return target
