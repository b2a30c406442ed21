"""Recorded vs replayed: the timings a trace kept from the original session (``observed``)
beside what the bench measured for the same turns, per variant, so a user sees how far the
reference server's profile is from the service that was recorded.

Only turns that carry a recorded value enter a row, and the replayed side is the same turns
(ok ones), so both medians describe one set of requests. TTFT is ``observed.ttft_ms`` against
the replayed TTFT; turn time is ``observed.e2e_ms`` (the recorded request's duration) against
the replayed ``turn_e2e_ms``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

from harness.traces.format import Rollout

#: (row name, the recorded ``observed`` key, the replayed sample key)
_METRICS = (("TTFT", "ttft_ms", "ttft_ms"), ("turn time", "e2e_ms", "turn_e2e_ms"))


def _recorded(rollouts: Sequence[Rollout], key: str) -> dict[tuple[str, int], float]:
    values: dict[tuple[str, int], float] = {}
    for r in rollouts:
        for t in r.turns:
            value = t.observed.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                values[(r.id, t.index)] = float(value)
    return values


def recorded_vs_replayed(
    rollouts: Sequence[Rollout], samples: Sequence[Mapping[str, Any]], modes: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per metric with recorded values: the recorded median and, per mode, the
    replayed median of the same turns (results ``bench.analysis.recorded_vs_replayed``)."""
    order = ("ws", "http", "http-chained")
    modes = sorted(modes, key=lambda m: (order.index(m) if m in order else len(order), m))
    rows: list[dict[str, Any]] = []
    for name, observed_key, sample_key in _METRICS:
        recorded = _recorded(rollouts, observed_key)
        if not recorded:
            continue
        replayed: dict[str, list[float]] = {m: [] for m in modes}
        for s in samples:
            key = (s.get("rollout_id"), s.get("turn_index"))
            value = s.get(sample_key)
            if s.get("ok") and key in recorded and value is not None and s["mode"] in replayed:
                replayed[s["mode"]].append(float(value))
        rows.append(
            {
                "metric": name,
                "turns": len(recorded),
                "recorded_p50_ms": round(median(recorded.values()), 1),
                "replayed_p50_ms": {
                    m: round(median(v), 1) if v else None for m, v in replayed.items()
                },
            }
        )
    return rows


def format_recorded(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The console lines of the rows (none without recorded timings)."""
    if not rows:
        return []
    modes = list(rows[0]["replayed_p50_ms"])
    header = f"  {'metric':<12}{'turns':>7}{'recorded p50':>14}" + "".join(
        f"{m:>16}" for m in modes
    )
    lines = ["Recorded vs replayed (median ms over the turns whose trace kept the timing):", header]
    for row in rows:
        cells = "".join(
            f"{'-' if v is None else f'{v:.1f}':>16}" for v in row["replayed_p50_ms"].values()
        )
        lines.append(
            f"  {row['metric']:<12}{row['turns']:>7}{row['recorded_p50_ms']:>14.1f}{cells}"
        )
    return lines
