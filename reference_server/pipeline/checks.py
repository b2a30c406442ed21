"""The validate and safety stages: the input checks, incremental on a cache hit.

With `incremental_checks` and a parent, only the new items are read: the validator's state (the
chain's call ids) and the classifier's score ride in the parent's entry, and give the verdicts of
a full pass over the history (property-tested). Otherwise the whole history is read again.
Both stages are charged per item and token they read, once the rendering has counted the tokens.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.protocol import errors
from reference_server.pipeline.refusals import RequestRefused, SafetyBlock
from reference_server.pipeline.stages import StageLog
from reference_server.state.conversation import Conversation
from reference_server.state.render import Rendering
from reference_server.state.safety import SafetyState, SafetyVerdict, classify_input
from reference_server.state.validate import ValidationState, validate_items


@dataclass(frozen=True, slots=True)
class CheckedInput:
    validation: ValidationState  # carried into this turn's cache entry
    safety: SafetyState
    verdict: SafetyVerdict
    checked_items: int  # how many items were read (the newest ones)
    incremental: bool

    def charge(self, stages: StageLog, rendering: Rendering) -> None:
        checked_tokens = rendering.tail_token_count(self.checked_items)
        stages.charge("validate_items", self.checked_items, name="validate")
        stages.charge("validate_tokens", checked_tokens, name="validate")
        stages.charge("safety", checked_tokens if self.incremental else rendering.token_count)

    def refuse_if_flagged(self) -> None:
        if self.verdict.blocked:
            raise SafetyBlock(self.verdict.category or "unsafe content", self.verdict.rule_ids)


def check_input(
    parent: Conversation | None,
    new_items: Sequence[dict[str, Any]],
    *,
    incremental_checks: bool,
    stages: StageLog,
) -> CheckedInput:
    """Validate, then classify; raises RequestRefused naming the first invalid item."""
    carried = parent if incremental_checks else None
    history = parent.items if parent is not None and carried is None else ()
    checked = (*history, *new_items)
    started = time.perf_counter()
    start = carried.validation if carried is not None else ValidationState.initial()
    validation, problems = validate_items(start, checked, first_index=-len(history))
    stages.took("validate", started)
    if problems:
        first = problems[0]
        raise RequestRefused(
            errors.invalid_request(first.message, param=first.param, code=first.code)
        )
    started = time.perf_counter()
    scanned = carried.safety if carried is not None else SafetyState.initial()
    safety, verdict = classify_input(scanned, checked)
    stages.took("safety", started)
    return CheckedInput(validation, safety, verdict, len(checked), carried is not None)
