"""Teeth: the suites pass the clean reference server and catch every opt-in fault.

One run certifies the clean server and one server per fault of reference_server/hooks/faults.py, in
parallel subprocesses (harness/conformance/killmatrix.py). Every MUST and SHOULD case must pass
on the clean server; with a fault on, the cases in `EXPECTED[fault]` must FAIL.
`WSMODE_WRITE_KILL_MATRIX=1` also rewrites the table in suites/README.md from this run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.conformance.killmatrix import (
    CLEAN_UNIMPLEMENTED,
    END_MARK,
    EXPECTED,
    START_MARK,
    check_matrix,
    render_table,
    run_matrix,
    write_table,
)
from harness.conformance.runner.suite_loader import load_suites
from reference_server.hooks.faults import ALL_FAULTS

README = Path(__file__).resolve().parents[2] / "suites" / "README.md"


def test_every_fault_has_catchers_that_exist() -> None:
    assert set(EXPECTED) == set(ALL_FAULTS)
    case_ids = {meta.id for meta in load_suites()}
    for fault, catchers in EXPECTED.items():
        assert catchers, fault
        assert set(catchers) <= case_ids, (fault, set(catchers) - case_ids)


def test_readme_table_covers_every_fault() -> None:
    text = README.read_text(encoding="utf-8")
    block = text[text.index(START_MARK) : text.index(END_MARK)]
    for fault, catchers in EXPECTED.items():
        row = next((line for line in block.splitlines() if line.startswith(f"| `{fault}` |")), "")
        assert row, f"suites/README.md has no kill-matrix row for {fault}: regenerate it"
        for case_id in catchers:
            assert f"`{case_id}`" in row, (fault, case_id)


@pytest.mark.timeout(2400)  # bounds a hang; the run's own bound is below it
def test_kill_matrix(tmp_path: Path) -> None:
    jobs = (os.cpu_count() or 2) + 1
    # ~3 minutes on a quiet 2-core machine, past 10 on a busy one: the bound only catches a hang
    run = run_matrix(jobs=jobs, workdir=tmp_path, timeout_s=2100)
    if os.environ.get("WSMODE_WRITE_KILL_MATRIX"):
        write_table(README, render_table(run))
    assert check_matrix(run) == []
    verdicts = {
        name: {c["id"]: c["verdict"] for c in result["certify"]["cases"]}
        for name, result in run.results.items()
    }
    # a named tool_choice answered in text: the cases built on the call cannot set up
    tool = verdicts["reference+ignore-named-tool-choice"]
    assert tool["2.1.function-call.after-reconnect"] == "PRECONDITION"
    assert tool["3.3.lifecycle.function-call"] == "PRECONDITION"
    # without usage the context cannot be judged: INFORMATIONAL, never PASS
    assert verdicts["reference+missing-usage"]["2.1.continuation.new-items-only"] == "INFORMATIONAL"
    clean = run.results["reference"]["certify"]
    assert clean["summary"]["must_passed"] == clean["summary"]["must_total"] > 0
    unimplemented = [c["id"] for c in clean["cases"] if c["verdict"] == "UNIMPLEMENTED"]
    assert set(unimplemented) <= set(CLEAN_UNIMPLEMENTED)
    should_unimplemented = sum(
        c["level"] == "SHOULD" for c in clean["cases"] if c["id"] in unimplemented
    )
    assert clean["summary"]["should_passed"] == clean["summary"]["should_total"] - (
        should_unimplemented
    )
    assert clean["summary"]["should_passed"] > 0
