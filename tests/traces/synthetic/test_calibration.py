"""traces/CALIBRATION.md is what the calibration tool computes: the TraceLab table always, the
whole page where the real recordings are at hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.ratios.long_sessions import missing_reason, reference_corpus
from harness.traces.commands import tool_main
from harness.traces.converters.tracelab import convert_tracelab
from harness.traces.format import dump_rollouts
from harness.traces.stats import measure
from harness.traces.synthetic.calibration import calibration_table

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "traces" / "CALIBRATION.md"
EXAMPLE = ROOT / "tests" / "data" / "tracelab" / "sanitized" / "round_trace.jsonl"


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_tracelab_table_is_what_the_tool_computes(tmp_path: Path) -> None:
    out = tmp_path / "CALIBRATION.md"
    assert tool_main(["calibration", "--out", str(out)]) == 0
    title = "Against the TraceLab examples"
    assert _section(out.read_text(), title) == _section(COMMITTED.read_text(), title)
    # the calibrated corpus is closer to the example sessions than version 1's, in all
    total = next(line for line in out.read_text().splitlines() if line.startswith("| sum of KS"))
    v2, v1 = (float(cell) for cell in total.strip("|").split("|")[1:] if cell.strip())
    assert v2 < v1


@pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))
def test_the_whole_page_is_what_the_tool_computes(tmp_path: Path) -> None:
    dump_rollouts(reference_corpus(), tmp_path / "real.jsonl")
    out = tmp_path / "CALIBRATION.md"
    assert tool_main(["calibration", "--reference", str(tmp_path), "--out", str(out)]) == 0
    assert out.read_text() == COMMITTED.read_text()


def test_calibration_table_rows() -> None:
    claude, codex = convert_tracelab(EXAMPLE)
    lines = calibration_table(("ref", measure([claude])), [("same", measure([claude])),
                                                         ("other", measure([codex]))])  # fmt: skip
    assert lines[0] == "| distribution (p50 / p90) | ref | same | KS | other | KS |"
    row = next(line for line in lines if line.startswith("| turns_per_session"))
    assert row == "| turns_per_session | 10 / 10 | 10 / 10 | 0.00 | 9 / 9 | 1.00 |"
    assert lines[-1].startswith("| sum of KS distances | | | 0.00 |")
