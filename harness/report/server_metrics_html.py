"""The bench report's "server beside client" section: the client's TTFT of each turn over the
run's time, per mode, and below it on the same time axis the series scraped from each
`--server-metrics` endpoint (`<kind>.server_metrics`, harness.load.server_metrics): gauges as
read, counters as their rate per second between scrapes (a counter's total says little; its
slope is the load the server saw).

A page may hold hundreds of series: the section draws at most `MAX_CHARTS` per source, those
that changed during the run first, preferring the names an inference server's state is read by
(running, waiting, queue, cache, tokens); the others are listed by name. Self-contained SVG,
no script.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from harness.report.svg import color, fmt_ms

MAX_CHARTS = 8
_PREFERRED = ("running", "waiting", "queue", "cache", "token", "inflight", "in_flight", "request")
_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 720, 150, 64, 150, 24, 26


def _axis_max(values: Sequence[float]) -> float:
    top = max(values, default=0.0)
    return top * 1.05 if top > 0 else 1.0


def timeline_chart(
    lines: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    title: str,
    span_s: float,
    unit: str,
    dots: bool = False,
) -> str:
    """`lines` (label, [(t_s, value)]) on a shared 0..span_s time axis; `dots` for scattered
    per-turn values, else polylines."""
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    vmax = _axis_max([v for _, pts in lines for _, v in pts])
    span = span_s if span_s > 0 else 1.0

    def xy(t: float, v: float) -> tuple[float, float]:
        return _LEFT + min(max(t / span, 0.0), 1.0) * plot_w, _TOP + (1 - v / vmax) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" class="plot timeline">',
        f"<title>{escape(title)}</title>",
        f'<text x="{_LEFT}" y="14" font-size="12" font-weight="600">{escape(title)}</text>',
        f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_LEFT + plot_w}" y2="{_TOP + plot_h}" '
        'stroke="#999"/>',
        f'<text x="{_LEFT - 4}" y="{_TOP + 8}" font-size="10" text-anchor="end">'
        f"{escape(fmt_ms(vmax))} {escape(unit)}</text>",
        f'<text x="{_LEFT - 4}" y="{_TOP + plot_h}" font-size="10" text-anchor="end">0</text>',
        f'<text x="{_LEFT + plot_w}" y="{_H - 8}" font-size="10" text-anchor="end">'
        f"{span:.0f} s</text>",
        f'<text x="{_LEFT}" y="{_H - 8}" font-size="10">0 s</text>',
    ]
    for i, (label, points) in enumerate(lines):
        stroke = color(i)
        if dots:
            parts += [
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="1.6" fill="{stroke}"/>'
                for x, y in (xy(t, v) for t, v in points)
            ]
        elif points:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(t, v) for t, v in points))
            parts.append(f'<polyline points="{path}" fill="none" stroke="{stroke}"/>')
        ly = _TOP + 12 + 14 * i
        parts.append(
            f'<text x="{_LEFT + plot_w + 8}" y="{ly}" font-size="10" fill="{stroke}">'
            f"{escape(label[:24])}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _rate(points: Sequence[Sequence[float]]) -> list[tuple[float, float]]:
    """A counter's rate per second between scrapes (a reset: the new value since 0)."""
    out = []
    for (t0, v0), (t1, v1) in itertools.pairwise(points):
        if t1 > t0:
            out.append((t1, (v1 - v0 if v1 >= v0 else v1) / (t1 - t0)))
    return out


def _series_label(series: Mapping[str, Any]) -> str:
    labels = ",".join(f"{k}={v}" for k, v in sorted(series.get("labels", {}).items()))
    return f"{series['name']}{{{labels}}}" if labels else str(series["name"])


def _rank(series: Mapping[str, Any]) -> tuple[int, int, str]:
    values = [p[1] for p in series.get("points", [])]
    changed = len(set(values)) > 1
    name = str(series["name"]).lower()
    preferred = any(word in name for word in _PREFERRED)
    return (0 if changed else 1, 0 if preferred else 1, name)


def _client_lines(samples: Sequence[Mapping[str, Any]], origin_s: float) -> list[Any]:
    by_mode: dict[str, list[tuple[float, float]]] = {}
    for s in samples:
        at, ttft = s.get("started_at_s"), s.get("ttft_ms")
        if s.get("ok") and isinstance(at, int | float) and isinstance(ttft, int | float):
            by_mode.setdefault(str(s["mode"]), []).append((float(at) - origin_s, float(ttft)))
    return sorted(by_mode.items())


def server_metrics_section(payload: Mapping[str, Any]) -> list[str]:
    """The section's HTML, or nothing for a run without --server-metrics."""
    section = payload.get("server_metrics")
    if not section:
        return []
    origin_s = float(section.get("started_at_s") or 0.0)
    samples = payload.get("samples", [])
    client = _client_lines(samples, origin_s)
    ends = [t for _, pts in client for t, _ in pts]
    ends += [p[0] for src in section["sources"] for s in src["series"] for p in s["points"]]
    span_s = max(ends, default=1.0)
    parts = [
        "<h2>Server metrics beside client latency, over the run</h2>",
        f"<p class='note'>Scraped every {section.get('interval_s')} s; gauges as read, counters "
        "as their rate per second between scrapes; the client's TTFT of each ok turn at its "
        "start (one dot per turn), on the same time axis.</p>",
    ]
    if client:
        parts.append(
            timeline_chart(
                client, title="client TTFT per turn", span_s=span_s, unit="ms", dots=True
            )
        )
    for source in section["sources"]:
        url = escape(str(source["url"]))
        failed = source.get("failed_scrapes", 0)
        parts.append(
            f"<h3>{url}</h3><p class='note'>{source.get('scrapes', 0)} scrapes, {failed} failed; "
            f"{len(source['series'])} series kept, {source.get('series_dropped', 0)} dropped"
            + (f"; first error: {escape(source['errors'][0])}" if source.get("errors") else "")
            + "</p>"
        )
        ranked = sorted(source["series"], key=_rank)
        for series in ranked[:MAX_CHARTS]:
            counter = series.get("type") == "counter" or str(series["name"]).endswith(
                ("_total", "_count", "_sum")
            )
            points = _rate(series["points"]) if counter else [tuple(p) for p in series["points"]]
            title = _series_label(series) + (" (per s)" if counter else "")
            parts.append(
                timeline_chart(
                    [(str(series["name"]), points)],
                    title=title,
                    span_s=span_s,
                    unit="/s" if counter else "",
                )
            )
        rest = [_series_label(s) for s in ranked[MAX_CHARTS:]]
        if rest:
            parts.append(
                f"<details><summary>{len(rest)} more series</summary><pre>"
                + escape("\n".join(rest))
                + "</pre></details>"
            )
    return parts
