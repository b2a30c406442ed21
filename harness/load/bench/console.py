"""What `wsmode bench` prints: progress lines while it runs, then the comparison table, the
failed rollouts and the analysis (speedup split, tool-time curve, ablation, server stages), all
read from the results document so a saved run prints the same."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from harness.load.bench.recorded import format_recorded
from harness.load.bench.result import CUT_ERROR, is_cut
from harness.load.replay_results import RolloutResult
from harness.results.work import describe_tokens


class Progress:
    """Plain progress lines on stderr: done/total per variant, at most every `every_s`."""

    def __init__(self, totals: Mapping[str, int], stream: TextIO, every_s: float = 2.0) -> None:
        self.totals = dict(totals)
        self.done: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.stream = stream
        self.every_s = every_s
        self.start = time.monotonic()
        self.last = 0.0

    def __call__(self, result: RolloutResult) -> None:
        self.done[result.mode] += 1
        if not result.ok:
            self.failed[result.mode] += 1
        now = time.monotonic()
        finished = sum(self.done.values()) == sum(self.totals.values())
        if now - self.last >= self.every_s or finished:
            self.last = now
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def line(self) -> str:
        total = sum(self.totals.values())
        done = sum(self.done.values())
        width = 24
        filled = int(width * done / total) if total else width
        parts = []
        for name, n in self.totals.items():
            fail = f" ({self.failed[name]} failed)" if self.failed[name] else ""
            parts.append(f"{name} {self.done[name]}/{n}{fail}")
        elapsed = time.monotonic() - self.start
        return (
            f"bench [{'#' * filled}{'.' * (width - filled)}] {done}/{total} replays  "
            f"{elapsed:5.0f}s  " + "  ".join(parts)
        )


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _s(ms: Any) -> float | None:
    return ms / 1000.0 if isinstance(ms, int | float) else None


def _share(value: float | None) -> str:
    return f"{100 * value:.0f}%" if value is not None else "-"


TABLE_HEADER = (
    f"{'mode':<24}{'rollouts':>9}{'turns':>7}{'fail':>5}"
    f"{'TTFT p50':>10}{'p90':>8}{'p99':>8}{'turn e2e p50':>14}{'p99':>8}"
    f"{'rollout e2e p50':>17}{'model p50':>11}"
    f"{'speedup e2e [95% CI]':>24}{'model-side [95% CI]':>24}{'TTFT -%':>9}"
)


def _speedup_cells(name: str, comp: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """(speedup e2e, model-side speedup, TTFT improvement) of a variant's comparison row."""
    speed = model_speed = improvement = "-"
    if comp is not None and comp.get("unequal_work"):
        speed = model_speed = "unequal work"  # not a saving: the target did less work
    elif comp is not None and comp["speedup_median"] is not None:
        speed = _with_interval(comp["speedup_median"], comp["ci95"], comp)
        if comp.get("model_speedup_median") is not None:
            model_speed = _with_interval(comp["model_speedup_median"], comp.get("model_ci95"), comp)
        improvement = _fmt(comp["ttft_improvement_pct"])
    elif name == "http" or re.fullmatch(r"http-c\d+", name):  # http-cN: a sweep level
        speed = model_speed = "(baseline)"
    return speed, model_speed, improvement


def _with_interval(median: float, ci: Sequence[float] | None, comp: Mapping[str, Any]) -> str:
    """`1.234 [1.100,1.400]`, or `1.234 (3 pairs)` when too few pairs give no interval."""
    if ci:
        return f"{median:.3f} [{ci[0]:.3f},{ci[1]:.3f}]"
    return f"{median:.3f} ({comp.get('pairs', '?')} pairs)"


def format_work(result: Mapping[str, Any]) -> str:
    """Each variant's tokens (input and uncached per turn, cached share, session cache-hit
    ratio), the intervals left out and why, then every unequal-work flag."""
    bench = result["bench"]
    tokens = bench.get("tokens", {})
    width = max((len(n) for n in tokens), default=0) + 2
    lines = [f"  {name:<{width}}{describe_tokens(t)}" for name, t in tokens.items()]
    if lines:
        lines.insert(0, "Tokens as the target reported them (ok turns):")
    for comp in bench["comparisons"]:
        if comp.get("interval_note") and comp.get("speedup_median") is not None:
            lines.append(
                f"no interval for {comp['mode']} vs {comp['baseline_mode']}: "
                f"{comp['interval_note']}"
            )
        flag = comp.get("unequal_work")
        if flag:
            lines.append(f"UNEQUAL WORK: {flag['message']}")
    return "\n".join(lines)


