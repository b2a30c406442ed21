"""A sampling model does not make the modes unequal silently: an unscripted replay sends
temperature 0 where the recorded turn allows (and a seed when asked), the same in every mode,
and the sampling is part of the workload."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from harness.load.bench.bench_config import BenchConfig
from harness.load.bench.bench_run import run_bench
from harness.load.core.replay_options import ReplayOptions
from harness.load.core.rollout_requests import RolloutState, sampling_fields
from harness.results.schema import load_result
from harness.results.workload import workload_of
from harness.traces.format import OutputSpec, Rollout

from ..replay_support import SMOKE, smoke_rollouts
from ..standard_server import StandardServer


def _plain(rollout: Rollout) -> Rollout:
    """The rollout as a model without reasoning recorded it: no reasoning items."""
    turns = tuple(
        replace(t, output=tuple(o for o in t.output if o.type != "reasoning"))
        for t in rollout.turns
    )
    return replace(rollout, turns=turns)


def _reasoning(rollout: Rollout) -> Rollout:
    """The rollout as a reasoning model recorded it: a reasoning item before turn 0's output."""
    first = rollout.turns[0]
    turn = replace(first, output=(OutputSpec.reasoning("thinking", tokens=5), *first.output))
    return replace(rollout, turns=(turn, *rollout.turns[1:]))


def test_temperature_zero_is_sent_where_the_recorded_turn_allows() -> None:
    rollout = _plain(smoke_rollouts()[0])
    exact = ReplayOptions(mode="http", send_script=False, temperature=0.0)
    assert sampling_fields(rollout, exact) == {"temperature": 0.0}
    # a reasoning model, replayed as recorded, refuses temperature: none is sent
    assert sampling_fields(_reasoning(rollout), exact) == {}
    # another model named with --model: the recorded model's limits do not apply
    assert sampling_fields(_reasoning(rollout), replace(exact, model="m")) == {"temperature": 0.0}
    seeded = replace(exact, sampling_seed=7)
    assert sampling_fields(rollout, seeded) == {"temperature": 0.0, "seed": 7}
    # a script fixes the output: nothing to add
    assert sampling_fields(rollout, replace(seeded, send_script=True)) == {}
    body, _ = RolloutState(rollout, seeded).request(rollout.turns[0])
    assert (body["temperature"], body["seed"]) == (0.0, 7)


def _bench(server: StandardServer, out: Path, *extra: str) -> dict[str, object]:
    config = BenchConfig(
        target=server.ws_url,
        http_target=server.http_url,
        traces=str(SMOKE),
        per_kind=None,
        max_turns=2,
        modes=("ws", "http"),
        send_script=False,
        model="m",
        out=str(out),
        html=False,
        quiet=True,
        sampling=extra[0] if extra else "exact",
    )
    assert run_bench(config, out=io.StringIO(), err=io.StringIO()) == 0
    (path,) = out.rglob("*.json")
    return load_result(path)


def test_every_create_of_every_mode_carries_the_same_sampling(tmp_path: Path) -> None:
    with StandardServer() as server:
        exact = _bench(server, tmp_path / "exact")
        sent = [b for b in server.record.requests if "tool_choice" in b]  # not the probes
    assert sent and all(b.get("temperature") == 0.0 for b in sent)
    assert all("seed" not in b for b in sent)  # only with --sampling-seed
    with StandardServer() as server:
        target = _bench(server, tmp_path / "target", "target")
        assert all("temperature" not in b for b in server.record.requests)
    # the sampling is part of the workload: the two runs never compare
    assert workload_of(exact)["sampling"] == {"temperature": 0.0}
    assert workload_of(target)["sampling"] is None
