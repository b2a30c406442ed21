"""A real model does not stop on its own: each replayed turn asks `max_output_tokens` = its
recorded output length, turns that produced more or less are reported, and a turn the harness
gives up is cancelled on the target (its stream closed), so no generation outlives the run."""

from __future__ import annotations

import asyncio
import io
import math
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.load.bench.bench_config import BenchConfig
from harness.load.bench.bench_run import run_bench
from harness.load.bench.output_caps import describe_output_caps, output_cap_summary
from harness.load.core.modes import Mode
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.core.rollout_driver import CANCELLED_NOTE, replay_rollout
from harness.load.core.rollout_requests import (
    CALL_CAP_HEADROOM,
    MIN_OUTPUT_CAP_TOKENS,
    output_cap_tokens,
)
from harness.results.schema import load_result
from harness.traces.format import OutputSpec, Rollout, Turn, input_message
from reference_server.app import ReferenceServer
from tests.conformance.servers import NO_CAP_TOKENS, running

from ..replay_support import SMOKE, endpoint, reference_server, run, smoke_rollouts
from ..standard_server import Behaviour, StandardServer

PROFILES = Path(__file__).resolve().parents[3] / "reference_server" / "profiles"


def _replay(url: str, rollout: Rollout, **options: object) -> list[dict[str, object]]:
    opts = ReplayOptions(mode="ws", send_script=False, **options)  # type: ignore[arg-type]
    result = run(replay_rollout(rollout, Endpoint(ws_url=url), opts))
    assert result.ok, result.error
    return [t.to_sample() for t in result.turns]


def test_a_model_that_never_stops_is_held_to_each_turns_recorded_length() -> None:
    rollout = smoke_rollouts()[0]
    with running("never-stops") as model:
        capped = _replay(model.url, rollout)
        opts = ReplayOptions(mode="ws", send_script=False, output_cap_scale=None, max_turns=1)
        lifted = run(replay_rollout(rollout, Endpoint(ws_url=model.url), opts)).turns
        halved = _replay(model.url, rollout, output_cap_scale=0.5, max_turns=2)
    # every turn asked its recorded length (at least the API's minimum; room for a recorded
    # call) and stopped there
    assert len(capped) == len(rollout.turns)
    for sample, turn in zip(capped, rollout.turns, strict=True):
        cap = output_cap_tokens(turn, 1.0)
        assert cap is not None and cap >= max(MIN_OUTPUT_CAP_TOKENS, turn.output_tokens)
        assert sample["output_cap_tokens"] == cap == sample["output_tokens"]
        assert sample["reached_output_cap"] is True
    summary = output_cap_summary(capped, "ws")
    assert summary is not None
    assert (summary["turns"], summary["over_cap"], summary["under_cap"]) == (len(capped), 0, 0)
    # lifted: no max_output_tokens, and the model runs until its context is full
    assert lifted[0].output_cap_tokens is None and lifted[0].output_tokens == NO_CAP_TOKENS
    for sample, turn in zip(halved, rollout.turns, strict=False):
        assert sample["output_cap_tokens"] == output_cap_tokens(turn, 0.5)


def test_turns_that_produce_less_or_more_than_asked_are_reported() -> None:
    rollout = smoke_rollouts()[0]
    with running("ok") as short:  # answers three tokens whatever is asked
        samples = _replay(short.url, rollout, max_turns=2)
    summary = output_cap_summary(samples, "ws")
    assert summary is not None and summary["under_cap"] == 2 and summary["over_cap"] == 0
    assert summary["under_example"]["output_tokens"] == 3
    # a target that ignores the cap: its samples as the replay records them
    over = [{**s, "output_tokens": s["output_cap_tokens"] * 3} for s in samples]
    summary = output_cap_summary(over, "ws")
    assert summary is not None and summary["over_cap"] == 2
    line = describe_output_caps("ws", summary)
    assert "2 produced more than asked (the target ignored the cap" in line


# -- abandoned turns are cancelled on the target -------------------------------------------------
@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    """A reference server whose model decodes 20 tokens/s: a 4,000-token answer takes minutes."""
    folder = tmp_path_factory.mktemp("slow")
    profile = (PROFILES / "zero.toml").read_text(encoding="utf-8")
    profile = profile.replace("decode_tokens_per_s = 1e9", "decode_tokens_per_s = 20")
    (folder / "slow.toml").write_text(profile.replace('name = "zero"', 'name = "slow"'))
    with reference_server(folder, profile=str(folder / "slow.toml")) as server:
        yield server


