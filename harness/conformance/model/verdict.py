"""Cases, findings and verdicts: the pure core of the conformance checker (no I/O, no pytest).

A case declares its id (tied to a PROTOCOL.md section), its level (MUST / SHOULD / MAY), a
one-line expectation, the rule ids it judges and the target capabilities it needs. Running it
produces *findings* (a rule broken, at the rule's level) and *notes*; `decide_verdict` turns them
into one verdict, the way autobahn and h2spec grade:

    PASS            every judged rule held
    FAIL            a MUST-level finding in a MUST case
    NON-STRICT      a SHOULD-level finding (or any finding in a SHOULD case)
    PRECONDITION    the target could not be brought into the state the case tests (it answered
                    text to a named tool_choice): "precondition not met", neither PASS nor a FAIL
                    of the case's own rules; the one case about that setup carries the FAIL.
                    A finding the case made before (MUST or SHOULD) outranks it
    INFORMATIONAL   a finding in a MAY case, or a behaviour worth reporting but not judged
    UNIMPLEMENTED   the target does not declare a capability the case needs (never FAIL)
    ERROR           the harness itself broke
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.protocol.levels import REQUIREMENT_LEVELS, RequirementLevel

_RANK: dict[str, int] = {level: rank for rank, level in enumerate(REQUIREMENT_LEVELS)}

CATEGORIES: dict[str, str] = {
    "handshake": "Handshake and transport",
    "events": "Event order and schema",
    "continuation": "previous_response_id",
    "cache": "Connection cache",
    "errors": "Errors and limits",
    "http": "HTTP / SSE parity",
    "lanes": "Named lanes (stream_id)",
    "beta": "Beta extensions (steer, multi-agent inject)",
}


@dataclass(frozen=True, slots=True)
class Setup:
    """A state several cases need the target brought into, judged by one case of its own."""

    description: str
    judge: str  # the case that judges it (its FAIL is the one report of the failure)
    rule: str  # the rule whose finding in the judge means the setup failed


# When a setup fails (in its judge, or as the precondition of a case that needs it), the other
# cases that declare it (`@case(setups=...)`) are not run: PRECONDITION, "not run: setup failed
# in X", so one missing behaviour is reported once instead of once per case built on it.
SETUPS: dict[str, Setup] = {
    "tool_call": Setup(
        "a tool_choice naming a function is answered with a function_call",
        judge="2.1.function-call.named",
        rule="function_call.emitted",
    ),
}


class Verdict(enum.StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    NON_STRICT = "NON-STRICT"
    PRECONDITION = "PRECONDITION"
    INFORMATIONAL = "INFORMATIONAL"
    UNIMPLEMENTED = "UNIMPLEMENTED"
    ERROR = "ERROR"


# Worst first: the order reports list non-passing cases in.
VERDICT_ORDER: tuple[str, ...] = (
    "ERROR",
    "FAIL",
    "NON-STRICT",
    "PRECONDITION",
    "INFORMATIONAL",
    "UNIMPLEMENTED",
    "PASS",
)


def weaker(a: RequirementLevel, b: RequirementLevel) -> RequirementLevel:
    """The weaker of two levels: a MUST rule judged in a SHOULD case counts as SHOULD."""
    return a if _RANK[a] >= _RANK[b] else b


@dataclass(frozen=True, slots=True)
class CaseMeta:
    id: str
    section: str
    level: RequirementLevel
    category: str
    title: str  # the one-line expectation
    rules: tuple[str, ...] = ()  # rule ids this case judges
    requires: tuple[str, ...] = ()  # target capabilities it needs
    setups: tuple[str, ...] = ()  # named setups it needs (SETUPS): not run once one failed

    def __post_init__(self) -> None:
        unknown = [name for name in self.setups if name not in SETUPS]
        if unknown:
            raise ValueError(f"case {self.id}: unknown setup {unknown[0]!r} ({list(SETUPS)})")
        if self.level not in REQUIREMENT_LEVELS:
            raise ValueError(f"case {self.id}: level must be one of {REQUIREMENT_LEVELS}")
        if self.category not in CATEGORIES:
            raise ValueError(f"case {self.id}: unknown category {self.category!r}")
        if not self.id.startswith(self.section + "."):
            raise ValueError(f"case {self.id}: id must start with its section {self.section!r}")


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule the target broke, seen by this case."""

    rule_id: str
    level: RequirementLevel
    message: str
    sequence_number: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "level": self.level,
            "message": self.message,
            "sequence_number": self.sequence_number,
        }


@dataclass(slots=True)
class Outcome:
    """What running one case produced, before grading."""

    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # observed, not judged (incl. other rules)
    informational: bool = False  # the case asked to be reported as INFORMATIONAL
    unimplemented: str | None = None  # why the case could not run
    precondition: str | None = None  # the setup the case needs did not happen (first reason)
    failed_setup: str | None = None  # which named setup (SETUPS) that was, if any
    harness_error: str | None = None  # the harness broke (a bug in wsmode)


def decide_verdict(level: RequirementLevel, outcome: Outcome) -> Verdict:
    if outcome.harness_error is not None:
        return Verdict.ERROR
    if outcome.unimplemented is not None:
        return Verdict.UNIMPLEMENTED
    effective = [weaker(f.level, level) for f in outcome.findings]
    # A finding already made is never hidden by a setup that fell short afterwards: a MUST one
    # is a FAIL and a SHOULD one NON-STRICT, precondition or not (the detail says both).
    if "MUST" in effective:
        return Verdict.FAIL
    if "SHOULD" in effective:
        return Verdict.NON_STRICT
    if outcome.precondition is not None:
        return Verdict.PRECONDITION
    if effective or outcome.informational:
        return Verdict.INFORMATIONAL
    return Verdict.PASS


def is_failure(verdict: Verdict | str, *, strict: bool) -> bool:
    """Whether a verdict fails the run: FAIL and ERROR always, NON-STRICT with --strict."""
    value = str(verdict)
    return value in ("FAIL", "ERROR") or (strict and value == "NON-STRICT")


def detail_text(outcome: Outcome, limit: int = 8) -> str:
    """One readable paragraph: the findings first, then the notes."""
    parts: list[str] = []
    if outcome.harness_error:
        parts.append(f"harness error: {outcome.harness_error}")
    if outcome.unimplemented:
        parts.append(outcome.unimplemented)
    if outcome.precondition:
        parts.append(f"precondition not met: {outcome.precondition}")
    for finding in outcome.findings[:limit]:
        seq = f" (seq {finding.sequence_number})" if finding.sequence_number is not None else ""
        parts.append(f"[{finding.rule_id}] {finding.message}{seq}")
    if len(outcome.findings) > limit:
        parts.append(f"... and {len(outcome.findings) - limit} more findings")
    for note in outcome.notes[:limit]:
        parts.append(f"note: {note}")
    if len(outcome.notes) > limit:
        parts.append(f"... and {len(outcome.notes) - limit} more notes")
    return "; ".join(parts)


def unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)
