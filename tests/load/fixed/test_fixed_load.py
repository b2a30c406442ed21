"""`wsmode load`: the TTFT mark on real sockets, standard requests only, lossless process merge."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli_main
from harness.load.core.measurements import TurnResult
from harness.load.core.modes import Mode
from harness.load.core.replay_options import Endpoint
from harness.load.fixed.conversations import ShardResult, run_shard
from harness.load.fixed.load_spec import LoadSpec, request_body
from harness.load.fixed.processes import run_processes
from harness.results.histograms import LatencyHistogram
from harness.results.schema import load_result
from harness.transport.exchange import Exchange, sse_exchange, ws_exchange
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient
from tests.load.standard_server import Behaviour, StandardServer

BODY = {"model": "m", "input": [{"type": "message", "role": "user", "content": "hi"}]}


def _exchange(server: StandardServer, mode: str, body: dict[str, Any]) -> Exchange:
    async def go() -> Exchange:
        if mode == "ws":
            client = await WsClient.connect(server.ws_url)
            try:
                return await ws_exchange(client, body, timeout_s=10)
            finally:
                await client.close()
        async with SseClient(server.http_url) as sse:
            return await sse_exchange(sse, body, timeout_s=10)

    return asyncio.run(go())


def _spec(server: StandardServer, mode: Mode, **fields: Any) -> LoadSpec:
    endpoint = Endpoint(server.ws_url, server.http_url)
    return LoadSpec(mode=mode, endpoint=endpoint, model="m", input_tokens=8, **fields)


def _token_event(exchange: Exchange) -> str:
    return next(t.type for t in exchange.events if t.received_ns == exchange.first_token_ns)


# -- the TTFT mark -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["ws", "http"])
def test_ttft_waits_for_the_first_token_when_the_item_is_announced_early(mode: str) -> None:
    with StandardServer(Behaviour(announce_delay_s=0.05)) as server:
        exchange = _exchange(server, mode, BODY)
    assert exchange.ok
    sent_ns = server.record.first_content_sent_ns[0]
    assert exchange.first_output_ns is not None and exchange.first_token_ns is not None
    # the announcement arrived before the token was even written; the mark is not before it
    assert exchange.first_output_ns < sent_ns <= exchange.first_token_ns
    assert _token_event(exchange) == "response.output_text.delta"
    assert exchange.ttfe_ms is not None and exchange.ttft_ms is not None
    assert exchange.ttfe_ms < exchange.ttft_ms


@pytest.mark.parametrize("mode", ["ws", "http"])
def test_a_response_without_deltas_marks_its_first_done_carrying_content(mode: str) -> None:
    with StandardServer(Behaviour(deltas=False, announce_delay_s=0.02)) as server:
        exchange = _exchange(server, mode, BODY)
    assert exchange.ok and exchange.first_token_ns is not None
    assert _token_event(exchange) == "response.output_text.done"
    assert exchange.first_token_ns >= server.record.first_content_sent_ns[0]
    assert exchange.delta_gaps_ms() == []


def test_a_function_call_only_response_marks_its_first_arguments_delta() -> None:
    with StandardServer(Behaviour(kind="function_call", announce_delay_s=0.02)) as server:
        exchange = _exchange(server, "ws", BODY)
        shard = asyncio.run(run_shard(_spec(server, "ws", requests=3, concurrency=1)))
    assert _token_event(exchange) == "response.function_call_arguments.delta"
    assert exchange.first_token_ns is not None
    assert exchange.first_token_ns >= server.record.first_content_sent_ns[0]
    assert shard.ok == 3 and shard.metrics["ttft_ms"].count == 3


def test_the_load_reports_ttft_after_ttfe_on_an_early_announcing_server() -> None:
    with StandardServer(Behaviour(announce_delay_s=0.03)) as server:
        shard = asyncio.run(run_shard(_spec(server, "http", requests=4, concurrency=2)))
    ttft, ttfe = shard.metrics["ttft_ms"], shard.metrics["ttfe_ms"]
    assert ttft.count == ttfe.count == 4
    assert ttfe.max_ms < ttft.min_ms  # every announcement before every first token


# -- standard requests only ----------------------------------------------------------------------
def test_the_standard_server_refuses_a_project_only_field() -> None:
    with StandardServer() as server:
        exchange = _exchange(server, "http", {**BODY, "wsmode": {"seed": 1}})
    assert exchange.request_error is not None
    assert (exchange.request_error.status, exchange.request_error.param) == (400, "wsmode")


@pytest.mark.parametrize("mode", ["ws", "http", "http-chained"])
def test_load_against_a_minimal_standard_server(mode: Mode) -> None:
    with StandardServer() as server:
        spec = _spec(server, mode, requests=9, concurrency=2, turns=3)
        shard = asyncio.run(run_shard(spec))
    assert server.record.rejected == []
    assert (shard.ok, sum(shard.failed.values())) == (9, 0)
    assert len(server.record.requests) == 9
    chained = [r for r in server.record.requests if "previous_response_id" in r]
    later_turns = sum(1 for s in shard.samples if s["turn_index"] > 0)
    assert later_turns >= 4  # 9 requests in conversations of at most 3, on 2 workers
    assert len(chained) == (0 if mode == "http" else later_turns)
    assert all(r["store"] is (mode == "http-chained") for r in server.record.requests)
    assert all(r["max_output_tokens"] == spec.output_tokens for r in server.record.requests)


def test_max_output_tokens_cut_is_a_success_and_a_poisson_rate_runs() -> None:
    with StandardServer(Behaviour(tokens=16)) as server:
        spec = _spec(server, "ws", requests=6, concurrency=3, output_tokens=4, rate_per_s=200.0)
        shard = asyncio.run(run_shard(spec))
    assert shard.ok == 6 and shard.output_tokens == 24
    assert shard.metrics["itl_ms"].count == 6 * 3


def test_a_refusing_target_counts_failures_apart() -> None:
    with StandardServer() as server:
        server.check = lambda body, known: server._reject("x", "no")  # type: ignore[method-assign]
        shard = asyncio.run(run_shard(_spec(server, "http", requests=4, concurrency=2)))
    assert shard.ok == 0 and sum(shard.failed.values()) == 4
    assert "ttft_ms" not in shard.metrics


def test_request_bodies_are_plain_creates() -> None:
    import random

    spec = LoadSpec(mode="ws", endpoint=Endpoint("ws://h/v1/responses"), input_tokens=5, requests=1)
    body = request_body(spec, random.Random(0), "resp_1")
    assert set(body) == {"model", "input", "max_output_tokens", "store", "previous_response_id"}
    assert len(body["input"][0]["content"].split()) == 5


# -- processes -----------------------------------------------------------------------------------
def test_two_processes_merge_without_losing_a_sample() -> None:
    with StandardServer(Behaviour(tokens=5)) as server:
        merged = run_processes(_spec(server, "ws", requests=37, concurrency=5, turns=2), 2)
        sent = len(server.record.requests)
    assert merged.ok == sent == 37
    assert merged.metrics["turn_e2e_ms"].count == merged.metrics["ttft_ms"].count == 37
    assert merged.metrics["itl_ms"].count == 37 * 4
    assert len(merged.samples) == 37
    assert len({s["rollout_id"].split("-")[0] for s in merged.samples}) == 2  # both processes


def test_shard_merge_is_the_histogram_of_all_values() -> None:
    values = [[0.5, 1.0, 7.25, 300.0], [2.0, 2.0, 9999.0]]
    shards, everything = [], LatencyHistogram()
    for i, part in enumerate(values):
        shard = ShardResult()
        for j, v in enumerate(part):
            turn = TurnResult(f"p{i}", "ws", j, ok=True, ttft_ms=v, output_tokens=3)
            shard.add(turn, keep_samples=100)
            everything.record_ms(v)
        shards.append(ShardResult.from_json(json.loads(json.dumps(shard.to_json()))))
    merged = ShardResult()
    for shard in shards:
        merged.merge(shard)
    assert merged.metrics["ttft_ms"] == everything
    assert (merged.ok, merged.output_tokens, len(merged.samples)) == (7, 21, 7)


# -- the command, against the reference server ---------------------------------------------------
def test_wsmode_load_against_the_reference_server(tmp_path: Path, capsys: Any) -> None:
    argv = ["load", "--requests", "6", "--concurrency", "2", "--processes", "1"]
    argv += ["--modes", "ws,http-chained", "--turns", "3", "--out", str(tmp_path)]
    assert cli_main([*argv, "--input-tokens", "32", "--output-tokens", "16"]) == 0
    out = capsys.readouterr().out
    assert "TTFT p50" in out and "req/s" in out
    (path,) = tmp_path.glob("load/reference/*.json")
    result = load_result(path)
    assert result["kind"] == "load" and result["load"]["ttft_definition"] == "first-content-token"
    for mode in ("ws", "http-chained"):
        assert result["load"]["modes"][mode]["summary"]["ttft_ms"]["count"] == 6
        assert result["load"]["throughput"][mode]["requests_ok"] == 6
    assert cli_main(["gate", "--baseline", str(path), "--current", str(path)]) == 0
