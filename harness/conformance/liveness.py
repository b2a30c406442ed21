"""When certify asks whether the target still answers, and what it means when it does not.

A target that accepts the upgrade and then never answers (a black hole), or one that swallows
error events, would make every remaining case wait out its timeouts: ten minutes of FAILs that
say nothing new. After a case whose findings look like silence (STALL_RULES), the plugin runs
the liveness probe (harness.transport.liveness) on a fresh socket whose frames land in the
case's wire log: a plain create must be answered and an unknown previous_response_id must get an
error event, each event within the event timeout (so a slow but correct target passes). If
either is met with silence the remaining cases are not run (`TargetStopped`).
"""

from __future__ import annotations

from typing import Final

from harness.conformance.model import Outcome
from harness.errors import WsmodeError


class TargetStopped(WsmodeError):
    """An earlier case found the target no longer answering: this case is not run."""


# Findings after which the target may have stopped answering (silence, a response that never
# ends, a connection that cannot even be opened: a target that died): a liveness probe decides.
STALL_RULES: Final = frozenset(
    {"transport.stall", "transport.endless", "transport.error", "case.timeout", "queue.no_drop"}
)


def needs_probe(outcome: Outcome) -> bool:
    """Whether a case's outcome looks like a target that stopped answering."""
    return any(f.rule_id in STALL_RULES for f in outcome.findings)
