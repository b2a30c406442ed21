"""`wsmode bench`: the results JSON validates, the table and the report are produced."""

from __future__ import annotations

import argparse
import dataclasses
import io
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.load import commands
from harness.load.bench import bench_config
from harness.load.bench.bench_config import NOCACHE_VARIANT, BenchConfig, select_rollouts
from harness.load.bench.bench_console import format_analysis, format_failures, format_table
from harness.load.bench.bench_result import CUT_ERROR, BenchRun, build_result
from harness.load.bench.bench_run import run_bench
from harness.load.bench.replays import run_variants
from harness.load.bench.variants import Variant, build_variants
from harness.load.core.replay_options import ReplayOptions
from harness.load.core.results_document import baseline_for
from harness.load.target_options import derive_urls
from harness.report.bench_html import render_report
from harness.results.histograms import MetricSet
from harness.results.schema import load_result, validate_result
from harness.results.store import list_results
from harness.traces.format import load_traces

from ..replay_support import SMOKE, endpoint, reference_server, run, smoke_rollouts
from ..standard_server import StandardServer


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
            "--max-rollouts",
            "2",
            "--out",
            str(tmp_path / "results"),
            "--label",
            "test",
        ]
    )
    assert status == 0
    captured = capsys.readouterr()
    out, err = (" ".join(text.split()) for text in (captured.out, captured.err))  # unwrapped
    assert "speedup" in out and "time_scale 0" in out
    assert "at most 2 rollouts per variant" in out and "at most 2 rollouts" in err
    assert "bench 18/18 turns" in err and "6/6 rollouts" in err  # 3 variants x 2 x 3 turns
    text = (captured.out + captured.err).splitlines()
    assert all(len(line) <= 100 for line in text if not line.startswith(("results:", "report:")))
    (info,) = list_results(tmp_path / "results")
    assert info.error is None and info.target == "reference"
    result = load_result(info.path)
    assert result["bench"]["time_scale"] == 0.0
    assert result["config"]["send_script"] is True
    assert info.path.with_suffix(".html").exists()
    # the embedded server's default run adds ws-nocache: the split has its server-side term
    bench = result["bench"]
    assert set(bench["modes"]) == {"ws", "http", NOCACHE_VARIANT}
    assert [t["term"] for t in bench["analysis"]["split"]] == [
        "input size + transport",
        "server-side cache",
    ]
    assert result["config"]["variants"][NOCACHE_VARIANT]["disabled_optimizations"] == [
        "connection_cache"
    ]
    table = format_table(result)
    assert "ablation variants" in table
    assert table.index(f"\n{NOCACHE_VARIANT} ") > table.index("\nhttp ")  # below the modes
    # --max-rollouts 2: the first two selected rollouts, in every variant
    per_variant = {
        m: [r["rollout_id"] for r in bench["rollouts"] if r["mode"] == m] for m in bench["modes"]
    }
    assert all(len(ids) == 2 for ids in per_variant.values())
    assert len({tuple(sorted(ids)) for ids in per_variant.values()}) == 1
    assert "at most 2 rollouts per variant" in result["config"]["notes"]


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
    names = ["ws-c1", "http-c1", "ws-c4", "http-c4", "ws", "http"]
    assert baseline_for("ws-c4", names) == "http-c4"
    assert baseline_for("http-c4", names) is None
    assert baseline_for("ws", names) == "http"
    assert baseline_for("http", names) is None


