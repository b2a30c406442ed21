"""Service-level objectives and goodput: `--slo ttft_ms:p99<=500,e2e_ms:p90<=2000`.

A target names a metric, a percentile and a limit in ms. Two figures come from a set of targets:

- **goodput**, per mode: the share of turns that met *every* limit (a failed turn met none), and
  the share of rollouts that did (a rollout counts when it succeeded, each of its turns met every
  turn limit, and its own end-to-end time met `rollout_e2e_ms`'s limit when one is set). This is
  the per-request goodput of DistServe and vLLM's bench (`--goodput`): a request counts only if it
  met all of its SLOs.
- **attainment**, per target: the measured percentile of the metric over the mode's ok turns (or
  rollouts) against the limit; the SLO is met when every target's is within its limit. A p99
  target says "99 % of requests within the limit"; goodput says how many actually were.

Everything here reads the plain records of a results file (`samples[]`, `rollouts[]`), so the
run, the gate and the board compute the same figures from the same file.
"""

from __future__ import annotations

import re
import textwrap
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.progress import MAX_COLUMNS
from harness.results import stats

#: metric name in --slo -> the key of a turn sample (`samples[]`); `e2e_ms` is the turn's
TURN_METRICS = {
    "ttft_ms": "ttft_ms",
    "ttfe_ms": "ttfe_ms",
    "itl_ms": "itl_ms",
    "tpot_ms": "tpot_ms",
    "e2e_ms": "turn_e2e_ms",
    "turn_e2e_ms": "turn_e2e_ms",
}
#: metric name in --slo -> the key of a rollout record (`rollouts[]`)
ROLLOUT_METRICS = {"rollout_e2e_ms": "e2e_ms"}
# a turn with one output token has no inter-token gap: an ITL/TPOT limit cannot be missed
_VACUOUS_WHEN_ABSENT = frozenset({"itl_ms", "tpot_ms"})
_TARGET = re.compile(r"^\s*([a-z0-9_]+)\s*:\s*p(\d+(?:\.\d+)?)\s*<=\s*(\d+(?:\.\d+)?)\s*(ms)?\s*$")
SLO_SYNTAX = "METRIC:pNN<=MS[,...], e.g. ttft_ms:p99<=500,e2e_ms:p90<=2000"


@dataclass(frozen=True, slots=True)
class SloTarget:
    metric: str  # as the user named it (a key of TURN_METRICS or ROLLOUT_METRICS)
    percentile: float  # 0 < p <= 100
    limit_ms: float

    @property
    def per_rollout(self) -> bool:
        return self.metric in ROLLOUT_METRICS

    @property
    def key(self) -> str:
        """The field of a sample (or rollout record) the target reads."""
        return ROLLOUT_METRICS.get(self.metric) or TURN_METRICS[self.metric]

    def __str__(self) -> str:
        return f"{self.metric}:p{_plain(self.percentile)}<={_plain(self.limit_ms)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "percentile": self.percentile,
            "limit_ms": self.limit_ms,
            "text": str(self),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SloTarget:
        return cls(str(data["metric"]), float(data["percentile"]), float(data["limit_ms"]))


def _plain(value: float) -> str:
    """A number as --slo spells it (`500`, `99.9`), never in exponent form."""
    return str(int(value)) if value.is_integer() else repr(value)


def parse_target(text: str) -> SloTarget:
    """One `METRIC:pNN<=MS`; ValueError naming --slo and the accepted metrics otherwise."""
    match = _TARGET.match(text)
    if match is None:
        raise ValueError(f"--slo: cannot read {text.strip()!r}: expected {SLO_SYNTAX}")
    metric, pct, limit = match.group(1), float(match.group(2)), float(match.group(3))
    known = (*TURN_METRICS, *ROLLOUT_METRICS)
    if metric not in known:
        raise ValueError(f"--slo: unknown metric {metric!r} (choose from {', '.join(known)})")
    if not 0 < pct <= 100:
        raise ValueError(f"--slo: {text.strip()!r}: the percentile must be in (0, 100]")
    if limit <= 0:
        raise ValueError(f"--slo: {text.strip()!r}: the limit must be > 0 ms")
    return SloTarget(metric, pct, limit)


