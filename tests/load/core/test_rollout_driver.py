"""The replay driver: every mode completes and reproduces the trace; calls are answered by the
ids the server emitted; failures are counted apart from latencies."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.load.core.measurements import RolloutResult, TurnResult
from harness.load.core.modes import MODES, Mode
from harness.load.core.replay_options import ReplayOptions
from harness.load.core.results_document import metric_sets
from harness.load.core.rollout_driver import replay_rollout
from harness.load.core.rollout_requests import CONTINUE_TEXT, RolloutState, answer_calls
from harness.load.core.session import HttpClientPool
from harness.protocol.items import history_item
from harness.traces.format import OutputSpec, Turn, input_message
from reference_server.config import Optimizations

from ..replay_support import endpoint, reference_server, run, smoke_rollouts


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with reference_server(tmp_path_factory.mktemp("data")) as srv:
        yield srv


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_completes_and_reproduces_the_trace(server, mode: Mode) -> None:  # type: ignore[no-untyped-def]
    rollout = smoke_rollouts()[0]
    result = run(replay_rollout(rollout, endpoint(server), ReplayOptions(mode=mode)))
    assert result.ok, result.error
    assert len(result.turns) == len(rollout.turns)
    assert all(t.reproduced for t in result.turns)
    assert all(not t.violations for t in result.turns)
    # the calls answered at each turn are the calls the previous turn emitted
    for before, after in zip(result.turns, result.turns[1:], strict=False):
        assert set(after.answered_call_ids) == set(before.emitted_call_ids)
    expected = {"ws": "hit", "http": "none", "http-chained": "hydrate"}[mode]
    assert {t.resolution for t in result.turns[1:]} == {expected}
    # a turn's metrics are filled in and the e2e counts the recorded tool time
    turn = result.turns[1]
    assert turn.ttft_ms is not None and turn.turn_e2e_ms is not None
    assert turn.ttft_ms <= turn.turn_e2e_ms
    assert turn.bytes_sent > 0 and turn.bytes_received > 0
    assert turn.inference_ttft_ms is not None and turn.api_overhead_ms is not None
    assert result.recorded_tool_ms == pytest.approx(rollout.total_tool_wait_ms)
    assert result.waited_tool_ms == 0.0
    assert result.e2e_ms == pytest.approx(result.wall_ms + rollout.total_tool_wait_ms)


def test_http_resends_the_history_and_ws_only_new_items(server) -> None:  # type: ignore[no-untyped-def]
    rollout = smoke_rollouts()[1]
    ep = endpoint(server)
    ws = run(replay_rollout(rollout, ep, ReplayOptions(mode="ws")))
    http = run(replay_rollout(rollout, ep, ReplayOptions(mode="http")))
    last_ws, last_http = ws.turns[-1], http.turns[-1]
    assert last_http.bytes_sent > last_ws.bytes_sent + 4000  # the resent history
    assert last_http.context_tokens == last_ws.context_tokens  # same conversation either way


def test_prewarm_sends_generate_false_then_continues_with_empty_input(server) -> None:  # type: ignore[no-untyped-def]
    rollout = smoke_rollouts()[2]
    result = run(replay_rollout(rollout, endpoint(server), ReplayOptions(mode="ws", prewarm=True)))
    assert result.ok, result.error
    assert result.turns[0].prewarm_ms is not None
    assert result.turns[0].resolution == "hit"
    assert all(t.reproduced for t in result.turns)


def test_time_scale_waits_part_of_the_tool_time_and_counts_all_of_it(server) -> None:  # type: ignore[no-untyped-def]
    rollout = smoke_rollouts()[2]
    scale = 0.005
    result = run(replay_rollout(rollout, endpoint(server), ReplayOptions(time_scale=scale)))
    assert result.ok
    assert result.waited_tool_ms >= rollout.total_tool_wait_ms * scale * 0.9
    assert result.e2e_ms == pytest.approx(
        result.wall_ms - result.waited_tool_ms + rollout.total_tool_wait_ms
    )
    assert result.model_ms == pytest.approx(result.wall_ms - result.waited_tool_ms)


def test_unscripted_target_gets_its_own_call_ids_answered(server) -> None:  # type: ignore[no-untyped-def]
    """Without a script the server invents calls (and ids); the driver answers exactly those."""
    rollouts = smoke_rollouts()
    answered_any = False
    # uncapped: the simulated engine's calls are its own, not the recorded ones, so a cap from
    # the recorded lengths would cut them and end the rollouts there (docs/OUTPUT-CAPS.md)
    opts = ReplayOptions(send_script=False, output_cap_scale=None)
    for rollout in rollouts:
        result = run(replay_rollout(rollout, endpoint(server), opts))
        assert result.ok, result.error
        assert len(result.turns) == len(rollout.turns)
        assert all(t.reproduced is None for t in result.turns)
        recorded = {c for t in rollout.turns for c in t.call_ids}
        for before, after in zip(result.turns, result.turns[1:], strict=False):
            assert set(after.answered_call_ids) == set(before.emitted_call_ids)
            assert not set(before.emitted_call_ids) & recorded
            answered_any |= bool(after.answered_call_ids)
    assert answered_any


def test_failures_are_counted_apart_from_latencies(tmp_path: Path) -> None:
    """store=false over ws with the connection cache off: turn 1 cannot continue."""
    no_cache = Optimizations().without("connection_cache")
    with reference_server(tmp_path / "d", optimizations=no_cache) as srv:
        result = run(replay_rollout(smoke_rollouts()[0], endpoint(srv), ReplayOptions()))
    assert not result.ok
    assert [t.ok for t in result.turns] == [True, False]
    failed = result.turns[1]
    assert failed.error is not None and "previous_response_not_found" in failed.error
    assert failed.ttft_ms is None and failed.turn_e2e_ms is None and not failed.itl_gaps_ms
    sample = failed.to_sample()
    assert sample["ok"] is False and sample["ttft_ms"] is None and sample["error"]
    sets, failures = metric_sets([result])
    assert failures["ws"] == 1
    assert sets["ws"]["ttft_ms"].count == 1  # only the ok turn
    assert "rollout_e2e_ms" not in sets["ws"]  # a failed rollout is no latency sample


def test_a_refused_connection_is_a_failed_rollout(tmp_path: Path) -> None:
    with reference_server(tmp_path / "d", api_keys=("right",)) as srv:
        result = run(replay_rollout(smoke_rollouts()[0], endpoint(srv, "wrong"), ReplayOptions()))
    assert not result.ok
    assert result.error is not None and "401" in result.error
    assert [t.ok for t in result.turns] == [False]


def _turn(index: int, items: list[dict[str, object]], calls: tuple[str, ...] = ()) -> Turn:
    return Turn(
        index=index,
        input=tuple(items),
        output=tuple(OutputSpec.function_call("f", "{}", c) for c in calls)
        or (OutputSpec.message("done"),),
    )


def _fco(call_id: str, output: str) -> dict[str, object]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def test_answer_calls_maps_recorded_ids_onto_emitted_ids_by_position() -> None:
    note = input_message("also this")
    turn = _turn(1, [_fco("r2", "out2"), note, _fco("r1", "out1")])
    emitted = [
        {"type": "function_call", "call_id": "e1"},
        {"type": "function_call", "call_id": "e2"},
    ]
    answers = answer_calls(turn, ("r1", "r2"), emitted)
    assert answers.items == [_fco("e2", "out2"), note, _fco("e1", "out1")]
    assert set(answers.answered_call_ids) == {"e1", "e2"}
    assert answers.generic_answers == 0


def test_answer_calls_generic_output_for_extra_calls_and_drops_unmatched() -> None:
    turn = _turn(1, [_fco("r1", "out1"), _fco("r2", "out2")])
    one = answer_calls(turn, ("r1", "r2"), [{"call_id": "e1"}])
    assert one.items == [_fco("e1", "out1")]
    three = answer_calls(
        turn, ("r1", "r2"), [{"call_id": "e1"}, {"call_id": "e2"}, {"call_id": "e3"}]
    )
    assert three.items[-1] == _fco("e3", "ok") and three.generic_answers == 1
    none = answer_calls(turn, ("r1", "r2"), [])
    assert none.items == [input_message(CONTINUE_TEXT)]


def test_results_keep_turns_and_rollouts_apart() -> None:
    result = RolloutResult("r", "ws", "ws", wall_ms=100.0, waited_tool_ms=10.0)
    result.recorded_tool_ms = 1000.0
    assert result.e2e_ms == 1090.0 and result.model_ms == 90.0
    assert result.to_record()["tool_wait_ms"] == 1000.0


def test_http_resends_reasoning_as_the_api_takes_it_back_from_a_stateless_client() -> None:
    summary = [{"type": "summary_text", "text": "Look at the test first."}]
    emitted = {"type": "reasoning", "id": "rs_1", "summary": summary, "encrypted_content": "gAAA"}
    assert history_item(emitted, include_reasoning=True) == emitted
    bare = {"type": "reasoning", "id": "rs_2", "summary": summary}  # the server sent no content
    assert history_item(bare, include_reasoning=True) == bare
    assert history_item({"type": "reasoning", "summary": summary}, include_reasoning=True) is None
    assert history_item(emitted, include_reasoning=False) is None


@pytest.mark.parametrize("include_reasoning", [True, False])
def test_stateless_requests_ask_for_encrypted_reasoning_only_when_resending_it(
    include_reasoning: bool,
) -> None:
    rollout = smoke_rollouts()[0]
    for mode in MODES:
        options = ReplayOptions(mode=mode, include_reasoning=include_reasoning)
        body, _ = RolloutState(rollout, options).request(rollout.turns[0])
        asks = body.get("include") == ["reasoning.encrypted_content"]
        assert asks == (mode == "http" and include_reasoning), mode


def test_on_turn_sees_each_turn_as_it_ends(server) -> None:  # type: ignore[no-untyped-def]
    rollout = smoke_rollouts()[0]
    seen: list[TurnResult] = []
    result = run(
        replay_rollout(rollout, endpoint(server), ReplayOptions(mode="ws"), on_turn=seen.append)
    )
    assert seen == result.turns and len(seen) == len(rollout.turns)


def test_a_model_override_names_the_model_in_every_mode() -> None:
    rollout = smoke_rollouts()[0]
    for mode in MODES:
        default, _ = RolloutState(rollout, ReplayOptions(mode=mode)).request(rollout.turns[0])
        assert default["model"] == rollout.model
        options = ReplayOptions(mode=mode, model="my-model")
        body, _ = RolloutState(rollout, options).request(rollout.turns[0])
        assert body["model"] == "my-model"


def test_http_client_pool_hands_out_one_client_per_rollout_and_reuses_it(tmp_path: Path) -> None:
    async def scenario(ep) -> tuple[int, list[bool]]:  # type: ignore[no-untyped-def]
        pool = HttpClientPool()
        pool.prefill(ep.http_url, None, ReplayOptions().read_timeout_s, 1)
        oks = []
        for rollout in smoke_rollouts():
            result = await replay_rollout(rollout, ep, ReplayOptions(mode="http"), http_pool=pool)
            oks.append(result.ok and all(t.bytes_sent > 0 for t in result.turns))
        size = pool.size
        await pool.aclose()
        return size, oks

    with reference_server(tmp_path / "d") as srv:
        size, oks = run(scenario(endpoint(srv)))
    assert size == 1 and all(oks)
