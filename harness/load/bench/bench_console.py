"""What `wsmode bench` prints after its run (the live progress line is harness.progress's): the
latency and comparison tables, the failed rollouts and the analysis (speedup split, tool-time
curve, ablation, server stages), all read from the results document so a saved run prints the
same, and every line within the console's 100 columns (harness.results.table).
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from harness.load.bench.bench_result import CUT_ERROR, is_cut
from harness.load.bench.engine_cache import describe_engine_cache
from harness.load.bench.output_caps import describe_output_caps
from harness.load.bench.recorded_timings import format_recorded
from harness.progress import MAX_COLUMNS
from harness.results.table import Column, legend, number, render
from harness.results.work import describe_tokens


def _fmt(value: Any, digits: int = 1) -> str:
    return number(value, digits)


def _s(ms: Any) -> float | None:
    return ms / 1000.0 if isinstance(ms, int | float) else None


def _share(value: float | None) -> str:
    return f"{100 * value:.0f}%" if value is not None else "-"


LATENCY_COLUMNS = (
    Column("mode", left=True),
    Column("TTFT p50"),
    Column("p90"),
    Column("p99"),
    Column("turn p50"),
    Column("p99"),
    Column("rollout s"),
    Column("model s"),
    Column("fail"),
)
COMPARISON_COLUMNS = (
    Column("mode", left=True),
    Column("rollouts"),
    Column("turns"),
    Column("speedup e2e [95% CI]"),
    Column("model-side [95% CI]"),
    Column("TTFT -%"),
    Column("equal work"),
)
TABLE_LEGEND = (
    "Latencies in ms (p50/p90/p99 over turns): TTFT = time to the first content token, turn = "
    "a turn's end to end; rollout s, model s = p50 per rollout, in s, of its end-to-end time "
    "and of its model-side time (API + inference, no tool time); fail = failed rollouts. "
    "speedup = median per-rollout ratio http/mode with a bootstrap 95% CI, over the pairs that "
    "did equal work; TTFT -% = TTFT p50 improvement over http; equal work = rollout pairs whose "
    "input per turn is within the tolerance and whose turns are as many, of all ok pairs (the "
    "others are named below and left out)."
)


def _interval(median: Any, ci: Any, comp: Mapping[str, Any]) -> str:
    """`1.234 [1.100, 1.400]`, or `1.234 (3 pairs)` when too few pairs give no interval."""
    low, high = ci if isinstance(ci, list | tuple) and len(ci) == 2 else (None, None)
    if median is None:
        return "-"
    if low is None or high is None:
        return f"{median:.3f} ({comp.get('pairs', '?')} pairs)"
    return f"{median:.3f} [{low:.3f}, {high:.3f}]"


def _speedup_cells(name: str, comp: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """(speedup e2e, model-side speedup, TTFT improvement) of a variant's comparison row."""
    speed = model_speed = improvement = "-"
    if comp is not None and comp.get("unequal_work"):
        speed = model_speed = "unequal work"  # not a saving: the target did less work
    elif comp is not None and comp["speedup_median"] is not None:
        speed = _interval(comp["speedup_median"], comp["ci95"], comp)
        model_speed = _interval(comp.get("model_speedup_median"), comp.get("model_ci95"), comp)
        improvement = _fmt(comp["ttft_improvement_pct"])
    elif name == "http" or re.fullmatch(r"http-c\d+", name):  # http-cN: a sweep level
        speed = model_speed = "(baseline)"
    return speed, model_speed, improvement


