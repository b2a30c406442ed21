"""report.json follows the versioned results schema; HTML, JUnit and the matrix render it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from harness.conformance import commands
from harness.conformance.certificates.documents import (
    render_html,
    render_junit,
    render_matrix_markdown,
    run_directory,
    terminal_matrix,
    terminal_summary,
    write_run,
)
from harness.results.schema import dumps_result, finish_result, load_result, new_result

WIRE = [
    {"t_ms": 0.5, "conn": "ws1", "dir": "send", "kind": "text", "bytes": 20, "data": "<script>"},
    {"t_ms": 1.25, "conn": "ws1", "dir": "recv", "kind": "text", "bytes": 30, "data": '{"a":1}'},
]


def make_case(case_id: str, level: str, verdict: str, category: str = "events") -> dict[str, Any]:
    return {
        "id": case_id,
        "section": case_id.split(".")[0],
        "level": level,
        "title": f"title of {case_id}",
        "verdict": verdict,
        "duration_ms": 12.5,
        "rule_ids": ["seq.start"],
        "detail": "" if verdict == "PASS" else f"why {case_id} is {verdict}",
        "category": category,
        "findings": [],
        "notes": [],
        "wire_log": WIRE,
    }


def make_result(name: str, verdicts: dict[str, tuple[str, str]]) -> dict[str, Any]:
    result = new_result(
        "certify", label="certify", target={"url": f"ws://{name}/v1/responses", "name": name}
    )
    result["certify"]["cases"] = [
        make_case(case_id, level, verdict) for case_id, (level, verdict) in verdicts.items()
    ]
    return finish_result(result)


VERDICTS = {
    "3.a": ("MUST", "PASS"),
    "3.b": ("MUST", "FAIL"),
    "3.c": ("SHOULD", "NON-STRICT"),
    "3.d": ("MUST", "UNIMPLEMENTED"),
    "3.e": ("MUST", "ERROR"),
    "3.f": ("MAY", "INFORMATIONAL"),
}


def test_the_run_writes_three_files_and_json_is_a_valid_result(tmp_path: Path) -> None:
    result = make_result("alpha", VERDICTS)
    directory = run_directory(tmp_path, "alpha", result["started_at"])
    again = run_directory(tmp_path, "alpha", result["started_at"])
    assert again.name == directory.name + "-2"  # never overwrites
    paths = write_run(directory, result, strict=False)
    loaded = load_result(paths["json"])  # validates against the results schema
    case = loaded["certify"]["cases"][0]
    assert case["wire_log"] == WIRE and case["category"] == "events"
    assert loaded["certify"]["summary"]["must_total"] == 4
    assert directory.parts[-3:-1] == ("certify", "alpha")


def test_html_escapes_and_shows_the_frames_of_every_case_that_did_not_pass() -> None:
    page = render_html(make_result("alpha", VERDICTS), strict=True)
    assert page.startswith("<!doctype html>") and page.endswith("</body></html>\n")  # the shell
    assert "&lt;script&gt;" in page and "<script>" not in page
    assert page.count("<tr class=send>") == len(VERDICTS) - 1  # a PASS case's are in the JSON
    assert "wire-log rows in report.json (a passing case)" in page
    assert "why 3.b is FAIL" in page and "strict" in page
    assert "1.250" in page  # the arrival time, in ms


def test_junit_maps_verdicts(tmp_path: Path) -> None:
    result = make_result("alpha", VERDICTS)
    for strict, failures in ((False, 1), (True, 2)):
        root = ET.fromstring(render_junit([result], strict=strict))
        suite = root.find("testsuite")
        assert suite is not None
        assert suite.get("tests") == "6" and suite.get("failures") == str(failures)
        assert suite.get("errors") == "1" and suite.get("skipped") == "1"
        assert len(root.findall(".//testcase/system-out")) == 5  # not the PASS case


def test_matrix_has_a_column_per_target() -> None:
    first = make_result("alpha", VERDICTS)
    second = make_result("beta", {"3.a": ("MUST", "FAIL"), "3.z": ("MUST", "PASS")})
    markdown = render_matrix_markdown([first, second])
    assert "| case | level | alpha | beta |" in markdown
    assert "| `3.a` | MUST | PASS | FAIL |" in markdown
    assert "| `3.z` | MUST | — | PASS |" in markdown
    text = terminal_matrix([first, second])
    assert "3.a" in text and "3.b" in text  # rows where some target did not PASS
    summary = terminal_summary(first, strict=False)
    assert "MUST 1 of 3 run (1 not applicable), SHOULD 0 of 1 run" in summary
    assert "3.b" in summary


def test_certify_merge_renders_one_matrix(tmp_path: Path, capsys: Any) -> None:
    files = []
    for name, verdicts in (("alpha", VERDICTS), ("beta", {"3.a": ("MUST", "PASS")})):
        path = tmp_path / f"{name}.json"
        path.write_text(dumps_result(make_result(name, verdicts)), encoding="utf-8")
        files.append(str(path))
    parser = argparse.ArgumentParser()
    commands.add_certify_options(parser)
    args = parser.parse_args(["--merge", *files, "--out", str(tmp_path / "m")])
    assert commands.main(args) == 0
    assert (tmp_path / "m" / "matrix.html").is_file()
    assert "| case | level | alpha | beta |" in (tmp_path / "m" / "matrix.md").read_text()
    assert "alpha" in capsys.readouterr().out
    broken = tmp_path / "broken.json"
    broken.write_text("{}", encoding="utf-8")
    assert commands.main(parser.parse_args(["--merge", str(broken)])) == 2
