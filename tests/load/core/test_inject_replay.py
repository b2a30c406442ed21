"""Replaying multi-agent rollouts (trace version 2): one create per user request, its calls
answered in flight by response.inject, against the reference server with --multi-agent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.load.core.replay_options import ReplayOptions
from harness.load.core.results_document import metric_sets
from harness.load.core.rollout_driver import replay_rollout
from harness.traces.format import Rollout
from harness.traces.synthetic.multi_agent import to_multi_agent
from reference_server.app import ReferenceServer

from ..replay_support import endpoint, reference_server, run, smoke_rollouts


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    with reference_server(
        tmp_path_factory.mktemp("data"), multi_agent=True, self_check=True
    ) as srv:
        yield srv


def multi_agent_rollout() -> Rollout:
    return to_multi_agent(smoke_rollouts()[0], max_concurrent_subagents=2)


def test_a_scripted_multi_agent_rollout_replays_exactly_with_its_recorded_injects(
    server: ReferenceServer,
) -> None:
    rollout = multi_agent_rollout()
    (turn,) = rollout.turns
    options = ReplayOptions(mode="ws", time_scale=0.001)
    result = run(replay_rollout(rollout, endpoint(server), options))
    assert result.ok, result.error
    (done,) = result.turns
    assert done.reproduced, "the emitted output is the recorded one, agents and all"
    assert done.injects == len(turn.injects) and not done.violations
    assert len(done.inject_ack_ms) == len(turn.injects) == len(done.inject_resume_ms)
    assert all(
        0 <= ack <= resume
        for ack, resume in zip(done.inject_ack_ms, done.inject_resume_ms, strict=True)
    )
    assert done.emitted_call_ids == turn.call_ids
    # tool time: recorded in full, a thousandth waited; the e2e counts the recorded value
    assert result.recorded_tool_ms == pytest.approx(rollout.total_tool_wait_ms)
    assert 0 < result.waited_tool_ms < result.recorded_tool_ms
    assert result.e2e_ms == pytest.approx(
        result.wall_ms - result.waited_tool_ms + result.recorded_tool_ms
    )
    sets, failures = metric_sets([result])
    summary = sets["ws"].summary()
    assert summary["inject_ack_ms"]["count"] == len(turn.injects) and not failures["ws"]


def test_an_unscripted_target_gets_every_emitted_call_answered(server: ReferenceServer) -> None:
    rollout = multi_agent_rollout()
    options = ReplayOptions(mode="ws", send_script=False)
    result = run(replay_rollout(rollout, endpoint(server), options))
    assert result.ok, result.error
    (done,) = result.turns
    assert done.reproduced is None and done.emitted_call_ids
    assert done.injects == len(done.emitted_call_ids), "one inject per call it made"


def test_a_multi_agent_rollout_needs_a_websocket(server: ReferenceServer) -> None:
    result = run(
        replay_rollout(multi_agent_rollout(), endpoint(server), ReplayOptions(mode="http"))
    )
    assert not result.ok and "replays over ws only" in str(result.error)


def test_a_server_without_multi_agent_fails_the_turn_with_its_refusal(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with reference_server(tmp_path) as plain:
        result = run(replay_rollout(multi_agent_rollout(), endpoint(plain), ReplayOptions()))
    assert not result.ok and "unsupported_parameter" in str(result.error)
