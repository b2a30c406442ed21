"""The target distributions the generator draws a rollout from, as one value
(:class:`Targets`): pass another to ``generate_rollout(..., targets=...)`` to shape a corpus
after other sessions.

Two are named. :data:`UNCALIBRATED` holds generator version 1's choices (the corpus before
2026-12: a Codex-style loop with one user message, second-long tools). :data:`CALIBRATED`, the
default, was fitted against the real sessions this project can read: TraceLab's example sessions
and published figures, and the Codex and Claude Code sessions of ``../shared/recorded/set3``;
``traces/CALIBRATION.md`` tables each distribution against them (``wsmode traces stats``). Token
counts are chars / 4 when generated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

__all__ = ["CALIBRATED", "UNCALIBRATED", "Targets", "load_targets"]


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, kw_only=True)
class Targets:
    """Every distribution a generated rollout is drawn from (ranges are uniform, inclusive;
    ``*_median`` / ``*_sigma`` / ``*_max`` a capped lognormal)."""

    #: turns per rollout, per kind
    turns_range: Mapping[str, tuple[int, int]]
    #: the system prompt and the first user message (environment, AGENTS.md, tree, task)
    instructions_tokens: tuple[int, int] = (2000, 6000)
    first_message_tokens: tuple[int, int] = (1500, 6000)
    #: tool outputs: median x a per-tool factor (edits answer a two-line ack)
    tool_output_median_tokens: float = 600.0
    tool_output_sigma: float = 1.1
    tool_output_max_tokens: int = 8000
    tool_output_factor: Mapping[str, float] = field(
        default_factory=lambda: _frozen(
            {"read_file": 1.6, "run_tests": 2.2, "search": 1.0, "list_dir": 0.5, "run_shell": 1.0}
        )
    )
    #: client-side tool time; test runs apart; parallel calls overlap (the turn waits the max)
    tool_wait_median_ms: float = 1000.0
    tool_wait_sigma: float = math.log(4.0) / 1.2816  # p90 = 4 x the median
    test_wait_median_ms: float = 6000.0
    test_wait_sigma: float = 0.9
    tool_wait_max_ms: float = 120_000.0
    #: a turn whose first call is read-only fans out to 2-4 read-only calls with this chance
    parallel_given_read_only: float = 0.33
    parallel_calls: tuple[int, int] = (2, 4)
    #: model output: hidden reasoning on some turns, a preamble message, the calls
    reasoning_prob: float = 0.6
    reasoning_median_tokens: float = 120.0
    reasoning_sigma: float = 0.9
    reasoning_max_tokens: int = 1800
    preamble_prob: float = 0.2
    patch_median_tokens: float = 220.0
    patch_sigma: float = 0.8
    patch_max_tokens: int = 2000
    final_message_tokens: tuple[int, int] = (120, 600)
    #: a steering message sent with the tool outputs
    user_followup_prob: float = 0.02
    #: a turn that answers the user (a message, no calls) and waits for the next user message
    #: (0: never; version 1 had none)
    user_turn_prob: float = 0.0
    user_reply_tokens: tuple[int, int] = (60, 400)
    #: the final context (estimate after the last output) is kept in these bounds
    context_bounds: tuple[int, int] | None = (30_000, 150_000)

    def with_changes(self, **changes: Any) -> Targets:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        doc = {k: list(v) if isinstance(v, tuple) else v for k, v in doc.items()}
        doc["turns_range"] = {k: list(v) for k, v in self.turns_range.items()}
        doc["tool_output_factor"] = dict(self.tool_output_factor)
        return doc


_KINDS_V1: Final = {"bug_fix": (20, 50), "refactor": (35, 80), "test_fix": (25, 60)}

#: Generator version 1's distributions (the corpus before the calibration).
UNCALIBRATED: Final = Targets(turns_range=_frozen(_KINDS_V1))

#: Fitted against real sessions (traces/CALIBRATION.md): shorter typical tools with minute-long
#: outliers, tool outputs with a longer tail, more model output (reasoning on most turns), more
#: parallel calls, user turns between tool loops, longer sessions.
CALIBRATED: Final = Targets(
    turns_range=_frozen({"bug_fix": (20, 60), "refactor": (35, 90), "test_fix": (25, 70)}),
    tool_output_median_tokens=450.0,
    tool_output_sigma=1.4,
    tool_output_max_tokens=24_000,
    tool_wait_median_ms=250.0,
    tool_wait_sigma=1.9,
    test_wait_median_ms=1500.0,
    test_wait_sigma=1.5,
    tool_wait_max_ms=600_000.0,
    parallel_given_read_only=0.45,
    parallel_calls=(2, 5),
    reasoning_prob=0.85,
    reasoning_median_tokens=200.0,
    reasoning_sigma=1.3,
    reasoning_max_tokens=8000,
    preamble_prob=0.35,
    patch_median_tokens=350.0,
    patch_sigma=1.0,
    patch_max_tokens=6000,
    user_turn_prob=0.15,
)


def load_targets(path: str | Path, base: Targets = CALIBRATED) -> Targets:
    """``base`` with the fields a JSON object in ``path`` gives (e.g.
    ``{"tool_wait_median_ms": 300}``); an unknown field is a ``ValueError`` naming it."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object of target distributions")
    known = {f.name for f in fields(Targets)}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise ValueError(
            f"{path}: unknown target {unknown[0]!r}; known: {', '.join(sorted(known))}"
        )
    changes: dict[str, Any] = {}
    for name, value in doc.items():
        if name == "turns_range":
            changes[name] = _frozen({k: (int(v[0]), int(v[1])) for k, v in value.items()})
        elif name == "tool_output_factor":
            changes[name] = _frozen({k: float(v) for k, v in value.items()})
        elif isinstance(value, list):
            changes[name] = tuple(value)
        else:
            changes[name] = value
    return base.with_changes(**changes)
