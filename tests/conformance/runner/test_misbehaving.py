"""A target that stalls, closes, or sends garbage gets FAIL with its wire log; the run goes on.

Each test starts a tiny misbehaving server on 127.0.0.1 (tests/conformance/servers.py) and runs
a few suite cases against it in a subprocess, exactly as `pytest suites --wsmode-target` would.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.servers import running

# Generic cases (no capability needed), each sending at least one create.
SELECTION = "test_upgrade or test_seq_from_zero or test_text_grammar or test_ping"
CASES = ("1.handshake.upgrade", "3.3.order.seq-from-zero", "3.3.lifecycle.text", "1.ws.ping")
# Short enough to keep the stalled-target runs quick, long enough that a busy machine's canned
# server (which answers at once) is never taken for a stalled one.
FAST = ("--wsmode-event-timeout", "5", "--wsmode-case-timeout", "60")


# goes-silent: a black hole once the pre-run check got its answer (one from the start is a
# pre-run error: tests/test_cli_targets.py)
@pytest.mark.parametrize("mode", ["stall", "goes-silent"])
def test_a_stalled_target_is_probed_and_the_rest_not_run(suites: Any, mode: str) -> None:
    with running(mode) as server:
        run = suites("--wsmode-target", server.url, "-k", SELECTION, *FAST)
    assert run.returncode == 1, run.output
    cases = run.cases()
    assert set(cases) == set(CASES), "every selected case has a verdict, run or not"
    assert all(case["verdict"] == "FAIL" for case in cases.values())
    first = cases[CASES[0]]  # the first case stalls; the liveness probe finds no answer
    assert "transport.stall" in first["rule_ids"] and not first.get("not_run")
    assert any(e["conn"] == "probe" for e in first["wire_log"]), "the probe's frames are logged"
    assert any("no frame within" in e["data"] for e in first["wire_log"])
    for case_id in CASES[1:]:
        assert cases[case_id]["not_run"] is True
        assert cases[case_id]["rule_ids"][-1] == "transport.stopped"
        assert f"after case {CASES[0]}" in cases[case_id]["detail"]
    stopped = run.report()["certify"]["stopped"]
    assert stopped["after"] == CASES[0] and stopped["not_run"] == len(CASES) - 1
    assert f"target stopped answering after case {CASES[0]}; 3 cases not run" in run.output


@pytest.mark.parametrize(
    ("mode", "rule", "evidence"),
    [
        ("garbage", "transport.garbage", "this is {not json"),
        ("close", "transport.closed", "code 1011"),
        ("binary", "transport.garbage", "0x0001"),
    ],
)
def test_misbehaving_target_fails_with_wire_log(
    suites: Any, mode: str, rule: str, evidence: str
) -> None:
    with running(mode) as server:
        run = suites("--wsmode-target", server.url, "-k", SELECTION, *FAST)
    assert run.returncode == 1, run.output
    cases = run.cases()
    assert set(cases) == set(CASES), "every selected case ran and has a verdict"
    for case_id in CASES:
        case = cases[case_id]
        assert case["verdict"] == "FAIL", (case_id, case["detail"])
        assert rule in case["rule_ids"], (case_id, case["rule_ids"])
        log = case["wire_log"]
        assert any(e["dir"] == "send" and e["kind"] == "text" for e in log)
        assert any(evidence in e["data"] for e in log), (case_id, log)
        assert all(isinstance(e["t_ms"], float | int) for e in log)


def test_conformant_canned_target_passes_and_undeclared_is_unimplemented(suites: Any) -> None:
    selection = f"{SELECTION} or test_reasoning_grammar or test_lifetime or test_http_json"
    with running("ok") as server:
        run = suites("--wsmode-target", server.url, "-k", selection, *FAST)
    assert run.returncode == 0, run.output
    cases = run.cases()
    for case_id in CASES:
        assert cases[case_id]["verdict"] == "PASS", cases[case_id]["detail"]
    for case_id in ("3.3.lifecycle.reasoning", "5.3.lifetime.limit-reached", "3.1.http.json"):
        assert cases[case_id]["verdict"] == "UNIMPLEMENTED"
        assert "declared" in cases[case_id]["detail"]


def test_should_failure_is_non_strict_unless_strict(suites: Any) -> None:
    with running("usage-in-created") as server:
        lenient = suites("--wsmode-target", server.url, "-k", "test_created_snapshot", *FAST)
        strict = suites(
            "--wsmode-target", server.url, "-k", "test_created_snapshot", "--wsmode-strict", *FAST
        )
    assert lenient.returncode == 0, lenient.output
    assert lenient.cases()["3.3.lifecycle.created-snapshot"]["verdict"] == "NON-STRICT"
    assert strict.returncode == 1, strict.output
    assert strict.cases()["3.3.lifecycle.created-snapshot"]["verdict"] == "NON-STRICT"


def test_several_targets_render_one_matrix(suites: Any) -> None:
    with running("ok") as good, running("stall") as bad:
        run = suites(
            "--wsmode-target", good.url, "--wsmode-target", bad.url, "-k", "test_upgrade", *FAST
        )
    assert run.returncode == 1
    assert len(run.reports) == 2
    matrix = list(run.root.glob("certify/_matrix/*/matrix.md"))
    assert len(matrix) == 1
    text = matrix[0].read_text(encoding="utf-8")
    assert f"127.0.0.1:{good.port}" in text and f"127.0.0.1:{bad.port}" in text
    row = next(line for line in text.splitlines() if "1.handshake.upgrade" in line)
    assert "PASS" in row and "FAIL" in row
    assert "cases × implementations" in run.output


def test_targets_that_never_finish_end_the_run_with_a_report(suites: Any) -> None:
    """An endless and a dripping target (each answers its first create, then never finishes a
    response) and one that dies after its first create end the run with a report and exit 1:
    the response timeout gives up the stream (or the connection fails), the probe finds the
    target stuck or gone, the rest is not run. A target whose model never stops on its own
    passes the short-answer cases: they cap max_output_tokens. The harness's own timeouts bound
    the run; the subprocess timeout only bounds a hang."""
    with (
        running("endless") as endless,
        running("drip") as drip,
        running("never-stops") as chatty,
        running("dies") as dying,
    ):
        run = suites(
            "--wsmode-target", endless.url, "--wsmode-target", drip.url,
            "--wsmode-target", chatty.url, "--wsmode-target", dying.url,
            "-k", SELECTION, "--wsmode-event-timeout", "3", "--wsmode-response-timeout", "3",
        )  # fmt: skip
    assert run.returncode == 1, run.output
    assert "INTERNALERROR" not in run.output
    # a target that died mid-run: the case that met it fails, the next cannot connect, the probe
    # finds no one listening, and the rest is not run
    died = run.report(f":{dying.port}")["certify"]
    assert died["cases"][0]["verdict"] == "PASS"
    assert "transport.error" in died["cases"][2]["rule_ids"], died["cases"][2]
    assert died["stopped"]["after"] == died["cases"][2]["id"], died["stopped"]
    assert "a fresh connection failed" in died["stopped"]["reason"]
    for server in (endless, drip):
        first, stuck, *rest = run.report(f":{server.port}")["certify"]["cases"]  # run order
        assert first["verdict"] == "PASS", "its first create is answered"
        assert stuck["verdict"] == "FAIL" and "transport.endless" in stuck["rule_ids"]
        assert "the response never ended" in stuck["detail"], stuck["detail"]
        assert any(e["conn"] == "probe" for e in stuck["wire_log"])
        assert rest and all(case["not_run"] is True for case in rest), rest
        stopped = run.report(f":{server.port}")["certify"]["stopped"]
        assert stopped["after"] == stuck["id"] and stopped["not_run"] == len(rest)
        report_md = next(run.root.glob(f"certify/*{server.port}*/*/report.md")).read_text()
        assert f"target stopped answering after case {stuck['id']}" in report_md
    for case_id, case in run.cases(f":{chatty.port}").items():
        assert case["verdict"] == "PASS", (case_id, case["detail"])
    capped = run.cases(f":{chatty.port}")["3.3.lifecycle.text"]
    assert "cut by the max_output_tokens 128 it asked for" in capped["detail"]


def test_each_finding_is_made_by_the_case_that_owns_its_rule(suites: Any) -> None:
    """Misattributions certifying vLLM showed: an absent `metadata` is required-fields'
    finding (member-values judges present members only); a wrong not-found code is
    not-found.fields' (socket-open judges that the socket serves the next request); a clean
    1011 close after a binary frame is a refusal (close codes are undocumented)."""
    selection = (
        "not-found.socket-open or not-found.fields or binary.refused"
        " or response.member-values or response.required-fields"
    )
    with running("quirks") as server:
        run = suites("--wsmode-target", server.url, "-k", selection, "--wsmode-event-timeout", "5")
    cases = run.cases()
    assert cases["4.3.not-found.socket-open"]["verdict"] == "PASS"
    assert "refused with code 'not_found'" in cases["4.3.not-found.socket-open"]["detail"]
    assert cases["4.2.not-found.fields"]["verdict"] == "FAIL"
    assert "error.code" in cases["4.2.not-found.fields"]["rule_ids"]
    refused = cases["4.3.binary.refused"]
    assert refused["verdict"] == "PASS" and "1011" in refused["detail"], refused["detail"]
    required = cases["3.4.response.required-fields"]
    assert required["verdict"] == "FAIL" and "missing 'metadata'" in required["detail"]
    members = cases["3.4.response.member-values"]
    assert members["verdict"] != "FAIL", members["detail"]
    assert not any("metadata" in f["message"] for f in members["findings"]), members["findings"]
