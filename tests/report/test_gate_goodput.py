"""The gate's goodput findings and the board's goodput note, from results files with --slo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.cli import main as cli_main
from harness.report.board import write_board
from harness.report.gate import run_gate
from harness.report.gate_goodput import GOODPUT_DROP_PP, gate_goodput
from harness.results.schema import finish_result
from harness.results.slo import parse_slo, slo_section
from harness.results.store import write_result


def _with_slo(result: dict[str, Any], text: str) -> dict[str, Any]:
    bench = result["bench"]
    bench["slo"] = slo_section(
        parse_slo(text), bench["samples"], bench["rollouts"], list(bench["modes"])
    )
    return finish_result(result, ended_at=result["ended_at"])


def test_no_slo_in_the_current_run_means_no_goodput_finding(synth: Any) -> None:
    assert gate_goodput(synth.bench()["bench"], synth.bench(seed=1)["bench"]) == []


def test_a_missed_slo_is_a_regression_named_in_the_notes(synth: Any) -> None:
    baseline = synth.bench(seed=1)
    current = _with_slo(synth.bench(seed=2), "ttft_ms:p99<=5")  # ws TTFT is ~20 ms
    report = run_gate(baseline, current)
    goodput = {f.mode: f for f in report.metrics if f.metric == "goodput"}
    assert set(goodput) == {"ws", "http"} and goodput["ws"].status == "regression"
    assert "ws goodput" in report.regressions
    assert any(n.startswith("ws goodput: SLO missed: ttft_ms:p99<=5") for n in report.notes)
    assert report.exit_code == 1


def test_a_met_slo_gates_the_drop_in_goodput_from_the_baseline(synth: Any) -> None:
    # the baseline is judged by the current run's targets: a slower baseline had lower goodput
    slo = "ttft_ms:p50<=40"
    slow = synth.bench(seed=1, ttft_ms={"ws": 40.0, "http": 60.0})
    fast = _with_slo(synth.bench(seed=2), slo)
    (ws,) = [f for f in gate_goodput(slow["bench"], fast["bench"]) if f.mode == "ws"]
    assert ws.baseline is not None and ws.current is not None and ws.change_pct is not None
    assert ws.current > ws.baseline and ws.change_pct > GOODPUT_DROP_PP
    assert ws.status == "improvement"
    # the other way round: goodput fell by more than the allowed drop, though p50 still meets
    worse = _with_slo(synth.bench(seed=1, ttft_ms={"ws": 30.0, "http": 60.0}), slo)
    (ws,) = [f for f in gate_goodput(fast["bench"], worse["bench"]) if f.mode == "ws"]
    assert ws.change_pct is not None and ws.change_pct < -GOODPUT_DROP_PP
    assert ws.status == "regression" and not ws.note


def test_the_cli_prints_goodput_in_percentage_points(
    synth: Any, tmp_path: Path, capsys: Any
) -> None:
    base = write_result(tmp_path, synth.bench(seed=1))
    cur = write_result(tmp_path, _with_slo(synth.bench(seed=2), "ttft_ms:p99<=1000"))
    assert cli_main(["gate", "--baseline", str(base), "--current", str(cur)]) == 0
    out = capsys.readouterr().out
    (row,) = [
        line
        for line in out.splitlines()
        if line.startswith("ws ") and "goodput" in line and "%" in line
    ]
    assert row.split() == [
        "ws",
        "goodput",
        "ok",
        "100.00%",
        "100.00%",
        "+0.0",
        "pp",
        "—",
        "-5",
        "pp",
        "400/400",
    ]


def test_the_board_notes_goodput_per_implementation(synth: Any, tmp_path: Path) -> None:
    paths = [
        write_result(tmp_path / "in", _with_slo(synth.bench(seed=s), "ttft_ms:p99<=1000"))
        for s in (1, 2)
    ]
    write_board([str(p) for p in paths], tmp_path / "board")
    markdown = (tmp_path / "board" / "leaderboard.md").read_text()
    assert (
        "reference: goodput in ws 100.0% of 800 turns, 80/80 rollouts under ttft_ms:p99<=1000 "
        "(2 runs, the SLO met in 2)." in markdown
    )
    assert "goodput in ws" in (tmp_path / "board" / "index.html").read_text()
