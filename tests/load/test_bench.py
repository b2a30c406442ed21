"""`wsmode bench`: the results JSON validates, the table and the report are produced."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.load.bench import (
    BenchConfig,
    BenchRun,
    Variant,
    build_result,
    derive_urls,
    format_analysis,
    format_table,
    run_variants,
    select_rollouts,
)
from harness.load.metrics import MetricSet
from harness.load.replay import ReplayOptions
from harness.load.report_html import render_report
from harness.load.traces import load_traces
from harness.report.schema import load_result, validate_result
from harness.report.store import list_results

from .replay_support import SMOKE, endpoint, reference_server, run, smoke_rollouts


def test_results_json_validates_and_pairs_every_mode(tmp_path: Path) -> None:
    config = BenchConfig(traces=str(SMOKE), per_kind=None, concurrency=2, modes=("ws", "http"))
    with reference_server(tmp_path / "d") as srv:
        variants = [
            Variant(m, endpoint(srv), ReplayOptions(mode=m)) for m in ("ws", "http", "http-chained")
        ]
        bench_run = BenchRun(config, variants, smoke_rollouts())
        bench_run.target_url = srv.ws_url
        bench_run.results = run(run_variants(bench_run, progress=io.StringIO()))
    result = build_result(bench_run)
    validate_result(result)
    bench = result["bench"]
    assert set(bench["modes"]) == {"ws", "http", "http-chained"}
    assert all(entry["failures"] == 0 for entry in bench["modes"].values())
    turns = sum(len(r.turns) for r in smoke_rollouts())
    for entry in bench["modes"].values():
        ms = MetricSet.from_dict(entry)
        assert ms["ttft_ms"].count == turns
        assert ms["rollout_e2e_ms"].count == 3
    assert len(bench["samples"]) == 3 * turns
    assert {c["mode"] for c in bench["comparisons"]} == {"ws", "http-chained"}
    assert all(c["pairs"] == 3 for c in bench["comparisons"])
    assert [t["term"] for t in bench["analysis"]["split"]] == [
        "input size",
        "transport + server-side cache",
    ]
    table = format_table(result)
    assert "speedup e2e" in table and "ws" in table
    assert "Speedup split" in format_analysis(result)
    html = render_report(result)
    assert html.count("<svg") >= 3 and "TTFT vs context length" in html


def test_wsmode_bench_command_writes_results_and_report(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The CLI with the embedded server (a child process), a small trace, two modes."""
    status = cli_main(
        [
            "bench",
            "--traces",
            str(SMOKE),
            "--profile",
            "zero",
            "--per-kind",
            "1",
            "--max-turns",
            "3",
            "--modes",
            "ws,http",
            "--out",
            str(tmp_path / "results"),
            "--label",
            "test",
        ]
    )
    assert status == 0
    out = capsys.readouterr()
    assert "speedup" in out.out and "time_scale 0" in out.out
    assert "replays" in out.err  # progress
    (info,) = list_results(tmp_path / "results")
    assert info.error is None and info.target == "reference"
    result = load_result(info.path)
    assert result["bench"]["time_scale"] == 0.0
    assert result["config"]["send_script"] is True
    assert info.path.with_suffix(".html").exists()


def test_default_subset_is_the_shortest_rollouts_of_each_kind() -> None:
    rollouts = load_traces(SMOKE)
    assert len(select_rollouts(rollouts, BenchConfig(per_kind=1))) == 3
    named = select_rollouts(rollouts, BenchConfig(rollout_ids=("smoke-refactor",)))
    assert [r.id for r in named] == ["smoke-refactor"]
    with pytest.raises(ValueError, match="unknown rollout"):
        select_rollouts(rollouts, BenchConfig(rollout_ids=("nope",)))


def test_target_urls_are_derived_like_the_sdk() -> None:
    assert derive_urls("ws://h:1/v1/responses", None) == ("ws://h:1/v1/responses", "http://h:1/v1")
    assert derive_urls(None, "https://h/v1") == ("wss://h/v1/responses", "https://h/v1")


def test_sweep_levels_compare_with_http_at_the_same_level() -> None:
    from harness.load.bench import baseline_for

    names = ["ws-c1", "http-c1", "ws-c4", "http-c4", "ws", "http"]
    assert baseline_for("ws-c4", names) == "http-c4"
    assert baseline_for("http-c4", names) is None
    assert baseline_for("ws", names) == "http"
    assert baseline_for("http", names) is None
