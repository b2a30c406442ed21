"""Sub-agents in the bench: started beside their parent at the recorded offset after the
parent's turn they hang off, each reported as its own rollout (harness/load/core/subagents.py)."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from harness.load.bench.bench_config import BenchConfig
from harness.load.bench.bench_result import BenchRun
from harness.load.bench.replays import run_variants
from harness.load.bench.variants import Variant
from harness.load.core.replay_options import ReplayOptions
from harness.load.core.subagents import families
from harness.traces.converters.kvcache import convert_kvcache
from harness.traces.format import Rollout
from tests.recorded import TRACE_SAMPLES, needs

from ..replay_support import endpoint, reference_server, run

REAL = TRACE_SAMPLES / "kvcache-trace_0291.json"  # a real capture with 2 sub-agents
PARENT = "kvcache-trace_0291"
pytestmark = needs(REAL)
SCALE = 0.01  # of the recorded waits and offsets
SPAWN_TURN_WAIT_MS = 50_000.0  # recorded wait given to the spawning turn (the others: none)


def real_family() -> list[Rollout]:
    """trace_0291 (2 sub-agents after turn 15) cut to 17 turns; only turns 15 and 16 wait, so
    a sub-agent started after the wrong turn starts at the wrong time."""
    by_id = {r.id: r for r in convert_kvcache(REAL)}
    parent = by_id[PARENT]
    turns = tuple(
        dataclasses.replace(
            t, tool_wait_ms=SPAWN_TURN_WAIT_MS if t.index == 15 else t.tool_wait_ms * (t.index > 15)
        )
        for t in parent.turns[:17]
    )
    subs = [by_id[f"{PARENT}-agent_001"], by_id[f"{PARENT}-agent_002"]]
    return [dataclasses.replace(parent, turns=turns), *subs]


def test_families_hang_sub_agents_off_a_parent_in_the_run() -> None:
    parent, first, second = real_family()
    roots, spawns = families([parent, first, second])
    assert [r.id for r in roots] == [PARENT]
    assert [(s.job.id, s.after_turn, s.offset_ms) for s in spawns[PARENT]] == [
        (first.id, 15, 47373.0),
        (second.id, 15, 79913.0),
    ]
    # without its parent a sub-agent is a rollout like any other
    assert families([first, second]) == ([first, second], {})


def test_sub_agents_start_beside_the_parent_at_the_recorded_offsets(tmp_path: Path) -> None:
    rollouts = real_family()
    parent, *subs = rollouts
    config = BenchConfig(traces=str(REAL), per_kind=None, concurrency=1, modes=("ws",))
    with reference_server(tmp_path / "d") as srv:
        options = ReplayOptions(mode="ws", time_scale=SCALE)
        bench_run = BenchRun(config, [Variant("ws", endpoint(srv), options)], rollouts)
        results = run(run_variants(bench_run, progress=io.StringIO()))
    by_id = {r.rollout_id: r for r in results}
    assert [r.rollout_id for r in results] == [r.id for r in rollouts]  # each its own rollout
    assert all(r.ok and r.protocol_mode == "ws" for r in results)
    assert [len(by_id[r.id].turns) for r in rollouts] == [17, 5, 7]
    top = by_id[PARENT]
    parent_end_ns = top.started_ns + top.wall_ms * 1e6
    for sub in subs:
        got = by_id[sub.id]
        expected_ms = sub.meta["start_after_turn_ms"] * SCALE
        assert got.parent_rollout == PARENT
        assert got.spawn_delay_ms is not None
        # not before the recorded offset after the spawning turn's end (a sleep may end late on
        # a busy machine, never early; that it is not held back is the concurrency check below)
        assert got.spawn_delay_ms >= expected_ms - 1
        # after turn 15 (the only turn before it that waits), not an earlier one
        since_parent_ms = (got.started_ns - top.started_ns) / 1e6
        assert since_parent_ms >= SPAWN_TURN_WAIT_MS * SCALE + expected_ms - 1
        # concurrently: with concurrency 1 it still starts while the parent runs
        assert got.started_ns < parent_end_ns
    # the parent's waiting stays as recorded: turn 16 waits its own recorded tool time
    assert top.turns[16].tool_wait_waited_ms >= parent.turns[16].tool_wait_ms * SCALE - 1
