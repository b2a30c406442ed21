"""`wsmode traces convert`: every source, its summary, and one-line errors with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.traces.format import load_traces
from tests.recorded import TRACE_SAMPLES, needs

REAL = TRACE_SAMPLES
ROOT = Path(__file__).resolve().parents[3]


def convert(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "traces", "convert", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


@needs(REAL)
@pytest.mark.parametrize(
    ("source", "inputs", "summary"),
    [
        (
            "kvcache",
            ["kvcache-trace_0022.json", "kvcache-trace_0291.json"],
            "4 rollouts, 39 turns, 32 tool calls, 31 linked to their outputs, "
            "39 turns with recorded timings, 2 sub-agent rollouts",
        ),
        (
            "swe-agent",
            ["swe-agent-function_calling_simple.traj"],
            "1 rollouts, 5 turns, 5 tool calls, 4 linked to their outputs",
        ),
        (
            "openhands",
            ["openhands-basic.json", "openhands-wrong_initial_state.json"],
            "2 rollouts, 6 turns, 6 tool calls, 4 linked to their outputs",
        ),
    ],
)
def test_each_source_converts_and_says_what_it_kept(
    tmp_path: Path, source: str, inputs: list[str], summary: str
) -> None:
    out = tmp_path / "out.jsonl"
    done = convert("--from", source, *(str(REAL / i) for i in inputs), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{out}: {summary}")
    assert len(load_traces(out)) == int(summary.split()[0])


@needs(REAL)
def test_a_directory_is_searched_for_the_source_files(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions" / "2026" / "02" / "23"
    sessions.mkdir(parents=True)
    for f in REAL.glob("rollout-*.jsonl"):
        (sessions / f.name).write_bytes(f.read_bytes())
    done = convert(
        "--from", "codex", str(tmp_path / "sessions"), "--out", str(tmp_path / "o.jsonl")
    )
    assert done.returncode == 0, done.stderr
    assert "2 rollouts, 7 turns" in done.stdout


def test_no_input_files_is_an_error_not_an_empty_trace(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    done = convert("--from", "codex", str(tmp_path), "--out", str(out))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"wsmode traces convert: {tmp_path}: no codex files (rollout-*.jsonl) in this directory"
    )
    assert not out.exists()


@needs(REAL)
def test_bad_input_is_one_line_naming_file_path_and_field(tmp_path: Path) -> None:
    doc = json.loads((REAL / "kvcache-trace_0026.json").read_text(encoding="utf-8"))
    del doc["requests"][1]["out"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    done = convert("--from", "kvcache", str(bad), "--out", str(tmp_path / "o.jsonl"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"wsmode traces convert: {bad}: requests[1].out: ")
    assert "(missing)" in done.stderr


@needs(REAL)
def test_the_wrong_source_for_a_file_says_what_it_expected(tmp_path: Path) -> None:
    done = convert(
        "--from",
        "openhands",
        str(REAL / "kvcache-trace_0026.json"),
        "--out",
        str(tmp_path / "o.jsonl"),
    )
    assert done.returncode == 2
    assert "expected a list of OpenHands events" in done.stderr
