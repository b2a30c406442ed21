"""`wsmode record`: a proxy between the replay driver and the reference server writes a trace
that replays the same conversation."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import socket
from pathlib import Path
from typing import Any

import pytest

from harness.load.core.modes import MODES
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.traces.converters import custom_call_arguments
from harness.traces.format import OutputSpec, Rollout, input_message, load_traces
from harness.traces.record.proxy import Recorder, record
from harness.traces.record.trace_log import Observed, TraceLog, new_items_of_stateless
from tests.load.replay_support import reference_server, run, smoke_rollouts


def _without_reasoning_tokens(rollout: Rollout) -> list[object]:
    """Turn outputs with the hidden-reasoning token count blanked: the recorder can only
    estimate it (usage gives reasoning tokens incl. the summary, tokenized by the server)."""
    return [
        tuple(dataclasses.replace(o, tokens=0) if o.type == "reasoning" else o for o in t.output)
        for t in rollout.turns
    ]


def test_recording_the_driver_reproduces_the_trace(tmp_path: Path) -> None:
    originals = smoke_rollouts()
    scale = 0.002
    out = tmp_path / "recorded.jsonl"
    err = io.StringIO()

    async def scenario(upstream: str) -> int:
        recorder = Recorder(upstream, out, err=err)
        await recorder.start()
        ep = Endpoint(recorder.ws_url, recorder.http_url)
        for mode, rollout in zip(MODES, originals, strict=True):
            result = await replay_rollout(rollout, ep, ReplayOptions(mode=mode, time_scale=scale))
            assert result.ok, (mode, result.error)
        warm = await replay_rollout(originals[0], ep, ReplayOptions(prewarm=True, time_scale=scale))
        assert warm.ok
        return await recorder.stop()

    with reference_server(tmp_path / "d") as srv:
        written = run(scenario(srv.http_url))
    assert written == 4, err.getvalue()
    recorded = load_traces(out)
    # ws, http (stateless), http-chained (previous_response_id from turn 1 on), ws with warm-up
    assert [r.meta["stateless_http"] for r in recorded] == [False, True, False, False]
    for got, original in zip(recorded, [*originals, originals[0]], strict=True):
        assert got.source == "recorded"
        assert got.instructions == original.instructions and got.tools == original.tools
        assert [t.input for t in got.turns] == [t.input for t in original.turns]
        assert _without_reasoning_tokens(got) == _without_reasoning_tokens(original)
        assert got.turns[0].tool_wait_ms == 0.0
        for rec_turn, orig_turn in zip(got.turns[1:], original.turns[1:], strict=True):
            # the gap the proxy saw includes the (scaled) tool wait
            assert rec_turn.tool_wait_ms >= orig_turn.tool_wait_ms * scale * 0.9
            assert {"ttft_ms", "e2e_ms", "input_tokens", "output_tokens"} <= set(rec_turn.observed)


def test_stateless_new_items_are_what_follows_the_last_model_output() -> None:
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    answer = {"type": "function_call_output", "call_id": "c", "output": "x"}
    first = input_message("task")
    assert new_items_of_stateless([first]) == [first]
    assert new_items_of_stateless([first, call, answer]) == [answer]


def test_upstream_must_be_a_url() -> None:
    with pytest.raises(ValueError, match="upstream"):
        Recorder("localhost:8000", "x.jsonl")


def test_upstream_down_closes_the_client_and_records_nothing(tmp_path: Path) -> None:
    async def scenario() -> int:
        recorder = Recorder("http://127.0.0.1:9", tmp_path / "x.jsonl", err=io.StringIO())
        await recorder.start()
        result = await replay_rollout(
            smoke_rollouts()[0],
            Endpoint(recorder.ws_url, recorder.http_url),
            ReplayOptions(max_turns=1, turn_timeout_s=5),
        )
        assert not result.ok
        return await asyncio.wait_for(recorder.stop(), 10)

    assert run(scenario()) == 0


def test_identical_conversations_in_flight_together_stay_apart(tmp_path: Path) -> None:
    """The same rollout replayed concurrently (stateless twice, chained once, plus a one-turn
    warm-up with the same first request): identical content, so only the connection and the
    chain ids can tell them apart."""
    rollout = smoke_rollouts()[0]
    out = tmp_path / "recorded.jsonl"
    err = io.StringIO()

    async def scenario(upstream: str) -> int:
        recorder = Recorder(upstream, out, err=err)
        await recorder.start()
        ep = Endpoint(recorder.ws_url, recorder.http_url)
        warm = await replay_rollout(rollout, ep, ReplayOptions(mode="http", max_turns=1))
        assert warm.ok
        results = await asyncio.gather(
            *(
                replay_rollout(rollout, ep, ReplayOptions(mode=mode, time_scale=0.001))
                for mode in ("http", "http", "http-chained")
            )
        )
        assert all(r.ok for r in results)
        return await recorder.stop()

    with reference_server(tmp_path / "d") as srv:
        written = run(scenario(srv.http_url))
    assert written == 4 and "skipping" not in err.getvalue(), err.getvalue()
    lengths = sorted(len(r.turns) for r in load_traces(out))
    assert lengths == [1, len(rollout.turns), len(rollout.turns), len(rollout.turns)]


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    err = io.StringIO()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = run(record("http://127.0.0.1:9", port, str(tmp_path / "x.jsonl"), err=err))
    assert code == 2
    assert err.getvalue() == (
        f"wsmode record: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )


def test_nothing_recorded_writes_no_file_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    err = io.StringIO()
    assert run(record("http://127.0.0.1:9", 0, str(out), duration_s=0.05, err=err)) == 0
    assert err.getvalue().endswith("wsmode record: nothing recorded; no file written\n")
    assert not out.exists()


_PATCH = "*** Begin Patch\n*** Update File: a.py\n-x = 1\n+x = 2\n*** End Patch"
_CUSTOM_CALL = {
    "type": "custom_tool_call",
    "id": "ctc_1",
    "status": "completed",
    "call_id": "call_p",
    "name": "apply_patch",
    "input": _PATCH,
}


def _answered(request: dict[str, Any], at_ms: int, response_id: str, output: Any) -> Observed:
    """A completed, non-streamed HTTP exchange as the proxy sees it."""
    final = {"id": response_id, "status": "completed", "output": [output]}
    return Observed(request, at_ms * 10**6, terminal_ns=(at_ms + 5) * 10**6, final=final)


@pytest.mark.parametrize("chained", [True, False], ids=["http-chained", "http-stateless"])
def test_custom_tool_calls_are_recorded_as_function_calls(tmp_path: Path, chained: bool) -> None:
    tools = [{"type": "custom", "name": "apply_patch", "description": "Edit files."}]
    done = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "ok"}],
    }
    answer = {"type": "custom_tool_call_output", "call_id": "call_p", "output": "Done!"}
    first = {"model": "m", "tools": tools, "input": "fix a.py"}
    if chained:
        second = {"model": "m", "tools": tools, "previous_response_id": "resp_1", "input": [answer]}
    else:  # the client resends the history, the custom call included
        second = {
            "model": "m",
            "tools": tools,
            "input": [input_message("fix a.py"), _CUSTOM_CALL, answer],
        }
    log = TraceLog(tmp_path / "c.jsonl", io.StringIO())
    for obs in (_answered(first, 0, "resp_1", _CUSTOM_CALL), _answered(second, 10, "resp_2", done)):
        log.for_http(obs.request).add(obs)
    assert log.write() == 1, log.skipped
    (rollout,) = load_traces(tmp_path / "c.jsonl")
    assert rollout.turns[0].output == (
        OutputSpec.function_call("apply_patch", custom_call_arguments(_PATCH), "call_p"),
    )
    assert rollout.tool_names == ("apply_patch",)
    assert rollout.turns[1].input == (
        {"type": "function_call_output", "call_id": "call_p", "output": "Done!"},
    )
    assert rollout.turns[1].tool_wait_ms == 5.0
    assert rollout.meta["stateless_http"] is not chained


def test_the_relayed_events_are_judged_by_wsmode_check(tmp_path: Path) -> None:
    """`--events` keeps what the trace cannot: the server's events, one stream per connection."""
    from harness.conformance.check.offline_check import check_file

    rollout = smoke_rollouts()[0]
    out, events = tmp_path / "recorded.jsonl", tmp_path / "events.jsonl"

    async def scenario(upstream: str) -> None:
        recorder = Recorder(upstream, out, err=io.StringIO(), events=events)
        await recorder.start()
        ep = Endpoint(recorder.ws_url, recorder.http_url)
        for mode in ("ws", "http"):
            result = await replay_rollout(rollout, ep, ReplayOptions(mode=mode, time_scale=0.002))
            assert result.ok, (mode, result.error)
        await recorder.stop()

    with reference_server(tmp_path / "d") as srv:
        run(scenario(srv.http_url))
    report = check_file(events)
    turns = len(rollout.turns)
    assert len(report.responses) == 2 * turns  # every turn of both modes, each judged
    assert report.must_findings == 0
    assert {r.stream.split("-")[0] for r in report.responses} == {"conn ws", "conn http"}
    assert all(r.terminal == "response.completed" for r in report.responses)