def format_work(result: Mapping[str, Any]) -> str:
    """Each variant's tokens (input and uncached per turn, cached share, session cache-hit
    ratio), the intervals left out and why, then every unequal-work flag."""
    bench = result["bench"]
    tokens = bench.get("tokens", {})
    width = max((len(n) for n in tokens), default=0) + 2
    lines = [
        line
        for name, t in tokens.items()
        for line in textwrap.wrap(
            describe_tokens(t),
            width=MAX_COLUMNS,
            initial_indent=f"  {name:<{width}}",
            subsequent_indent=" " * (width + 2),
        )
    ]
    if lines:
        lines.insert(0, "Tokens as the target reported them (ok turns):")
    for comp in bench["comparisons"]:
        if comp.get("interval_note") and comp.get("speedup_median") is not None:
            lines += legend(
                f"no interval for {comp['mode']} vs {comp['baseline_mode']}: "
                f"{comp['interval_note']}"
            )
        flag = comp.get("unequal_work")
        if flag:
            lines += legend(f"UNEQUAL WORK: {flag['message']}")
        work = comp.get("work")
        if work and work.get("message"):
            lines += legend(f"UNEQUAL PAIRS: {work['message']}")
    engine = bench.get("engine_cache")
    if engine:
        lines += legend(f"The engine's own prefix cache ({engine['metrics_url']}, per variant):")
        for name, entry in engine["variants"].items():
            lines += legend(describe_engine_cache(name, entry), indent="  ")
    caps = bench.get("output_caps", {})
    if caps:
        lines.append("Output caps (max_output_tokens from each turn's recorded output, ok turns):")
        for name, summary in caps.items():
            lines += legend(describe_output_caps(name, summary), indent="  ")
    return "\n".join(lines)


def format_table(result: Mapping[str, Any]) -> str:
    """Two tables, latencies then the comparison with http, their legend last."""
    bench = result["bench"]
    comps = {c["mode"]: c for c in bench["comparisons"]}
    rollouts_by_mode: Counter[str] = Counter(r["mode"] for r in bench["rollouts"])
    turns_by_mode: Counter[str] = Counter(s["mode"] for s in bench["samples"])
    variants = result.get("config", {}).get("variants", {})

    def latency_row(name: str, entry: Mapping[str, Any]) -> list[str]:
        s = entry["summary"]
        ttft, turn = s.get("ttft_ms", {}), s.get("turn_e2e_ms", {})
        roll, model = s.get("rollout_e2e_ms", {}), s.get("rollout_model_ms", {})
        return [
            name,
            _fmt(ttft.get("p50")),
            _fmt(ttft.get("p90")),
            _fmt(ttft.get("p99")),
            _fmt(turn.get("p50")),
            _fmt(turn.get("p99")),
            _fmt(_s(roll.get("p50"))),
            _fmt(_s(model.get("p50"))),
            _fmt(entry["failures"]),
        ]

    def comparison_row(name: str) -> list[str]:
        comp = comps.get(name)
        speed, model_speed, improvement = _speedup_cells(name, comp)
        work = comp.get("work") if comp else None
        return [
            name,
            _fmt(rollouts_by_mode[name]),
            _fmt(turns_by_mode[name]),
            speed,
            model_speed,
            improvement,
            f"{work['equal_pairs']}/{work['pairs']}" if work else "-",
        ]

    # ablation variants (a server optimization switched off) below the modes, marked as such
    modes = bench["modes"]
    ablated = [
        n
        for n in modes
        if variants.get(re.sub(r"-c\d+$", "", n), {}).get("disabled_optimizations")  # sweep: -cN
    ]
    order = [n for n in modes if n not in ablated] + ablated
    lines = render(LATENCY_COLUMNS, [latency_row(n, modes[n]) for n in order], rule=True)
    lines.append("")
    lines += render(COMPARISON_COLUMNS, [comparison_row(n) for n in order], rule=True)
    if ablated:
        lines += legend(
            "ablation variants (ws with a server optimization off, each on its own server): "
            + ", ".join(ablated)
        )
    lines += legend(TABLE_LEGEND)
    return "\n".join(lines)


def format_failures(result: Mapping[str, Any]) -> str:
    """One line per variant with failed rollouts: how many (cut ones apart) and the first error,
    preferring a real failure over a cut, so the table's failure counts come with a reason."""
    rollouts = result["bench"]["rollouts"]
    lines = []
    for name in result["bench"]["modes"]:
        failed = [r for r in rollouts if r["mode"] == name and not r["ok"]]
        if not failed:
            continue
        total = sum(1 for r in rollouts if r["mode"] == name)
        errors = [" ".join(str(r.get("error") or "no error recorded").split()) for r in failed]
        real = [e for e in errors if not is_cut(e)]
        cut = len(errors) - len(real)
        cut_note = f" ({cut} {CUT_ERROR})" if cut and real else ""
        text = f"{name}: {len(failed)} of {total} rollouts failed{cut_note}: {(real or errors)[0]}"
        lines += textwrap.wrap(
            text, width=MAX_COLUMNS, initial_indent="  ", subsequent_indent="    "
        )
    return "Failed rollouts (first error per variant):\n" + "\n".join(lines) if lines else ""


