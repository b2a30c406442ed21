"""``wsmode traces stats`` as text and as JSON: a corpus's distributions, and beside a reference
corpus how far each is from it."""

from __future__ import annotations

from collections.abc import Sequence

from harness.results.table import Column, legend, number, render
from harness.traces.format import JSONObject
from harness.traces.stats.compare import Comparison
from harness.traces.stats.distributions import DISTRIBUTIONS, QUANTILES, CorpusShape

_UNITS = {
    "turns_per_session": "turns",
    "tool_calls_per_turn": "calls",
    "input_growth_tokens": "tokens",
    "append_tokens": "tokens",
    "output_tokens": "tokens",
    "tool_latency_ms": "ms",
}


def stats_json(
    corpus: CorpusShape,
    paths: Sequence[str],
    reference: CorpusShape | None = None,
    reference_paths: Sequence[str] = (),
    comparison: Comparison | None = None,
) -> JSONObject:
    """The whole report as one JSON object (``--json``)."""
    doc: JSONObject = {"corpus": {"paths": list(paths), **corpus.to_json()}}
    if reference is not None and comparison is not None:
        doc["reference"] = {"paths": list(reference_paths), **reference.to_json()}
        doc["comparison"] = comparison.to_json()
    return doc


def _head(label: str, shape: CorpusShape, paths: Sequence[str]) -> str:
    recorded = f", {shape.recorded_tokens} with recorded token counts"
    return (
        f"{label}: {', '.join(paths)}: {shape.rollouts} rollouts, {shape.sessions} sessions, "
        f"{shape.turns:,} turns{recorded if shape.recorded_tokens else ''}"
    )


def render_text(
    corpus: CorpusShape,
    paths: Sequence[str],
    reference: CorpusShape | None = None,
    reference_paths: Sequence[str] = (),
    comparison: Comparison | None = None,
) -> list[str]:
    """The report's lines: the corpus's quantiles, then (with a reference) the reference's
    and the distance of each distribution."""
    lines = [_head("corpus", corpus, paths)]
    columns = [Column("distribution", left=True), Column("unit", left=True), Column("n")]
    columns += [Column(f"p{q}") for q in QUANTILES] + [Column("mean")]
    rows = []
    for name in DISTRIBUTIONS:
        s = corpus.to_json()["distributions"][name]
        rows.append([name, _UNITS[name], number(s["n"]), *_cells(s)])
    lines += render(columns, rows, indent="  ")
    if reference is None or comparison is None:
        return lines
    lines += ["", _head("reference", reference, reference_paths)]
    columns = [Column("distribution", left=True), Column("ref n")]
    columns += [Column(f"ref p{q}") for q in (50, 90)] + [Column("KS")]
    columns += [Column(f"ratio p{q}") for q in QUANTILES]
    rows = []
    ref = reference.to_json()["distributions"]
    for name in DISTRIBUTIONS:
        distance = comparison.distances[name]
        ratios = comparison.ratios[name]
        rows.append(
            [name, number(ref[name]["n"]), number(ref[name]["p50"]), number(ref[name]["p90"])]
            + [number(distance, 2)]
            + [number(ratios[f"p{q}"], 2) for q in QUANTILES]
        )
    lines += render(columns, rows, indent="  ")
    lines += legend(
        "KS: Kolmogorov-Smirnov distance of the two samples (0 same, 1 disjoint); ratio pN: "
        "the corpus's quantile over the reference's (1.00 the same).",
        indent="  ",
    )
    worst = comparison.worst
    if worst is not None:
        lines.append(f"  farthest from the reference: {worst[0]} (KS {worst[1]:.2f})")
    return lines


def _cells(s: JSONObject) -> list[str]:
    return [number(s[f"p{q}"]) for q in QUANTILES] + [number(s["mean"])]
