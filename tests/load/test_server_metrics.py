"""--server-metrics (harness.load.server_metrics): what a scrape keeps, a bench and a load
against the reference server's /metrics with the series in their results and the bench's
report, --engine-metrics as one of its sources, and the one-line errors."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from harness.cli import main as cli_main
from harness.load.bench.bench_config import BenchConfig
from harness.load.bench.bench_run import run_bench
from harness.load.observe_options import ObserveOptions
from harness.load.server_metrics import MAX_SERIES, Source
from harness.report.bench_html import render_report
from harness.results.schema import load_result

from .replay_support import SMOKE, reference_server

PAGE = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{model_name="m"} 1200
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="0.5",model_name="m"} 1
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 2
vllm:e2e_request_latency_seconds_sum{model_name="m"} 1.5
vllm:e2e_request_latency_seconds_count{model_name="m"} 2
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.1
rpc_seconds_count 7
"""


def test_a_scrape_keeps_gauges_counters_and_histogram_totals() -> None:
    source = Source("http://127.0.0.1:1/metrics")
    source.add_page(PAGE, 0.0)
    source.add_page(PAGE.replace(" 1200", " 1500"), 1.0)
    source.add_failure("at 2.0 s: connection refused")
    data = source.to_json()
    kept = {s["name"]: s for s in data["series"]}
    assert set(kept) == {
        "vllm:num_requests_running",
        "vllm:prompt_tokens_total",
        "vllm:e2e_request_latency_seconds_sum",
        "vllm:e2e_request_latency_seconds_count",
        "rpc_seconds_count",
    }
    assert kept["vllm:prompt_tokens_total"]["points"] == [[0.0, 1200.0], [1.0, 1500.0]]
    assert kept["vllm:prompt_tokens_total"]["type"] == "counter"
    assert kept["vllm:num_requests_running"]["labels"] == {"model_name": "m"}
    assert (data["scrapes"], data["failed_scrapes"]) == (2, 1)
    assert data["errors"] == ["at 2.0 s: connection refused"]


def test_series_beyond_the_cap_are_counted_not_kept() -> None:
    source = Source("http://127.0.0.1:1/metrics")
    page = "".join(f'g{{i="{i}"}} 1\n' for i in range(MAX_SERIES + 5))
    source.add_page(page, 0.0)
    source.add_page(page, 1.0)
    assert len(source.series) == MAX_SERIES and source.series_dropped == 5


def test_bench_stores_the_reference_servers_series_and_draws_them(tmp_path: Path) -> None:
    with reference_server(tmp_path / "data") as server:
        metrics_url = server.http_url.removesuffix("/v1") + "/metrics"
        config = BenchConfig(
            target=server.ws_url,
            http_target=server.http_url,
            traces=str(SMOKE),
            per_kind=None,
            time_scale=0.05,
            modes=("ws", "http"),
            send_script=True,
            engine_metrics_url=metrics_url,  # the same page: one source, read two ways
            observe=ObserveOptions(server_metrics=(metrics_url,), server_metrics_interval_s=0.2),
            out=str(tmp_path / "results"),
            html=False,
        )
        out = io.StringIO()
        assert run_bench(config, out=out, err=io.StringIO()) == 0, out.getvalue()
    (path,) = (tmp_path / "results").rglob("*.json")
    result = load_result(path)
    bench = result["bench"]
    assert list(bench["engine_cache"]["variants"]) == ["ws", "http"]  # unchanged beside it
    section = bench["server_metrics"]
    (source,) = section["sources"]
    assert source["url"] == metrics_url and source["scrapes"] >= 2 and source["failed_scrapes"] == 0
    by_name = {s["name"]: s for s in source["series"]}
    responses = [s for s in source["series"] if s["name"] == "wsmode_responses_total"]
    assert responses and all(s["points"] == sorted(s["points"]) for s in responses)
    # a gauge the server always serves has a point per scrape; a label set seen later, fewer
    assert len(by_name["wsmode_connections"]["points"]) == source["scrapes"]
    total = sum(s["points"][-1][1] for s in responses)
    assert total >= len(bench["samples"])  # every measured turn is a response the server counted
    assert all(isinstance(s["started_at_s"], float) for s in bench["samples"])
    assert min(s["started_at_s"] for s in bench["samples"]) >= section["started_at_s"] - 60
    html = render_report(result)
    assert "Server metrics beside client latency, over the run" in html
    assert "client TTFT per turn" in html and "wsmode_responses_total" in html


def test_wsmode_load_scrapes_the_target_during_the_run(tmp_path: Path, capsys: Any) -> None:
    with reference_server(tmp_path / "data") as server:
        metrics_url = server.http_url.removesuffix("/v1") + "/metrics"
        argv = ["load", "--target", server.ws_url, "--requests", "6", "--processes", "1"]
        argv += ["--input-tokens", "16", "--output-tokens", "16", "--out", str(tmp_path / "r")]
        argv += ["--server-metrics", metrics_url, "--server-metrics-interval-s", "0.1"]
        assert cli_main(argv) == 0, capsys.readouterr().err
    (path,) = (tmp_path / "r").rglob("*.json")
    result = load_result(path)
    (source,) = result["load"]["server_metrics"]["sources"]
    assert source["scrapes"] >= 2
    assert result["config"].get("modes") is not None


def test_a_bad_or_silent_metrics_url_is_one_line(tmp_path: Path, capsys: Any) -> None:
    assert cli_main(["bench", "--server-metrics", "ftp://x/metrics"]) == 2
    err = capsys.readouterr().err
    assert err == "wsmode bench: --server-metrics: expected an http(s) URL, got 'ftp://x/metrics'\n"
    with reference_server(tmp_path / "data") as server:
        argv = ["load", "--target", server.ws_url, "--requests", "1", "--processes", "1"]
        argv += ["--server-metrics", "http://127.0.0.1:9/metrics", "--out", str(tmp_path / "r")]
        assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("wsmode load: --server-metrics: cannot read http://127.0.0.1:9/")
    assert not (tmp_path / "r").exists()  # refused before the run: no results file


def test_embedded_names_the_embedded_servers_metrics(tmp_path: Path, capsys: Any) -> None:
    argv = ["load", "--requests", "4", "--processes", "1", "--input-tokens", "16"]
    argv += ["--output-tokens", "16", "--out", str(tmp_path / "r"), "--profile", "zero"]
    argv += ["--server-metrics", "embedded", "--server-metrics-interval-s", "0.1"]
    assert cli_main(argv) == 0, capsys.readouterr().err
    (path,) = (tmp_path / "r").rglob("*.json")
    (source,) = load_result(path)["load"]["server_metrics"]["sources"]
    assert source["url"].startswith("http://127.0.0.1:") and source["url"].endswith("/metrics")
    assert any(s["name"] == "wsmode_responses_total" for s in source["series"])
    assert cli_main(["bench", "--target", "ws://127.0.0.1:9/v1/responses", *argv[-4:-2]]) == 2
    assert "--server-metrics embedded: the run has no embedded server" in capsys.readouterr().err
