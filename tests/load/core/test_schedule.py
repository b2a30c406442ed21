"""Load patterns: open-loop latency runs from the intended start; bounds are honoured."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import pytest

from harness.load.core.replay_options import ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.load.core.schedule import closed_loop, interleaved, open_loop, poisson_offsets, sweep

from ..replay_support import endpoint, reference_server, run, smoke_rollouts


async def _timed(job: int, intended_ns: int | None, work_s: float = 0.05) -> tuple[int, float]:
    """A fake rollout: `work_s` of work; returns (job, latency ms from the intended start)."""
    start = time.perf_counter_ns()
    await asyncio.sleep(work_s)
    origin = intended_ns if intended_ns is not None else start
    return job, (time.perf_counter_ns() - origin) / 1e6


def test_open_loop_measures_from_the_intended_start() -> None:
    """Arrivals far faster than one slot can serve: the queueing delay is part of the latency."""
    results = run(open_loop(list(range(5)), _timed, rate_per_s=1000.0, max_in_flight=1, seed=1))
    latencies = dict(results)
    assert sorted(latencies) == [0, 1, 2, 3, 4]
    # job k waits for the k jobs before it: its latency includes ~k * 50 ms of waiting
    assert latencies[4] >= 4 * 50 * 0.95
    assert latencies[4] > latencies[0] + 150


def test_open_loop_arrivals_are_poisson_and_seeded() -> None:
    a = poisson_offsets(2000, 10.0, seed=3)
    assert a == poisson_offsets(2000, 10.0, seed=3)
    assert a != poisson_offsets(2000, 10.0, seed=4)
    assert all(x < y for x, y in itertools.pairwise(a))
    assert abs(a[-1] / 2000 - 0.1) < 0.01  # mean gap 1/rate


def test_open_loop_replay_counts_the_late_start_in_turn_zero(tmp_path: Path) -> None:
    rollout = smoke_rollouts()[0]
    with reference_server(tmp_path / "d") as srv:
        ep = endpoint(srv)

        async def runner(job: int, intended_ns: int | None):  # type: ignore[no-untyped-def]
            return await replay_rollout(
                rollout, ep, ReplayOptions(max_turns=2), intended_start_ns=intended_ns
            )

        results = run(open_loop([0, 1, 2], runner, rate_per_s=500.0, max_in_flight=1))
    late = max(results, key=lambda r: r.start_lag_ms)
    assert late.start_lag_ms > 0
    turn0 = late.turns[0]
    assert turn0.start_lag_ms == late.start_lag_ms
    assert turn0.ttft_ms is not None and turn0.ttft_ms >= late.start_lag_ms
    assert late.wall_ms >= late.start_lag_ms


def test_closed_loop_runs_at_most_concurrency_at_once_and_honours_bounds() -> None:
    running = 0
    peak = 0

    async def job(i: int, intended: int | None) -> int:
        nonlocal running, peak
        assert intended is None  # closed loop: measured from the actual start
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return i

    done = run(closed_loop(list(range(12)), job, concurrency=3))
    assert sorted(done) == list(range(12)) and peak == 3
    assert len(run(closed_loop(list(range(12)), job, concurrency=3, max_jobs=5))) == 5
    # 1000 jobs of 10 ms at concurrency 2 take 5 s: a 0.1 s duration stops the loop long before
    bounded = run(closed_loop(list(range(1000)), job, concurrency=2, duration_s=0.1))
    assert len(bounded) < 1000


async def _fast_then_stuck(i: int, intended: int | None) -> tuple[str, int]:
    """Job 0 ends at once; every other job would run for an hour."""
    await asyncio.sleep(0.0 if i == 0 else 3600)
    return "done", i


def _cut(i: int) -> tuple[str, int]:
    return "cut", i


def test_closed_loop_duration_is_hard_running_jobs_are_cut() -> None:
    done: list[tuple[str, int]] = []
    results = run(
        closed_loop(
            list(range(5)),
            _fast_then_stuck,
            concurrency=2,
            duration_s=0.2,
            on_done=done.append,
            cut=_cut,
        )
    )
    # job 0 finished; 1 and 2 were running at the limit; 3 and 4 never started
    assert sorted(results) == [("cut", 1), ("cut", 2), ("done", 0)]
    assert sorted(done) == sorted(results)
    # without `cut` the cancelled jobs are left out
    assert run(closed_loop(list(range(5)), _fast_then_stuck, concurrency=2, duration_s=0.2)) == [
        ("done", 0)
    ]


def test_open_loop_duration_cuts_running_and_queued_jobs() -> None:
    """One slot: job 1 holds it at the limit, 2 and 3 arrived and wait for it: all are cut."""
    results = run(
        open_loop(
            list(range(4)),
            _fast_then_stuck,
            rate_per_s=1000.0,
            max_in_flight=1,
            duration_s=0.3,
            cut=_cut,
        )
    )
    assert sorted(results) == [("cut", 1), ("cut", 2), ("cut", 3), ("done", 0)]


def test_a_failing_job_stops_the_schedule_and_raises() -> None:
    async def job(i: int, intended: int | None) -> int:
        if i == 0:
            raise RuntimeError("boom")
        await asyncio.sleep(3600)
        return i

    with pytest.raises(RuntimeError, match="boom"):
        run(closed_loop([0, 1], job, concurrency=2))
    with pytest.raises(RuntimeError, match="boom"):
        run(open_loop([0, 1], job, rate_per_s=1000.0))


def test_sweep_runs_each_level() -> None:
    out = run(sweep([1, 2], lambda level: list(range(level * 2)), _timed))
    assert {k: len(v) for k, v in out.items()} == {1: 2, 2: 4}


def test_interleaving_rotates_the_variant_order() -> None:
    pairs = interleaved(["r0", "r1", "r2"], ["a", "b", "c"])
    assert [v for _, v in pairs] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert [r for r, _ in pairs[:3]] == ["r0"] * 3
