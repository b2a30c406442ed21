"""The distributions that make a corpus look like agent sessions, measured from its rollouts.

Per distribution, one value per

* ``turns_per_session``: session: a rollout with the rollouts that continue it (``meta.continues``,
  a chain restarted after a compaction); a sub-agent is a session of its own, as TraceLab counts;
* ``tool_calls_per_turn``: turn (model request);
* ``input_growth_tokens``: turn after the first: its prompt minus the previous turn's prompt;
* ``append_tokens``: turn: the tokens of the new input items it sends (tool outputs, messages);
* ``output_tokens``: turn (reasoning included);
* ``tool_latency_ms``: turn that answers tool calls: the client-side tool time before it
  (``tool_wait_ms``, plus in-flight inject waits).

Token counts are the recorded ones where a rollout has them on every turn
(``observed.input_tokens`` / ``output_tokens``: a converted recording), else counted with the
project's tokenizer (``harness.protocol.tokenizer``, the reference server's) on the text a replay
sends; append tokens are always counted on that text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from harness.protocol.items import item_text, item_type
from harness.protocol.tokenizer import count_tokens
from harness.results.stats import percentile
from harness.traces.format import JSONObject, Rollout

DISTRIBUTIONS: Final = (
    "turns_per_session",
    "tool_calls_per_turn",
    "input_growth_tokens",
    "append_tokens",
    "output_tokens",
    "tool_latency_ms",
)
#: The quantiles a summary states (nearest rank, as every wsmode percentile).
QUANTILES: Final = (10, 50, 90, 99)
_TEXT_ITEMS: Final = ("message", "function_call", "function_call_output", "reasoning")


@dataclass(frozen=True)
class CorpusShape:
    """A corpus's samples per distribution, and what they were measured on."""

    rollouts: int
    sessions: int
    turns: int
    samples: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    recorded_tokens: int = 0  # rollouts whose token counts are the recorded ones

    def to_json(self) -> JSONObject:
        return {
            "rollouts": self.rollouts,
            "sessions": self.sessions,
            "turns": self.turns,
            "rollouts_with_recorded_tokens": self.recorded_tokens,
            "distributions": {name: summary(self.samples[name]) for name in DISTRIBUTIONS},
        }


def summary(values: Sequence[float]) -> JSONObject:
    """n, mean, the quantiles and the max of a sample (None where it is empty)."""
    if not values:
        return {"n": 0, "mean": None, **{f"p{q}": None for q in QUANTILES}, "max": None}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "mean": round(math.fsum(ordered) / len(ordered), 2),
        **{f"p{q}": round(percentile(ordered, q, is_sorted=True), 2) for q in QUANTILES},
        "max": round(ordered[-1], 2),
    }


def item_tokens(item: Mapping[str, Any]) -> int:
    """Tokens of one input item's text (an item without text: of its JSON)."""
    if item_type(item) in _TEXT_ITEMS:
        return count_tokens(item_text(item))
    return count_tokens(json.dumps(item))


def _recorded(rollout: Rollout) -> bool:
    return all(
        isinstance(t.observed.get("input_tokens"), int)
        and isinstance(t.observed.get("output_tokens"), int)
        for t in rollout.turns
    )


def _prompts(rollout: Rollout, recorded: bool) -> list[int]:
    """The prompt tokens of each turn."""
    if recorded:
        return [int(t.observed["input_tokens"]) for t in rollout.turns]
    running = count_tokens(rollout.instructions or "")
    if rollout.tools:
        running += count_tokens(json.dumps(list(rollout.tools)))
    prompts: list[int] = []
    for turn in rollout.turns:
        running += sum(item_tokens(i) for i in turn.input)
        prompts.append(running)
        running += sum(item_tokens(i) for i in turn.history_outputs())
    return prompts


def _sessions(rollouts: Sequence[Rollout]) -> list[int]:
    """Turns per session: a chain restart's turns count with the rollout it continues."""
    root: dict[str, str] = {}
    turns: dict[str, int] = {}
    for r in rollouts:
        continues = r.meta.get("continues")
        head = root.get(str(continues), str(continues)) if continues else r.id
        root[r.id] = head
        turns[head] = turns.get(head, 0) + len(r.turns)
    return list(turns.values())


def measure(rollouts: Iterable[Rollout]) -> CorpusShape:
    """The samples of every distribution in :data:`DISTRIBUTIONS`."""
    items = list(rollouts)
    samples: dict[str, list[float]] = {name: [] for name in DISTRIBUTIONS}
    recorded_count = 0
    for r in items:
        recorded = _recorded(r)
        recorded_count += recorded
        prompts = _prompts(r, recorded)
        for turn, prompt, before in zip(r.turns, prompts, [None, *prompts], strict=False):
            samples["tool_calls_per_turn"].append(len(turn.function_calls))
            samples["append_tokens"].append(sum(item_tokens(i) for i in turn.input))
            out = turn.observed["output_tokens"] if recorded else turn.output_tokens
            samples["output_tokens"].append(float(out))
            if before is not None:
                samples["input_growth_tokens"].append(prompt - before)
            if turn.answered_call_ids or turn.injects:
                samples["tool_latency_ms"].append(turn.tool_wait_ms + turn.inject_wait_ms)
    samples["turns_per_session"] = [float(n) for n in _sessions(items)]
    return CorpusShape(
        rollouts=len(items),
        sessions=len(samples["turns_per_session"]),
        turns=sum(len(r.turns) for r in items),
        samples={name: tuple(float(v) for v in values) for name, values in samples.items()},
        recorded_tokens=recorded_count,
    )
