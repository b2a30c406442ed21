"""The case runner's bounds and what a run learns from its cases (no target needed)."""

from __future__ import annotations

from harness.conformance.model.verdict import SETUPS, CaseMeta, Finding, Outcome
from harness.conformance.runner.case_runner import (
    RunLedger,
    backstop_s,
    probe_budget_s,
    worst_stop_s,
)
from harness.conformance.targets.profile import TargetProfile


def test_a_target_that_stops_mid_run_ends_it_within_a_minute_by_default() -> None:
    defaults = TargetProfile()
    worst = worst_stop_s(defaults.event_timeout_s, defaults.response_timeout_s)
    assert worst < 60.0, "silence, an endless stream and a dead target end the run in < 60 s"
    # the backstop sits above everything the harness bounds itself: it never cuts a probe
    assert backstop_s(defaults.case_timeout_s, defaults.event_timeout_s) > (
        defaults.case_timeout_s + probe_budget_s(defaults.event_timeout_s)
    )


def _meta(case_id: str, **kwargs: object) -> CaseMeta:
    return CaseMeta(case_id, "2.1", "MUST", "continuation", "t", **kwargs)  # type: ignore[arg-type]


def test_a_failed_setup_is_reported_once_and_blocks_the_cases_built_on_it() -> None:
    setup = SETUPS["tool_call"]
    judge = _meta(setup.judge, rules=(setup.rule,))
    dependent = _meta("2.1.x.dependent", setups=("tool_call",))
    ledger = RunLedger()
    ledger.learn(judge, Outcome())
    assert ledger.blocked_by(dependent) is None, "a judge that passed blocks nothing"
    ledger.learn(judge, Outcome(findings=[Finding(setup.rule, "MUST", "answered in text")]))
    assert ledger.blocked_by(dependent) == (
        f"not run: setup failed in {setup.judge} ({setup.description})"
    )
    other = RunLedger()  # found first by a case that needs it: that case is named
    other.learn(_meta("2.1.x.first", setups=("tool_call",)), Outcome(failed_setup="tool_call"))
    assert "setup failed in 2.1.x.first" in (other.blocked_by(dependent) or "")
