"""Reading a certificate: counts of those run, FAILs first, findings by root cause, report.md."""

from __future__ import annotations

from typing import Any

from harness.conformance.certificates.documents import render_html, terminal_summary
from harness.conformance.certificates.summary import (
    counts_line,
    offered_version,
    reading_order,
    render_markdown,
    root_causes,
    stopped_line,
)
from tests.conformance.certificates.test_documents import make_case, make_result

MODEL_MISSING = "the text response: refused with an error event (status 404, code model_not_found)"


def failing(case_id: str, message: str, level: str = "MUST") -> dict[str, Any]:
    case = make_case(case_id, level, "FAIL")
    case["findings"] = [{"rule_id": "case.expectation", "level": "MUST", "message": message}]
    return case


def certificate() -> dict[str, Any]:
    result = make_result("gw", {"3.a": ("MUST", "PASS"), "3.u": ("MUST", "UNIMPLEMENTED")})
    cases = result["certify"]["cases"]
    cases.insert(0, make_case("3.n", "SHOULD", "NON-STRICT"))
    cases += [failing(f"3.f{n}", f"{MODEL_MISSING}: model 'm{n}'") for n in range(3)]
    cases.append(failing("3.g", "responses answered the creates in order ['2', '1']"))
    result["config"]["upstream"] = "wsmode serve"
    result["config"]["model"] = "m"
    return result


def test_counts_leave_not_applicable_cases_out_of_those_run() -> None:
    cases = certificate()["certify"]["cases"]
    assert counts_line(cases) == "MUST 1 of 5 run (1 not applicable), SHOULD 0 of 1 run"


def test_one_cause_is_listed_once_with_its_cases_most_shared_first() -> None:
    causes = root_causes(certificate()["certify"]["cases"])
    assert causes[0].cases == ["3.f0", "3.f1", "3.f2"]
    assert causes[0].message.startswith(MODEL_MISSING)
    assert [c.cases for c in causes[1:]] == [["3.n"], ["3.g"]] or [c.cases for c in causes[1:]] == [
        ["3.g"],
        ["3.n"],
    ]


def test_fails_come_first_in_terminal_html_and_markdown() -> None:
    result = certificate()
    assert [c["verdict"] for c in reading_order(result["certify"]["cases"])][:5] == ["FAIL"] * 4 + [
        "NON-STRICT"
    ]
    terminal = terminal_summary(result, strict=False)
    assert terminal.index("FAIL          MUST   3.f0") < terminal.index("NON-STRICT    SHOULD 3.n")
    assert "upstream: wsmode serve" in terminal and "model m" in terminal
    assert "   3  [case.expectation] " + MODEL_MISSING in terminal
    markdown = render_markdown(result, strict=False)
    rows = [line for line in markdown.splitlines() if line.startswith("| FAIL")]
    assert markdown.index(rows[0]) < markdown.index("| NON-STRICT")
    assert "| 3 | `case.expectation` |" in markdown
    page = render_html(result, strict=False)
    listing = page[page.index("<h2>Cases</h2>") :]
    assert listing.index("<code>3.f0</code></a></td>") < listing.index("<code>3.n</code></a></td>")
    assert "Findings by root cause" in page


def test_a_stopped_run_says_after_which_case_and_how_many_were_not_run() -> None:
    result = certificate()
    result["certify"]["stopped"] = {"after": "3.f0", "reason": "silence", "not_run": 7}
    line = "target stopped answering after case 3.f0; 7 cases not run (silence)"
    assert stopped_line(result) == line
    assert line in terminal_summary(result, strict=False)
    assert line in render_markdown(result, strict=False)


def test_the_version_the_target_offers_is_read_from_its_headers() -> None:
    case = make_case("3.a", "MUST", "PASS")
    case["wire_log"] = [
        {"dir": "recv", "kind": "open", "data": "HTTP 101\nupgrade: websocket"},
        {"dir": "recv", "kind": "http", "data": "HTTP 200 application/json\nx-litellm-version: 1"},
    ]
    assert offered_version([case]) == "x-litellm-version: 1"
    assert offered_version([make_case("3.b", "MUST", "PASS")]) is None