def _bad_trace(tmp_path: Path) -> Path:
    """The smoke trace with turn 1 of the first rollout (line 3) waiting "abc" ms."""
    lines = SMOKE.read_text().splitlines()
    assert '"tool_wait_ms":917.1' in lines[2]
    lines[2] = lines[2].replace('"tool_wait_ms":917.1', '"tool_wait_ms":"abc"')
    path = tmp_path / "wait.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--traces", "BAD"], 'wait.jsonl:3: turn.tool_wait_ms: expected a number >= 0, got "abc"'),
        (["--traces", "/nonexistent"], "/nonexistent"),
        (["--rollout", "nope"], "unknown rollout id(s): nope"),
        (["--time-scale", "-1"], "--time-scale must be >= 0"),
        (["--concurrency", "0"], "--concurrency must be >= 1"),
        (["--max-rollouts", "0"], "--max-rollouts must be >= 1"),
        (["--duration-s", "0"], "--duration-s must be > 0"),
        (["--schedule", "sweep", "--sweep", "1,x"], "--sweep: expected comma-separated integers"),
        (["--schedule", "open", "--rate", "0"], "--rate must be > 0"),
        (["--modes", ","], "--modes: no mode given"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_server_starts(
    tmp_path: Path,
    capsys,
    args: list[str],
    message: str,  # type: ignore[no-untyped-def]
) -> None:
    args = [str(_bad_trace(tmp_path)) if a == "BAD" else a for a in args]
    if "--traces" not in args:
        args = ["--traces", str(SMOKE), *args]
    status = cli_main(["bench", *args, "--profile", "zero", "--out", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("wsmode bench: ") and err.count("\n") == 1, err
    assert message in err
    assert "Traceback" not in err and "starting the embedded" not in err
    assert not (tmp_path / "results").exists()


def test_a_missing_bundled_corpus_says_how_to_get_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Installed without `-e`, the corpus beside the package is not there."""
    missing = str(tmp_path / "site-packages" / "traces" / "corpus")
    monkeypatch.setattr(bench_config, "DEFAULT_TRACES", missing)
    err = io.StringIO()
    assert run_bench(BenchConfig(traces=missing, out=str(tmp_path)), err=err) == 2
    message = err.getvalue()
    assert message.count("\n") == 1 and missing in message
    assert "pip install -e ." in message and "--traces" in message


def test_failed_runs_name_the_error_and_only_http_is_the_baseline(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A standard server passes the pre-run check, then refuses every replayed request (the
    project-only `wsmode` field that --script sends): the table says why, per variant."""
    with StandardServer() as server:
        status = cli_main(
            [
                "bench",
                "--target",
                server.ws_url,
                "--http-target",
                server.http_url,
                "--script",
                "--traces",
                str(SMOKE),
                "--per-kind",
                "1",
                "--max-turns",
                "2",
                "--out",
                str(tmp_path / "results"),
                "--no-html",
            ]
        )
    assert status == 1
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("ws", "http"))}
    assert "(baseline)" in rows["http"]
    assert "(baseline)" not in rows["http-chained"] and "(baseline)" not in rows["ws"]
    assert NOCACHE_VARIANT not in out  # a foreign target cannot switch the cache off
    failures = [
        line
        for line in out[out.index("Failed rollouts") :].splitlines()[1:]
        if line.startswith("  ") and not line.startswith("    ")
    ][:3]
    assert [line.split(":")[0].strip() for line in failures] == ["ws", "http", "http-chained"]
    assert all("3 of 3 rollouts failed" in line for line in failures)
    assert all("unknown_parameter" in line for line in failures)


def test_duration_limit_cuts_running_rollouts_and_counts_them_as_failures(tmp_path: Path) -> None:
    """A hard limit: the slow rollout (recorded tool waits, waited in full) is cancelled and
    counted as failed, never as a rollout latency; the turns it finished stay as samples; the
    fast one completes and is measured."""
    slow = smoke_rollouts()[0]
    fast = dataclasses.replace(slow, id="fast", turns=slow.turns[:1])  # no tool wait
    assert sum(t.tool_wait_ms for t in slow.turns) > 10_000
    config = BenchConfig(traces=str(SMOKE), concurrency=4, time_scale=1.0, duration_s=3.0)
    with reference_server(tmp_path / "d") as srv:
        variants = [
            Variant(m, endpoint(srv), ReplayOptions(mode=m, time_scale=1.0)) for m in ("ws", "http")
        ]
        bench_run = BenchRun(config, variants, [fast, slow])
        bench_run.target_url = srv.ws_url
        bench_run.results = run(run_variants(bench_run, progress=io.StringIO()))
    by_id = {(r.rollout_id, r.mode): r for r in bench_run.results}
    assert len(by_id) == 4
    finished: dict[str, int] = {}
    for mode in ("ws", "http"):
        assert by_id[("fast", mode)].ok
        cut = by_id[(slow.id, mode)]
        assert not cut.ok and cut.error == f"{CUT_ERROR} (3 s)"
        *done, last = cut.turns
        # turn 0 has no tool wait: done long before the limit; turn 4 waits 13 s: never reached
        assert 1 <= len(done) < len(slow.turns) - 1
        assert all(t.ok for t in done) and [t.turn_index for t in done] == list(range(len(done)))
        assert not last.ok and last.turn_index == len(done) and last.error == cut.error
        finished[mode] = len(done)
    result = build_result(bench_run)
    validate_result(result)
    for name, entry in result["bench"]["modes"].items():
        ms = MetricSet.from_dict(entry)
        assert ms["rollout_e2e_ms"].count == 1  # the fast rollout only
        assert ms["ttft_ms"].count == 1 + finished[name] and entry["failures"] == 1
    failures = format_failures(result)
    assert f"ws: 1 of 2 rollouts failed: {CUT_ERROR} (3 s)" in failures


def test_max_rollouts_replays_the_first_n_in_every_variant(tmp_path: Path) -> None:
    config = BenchConfig(traces=str(SMOKE), concurrency=2, max_rollouts=1)
    rollouts = smoke_rollouts()
    with reference_server(tmp_path / "d") as srv:
        variants = [
            Variant(m, endpoint(srv), ReplayOptions(mode=m, max_turns=1)) for m in ("ws", "http")
        ]
        bench_run = BenchRun(config, variants, rollouts)
        results = run(run_variants(bench_run, progress=io.StringIO()))
    assert sorted((r.mode, r.rollout_id) for r in results) == [
        ("http", rollouts[0].id),
        ("ws", rollouts[0].id),
    ]


def test_model_option_reaches_every_variant_and_the_results_config() -> None:
    parser = argparse.ArgumentParser()
    commands.add_arguments(parser)
    args = parser.parse_args(["--target", "ws://127.0.0.1:9/v1/responses", "--model", "m1"])
    config = commands.config_from_args(args)
    assert config.to_json()["model"] == "m1"
    variants = build_variants(config, None)
    assert variants and all(v.options.model == "m1" for v in variants)


def test_the_header_counts_the_rollouts_max_rollouts_lets_through(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    with StandardServer() as server:
        argv = ["bench", "--target", server.ws_url, "--modes", "ws", "--traces", str(SMOKE)]
        argv += ["--per-kind", "1", "--max-rollouts", "1", "--out", str(tmp_path), "--no-html"]
        cli_main([*argv, "--max-turns", "1"])
    header = capsys.readouterr().out.strip().splitlines()[0]
    assert header.startswith(f"wsmode bench: 1 of {len(smoke_rollouts())} rollouts"), header