def test_a_frame_nested_past_any_parser_is_relayed_and_the_relay_goes_on(tmp_path: Path) -> None:
    """The proxy parses what it relays to record it; a target's 100,000-deep frame is relayed
    unparsed (not recorded) and the frames after it still arrive."""
    from websockets.asyncio.client import connect
    from websockets.asyncio.server import ServerConnection, serve

    deep = "[" * 100_000 + "]" * 100_000
    after = '{"type": "error", "error": {"type": "server_error", "message": "after"}}'

    async def upstream(connection: ServerConnection) -> None:
        await connection.recv()
        await connection.send(deep)
        await connection.send(after)
        await connection.wait_closed()

    async def scenario() -> list[str]:
        async with serve(upstream, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            recorder = Recorder(f"http://127.0.0.1:{port}", tmp_path / "x.jsonl", err=err)
            await recorder.start()
            async with connect(recorder.ws_url + "/v1/responses", max_size=None) as client:
                await client.send('{"type": "response.create", "model": "m", "input": "hi"}')
                got = [str(await asyncio.wait_for(client.recv(), 10)) for _ in range(2)]
            await asyncio.wait_for(recorder.stop(), 10)
            return got

    err = io.StringIO()
    assert run(scenario()) == [deep, after]
    assert "Traceback" not in err.getvalue() and "RecursionError" not in err.getvalue()
