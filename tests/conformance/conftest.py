"""Helpers to run the suites as a user would: `pytest suites ...` in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITES = REPO / "suites"


@dataclass
class SuiteRun:
    returncode: int
    output: str
    reports: list[dict[str, Any]]
    root: Path

    def report(self, name_part: str = "") -> dict[str, Any]:
        matches = [r for r in self.reports if name_part in r["target"]["name"]]
        assert len(matches) == 1, [r["target"]["name"] for r in self.reports]
        return matches[0]

    def cases(self, name_part: str = "") -> dict[str, dict[str, Any]]:
        return {c["id"]: c for c in self.report(name_part)["certify"]["cases"]}


# A whole `pytest suites` run in a subprocess: tens of seconds on a quiet machine, minutes on a
# busy one. The bounds below only catch a hang (a bug), so they are far above either.
SUITE_RUN_TIMEOUT_S = 600.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that run the suites get a backstop above the subprocess's own bound."""
    for item in items:
        if "suites" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(SUITE_RUN_TIMEOUT_S + 60))


def run_suites(root: Path, *args: str, timeout_s: float = SUITE_RUN_TIMEOUT_S) -> SuiteRun:
    """Run `pytest suites` with `args`; the timeout only guards against a hang (a bug)."""
    results = root / "results"
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(SUITES),
        "-q",
        "-p",
        "no:cacheprovider",
        "--wsmode-results",
        str(results),
        *args,
    ]
    process = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    reports = [
        json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(results.glob("certify/*/*/report.json"))
    ]
    return SuiteRun(process.returncode, process.stdout + process.stderr, reports, results)


@pytest.fixture
def suites(tmp_path: Path) -> Any:
    """`suites(*args)` runs the suites; each call gets its own results directory."""
    calls = [0]

    def run(*args: str, timeout_s: float = SUITE_RUN_TIMEOUT_S) -> SuiteRun:
        calls[0] += 1
        return run_suites(tmp_path / f"run{calls[0]}", *args, timeout_s=timeout_s)

    return run
