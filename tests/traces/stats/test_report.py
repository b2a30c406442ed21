"""`wsmode traces stats`: printed and as JSON, with a reference converted on the way, and bad
input as one usage line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as wsmode

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "tests" / "data" / "tracelab" / "sanitized" / "round_trace.jsonl"
SMOKE = ROOT / "traces" / "smoke.jsonl"


def test_json_report_with_a_tracelab_reference(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["traces", "stats", str(SMOKE), "--reference", str(EXAMPLE)]
    assert wsmode([*args, "--reference-from", "tracelab", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["corpus"]["rollouts"] == 3 and doc["reference"]["rollouts"] == 2
    assert doc["reference"]["distributions"]["turns_per_session"]["p50"] == 9.0
    assert doc["corpus"]["distributions"]["turns_per_session"]["max"] == 5.0
    # smoke rollouts have 5 turns, the reference sessions 9 and 10: no overlap
    assert doc["comparison"]["turns_per_session"]["ks"] == 1.0


def test_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert wsmode(["traces", "stats", str(EXAMPLE), "--from", "tracelab"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("2 rollouts, 2 sessions, 19 turns, 2 with recorded token counts")
    row = next(line for line in out if line.strip().startswith("turns_per_session"))
    assert row.split()[2:5] == ["2", "9.0", "9.0"]  # n, p10, p50
    assert wsmode(["traces", "stats", str(EXAMPLE), "--from", "tracelab",
                   "--reference", str(SMOKE)]) == 0  # fmt: skip
    assert "farthest from the reference:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reference-from", "tracelab"], "--reference-from needs --reference"),
        (["--from", "nope"], "unknown source 'nope'"),
        (["--reference", "missing.jsonl"], "missing.jsonl: no such file or directory"),
    ],
)
def test_bad_input_is_one_usage_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert wsmode(["traces", "stats", str(SMOKE), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("wsmode traces stats: ") and message in err[0]
