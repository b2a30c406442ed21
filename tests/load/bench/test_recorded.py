"""Recorded vs replayed timings, and `wsmode bench --corpus real`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.cli import build_parser
from harness.load.bench.bench_config import DEFAULT_TRACES, BenchConfig, corpus_traces
from harness.load.bench.bench_console import format_analysis
from harness.load.bench.bench_result import BenchRun, build_result
from harness.load.bench.recorded_timings import format_recorded, recorded_vs_replayed
from harness.load.bench.replays import run_variants
from harness.load.bench.variants import Variant
from harness.load.commands import config_from_args
from harness.load.core.replay_options import ReplayOptions
from harness.report.bench_html import render_report
from harness.results.schema import validate_result
from harness.traces.converters.kvcache import convert_kvcache
from harness.traces.format import OutputSpec, Rollout, Turn, input_message, load_traces
from tests.recorded import TRACE_SAMPLES, recorded

from ..replay_support import endpoint, reference_server, run


def rollout(observed: list[dict[str, float]]) -> Rollout:
    turns = tuple(
        Turn(
            index=i,
            input=(input_message("go"),),
            output=(OutputSpec.message("ok"),),
            tool_wait_ms=0.0,
            observed=o,
        )
        for i, o in enumerate(observed)
    )
    return Rollout(
        id="r",
        source="kvcache",
        agent_kind="x",
        model="m",
        instructions=None,
        tools=(),
        seed=None,
        meta={},
        turns=turns,
    )


def sample(mode: str, turn: int, ttft: float, e2e: float, ok: bool = True) -> dict[str, object]:
    return {
        "rollout_id": "r",
        "mode": mode,
        "turn_index": turn,
        "ttft_ms": ttft,
        "turn_e2e_ms": e2e,
        "ok": ok,
    }


def test_rows_compare_the_same_turns_recorded_and_replayed() -> None:
    r = rollout([{"ttft_ms": 900.0, "e2e_ms": 4000.0}, {"e2e_ms": 3000.0}, {}])
    samples = [
        sample("ws", 0, 10, 50),
        sample("ws", 1, 20, 70),
        sample("ws", 2, 99, 999),
        sample("http", 0, 30, 90),
        sample("http", 1, 40, 110, ok=False),
    ]
    rows = recorded_vs_replayed([r], samples, ["http", "ws"])
    assert rows == [
        {
            "metric": "TTFT",
            "turns": 1,
            "recorded_p50_ms": 900.0,
            "replayed_p50_ms": {"ws": 10.0, "http": 30.0},
        },
        {
            "metric": "turn time",
            "turns": 2,
            "recorded_p50_ms": 3500.0,
            "replayed_p50_ms": {"ws": 60.0, "http": 90.0},
        },
    ]
    text = "\n".join(format_recorded(rows))
    assert "recorded p50" in text and "3500.0" in text


def test_no_recorded_timings_no_rows() -> None:
    assert recorded_vs_replayed([rollout([{}])], [sample("ws", 0, 1, 2)], ["ws"]) == []
    assert format_recorded([]) == []


def test_corpus_real_replays_the_bundled_real_corpus() -> None:
    args = build_parser().parse_args(["bench", "--corpus", "real"])
    config = config_from_args(args)
    assert config.traces == corpus_traces("real") != DEFAULT_TRACES
    rollouts = load_traces(config.traces)
    assert len(rollouts) >= 10
    assert len({r.source for r in rollouts}) >= 3
    assert config_from_args(build_parser().parse_args(["bench"])).traces == DEFAULT_TRACES


def test_corpus_and_traces_together_are_refused() -> None:
    args = build_parser().parse_args(["bench", "--corpus", "real", "--traces", "x.jsonl"])
    with pytest.raises(ValueError, match="--traces and --corpus"):
        config_from_args(args)


def test_the_real_corpus_ships_its_provenance() -> None:
    readme = Path(corpus_traces("real")) / "README.md"
    text = readme.read_text(encoding="utf-8")
    for name in (p.name for p in Path(corpus_traces("real")).glob("*.jsonl")):
        assert name in text


def test_a_bench_of_a_real_capture_reports_recorded_beside_replayed(tmp_path: Path) -> None:
    sample = recorded(TRACE_SAMPLES / "kvcache-trace_0022.json")
    rollouts = convert_kvcache(sample)
    config = BenchConfig(traces=str(sample), per_kind=None, modes=("ws", "http"))
    with reference_server(tmp_path / "d") as srv:
        variants = [Variant(m, endpoint(srv), ReplayOptions(mode=m)) for m in ("ws", "http")]
        bench_run = BenchRun(config, variants, rollouts)
        bench_run.results = run(run_variants(bench_run, progress=io.StringIO()))
    result = build_result(bench_run)
    validate_result(result)
    (row,) = result["bench"]["analysis"]["recorded_vs_replayed"]
    assert row["metric"] == "turn time" and row["turns"] == len(rollouts[0].turns)
    assert set(row["replayed_p50_ms"]) == {"ws", "http"}
    assert all(v is not None for v in row["replayed_p50_ms"].values())
    assert "Recorded vs replayed" in format_analysis(result)
    assert "<h2>Recorded vs replayed</h2>" in render_report(result)
