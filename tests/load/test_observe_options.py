"""--slo on bench and load (harness.load.observe_options): bad targets are one usage line, and
a run writes each mode's goodput into its results and prints it."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli_main
from harness.load.bench.bench_config import BenchConfig
from harness.load.bench.bench_result import BenchRun, build_result
from harness.load.bench.replays import run_variants
from harness.load.bench.variants import Variant
from harness.load.core.replay_options import ReplayOptions
from harness.load.observe_options import ObserveOptions
from harness.results.schema import load_result, validate_result
from harness.results.slo import format_goodput, parse_slo

from .replay_support import SMOKE, endpoint, reference_server, run, smoke_rollouts


@pytest.mark.parametrize("command", ["bench", "load"])
def test_a_bad_slo_is_one_usage_line_before_any_server_starts(command: str, capsys: Any) -> None:
    assert cli_main([command, "--slo", "ttft_ms<=500"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith(f"wsmode {command}: --slo: cannot read 'ttft_ms<=500'")


def test_bench_results_carry_goodput_per_mode(tmp_path: Path) -> None:
    observe = ObserveOptions(slo=parse_slo("ttft_ms:p99<=60000,rollout_e2e_ms:p50<=0.001"))
    config = BenchConfig(traces=str(SMOKE), per_kind=None, modes=("ws", "http"), observe=observe)
    with reference_server(tmp_path / "d") as srv:
        variants = [Variant(m, endpoint(srv), ReplayOptions(mode=m)) for m in ("ws", "http")]
        bench_run = BenchRun(config, variants, smoke_rollouts())
        bench_run.results = run(run_variants(bench_run, progress=io.StringIO()))
    result = build_result(bench_run)
    validate_result(result)
    assert result["config"]["slo"] == ["ttft_ms:p99<=60000", "rollout_e2e_ms:p50<=0.001"]
    turns = sum(len(r.turns) for r in smoke_rollouts())
    for mode in ("ws", "http"):
        entry = result["bench"]["slo"]["modes"][mode]
        # every turn is far within a minute; no rollout ends within a microsecond
        assert (entry["turns"], entry["turns_good"], entry["turn_goodput"]) == (turns, turns, 1.0)
        assert (entry["rollouts"], entry["rollouts_good"]) == (3, 0)
        assert [a["met"] for a in entry["attainment"]] == [True, False] and not entry["met"]
    text = " ".join(format_goodput(result["bench"]).split())  # what the bench prints, unwrapped
    assert f"ws: goodput 100.0% of {turns} turns, 0/3 rollouts; SLO missed: rollout_e2e_ms" in text


def test_wsmode_load_prints_and_stores_goodput(tmp_path: Path, capsys: Any) -> None:
    argv = ["load", "--requests", "4", "--concurrency", "2", "--processes", "1", "--turns", "2"]
    argv += ["--input-tokens", "16", "--output-tokens", "16", "--out", str(tmp_path)]
    assert cli_main([*argv, "--slo", "ttft_ms:p90<=60000,e2e_ms:p50<=60000"]) == 0
    out = capsys.readouterr().out
    assert "goodput under SLO ttft_ms:p90<=60000, e2e_ms:p50<=60000" in out
    assert "ws: goodput 100.0% of 4 turns; SLO met" in out
    (path,) = tmp_path.glob("load/reference/*.json")
    slo = load_result(path)["load"]["slo"]
    assert slo["modes"]["ws"]["turn_goodput"] == 1.0 and slo["modes"]["ws"]["rollouts"] == 0
    assert [t["text"] for t in slo["targets"]] == ["ttft_ms:p90<=60000", "e2e_ms:p50<=60000"]


def test_the_options_are_declared_once_for_both_commands() -> None:
    fields = {f.name for f in dataclasses.fields(ObserveOptions)}
    assert "slo" in fields
    assert BenchConfig().observe == ObserveOptions()