def parse_slo(text: str) -> tuple[SloTarget, ...]:
    """`--slo a,b,...`: the targets in order; one metric named twice is refused."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError(f"--slo: no target given: expected {SLO_SYNTAX}")
    targets = tuple(parse_target(p) for p in parts)
    seen: set[str] = set()
    for t in targets:
        if t.key in seen:
            raise ValueError(f"--slo: {t.metric} is named twice")
        seen.add(t.key)
    return targets


def targets_of(section: Mapping[str, Any] | None) -> tuple[SloTarget, ...]:
    """The targets a results file's `slo` section carries (none without one)."""
    if not section:
        return ()
    return tuple(SloTarget.from_json(t) for t in section.get("targets", []))


def _number(record: Mapping[str, Any], key: str) -> float | None:
    value = record.get(key)
    return float(value) if isinstance(value, int | float) else None


def turn_met(sample: Mapping[str, Any], targets: Sequence[SloTarget]) -> bool:
    """Did this turn meet every turn target? A failed turn met none."""
    if not sample.get("ok"):
        return False
    for t in targets:
        if t.per_rollout:
            continue
        value = _number(sample, t.key)
        if value is None:
            if t.key in _VACUOUS_WHEN_ABSENT:
                continue
            return False
        if value > t.limit_ms:
            return False
    return True


def _share(good: int, total: int) -> float | None:
    return round(good / total, 4) if total else None


