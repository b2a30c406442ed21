"""Targets that behave like the third-party gateways certified in issue 11 did.

The false FAILs they met are gone (a FIFO judged without `metadata`, SDK accumulator cases that
fail on their own rules only, the warm-up's in_progress a SHOULD), and a dead or error-swallowing
target ends the run with "target stopped answering after case X; N cases not run". These tests
assert verdicts and counts, never wall time (bench/ratios/dead_target.py reports the time).
"""

from __future__ import annotations

from typing import Any

from tests.conformance.servers import running

FAST = ("--wsmode-event-timeout", "0.5", "--wsmode-case-timeout", "10")
FORMER_FALSE_FAILS = (
    "5.2.queue.fifo",
    "5.2.queue.mid-stream",
    "3.3.sdk.accumulator-text",
    "3.3.sdk.accumulator-incomplete",
)


def test_gateway_like_target_has_no_false_fails(suites: Any) -> None:
    selection = " or ".join((*FORMER_FALSE_FAILS, "2.1.generate-false.warmup", "3.2.sdk.event"))
    with running("gateway") as server:
        run = suites("--wsmode-target", server.url, "-k", selection, *FAST)
    cases = run.cases()
    for case_id in FORMER_FALSE_FAILS:
        assert cases[case_id]["verdict"] == "PASS", (case_id, cases[case_id]["detail"])
    fifo_notes = " ".join(cases["5.2.queue.fifo"]["notes"])
    assert "echo neither metadata nor instructions" in fifo_notes
    # deltas without logprobs (as the gateways sent them): the SDK tolerates them, and the
    # accumulator case notes the other findings, judged by their own cases, instead of failing
    notes = cases["3.3.sdk.accumulator-text"]["notes"]
    assert any("logprobs" in n and "tolerated" in n for n in notes), notes
    assert any("event.legacy_fields" in n and "judged by its own case" in n for n in notes), notes
    warmup = cases["2.1.generate-false.warmup"]
    assert warmup["verdict"] == "NON-STRICT", warmup["detail"]
    judged = [f["rule_id"] for f in warmup["findings"] if f["level"] in ("MUST", "SHOULD")]
    assert judged == ["generate_false.in_progress"]  # lifecycle.no_in_progress: MAY, a note


def _not_run_invariants(report: dict[str, Any]) -> dict[str, Any]:
    stopped = report["certify"]["stopped"]
    cases = report["certify"]["cases"]
    ids = [c["id"] for c in cases]
    after = ids.index(stopped["after"])
    later = [c for c in cases[after + 1 :] if c["verdict"] != "UNIMPLEMENTED"]
    assert later and all(c.get("not_run") and c["verdict"] == "FAIL" for c in later)
    assert all(c["findings"][-1]["rule_id"] == "transport.stopped" for c in later)
    assert stopped["not_run"] == len(later) == sum(1 for c in cases if c.get("not_run"))
    return stopped


def test_black_hole_target_ends_with_the_rest_not_run(suites: Any) -> None:
    with running("goes-silent") as server:  # a black hole once the pre-run check got its answer
        run = suites("--wsmode-target", server.url, *FAST)
    assert run.returncode == 1, run.output
    stopped = _not_run_invariants(run.report())
    assert "no terminal event" in stopped["reason"] or "no frame" in stopped["reason"]
    assert f"target stopped answering after case {stopped['after']};" in run.output
    assert f"{stopped['not_run']} cases not run" in run.output


def test_error_swallowing_target_ends_with_the_rest_not_run(suites: Any) -> None:
    with running("swallow-errors") as server:
        run = suites("--wsmode-target", server.url, *FAST)
    assert run.returncode == 1, run.output
    stopped = _not_run_invariants(run.report())
    assert "errors swallowed" in stopped["reason"]
    first = {c["id"]: c for c in run.report()["certify"]["cases"]}[stopped["after"]]
    assert not first.get("not_run") and first["verdict"] == "FAIL"


def test_a_slow_but_correct_target_passes_within_its_event_timeout(suites: Any) -> None:
    selection = "1.handshake.upgrade or 3.3.lifecycle.text or 5.2.queue.fifo"
    with running("slow") as server:
        run = suites("--wsmode-target", server.url, "-k", selection, "--wsmode-event-timeout", "2")
    assert run.returncode == 0, run.output
    report = run.report()
    assert "stopped" not in report["certify"]
    assert {c["verdict"] for c in report["certify"]["cases"]} == {"PASS"}


def test_k_selects_cases_never_the_target_by_its_name(suites: Any) -> None:
    # pytest's own -k would match every case of the target named "reference"
    run = suites("--wsmode-keyword", "1.ws.ping or reference", "--wsmode-model", "wsmode-other")
    assert run.returncode == 0, run.output
    assert set(run.cases()) == {"1.ws.ping"}
    assert run.report()["config"]["model"] == "wsmode-other"  # --model, shown in the report
