"""What `wsmode bench` and `wsmode load` watch besides the latencies, declared once for both
(harness.options, a `nested()` field of each config): the service-level objectives the results
judge goodput by."""

from __future__ import annotations

from dataclasses import dataclass

from harness.options import option
from harness.results.slo import SLO_SYNTAX, SloTarget, parse_slo

OBSERVE = "objectives and live metrics"


@dataclass
class ObserveOptions:
    slo: tuple[SloTarget, ...] = option(
        (),
        "--slo",
        metavar="TARGETS",
        group=OBSERVE,
        to_field=parse_slo,
        help=f"service-level objectives, {SLO_SYNTAX} (metrics: ttft_ms, ttfe_ms, itl_ms, "
        "tpot_ms, e2e_ms of a turn, rollout_e2e_ms): goodput per mode is the share of turns "
        "and of rollouts that met every limit",
    )

    def to_json(self) -> dict[str, object]:
        """The run's config entries (results `config`)."""
        return {"slo": [str(t) for t in self.slo]}
