"""The 2.2 cases (steer, multi-agent inject) against three embedded reference servers in one run:
the capabilities on (every MUST case PASS), off (UNIMPLEMENTED, the MAY probe only reports), and
on with the `queue-injects` fault (the inject waits behind the response waiting for it: the
cases fail within the event timeout instead of hanging)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.conformance.killmatrix import EXPECTED
from tests.conformance.conftest import SUITES

REFERENCE = SUITES / "targets" / "reference.toml"
GATED = {
    "2.2.steer.successor": "steer",
    "2.2.steer.pending": "steer",
    "2.2.steer.failures": "steer",
    "2.2.steer.in-flight": "steer",
    "2.2.steer.compaction-refused": "steer",
    "2.2.inject.waiting": "multi_agent",
    "2.2.inject.atomic": "multi_agent",
    "2.2.inject.unknown-target": "multi_agent",
    "2.2.agent.tagged": "multi_agent",
}
PROBE = "2.2.beta.unknown-events"
EVENT_TIMEOUT_S = 2


def profile(path: Path, name: str, *, beta: bool) -> Path:
    """The reference profile without its short-lifetime second server (no lifetime case runs
    here), its beta capabilities on or off (its server runs with or without them)."""
    text = REFERENCE.read_text(encoding="utf-8")
    costs = (REFERENCE.parent / "reference-costs.toml").resolve()
    flag = "true" if beta else "false"
    for old, new in (
        ('name = "reference"', f'name = "{name}"'),
        ('lifetime_url = "embedded"', 'lifetime_url = ""'),
        ("steer = true", f"steer = {flag}"),
        ("multi_agent = true", f"multi_agent = {flag}"),
        ('server_profile = "reference-costs.toml"', f'server_profile = "{costs}"'),
    ):
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_beta_cases_pass_are_not_applicable_and_catch_a_queued_inject(
    suites: Any, tmp_path: Path
) -> None:
    on_profile = str(profile(tmp_path / "beta.toml", "beta", beta=True))
    off_profile = str(profile(tmp_path / "no-beta.toml", "no-beta", beta=False))
    run = suites(
        *("--wsmode-target", "embedded", "--wsmode-target-profile", on_profile),
        *("--wsmode-target", "embedded", "--wsmode-target-profile", off_profile),
        *("--wsmode-target", "embedded:queue-injects", "--wsmode-target-profile", on_profile),
        *("--wsmode-keyword", "2.2", "--wsmode-event-timeout", str(EVENT_TIMEOUT_S)),
    )
    assert run.returncode == 1, run.output  # the faulty server fails
    reports = {r["target"]["name"]: r["certify"]["cases"] for r in run.reports}
    on = {c["id"]: c for c in reports["beta"]}
    assert set(on) == {*GATED, PROBE}, run.output
    for case_id in GATED:
        assert on[case_id]["verdict"] == "PASS", (case_id, on[case_id]["detail"])
    assert on[PROBE]["verdict"] == "INFORMATIONAL"

    no_beta = {c["id"]: c for c in reports["no-beta"]}
    for case_id, capability in GATED.items():
        assert no_beta[case_id]["verdict"] == "UNIMPLEMENTED", case_id
        assert f"capability '{capability}'" in no_beta[case_id]["detail"]
    probe = no_beta[PROBE]
    assert probe["verdict"] == "INFORMATIONAL", "never FAIL without the capability"
    assert sum("unknown_event_type" in note for note in probe["notes"]) == 2, probe["notes"]

    faulty = {c["id"]: c for c in reports["beta+queue-injects"]}
    for case_id in EXPECTED["queue-injects"]:
        case = faulty[case_id]
        assert case["verdict"] == "FAIL", (case_id, case["detail"])
        assert [f["rule_id"] for f in case["findings"]] == ["inject.no_deadlock"], case_id
        assert f"no answer within {EVENT_TIMEOUT_S} s" in case["detail"]
    steer_cases = ("2.2.steer.successor", "2.2.steer.pending", "2.2.steer.failures")
    for case_id in (*steer_cases, "2.2.steer.in-flight"):
        assert faulty[case_id]["verdict"] == "PASS", (case_id, faulty[case_id]["detail"])
