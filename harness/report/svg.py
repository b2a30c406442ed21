"""Hand-made inline SVG plots for the leaderboard: no JS, no plotting library, no fonts to fetch."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from html import escape

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
)
_FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def fmt_ms(value: float) -> str:
    """3 significant digits without exponent: 0.123, 1.23, 12.3, 123, 1234."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


@dataclasses.dataclass
class Bar:
    label: str
    value: float
    low: float | None = None  # whisker (min across runs)
    high: float | None = None  # whisker (max across runs)
    series: int | None = None  # colour index: bars of one series share a colour (default: own)


def bar_chart(bars: Sequence[Bar], *, title: str, unit: str = "ms", width: int = 720) -> str:
    """Horizontal bars in the given order, with min–max whiskers and the value printed."""
    row_h, top, label_w, right = 28, 34, 200, 110
    height = top + row_h * max(1, len(bars)) + 30
    plot_w = width - label_w - right
    vmax = max([b.high if b.high is not None else b.value for b in bars] + [1e-9])
    scale = plot_w / (vmax * 1.05)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" class="plot bar-chart">',
        f"<title>{escape(title)}</title>",
        f'<text x="8" y="20" {_FONT} font-weight="bold">{escape(title)}</text>',
    ]
    axis_y = top + row_h * max(1, len(bars))
    for tick in _linear_ticks(vmax * 1.05):
        x = label_w + tick * scale
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{axis_y}" stroke="#e5e5e5"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle" {_FONT} fill="#555">'
            f"{tick:g}</text>"
        )
    parts.append(
        f'<text x="{label_w + plot_w / 2:.0f}" y="{height - 2}" text-anchor="middle" {_FONT} '
        f'fill="#555">{escape(unit)}</text>'
    )
    for i, b in enumerate(bars):
        y = top + i * row_h
        w = max(1.0, b.value * scale)
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 17}" text-anchor="end" {_FONT}>'
            f"{escape(_truncate(b.label, 28))}</text>"
        )
        parts.append(
            f'<rect x="{label_w}" y="{y + 5}" width="{w:.1f}" height="{row_h - 10}" '
            f'fill="{color(i if b.series is None else b.series)}" opacity="0.85">'
            f"<title>{escape(b.label)}: "
            f"{fmt_ms(b.value)} {escape(unit)}</title></rect>"
        )
        end = w
        if b.low is not None and b.high is not None and b.high > b.low:
            x1, x2, ym = label_w + b.low * scale, label_w + b.high * scale, y + row_h / 2
            parts.append(
                f'<g stroke="#222" stroke-width="1.5"><line x1="{x1:.1f}" y1="{ym}" '
                f'x2="{x2:.1f}" y2="{ym}"/><line x1="{x1:.1f}" y1="{ym - 6}" x2="{x1:.1f}" '
                f'y2="{ym + 6}"/><line x1="{x2:.1f}" y1="{ym - 6}" x2="{x2:.1f}" '
                f'y2="{ym + 6}"/></g>'
            )
            end = max(end, b.high * scale)
        parts.append(
            f'<text x="{label_w + end + 6:.1f}" y="{y + 17}" {_FONT}>{fmt_ms(b.value)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _truncate(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _linear_ticks(vmax: float) -> list[float]:
    if vmax <= 0:
        return [0.0]
    raw = vmax / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(vmax / step) + 1)]


@dataclasses.dataclass
class Series:
    label: str
    points: list[tuple[float, float]]  # (value_ms > 0, cumulative fraction 0..1), ascending


def cdf_chart(series: Sequence[Series], *, title: str, width: int = 720, height: int = 340) -> str:
    """Step-free CDF lines on a log x axis (ms), with a legend."""
    left, right, top, bottom = 56, 170, 34, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [x for s in series for x, _ in s.points if x > 0]
    lo = min(xs) if xs else 1.0
    hi = max(xs) if xs else 10.0
    lo_log = math.floor(math.log10(lo) * 2) / 2
    hi_log = math.ceil(math.log10(hi) * 2) / 2
    if hi_log <= lo_log:
        hi_log = lo_log + 1

    def px(x: float) -> float:
        return left + (math.log10(x) - lo_log) / (hi_log - lo_log) * plot_w

    def py(f: float) -> float:
        return top + (1 - f) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" class="plot cdf-chart">',
        f"<title>{escape(title)}</title>",
        f'<text x="8" y="20" {_FONT} font-weight="bold">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        f'stroke="#999"/>',
    ]
    for f in (0.25, 0.5, 0.75, 0.9, 0.99):
        y = py(f)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" {_FONT} fill="#555">'
            f"{f:g}</text>"
        )
    decade = math.floor(lo_log)
    while decade <= hi_log:
        for m in (1, 2, 5):
            x_val = m * 10**decade
            lg = math.log10(x_val)
            if lo_log <= lg <= hi_log:
                x = px(x_val)
                parts.append(
                    f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" '
                    f'stroke="#eee"/><text x="{x:.1f}" y="{top + plot_h + 16}" '
                    f'text-anchor="middle" {_FONT} fill="#555">{x_val:g}</text>'
                )
        decade += 1
    parts.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle" {_FONT} '
        f'fill="#555">ms (log scale)</text>'
    )
    for i, s in enumerate(series):
        pts = _thin([(x, f) for x, f in s.points if x > 0])
        if pts:
            path = " ".join(f"{px(x):.1f},{py(f):.1f}" for x, f in pts)
            parts.append(
                f'<polyline fill="none" stroke="{color(i)}" stroke-width="2" points="{path}">'
                f"<title>{escape(s.label)}</title></polyline>"
            )
        ly = top + 8 + i * 18
        parts.append(
            f'<line x1="{left + plot_w + 12}" y1="{ly}" x2="{left + plot_w + 32}" y2="{ly}" '
            f'stroke="{color(i)}" stroke-width="3"/><text x="{left + plot_w + 38}" '
            f'y="{ly + 4}" {_FONT}>{escape(_truncate(s.label, 18))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _thin(points: list[tuple[float, float]], max_points: int = 400) -> list[tuple[float, float]]:
    """Keep the shape of a CDF with at most ~max_points points (first and last kept)."""
    if len(points) <= max_points:
        return points
    lo, hi = math.log10(points[0][0]), math.log10(points[-1][0])
    step = (hi - lo) / max_points
    out = [points[0]]
    for x, f in points[1:-1]:
        if math.log10(x) - math.log10(out[-1][0]) >= step or f - out[-1][1] >= 1 / max_points:
            out.append((x, f))
    out.append(points[-1])
    return out
