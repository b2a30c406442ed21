"""When certify asks whether the target still answers, and what it means when it does not.

Before the run, `check_before_run` asks the pre-run target check (harness.transport.target_check)
whether each remote target is there at all: nothing listening, a refused upgrade or a key that
is refused stops the run with one line instead of a report of cases that all say the same.

A target that accepts the upgrade and then never answers (a black hole), or one that swallows
error events, would make every remaining case wait out its timeouts: ten minutes of FAILs that
say nothing new. After a case whose findings look like silence (STALL_RULES), the plugin runs
the liveness probe (harness.transport.liveness_probe) on a fresh socket whose frames land in the
case's wire log: a plain create must be answered and an unknown previous_response_id must get an
error event, each event within the event timeout (so a slow but correct target passes). If
either is met with silence the remaining cases are not run (`TargetStopped`).
"""

from __future__ import annotations

from typing import Final

from harness.conformance.model import Outcome
from harness.conformance.target_profile import PlannedTarget
from harness.errors import TargetError
from harness.transport.target_check import CheckTarget, check_targets_now


class TargetStopped(TargetError):
    """An earlier case found the target no longer answering: this case is not run."""


# Findings after which the target may have stopped answering (silence, a response that never
# ends, a connection that cannot even be opened: a target that died): a liveness probe decides.
STALL_RULES: Final = frozenset(
    {"transport.stall", "transport.endless", "transport.error", "case.timeout", "queue.no_drop"}
)


def needs_probe(outcome: Outcome) -> bool:
    """Whether a case's outcome looks like a target that stopped answering."""
    return any(f.rule_id in STALL_RULES for f in outcome.findings)


def check_before_run(targets: list[PlannedTarget]) -> str | None:
    """The pre-run target check (harness.transport.target_check) of every remote target: the
    first problem as one line, or None. An error answer to the check's create stops the run only
    when it would refuse every case alike (a key, a path, a model); other answers the cases judge.
    """
    checks = []
    for planned in targets:
        if planned.spec.embedded:
            continue
        profile = planned.profile
        key = profile.api_key or None
        checks.append(CheckTarget(profile.ws_url, "ws", profile.model, key))
        if profile.http_url:
            checks.append(CheckTarget(profile.http_url, "http", profile.model, key))
    if not checks:
        return None
    problem = check_targets_now(checks, any_error_refuses=False)
    return None if problem is None else problem.line()
