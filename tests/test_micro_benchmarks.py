"""The micro-benchmark suite (`bench/micro/`, pytest-benchmark) runs once, every benchmark's code
executed one time with `--benchmark-disable`, so none of them can rot unnoticed.

The suite is not collected by the test command (`testpaths`); this runs it in its own pytest
process, as `scripts/microbench` does, and reads the verdicts from its JUnit report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from tests.recorded import RECORDED

ROOT = Path(__file__).resolve().parents[1]
ACCEPTED_SKIPS = ("real recordings not found", "msgspec is not installed")


def test_every_micro_benchmark_runs_once(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    env = {**os.environ, "WSMODE_RECORDED": str(RECORDED)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "bench/micro",
            "-q",
            "--benchmark-disable",
            f"--junitxml={report}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cases = ElementTree.parse(report).getroot().iter("testcase")
    outcomes: dict[str, str] = {}
    for case in cases:
        skipped = case.find("skipped")
        outcomes[case.get("name", "")] = "ran" if skipped is None else skipped.get("message", "")
    areas = {"test_accumulator_feed", "test_stream_check", "test_wire_loads", "test_wire_dumps"}
    areas |= {"test_sse_parse", "test_replay_turn_events", "test_unscripted_plan"}
    areas |= {"test_turn_first_write_warm", "test_turn_first_write_long_chain"}
    areas |= {"test_histogram_record", "test_histogram_encode"}
    assert areas <= {name.split("[")[0] for name in outcomes}
    for name, outcome in outcomes.items():
        assert outcome == "ran" or any(reason in outcome for reason in ACCEPTED_SKIPS), name
    if RECORDED.exists():
        assert all(outcome == "ran" or "msgspec" in outcome for outcome in outcomes.values()), (
            outcomes
        )
