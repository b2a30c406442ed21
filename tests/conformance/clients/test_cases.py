"""The client cases against real adapter processes and real servers on loopback: every case
passes against a tiny well-behaved client (`adapter.py`) and fails, each for its own reason,
against a client broken in the way a real one was."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from harness.conformance.clients.catalogue import CASES, case_by_id
from harness.conformance.clients.client_config import Timings
from harness.conformance.clients.client_runner import (
    CaseResult,
    ClientUnderTest,
    run_case,
    run_cases,
)
from tests.conformance.clients.adapter import BREAKS

ADAPTER = Path(__file__).with_name("adapter.py")
# Short waits: each bounds a hang or sets a scene, none is asserted. The idle gap is where the
# server acts on an idle socket 50 ms after an answer: at load ~15 that act came later than
# 400 ms, and a well-behaved client's next turn met a closing socket.
TIMINGS = Timings(slow_ttft_s=1.0, lifetime_s=0.4, idle_gap_ms=1500, case_timeout_s=8.0)
HANG_TIMINGS = Timings(slow_ttft_s=1.0, lifetime_s=0.4, idle_gap_ms=400, case_timeout_s=2.0)

# (broken mode, the case that catches it, the rule it breaks, the verdict)
BROKEN = [
    ("hang-on-error", "4.1.client.error-nested", "client.no_hang", "FAIL"),
    ("crash-on-string-error", "4.1.client.error-string", "client.outcome", "FAIL"),
    ("drop-failed-code", "3.3.client.response-failed", "client.error_surfaced", "FAIL"),
    ("incomplete-as-completed", "3.3.client.response-incomplete", "client.terminal", "FAIL"),
    (
        "no-full-context",
        "5.1.client.previous-response-not-found",
        "client.full_context",
        "NON-STRICT",
    ),
    ("dead-id-retry", "5.1.client.previous-response-not-found", "client.dead_id", "FAIL"),
    ("retry-storm", "1.client.upgrade-404", "client.retry_storm", "NON-STRICT"),
    ("storm-200", "1.client.upgrade-404", "client.retry_storm", "FAIL"),
    ("no-retry-before-101", "1.client.close-before-101", "client.safe_retry", "NON-STRICT"),
    ("replay-after-drop", "4.3.client.drop-mid-stream", "client.no_silent_replay", "FAIL"),
    ("no-reconnect", "4.3.client.close-1001-idle", "client.recovers", "FAIL"),
    ("no-reconnect", "4.3.client.drop-idle", "client.recovers", "FAIL"),
    ("no-reconnect", "5.3.client.connection-limit", "client.recovers", "FAIL"),
    ("no-auth-on-reconnect", "4.3.client.drop-idle", "client.authorized", "FAIL"),
    ("reuse-dead-id", "4.3.client.drop-idle-store-false", "client.store_false_scope", "FAIL"),
    (
        "reuse-dead-id",
        "4.3.client.close-1001-idle-store-false",
        "client.store_false_scope",
        "FAIL",
    ),
    (
        "reuse-dead-id",
        "5.3.client.connection-limit-store-false",
        "client.store_false_scope",
        "FAIL",
    ),
    ("error-kills-session", "4.1.client.error-nested", "client.recovers", "FAIL"),
    ("leftover-failed", "3.3.client.response-failed", "client.own_outcome", "FAIL"),
    ("leftover-error", "3.3.client.response-failed", "client.own_outcome", "FAIL"),
    ("early-chain", "5.2.client.chain-after-terminal", "client.chain_after_terminal", "FAIL"),
    ("no-close", "3.3.client.conversation", "client.clean_close", "NON-STRICT"),
    ("strict-events", "3.2.client.unknown-event", "client.outcome", "FAIL"),
    ("full-history", "5.1.client.history-resent", "client.incremental", "INFORMATIONAL"),
    ("error-kills-session", "4.3.client.drop-before-created", "client.recovers", "FAIL"),
    ("retry-oversized", "1.client.frame-over-limit", "client.retry_storm", "NON-STRICT"),
    ("small-frames", "1.client.frame-over-32k", "client.outcome", "FAIL"),
    ("stale-id-next-task", "5.1.client.stale-id-next-task", "client.fresh_chain", "FAIL"),
    ("lifo", "5.2.client.queued-fifo", "client.fifo", "FAIL"),
    ("lane-blind", "5.2.client.lanes-error", "client.lane", "FAIL"),
    ("short-timeout", "5.3.client.slow-ttft", "client.patient", "NON-STRICT"),
    ("flat-error-blind", "10.client.error-flat", "client.error_detail", "NON-STRICT"),
    ("no-status", "1.client.upgrade-401", "client.error_detail", "NON-STRICT"),
    ("ignore-retry-after", "1.client.upgrade-429", "client.retry_storm", "NON-STRICT"),
    ("drop-last-delta", "3.3.client.conversation", "client.truthful", "FAIL"),
    ("resend-on-error", "4.1.client.error-nested", "client.retry_storm", "NON-STRICT"),
]


def adapter(broken: str | None = None) -> ClientUnderTest:
    extra = ("--break", broken) if broken else ()
    return ClientUnderTest("test-adapter", (sys.executable, str(ADAPTER), *extra))


@pytest.fixture(scope="module")
def well_behaved() -> dict[str, CaseResult]:
    results = asyncio.run(run_cases(adapter(), CASES, TIMINGS, jobs=2))
    return {r.case.id: r for r in results}


@pytest.fixture(scope="module")
def broken_runs() -> dict[tuple[str, str], CaseResult]:
    async def all_of_them() -> list[CaseResult]:
        gate = asyncio.Semaphore(2)

        async def one(mode: str, case_id: str) -> CaseResult:
            timings = HANG_TIMINGS if mode == "hang-on-error" else TIMINGS
            async with gate:
                return await run_case(
                    adapter(mode), case_by_id(case_id), timings, base_env=dict(os.environ)
                )

        return list(await asyncio.gather(*(one(mode, case) for mode, case, _, _ in BROKEN)))

    results = asyncio.run(all_of_them())
    return {(mode, case): r for (mode, case, _, _), r in zip(BROKEN, results, strict=True)}


def test_every_case_passes_against_a_well_behaved_client(
    well_behaved: dict[str, CaseResult],
) -> None:
    verdicts = {case_id: str(r.verdict) for case_id, r in well_behaved.items()}
    details = {
        case_id: r.as_dict()["detail"] for case_id, r in well_behaved.items() if r.verdict != "PASS"
    }
    assert verdicts == dict.fromkeys(verdicts, "PASS"), details
    assert len(verdicts) == len(CASES)


def test_the_well_behaved_client_was_really_put_to_each_test(
    well_behaved: dict[str, CaseResult],
) -> None:
    """The server did what each case says (so a PASS is not a case that tested nothing)."""
    drop = well_behaved["4.3.client.drop-mid-stream"]
    assert drop.run.for_turn(0) is not None and drop.run.for_turn(0).status == "error"  # type: ignore[union-attr]
    refused = well_behaved["1.client.upgrade-426"]
    assert refused.run.for_turn(0).status == "completed"  # type: ignore[union-attr]
    assert any(e["kind"] == "http" for e in refused.wire_log)  # the fallback reached the server
    failed = well_behaved["3.3.client.response-failed"].run.for_turn(0)
    assert failed is not None and (failed.status, failed.error_code) == ("failed", "invalid_prompt")
    lanes = well_behaved["5.2.client.lanes-error"].run.for_turn(1)
    assert lanes is not None and lanes.stream_id == "b"
    keepalive = well_behaved["3.2.client.unknown-event"].wire_log
    assert any('"keepalive"' in str(e["data"]) for e in keepalive)


def test_every_failure_mode_is_caught_by_a_case() -> None:
    """Each deliberate bug is run, and each case catches one; the upgrade statuses other than
    401, 404 and 429 are the same failure mode under another status."""
    assert {mode for mode, _, _, _ in BROKEN} == set(BREAKS)
    uncaught = {c.id for c in CASES} - {case_id for _, case_id, _, _ in BROKEN}
    assert uncaught <= {f"1.client.upgrade-{status}" for status in (403, 405, 426, 501)}


@pytest.mark.parametrize(("mode", "case_id", "rule_id", "verdict"), BROKEN)
def test_each_broken_client_fails_its_case_for_its_own_reason(
    broken_runs: dict[tuple[str, str], CaseResult],
    mode: str,
    case_id: str,
    rule_id: str,
    verdict: str,
) -> None:
    result = broken_runs[(mode, case_id)]
    found = {f.rule_id for f in result.outcome.findings}
    assert rule_id in found, result.as_dict()["detail"]
    assert str(result.verdict) == verdict, result.as_dict()["detail"]


def test_a_crash_is_named_with_its_type_and_place(
    broken_runs: dict[tuple[str, str], CaseResult],
) -> None:
    """The string-error crash is told as a crash (TypeError, in the client's error parser), not
    as a missing outcome alone."""
    result = broken_runs[("crash-on-string-error", "4.1.client.error-string")]
    messages = [f.message for f in result.outcome.findings if f.rule_id == "client.outcome"]
    assert any(
        "a crash inside the client library: TypeError at" in m and "in error_of" in m
        for m in messages
    ), messages


def test_storms_are_graded_by_their_count(
    broken_runs: dict[tuple[str, str], CaseResult],
) -> None:
    """Six attempts and two hundred break the same rule at different levels."""
    levels = {
        mode: {
            f.level
            for f in broken_runs[(mode, "1.client.upgrade-404")].outcome.findings
            if f.rule_id == "client.retry_storm"
        }
        for mode in ("retry-storm", "storm-200")
    }
    assert levels == {"retry-storm": {"SHOULD"}, "storm-200": {"MUST"}}


def test_a_client_that_never_chains_is_reported_not_passed_on_a_miss() -> None:
    """previous_response_not_found cannot be met by a client that resends the history every
    turn: the case says so (INFORMATIONAL) instead of a vacuous PASS."""
    case = case_by_id("5.1.client.previous-response-not-found")
    result = asyncio.run(
        run_case(adapter("full-history"), case, TIMINGS, base_env=dict(os.environ))
    )
    assert str(result.verdict) == "INFORMATIONAL", result.as_dict()["detail"]
    assert "never sent previous_response_id" in result.as_dict()["detail"]