def _long_answer() -> Rollout:
    text = " ".join(["word"] * 4000)
    turn = Turn(
        index=0, input=(input_message("Write at length."),), output=(OutputSpec.message(text),)
    )
    return Rollout(id="long", source="synthetic", agent_kind="unknown", model="m", turns=(turn,))


async def _open_streams_after(server: ReferenceServer, opts: ReplayOptions) -> tuple[str, int]:
    """Replay the long answer with a short turn timeout; the error, then the target's open
    streams once they stop changing (bounded wait: the answer alone would take minutes)."""
    result = await replay_rollout(_long_answer(), endpoint(server), opts)
    metrics = server.services.metrics
    deadline = time.monotonic() + 30
    while metrics.in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return str(result.error), metrics.in_flight


@pytest.mark.parametrize("mode", ["ws", "http"])
def test_a_timed_out_turn_leaves_no_stream_open_on_the_target(
    slow_server: ReferenceServer, mode: Mode
) -> None:
    opts = ReplayOptions(mode=mode, turn_timeout_s=1.0, output_cap_scale=None)

    async def scenario() -> tuple[str, int, int]:
        task = asyncio.create_task(_open_streams_after(slow_server, opts))
        while not slow_server.services.metrics.in_flight and not task.done():
            await asyncio.sleep(0.01)
        generating = slow_server.services.metrics.in_flight  # the stream the turn opened
        error, left = await task
        return error, generating, left

    error, generating, left = asyncio.run(scenario())
    assert generating == 1
    assert "1.0 s" in error and error.endswith(CANCELLED_NOTE), error  # either timeout path
    assert left == 0


# -- a cap never cuts a call that is then sent on ------------------------------------------------
def test_a_turn_with_a_recorded_call_asks_room_for_the_whole_call() -> None:
    rollout = smoke_rollouts()[0]
    calls = [t for t in rollout.turns if t.function_calls]
    prose = [t for t in rollout.turns if not t.function_calls]
    assert calls and prose
    for turn in calls:
        expected = max(MIN_OUTPUT_CAP_TOKENS, math.ceil(turn.output_tokens * CALL_CAP_HEADROOM))
        assert output_cap_tokens(turn, 1.0) == expected
    for turn in prose:
        assert output_cap_tokens(turn, 1.0) == max(MIN_OUTPUT_CAP_TOKENS, turn.output_tokens)


@pytest.mark.parametrize("mode", ["ws", "http", "http-chained"])
def test_a_call_the_cap_cut_ends_the_rollout_the_same_way_in_every_mode(mode: Mode) -> None:
    """The target emits a call far longer than any cap: the rollout ends after that turn (ok,
    with the reason), and the target never receives the cut call back, in history or answer."""
    rollout = smoke_rollouts()[0]
    with StandardServer(Behaviour(kind="function_call", tokens=5000)) as server:
        opts = ReplayOptions(mode=mode, send_script=False, model="m")
        where = Endpoint(ws_url=server.ws_url, http_url=server.http_url)
        result = run(replay_rollout(rollout, where, opts))
        received = list(server.record.requests)
    assert result.ok, result.error
    (turn,) = result.turns
    assert turn.cut_call and turn.to_sample()["cut_call"] is True
    assert result.stopped is not None and "cut by max_output_tokens" in result.stopped
    assert result.to_record()["stopped"] == result.stopped
    assert len(received) == 1  # the next turn, which would carry the call, was never sent
    for body in received:
        assert not [i for i in body["input"] if i.get("type", "message") != "message"]


def test_the_bench_counts_cut_calls_and_its_modes_carry_one_conversation(tmp_path: Path) -> None:
    with StandardServer(Behaviour(kind="function_call", tokens=5000)) as server:
        config = BenchConfig(
            target=server.ws_url,
            http_target=server.http_url,
            traces=str(SMOKE),
            per_kind=None,
            max_turns=3,
            modes=("ws", "http"),
            send_script=False,
            model="m",
            out=str(tmp_path),
            html=False,
            quiet=True,
        )
        out = io.StringIO()
        assert run_bench(config, out=out, err=io.StringIO()) == 0
    (path,) = tmp_path.rglob("*.json")
    bench = load_result(path)["bench"]
    assert all(r["ok"] and r["turns"] == 1 and r["stopped"] for r in bench["rollouts"])
    caps = bench["output_caps"]
    assert caps["ws"]["cut_calls"] == caps["http"]["cut_calls"] == len(bench["rollouts"]) // 2
    (comparison,) = bench["comparisons"]
    assert comparison["work"]["equal_pairs"] == comparison["work"]["pairs"] > 0
    assert "cut a function call and ended the rollout there" in " ".join(out.getvalue().split())
