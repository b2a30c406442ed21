from __future__ import annotations

import pytest

from harness.conformance.model.cases import CATALOG, case, section_of
from harness.conformance.model.rules import all_rule_ids, rule_level
from harness.conformance.model.verdict import (
    CaseMeta,
    Finding,
    Outcome,
    Verdict,
    decide_verdict,
    detail_text,
    is_failure,
    weaker,
)


def outcome(*levels: str, **kwargs: object) -> Outcome:
    findings = [Finding(f"r{i}", level, "m") for i, level in enumerate(levels)]  # type: ignore[arg-type]
    return Outcome(findings=findings, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("case_level", "finding_levels", "expected"),
    [
        ("MUST", (), Verdict.PASS),
        ("MUST", ("MUST",), Verdict.FAIL),
        ("MUST", ("SHOULD",), Verdict.NON_STRICT),
        ("MUST", ("MAY",), Verdict.INFORMATIONAL),
        ("MUST", ("SHOULD", "MUST"), Verdict.FAIL),
        ("SHOULD", ("MUST",), Verdict.NON_STRICT),  # a MUST rule judged in a SHOULD case
        ("SHOULD", (), Verdict.PASS),
        ("MAY", ("MUST",), Verdict.INFORMATIONAL),
        ("MAY", (), Verdict.PASS),
    ],
)
def test_verdict_is_the_worst_finding_capped_by_the_case_level(
    case_level: str, finding_levels: tuple[str, ...], expected: Verdict
) -> None:
    assert decide_verdict(case_level, outcome(*finding_levels)) is expected  # type: ignore[arg-type]


def test_unimplemented_and_error_win_over_findings() -> None:
    assert decide_verdict("MUST", outcome("MUST", unimplemented="no")) is Verdict.UNIMPLEMENTED
    assert decide_verdict("MUST", outcome("MUST", harness_error="bug")) is Verdict.ERROR
    assert decide_verdict("MUST", outcome(informational=True)) is Verdict.INFORMATIONAL


def test_failure_rule_and_strictness() -> None:
    assert is_failure(Verdict.FAIL, strict=False) and is_failure("ERROR", strict=False)
    assert not is_failure(Verdict.NON_STRICT, strict=False)
    assert is_failure(Verdict.NON_STRICT, strict=True)
    for verdict in (Verdict.PASS, Verdict.INFORMATIONAL, Verdict.UNIMPLEMENTED):
        assert not is_failure(verdict, strict=True)
    assert weaker("MUST", "SHOULD") == "SHOULD" and weaker("MAY", "MUST") == "MAY"


def test_detail_text_lists_findings_then_notes() -> None:
    text = detail_text(
        Outcome(findings=[Finding("seq.start", "MUST", "starts at 3", 0)], notes=["n1"])
    )
    assert text == "[seq.start] starts at 3 (seq 0); note: n1"


def test_case_ids_are_tied_to_sections_and_rules_must_exist() -> None:
    assert section_of("3.3.order.seq-from-zero") == "3.3"
    assert section_of("1.handshake.upgrade") == "1"
    with pytest.raises(ValueError, match="section number"):
        section_of("handshake.upgrade")
    with pytest.raises(ValueError, match="must start with its section"):
        CaseMeta("3.3.x", "3.4", "MUST", "events", "t")
    with pytest.raises(ValueError, match="category"):
        CaseMeta("3.3.x", "3.3", "MUST", "nope", "t")
    with pytest.raises(KeyError, match="unknown rule"):
        case("9.9.bad", level="MUST", category="events", title="t", rules=("no.such.rule",))


def test_duplicate_case_ids_are_refused() -> None:
    @case("9.1.test.duplicate", level="MAY", category="events", title="first")
    async def first(ctx: object) -> None: ...

    with pytest.raises(ValueError, match="duplicate case id"):

        @case("9.1.test.duplicate", level="MAY", category="events", title="second")
        async def second(ctx: object) -> None: ...

    del CATALOG["9.1.test.duplicate"]


def test_every_rule_has_a_level() -> None:
    for rule_id in all_rule_ids():
        assert rule_level(rule_id) in ("MUST", "SHOULD", "MAY")


def test_every_rule_is_judged_by_some_case() -> None:
    from harness.conformance.model.rules import HARNESS_RULES
    from harness.conformance.runner.suite_loader import load_suites
    from harness.protocol.accumulator import RULES

    declared = {rule for meta in load_suites() for rule in meta.rules}
    exception_rules = {r for r in HARNESS_RULES if r.startswith(("transport.", "case."))}
    assert set(RULES) | set(HARNESS_RULES) - exception_rules <= declared


def test_precondition_not_met_is_its_own_verdict_below_a_must_finding() -> None:
    unmet = outcome(precondition="answered in text")
    assert decide_verdict("MUST", unmet) is Verdict.PRECONDITION
    assert not is_failure(Verdict.PRECONDITION, strict=True)
    assert decide_verdict("MUST", outcome("MUST", precondition="x")) is Verdict.FAIL
    # a finding already made is never hidden by the precondition that failed after it
    assert decide_verdict("MUST", outcome("SHOULD", precondition="x")) is Verdict.NON_STRICT
    assert decide_verdict("SHOULD", outcome("MUST", precondition="x")) is Verdict.NON_STRICT
    assert "precondition not met: answered in text" in detail_text(unmet)
