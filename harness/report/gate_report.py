"""What one `wsmode gate` run found: the findings per metric and per case, and the report.

The gate (gate.py) builds it; gate_text.py renders it for the terminal and for Markdown.
"""

from __future__ import annotations

import dataclasses

EXIT_OK, EXIT_REGRESSION = 0, 1  # bad input: 2, through harness.usage


@dataclasses.dataclass
class MetricFinding:
    mode: str
    metric: str
    percentile: float | None  # None for error_rate
    threshold_pct: float
    n_baseline: int
    n_current: int
    baseline: float | None = None
    current: float | None = None
    change_pct: float | None = None  # for error_rate: difference in percentage points
    ci_pct: tuple[float, float] | None = None
    p_value: float | None = None  # Mann-Whitney U, informational
    higher_is_better: bool = False
    status: str = "ok"  # ok | regression | improvement | noisy | insufficient-data
    note: str = ""

    @property
    def label(self) -> str:
        return self.metric if self.percentile is None else f"{self.metric} p{self.percentile:g}"


@dataclasses.dataclass
class CaseFinding:
    id: str
    level: str
    baseline: str
    current: str
    status: str  # regression | fixed | changed | new


@dataclasses.dataclass
class GateReport:
    kind: str
    baseline_label: str
    current_label: str
    metrics: list[MetricFinding] = dataclasses.field(default_factory=list)
    cases: list[CaseFinding] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    require_samples: bool = False

    @property
    def regressions(self) -> list[str]:
        out = [f"{m.mode} {m.label}" for m in self.metrics if m.status == "regression"]
        out += [f"{c.level} {c.id}" for c in self.cases if c.status == "regression"]
        if self.require_samples:
            out += [
                f"{m.mode} {m.label} (insufficient data)"
                for m in self.metrics
                if m.status == "insufficient-data"
            ]
        return out

    @property
    def exit_code(self) -> int:
        return EXIT_REGRESSION if self.regressions else EXIT_OK