def format_analysis(result: Mapping[str, Any]) -> str:
    """The analysis sections that have data, one after the other."""
    analysis = result["bench"].get("analysis", {})
    lines = [
        *_split_lines(analysis.get("split", [])),
        *_sensitivity_lines(analysis.get("tool_time_sensitivity", [])),
        *_ablation_lines(analysis.get("ablation", [])),
        *_stage_lines(analysis.get("stages_ms", {})),
        *format_recorded(analysis.get("recorded_vs_replayed", [])),
    ]
    return "\n".join(lines)


def _split_lines(terms: Sequence[Mapping[str, Any]]) -> list[str]:
    split = [t for t in terms if t["saved_ms_per_rollout"] is not None]
    if not split:
        return []
    lines = ["Speedup split (mean model-side time saved per rollout, http -> ws):"]
    for t in split:
        lines.append(
            f"  {t['term']:<32} {t['from_mode']:>13} -> {t['to_mode']:<11}"
            f"{t['saved_ms_per_rollout']:>10,.0f} ms  {_share(t['share']):>5}"
        )
    total = sum(t["saved_ms_per_rollout"] for t in split)
    lines.append(f"  {'total':<32} {'http':>13} -> {'ws':<11}{total:>10,.0f} ms")
    if all(t["share"] is None for t in split):
        lines += legend(
            "  (no shares: the http -> ws total is a loss, or under 1% of http's model-side "
            "time, too little to divide)"
        )
    return lines


def _sensitivity_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    sensitivity = [r for r in rows if r["speedup_median"]]
    if not sensitivity:
        return []
    curve = "  ".join(
        f"f={r['tool_time_fraction']:g}: {r['speedup_median']:.3f}x" for r in sensitivity
    )
    return [
        *legend(
            "WS speedup vs the client's tool time (derived: measured model-side times + "
            "recorded tool time x f):"
        ),
        *legend(curve, indent="  "),
        *legend(
            "(f=0 is the agent loop with instant tools, what 'faster agent loops' figures "
            "measure; f=1 is this corpus's recorded tool waits)",
            indent="  ",
        ),
    ]


def _ablation_lines(ablation: Sequence[Mapping[str, Any]]) -> list[str]:
    if not ablation:
        return []
    columns = (
        Column("optimization", left=True),
        Column("variant", left=True),
        Column("+ms/rollout"),
        Column("share"),
        Column("+ms/turn"),
        Column("TTFT p50"),
        Column("ΔTTFT"),
    )
    rows = [
        [
            a["optimization"],
            a["variant"],
            _fmt(a["slowdown_ms_per_rollout"], 0),
            _share(a["share"]),
            _fmt(a.get("turn_delta_ms_median")),
            _fmt(a["ttft_p50_ms"]),
            _fmt(a["ttft_delta_ms"]),
        ]
        for a in ablation
    ]
    return [
        *legend(
            "Ablation (each optimization off in turn, vs ws with all on; share of the http -> "
            "ws saving):"
        ),
        *render(columns, rows, indent="  "),
        *legend(
            "(+ms/rollout: mean paired model-side time added, which the share uses; "
            "+ms/turn: median paired turn e2e difference, robust to scheduling noise; "
            "ΔTTFT: TTFT p50 change, ms)",
            indent="  ",
        ),
    ]


def _stage_lines(stages: Mapping[str, Mapping[str, float]]) -> list[str]:
    if not any(stages.values()):
        return []
    names = sorted({k for v in stages.values() for k in v})
    columns = (Column("mode", left=True), *(Column(n) for n in names))
    rows = [
        [mode, *(_fmt(values.get(n, 0.0)) for n in names)]
        for mode, values in stages.items()
        if values
    ]
    return [
        "Server stage time per turn (mean ms, real + charged; reference server):",
        *render(columns, rows, indent="  "),
    ]
