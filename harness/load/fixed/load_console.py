"""What `wsmode load` prints: throughput per mode, latency percentiles, failures, and the notes
below them (each mode's prompts and tokens, warnings, unequal work)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from harness.results.slo import format_goodput
from harness.results.table import Column, legend, number, render
from harness.results.work import describe_tokens


def _ms(value: Any) -> str:
    """A latency cell: small values keep three significant digits (0.004, not 0.00); large ones
    have thousands separators (12,345)."""
    if not isinstance(value, int | float):
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


LOAD_COLUMNS = (
    Column("mode", left=True),
    Column("ok"),
    Column("failed"),
    Column("req/s"),
    Column("out tok/s"),
    Column("in tok/turn"),
    Column("CPU ms/req"),
)
LATENCY_COLUMNS = (
    Column("mode", left=True),
    Column("TTFT p50"),
    Column("p90"),
    Column("p99"),
    Column("TTFE p50"),
    Column("ITL p50"),
    Column("p99"),
    Column("TPOT p50"),
    Column("e2e p50"),
    Column("p99"),
    Column("queue p50"),
)
LOAD_LEGEND = (
    "Latencies in ms. TTFT: request sent -> first content token; TTFE: -> first output event of "
    "any kind (harness.protocol.timing_marks); ITL: gap between content events as the client "
    "read them (0 when a reply's events arrive in one read, as a short HTTP reply often does: "
    "then TPOT is the decode figure); TPOT: time per "
    "output token after the first; e2e: request sent -> its terminal event; queue: open-loop "
    "wait for a free slot; CPU ms/req: the client's CPU per request. Failures are not in the "
    "latencies."
)


def format_load_table(result: Mapping[str, Any]) -> str:
    """The console tables: throughput per mode, then latency percentiles (ms), then failures."""
    load = result["load"]
    throughput_rows, latency_rows, failures = [], [], []
    for mode, entry in load["throughput"].items():
        s = load["modes"][mode]["summary"]

        def p(metric: str, q: str, s: Mapping[str, Any] = s) -> str:
            return _ms(s.get(metric, {}).get(q))

        throughput_rows.append(
            [
                mode,
                number(entry["requests_ok"]),
                number(entry["requests_failed"]),
                number(float(entry["requests_per_s"])),
                number(round(entry["output_tokens_per_s"])),
                number(_per_turn(load, mode), 0),
                number(entry["client_cpu_ms_per_request"], 3),
            ]
        )
        latency_rows.append(
            [
                mode,
                *(p("ttft_ms", q) for q in ("p50", "p90", "p99")),
                p("ttfe_ms", "p50"),
                p("itl_ms", "p50"),
                p("itl_ms", "p99"),
                p("tpot_ms", "p50"),
                p("turn_e2e_ms", "p50"),
                p("turn_e2e_ms", "p99"),
                p("queue_ms", "p50"),
            ]
        )
        for reason, count in entry["failures"].items():
            failures += legend(f"{mode}: failed {count:,}x: {reason}", indent="  ")
    lines = render(LOAD_COLUMNS, throughput_rows)
    lines += ["", *render(LATENCY_COLUMNS, latency_rows)]
    if failures:
        lines += ["Failures:", *failures]
    return "\n".join(lines)


def _per_turn(load: Mapping[str, Any], mode: str) -> float | None:
    value = load.get("tokens", {}).get(mode, {}).get("input_tokens_per_turn")
    return float(value) if isinstance(value, int | float) else None


def format_load_notes(result: Mapping[str, Any]) -> list[str]:
    """Below the table: each mode's prompts and tokens, then every warning and flag."""
    load = result["load"]
    modes = result["config"].get("modes", {})
    lines = []
    for mode, tokens in load.get("tokens", {}).items():
        prompts = modes.get(mode, {}).get("prompts")
        lines.append(
            f"{mode}: {describe_tokens(tokens)}" + (f"; prompts {prompts}" if prompts else "")
        )
    for mode, entry in load["throughput"].items():
        lines += [f"warning: {mode}: {w}" for w in entry.get("warnings", [])]
        queue = load["modes"][mode]["summary"].get("queue_ms", {}).get("p50")
        e2e = load["modes"][mode]["summary"].get("turn_e2e_ms", {}).get("p50")
        if queue and e2e and queue > 0.5 * e2e:
            lines.append(
                f"warning: {mode}: overloaded: requests waited {_ms(queue)} ms (median) for a free "
                f"slot; TTFT and e2e count that wait (from the intended start), TPOT and ITL do not"
            )
    by_turn = input_tokens_by_turn(load.get("samples", []))
    if any(len(t) > 1 for t in by_turn.values()):
        lines += legend(
            "input tokens by turn (median of ok requests): "
            + "; ".join(f"{m} {' → '.join(f'{v:,.0f}' for v in t)}" for m, t in by_turn.items())
        )
    lines += [f"UNEQUAL WORK: {flag['message']}" for flag in load.get("unequal_work", [])]
    return lines


def input_tokens_by_turn(samples: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Per mode, the median input tokens of each turn index (ok requests), in turn order: equal
    work shows as equal rows."""
    grouped: dict[str, dict[int, list[int]]] = {}
    for s in samples:
        if s.get("ok") and isinstance(s.get("input_tokens"), int):
            turns = grouped.setdefault(s["mode"], {})
            turns.setdefault(int(s["turn_index"]), []).append(s["input_tokens"])
    return {
        mode: [statistics.median(turns[i]) for i in sorted(turns)]
        for mode, turns in grouped.items()
    }


def print_load(out: TextIO, result: Mapping[str, Any]) -> None:
    out.write(format_load_table(result) + "\n")
    goodput = format_goodput(result["load"])
    if goodput:
        out.write(goodput + "\n")
    for note in format_load_notes(result):
        out.write("\n".join(legend(note)) + "\n")
    out.write("\n".join(legend(LOAD_LEGEND)) + "\n")
