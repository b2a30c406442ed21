"""A gateway that warms up as the released ones do (created -> completed, no in_progress,
PROTOCOL.md §2.1): `bench --prewarm` runs every rollout through it, `wsmode record` keeps every
turn of a codex-style session, and `wsmode check` finds no MUST violation in its traffic.

One reference server and one gateway in front of it serve the module.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.conformance.check.offline_check import check_file
from harness.load.bench.bench_config import BenchConfig
from harness.load.bench.bench_result import BenchRun, build_result
from harness.load.bench.replays import run_variants
from harness.load.bench.variants import Variant
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.protocol.accumulator import ResponseAccumulator
from harness.traces.format import load_traces
from harness.traces.record.proxy import Recorder
from reference_server.app import ReferenceServer
from tests.load.replay_support import SMOKE, reference_server, run, smoke_rollouts

from .servers import GatewayProxy, canned_events, gateway_events, running_gateway

SCALE = 0.002  # recorded tool waits, scaled down


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    with reference_server(Path(tmp_path_factory.mktemp("data"))) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(upstream: ReferenceServer) -> Iterator[GatewayProxy]:
    with running_gateway(upstream.ws_url) as proxy:
        yield proxy


def test_the_protocol_core_takes_a_warm_up_without_in_progress() -> None:
    events = gateway_events(canned_events("resp_1"), {"generate": False})
    assert [e["type"] for e in events] == ["response.created", "response.completed"]
    accumulator = ResponseAccumulator()
    for event in events:
        accumulator.feed(event)
    assert accumulator.done and accumulator.terminal_type == "response.completed"
    levels = {v.rule_id for v in accumulator.violations}
    assert "lifecycle.order" not in levels and "lifecycle.no_in_progress" in levels


def test_bench_prewarm_completes_every_rollout_through_the_gateway(
    gateway: GatewayProxy, upstream: ReferenceServer
) -> None:
    rollouts = smoke_rollouts()
    config = BenchConfig(traces=str(SMOKE), per_kind=None, concurrency=2, modes=("ws",))
    config.prewarm = True
    options = ReplayOptions(mode="ws", prewarm=True, time_scale=SCALE)
    variants = [Variant("ws", Endpoint(gateway.url, upstream.http_url), options)]
    bench_run = BenchRun(config, variants, rollouts)
    bench_run.target_url = gateway.url
    before = gateway.warmups
    bench_run.results = run(run_variants(bench_run, progress=io.StringIO()))
    result = build_result(bench_run)
    assert result["bench"]["modes"]["ws"]["failures"] == 0
    assert gateway.warmups - before == len(rollouts)  # each rollout warmed up, no in_progress
    assert len(bench_run.results) == len(rollouts) and bench_run.real_failures() == []
    firsts = [t for r in bench_run.results for t in r.turns if t.turn_index == 0]
    assert all(t.prewarm_ms is not None for t in firsts)


def test_record_keeps_every_turn_and_check_finds_no_must(
    gateway: GatewayProxy, tmp_path: Path
) -> None:
    rollout = smoke_rollouts()[0]  # five turns, four of them tool-call rounds
    out, events = tmp_path / "recorded.jsonl", tmp_path / "events.jsonl"
    err = io.StringIO()

    async def scenario() -> int:
        recorder = Recorder(gateway.url, out, err=err, events=events)
        await recorder.start()
        endpoint = Endpoint(recorder.ws_url, recorder.http_url)
        result = await replay_rollout(
            rollout, endpoint, ReplayOptions(mode="ws", prewarm=True, time_scale=SCALE)
        )
        assert result.ok, result.error
        written = await recorder.stop()
        if recorder.events is not None:
            recorder.events.close()
        return written

    assert run(scenario()) == 1, err.getvalue()
    (recorded,) = load_traces(out)
    assert [t.input for t in recorded.turns][1:] == [t.input for t in rollout.turns][1:]
    assert len(recorded.turns) == len(rollout.turns)
    report = check_file(events)
    findings = [*report.findings, *(f for r in report.responses for f in r.findings)]
    assert [f.rule_id for f in findings if f.level == "MUST"] == []
    assert "lifecycle.no_in_progress" in {f.rule_id for f in findings}
    assert len(report.responses) == len(rollout.turns) + 1  # the warm-up and each turn


def test_certify_passes_a_codex_session_through_the_gateway(
    gateway: GatewayProxy, suites: Any
) -> None:
    """The warm-up case judges the missing in_progress at SHOULD level only; the codex session
    (warm-up, tool rounds with parallel calls, one socket) passes through the gateway."""
    selection = "2.1.generate-false.warmup or 2.1.session.codex-style"
    run = suites("--wsmode-target", gateway.url, "-k", selection)
    cases = run.cases()
    assert cases["2.1.session.codex-style"]["verdict"] == "PASS", cases["2.1.session.codex-style"]
    warmup = cases["2.1.generate-false.warmup"]
    assert warmup["verdict"] == "NON-STRICT", warmup["detail"]
    judged = {f["rule_id"]: f["level"] for f in warmup["findings"]}
    # the core's note of the same warm-up is an INFO rule: reported at MAY level, never judged
    assert judged == {"generate_false.in_progress": "SHOULD", "lifecycle.no_in_progress": "MAY"}