def format_table(result: Mapping[str, Any]) -> str:
    bench = result["bench"]
    comps = {c["mode"]: c for c in bench["comparisons"]}
    rollouts_by_mode: Counter[str] = Counter(r["mode"] for r in bench["rollouts"])
    turns_by_mode: Counter[str] = Counter(s["mode"] for s in bench["samples"])
    variants = result.get("config", {}).get("variants", {})

    def row(name: str, entry: Mapping[str, Any]) -> str:
        s = entry["summary"]
        ttft, turn = s.get("ttft_ms", {}), s.get("turn_e2e_ms", {})
        roll, model = s.get("rollout_e2e_ms", {}), s.get("rollout_model_ms", {})
        speed, model_speed, improvement = _speedup_cells(name, comps.get(name))
        return (
            f"{name:<24}{rollouts_by_mode[name]:>9}{turns_by_mode[name]:>7}{entry['failures']:>5}"
            f"{_fmt(ttft.get('p50')):>10}{_fmt(ttft.get('p90')):>8}{_fmt(ttft.get('p99')):>8}"
            f"{_fmt(turn.get('p50')):>14}{_fmt(turn.get('p99')):>8}"
            f"{_fmt(_s(roll.get('p50'))):>17}{_fmt(_s(model.get('p50'))):>11}"
            f"{speed:>24}{model_speed:>24}{improvement:>9}"
        )

    # ablation variants (a server optimization switched off) below the modes, marked as such
    modes = bench["modes"]
    ablated = [
        n
        for n in modes
        if variants.get(re.sub(r"-c\d+$", "", n), {}).get("disabled_optimizations")  # sweep: -cN
    ]
    lines = [TABLE_HEADER, "-" * len(TABLE_HEADER)]
    lines += [row(n, e) for n, e in modes.items() if n not in ablated]
    if ablated:
        lines.append("ablation variants: ws with a server optimization off (its own server)")
        lines += [row(n, modes[n]) for n in ablated]
    lines.append(
        "(latencies in ms; rollout e2e and model-side time in s; speedup = median per-rollout "
        "ratio http/mode, bootstrap 95% CI; TTFT -% = TTFT p50 improvement over http)"
    )
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
        lines.append(
            f"  {name}: {len(failed)} of {total} rollouts failed{cut_note}: {(real or errors)[0]}"
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
            f"{t['saved_ms_per_rollout']:>10.0f} ms  {_share(t['share']):>5}"
        )
    total = sum(t["saved_ms_per_rollout"] for t in split)
    lines.append(f"  {'total':<32} {'http':>13} -> {'ws':<11}{total:>10.0f} ms")
    return lines


def _sensitivity_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    sensitivity = [r for r in rows if r["speedup_median"]]
    if not sensitivity:
        return []
    curve = "  ".join(
        f"f={r['tool_time_fraction']:g}: {r['speedup_median']:.3f}x" for r in sensitivity
    )
    return [
        "WS speedup vs the client's tool time (derived: measured model-side times + recorded "
        "tool time x f):",
        "  " + curve,
        "  (f=0 is the agent loop with instant tools, what 'faster agent loops' figures "
        "measure; f=1 is this corpus's recorded tool waits)",
    ]


def _ablation_lines(ablation: Sequence[Mapping[str, Any]]) -> list[str]:
    if not ablation:
        return []
    lines = [
        "Ablation (each optimization off in turn, vs ws with all on; share of the http -> ws "
        "saving):",
        f"  {'optimization':<20}{'variant':<26}{'+ms/rollout':>12}{'share':>8}"
        f"{'+ms/turn (median)':>19}{'TTFT p50':>10}{'ΔTTFT':>9}",
    ]
    for a in ablation:
        lines.append(
            f"  {a['optimization']:<20}{a['variant']:<26}"
            f"{_fmt(a['slowdown_ms_per_rollout'], 0):>12}{_share(a['share']):>8}"
            f"{_fmt(a.get('turn_delta_ms_median')):>19}"
            f"{_fmt(a['ttft_p50_ms']):>10}{_fmt(a['ttft_delta_ms']):>9}"
        )
    lines.append(
        "  (+ms/rollout: mean paired model-side time added, which the share uses; "
        "+ms/turn: median paired turn e2e difference, robust to scheduling noise)"
    )
    return lines


def _stage_lines(stages: Mapping[str, Mapping[str, float]]) -> list[str]:
    if not any(stages.values()):
        return []
    names = sorted({k for v in stages.values() for k in v})
    width = max(22, *(len(mode) + 2 for mode in stages))
    lines = [
        "Server stage time per turn (mean ms, real + charged; reference server):",
        "  " + f"{'mode':<{width}}" + "".join(f"{n[:9]:>10}" for n in names),
    ]
    for mode, values in stages.items():
        if values:
            cells = "".join(f"{values.get(n, 0.0):>10.1f}" for n in names)
            lines.append("  " + f"{mode:<{width}}" + cells)
    return lines
