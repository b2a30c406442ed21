"""`bench --engine-metrics`: the engine's own prefix-cache counters read around each variant,
beside the cached tokens the target reported in `usage`."""

from __future__ import annotations

import io
from pathlib import Path

from harness.load.bench.bench_config import BenchConfig
from harness.load.bench.bench_run import run_bench
from harness.load.bench.engine_cache import counter_delta, parse_counters
from harness.results.schema import load_result

from ..replay_support import SMOKE, reference_server

VLLM_PAGE = """\
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="tiny-llama"} 1200.0
vllm:prefix_cache_queries_total{engine="1",model_name="tiny-llama"} 300.0
vllm:prefix_cache_hits_total{engine="0",model_name="tiny-llama"} 900.0
vllm:prompt_tokens_total{model_name="tiny-llama"} 1500.0
vllm:num_requests_running{model_name="tiny-llama"} 0.0
"""


def test_vllm_counters_are_read_and_summed_over_their_label_sets() -> None:
    after = parse_counters(VLLM_PAGE)
    assert after == {"queried_tokens": 1500.0, "hit_tokens": 900.0, "prompt_tokens": 1500.0}
    delta = counter_delta({"queried_tokens": 500.0, "hit_tokens": 400.0}, after)
    assert (delta["queried_tokens"], delta["hit_tokens"], delta["hit_rate"]) == (1000, 500, 0.5)
    assert counter_delta({}, parse_counters("# nothing\n"))["counted"] is False


def test_each_variants_engine_hit_rate_matches_the_cached_tokens_it_reported(
    tmp_path: Path,
) -> None:
    with reference_server(tmp_path / "data") as server:
        config = BenchConfig(
            target=server.ws_url,
            http_target=server.http_url,
            traces=str(SMOKE),
            per_kind=None,
            max_turns=3,
            modes=("ws", "http", "http-chained"),
            send_script=False,
            engine_metrics_url=server.http_url.removesuffix("/v1") + "/metrics",
            out=str(tmp_path / "results"),
            html=False,
        )
        out = io.StringIO()
        assert run_bench(config, out=out, err=io.StringIO()) == 0, out.getvalue()
    (path,) = (tmp_path / "results").rglob("*.json")
    bench = load_result(path)["bench"]
    engine = bench["engine_cache"]["variants"]
    assert list(engine) == ["ws", "http", "http-chained"]
    for mode, entry in engine.items():
        samples = [s for s in bench["samples"] if s["mode"] == mode]
        assert entry["queried_tokens"] == sum(s["input_tokens"] for s in samples)
        assert entry["hit_tokens"] == sum(s["cached_tokens"] for s in samples)
        assert entry["hit_rate"] is not None and 0 < entry["hit_rate"] < 1
    assert "The engine's own prefix cache (" in out.getvalue()
    assert "prompt tokens found in the engine's prefix cache" in out.getvalue()