def _attainment(
    target: SloTarget,
    samples: Sequence[Mapping[str, Any]],
    rollouts: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    records = rollouts if target.per_rollout else samples
    values = [v for r in records if r.get("ok") and (v := _number(r, target.key)) is not None]
    measured = stats.percentile(values, target.percentile) if values else None
    return {
        "target": str(target),
        "measured_ms": stats.round_or_none(measured),
        "count": len(values),
        "met": measured is not None and measured <= target.limit_ms,
    }


def mode_goodput(
    targets: Sequence[SloTarget],
    samples: Sequence[Mapping[str, Any]],
    rollouts: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Goodput and attainment of one mode's samples and rollout records."""
    # the n-th replay of a rollout id is its n-th run of turns (turn_index starts again)
    runs: dict[str, list[list[bool]]] = defaultdict(list)
    last_index: dict[str, int] = {}
    for s in samples:
        rid, index = str(s.get("rollout_id")), s.get("turn_index")
        index = index if isinstance(index, int) else 0
        if rid not in last_index or index <= last_index[rid]:
            runs[rid].append([])
        last_index[rid] = index
        runs[rid][-1].append(turn_met(s, targets))
    turns = sum(len(run) for group in runs.values() for run in group)
    turns_good = sum(sum(run) for group in runs.values() for run in group)
    rollout_targets = [t for t in targets if t.per_rollout]
    rollouts_good = 0
    seen: dict[str, int] = defaultdict(int)
    for r in rollouts:
        rid = str(r.get("rollout_id"))
        group, n = runs.get(rid, []), seen[rid]
        if r.get("turns") == 0:  # failed before its first turn: took no run of turns
            continue
        seen[rid] += 1
        turns_met = group[n] if n < len(group) else [False]  # no turns recorded: not met
        e2e = _number(r, "e2e_ms")
        ok = bool(r.get("ok")) and all(turns_met)
        ok = ok and all(e2e is not None and e2e <= t.limit_ms for t in rollout_targets)
        rollouts_good += ok
    attainment = [_attainment(t, samples, rollouts) for t in targets]
    return {
        "turns": turns,
        "turns_good": turns_good,
        "turn_goodput": _share(turns_good, turns),
        "rollouts": len(rollouts),
        "rollouts_good": rollouts_good,
        "rollout_goodput": _share(rollouts_good, len(rollouts)),
        "attainment": attainment,
        "met": bool(attainment) and all(a["met"] for a in attainment),
    }


def _by_mode(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        out[str(r.get("mode"))].append(r)
    return out


def slo_section(
    targets: Sequence[SloTarget],
    samples: Iterable[Mapping[str, Any]],
    rollouts: Iterable[Mapping[str, Any]],
    modes: Sequence[str],
) -> dict[str, Any]:
    """The results file's `slo` section: the targets and each mode's goodput and attainment.
    A rollout's sub-agents count as rollouts of their own (each has its own record)."""
    samples_by, rollouts_by = _by_mode(samples), _by_mode(rollouts)
    return {
        "targets": [t.to_json() for t in targets],
        "modes": {
            m: mode_goodput(targets, samples_by.get(m, []), rollouts_by.get(m, [])) for m in modes
        },
    }


def describe_goodput(mode: str, entry: Mapping[str, Any]) -> str:
    """One console line: `ws: goodput 97.5% of 120 turns, 8/9 rollouts; SLO met`."""
    turn = entry.get("turn_goodput")
    parts = [f"{mode}: goodput " + ("—" if turn is None else f"{turn:.1%}")]
    parts[0] += f" of {entry.get('turns', 0)} turns"
    if entry.get("rollouts"):
        parts.append(f"{entry['rollouts_good']}/{entry['rollouts']} rollouts")
    missed = [
        f"{a['target']} (measured {a['measured_ms'] if a['measured_ms'] is not None else '—'})"
        for a in entry.get("attainment", [])
        if not a.get("met")
    ]
    verdict = "SLO met" if entry.get("met") else "SLO missed: " + ", ".join(missed)
    return ", ".join(parts) + "; " + verdict


def format_goodput(payload: Mapping[str, Any]) -> str:
    """The console's goodput lines of a latency payload (empty without --slo)."""
    section = payload.get("slo")
    if not section:
        return ""
    targets = ", ".join(str(t) for t in targets_of(section))
    lines = [f"goodput under SLO {targets} (a turn counts only if it met every limit):"]
    for mode, entry in section.get("modes", {}).items():
        lines += textwrap.wrap(
            describe_goodput(mode, entry),
            MAX_COLUMNS,
            initial_indent="  ",
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
    return "\n".join(lines)


def pooled_goodput(payloads: Iterable[Mapping[str, Any]], mode: str) -> str | None:
    """Goodput of `mode` over the runs of one implementation that carry the same SLO (the
    latest run's): `97.5% of 1,200 turns, 16/18 rollouts under ttft_ms:p99<=500 (2 runs, the
    SLO met in 2)`; None when no run has an SLO for that mode."""
    entries: list[tuple[str, Mapping[str, Any]]] = []
    for payload in payloads:
        section = payload.get("slo") or {}
        entry = section.get("modes", {}).get(mode)
        if entry is not None:
            entries.append((", ".join(str(t) for t in targets_of(section)), entry))
    if not entries:
        return None
    slo = entries[-1][0]
    same = [e for s, e in entries if s == slo]
    turns, good = sum(e["turns"] for e in same), sum(e["turns_good"] for e in same)
    rollouts = sum(e.get("rollouts", 0) for e in same)
    rollouts_good = sum(e.get("rollouts_good", 0) for e in same)
    share = _share(good, turns)
    text = f"{'—' if share is None else f'{share:.1%}'} of {turns:,} turns"
    if rollouts:
        text += f", {rollouts_good}/{rollouts} rollouts"
    met = sum(bool(e.get("met")) for e in same)
    runs = "1 run" if len(same) == 1 else f"{len(same)} runs"
    return f"{text} under {slo} ({runs}, the SLO met in {met})"
