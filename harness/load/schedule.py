"""Load patterns: closed loop, open loop (Poisson arrivals) and a concurrency sweep.

A schedule runs `Job`s (one rollout in one variant) through an async `runner(job, intended_ns)`
and returns the results in completion order. Both patterns are bounded: by the number of jobs
(`max_jobs`), and by `duration_s`, a hard limit: no job starts after it, and jobs still running
(or, open loop, still waiting for a slot) then are cancelled. `cut(job)` gives the result that
stands for a cancelled job (a failure, so it is counted and kept out of the latencies); without
`cut` cancelled jobs are left out of the results.

- **Closed loop**: `concurrency` workers; each starts its next job when the previous ends. The
  load adapts to the target's speed, so latency is measured from the actual start.
- **Open loop**: jobs arrive at seeded Poisson times (rate `rate_per_s`) whatever the target
  does. A job's latency is measured from its *intended* start: if the driver is saturated
  (`max_in_flight` reached) the job waits, and that wait counts (no coordinated omission).
- **Sweep**: a closed loop at each concurrency level in turn.

Pairing: `interleaved_jobs` lists, for each rollout, every variant, rotating the variant order
from one rollout to the next, so each variant sees the same rollouts at nearly the same time and
no variant is always first (or always last) on a warm or loaded server.

Sub-agents: a rollout whose `meta` names a parent in the run (`parent_rollout`,
`spawned_after_turn`, `start_after_turn_ms`, as the kvcache converter writes them) is no job of
its own: `families` hangs it off its parent, and `run_with_spawns` starts it while the parent
runs, `start_after_turn_ms × time_scale` after the end of the parent's turn `spawned_after_turn`
(the parent's own waits stay as recorded).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from harness.traces.format import Rollout

T = TypeVar("T")
R = TypeVar("R")

Runner = Callable[[T, int | None], Awaitable[R]]
OnDone = Callable[[R], None]


@dataclass(frozen=True, slots=True)
class Job(Generic[T]):
    seq: int
    payload: T  # what the runner needs (rollout + variant)


def interleaved(
    items: Sequence[T], variants: Sequence[R], *, repeats: int = 1
) -> list[tuple[T, R]]:
    """(item, variant) pairs: every variant per item, the variant order rotating per item."""
    out: list[tuple[T, R]] = []
    n = len(variants)
    k = 0
    for _ in range(repeats):
        for item in items:
            for j in range(n):
                out.append((item, variants[(k + j) % n]))
            k += 1
    return out


def poisson_offsets(count: int, rate_per_s: float, seed: int) -> list[float]:
    """Seeded arrival offsets (s) of a Poisson process: exponential gaps of mean 1/rate."""
    if rate_per_s <= 0:
        raise ValueError("rate_per_s must be > 0")
    rng = random.Random(seed)
    t = 0.0
    out = []
    for _ in range(count):
        t += rng.expovariate(rate_per_s)
        out.append(t)
    return out


async def closed_loop(
    jobs: Sequence[T],
    runner: Callable[[T, int | None], Awaitable[R]],
    *,
    concurrency: int,
    duration_s: float | None = None,
    max_jobs: int | None = None,
    on_done: Callable[[R], None] | None = None,
    cut: Callable[[T], R] | None = None,
) -> list[R]:
    """Run `jobs` with `concurrency` workers; each job starts when a worker frees up."""
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    queue = list(jobs[:max_jobs] if max_jobs is not None else jobs)
    queue.reverse()
    deadline = time.monotonic() + duration_s if duration_s is not None else None
    results: list[R] = []
    running: dict[int, T] = {}  # worker -> its job in flight (left behind when cancelled)

    def record(result: R) -> None:
        results.append(result)
        if on_done is not None:
            on_done(result)

    async def worker(i: int) -> None:
        while queue:
            if deadline is not None and time.monotonic() >= deadline:
                return
            job = queue.pop()
            running[i] = job
            result = await runner(job, None)
            del running[i]
            record(result)

    workers = [asyncio.create_task(worker(i)) for i in range(min(concurrency, max(1, len(queue))))]
    await _wait_until(workers, deadline)
    _record_cuts(running.values(), cut, record)
    return results


async def open_loop(
    jobs: Sequence[T],
    runner: Callable[[T, int | None], Awaitable[R]],
    *,
    rate_per_s: float,
    seed: int = 0,
    max_in_flight: int | None = None,
    duration_s: float | None = None,
    max_jobs: int | None = None,
    on_done: Callable[[R], None] | None = None,
    cut: Callable[[T], R] | None = None,
) -> list[R]:
    """Start job i at t0 + offset_i (Poisson); latency runs from that intended start."""
    selected = list(jobs[:max_jobs] if max_jobs is not None else jobs)
    offsets = poisson_offsets(len(selected), rate_per_s, seed)
    slots = asyncio.Semaphore(max_in_flight) if max_in_flight else None
    results: list[R] = []
    running: dict[int, T] = {}  # arrived and not finished: waiting for a slot or running
    tasks: list[asyncio.Task[None]] = []
    t0 = time.perf_counter_ns()
    deadline = time.monotonic() + duration_s if duration_s is not None else None

    def record(result: R) -> None:
        results.append(result)
        if on_done is not None:
            on_done(result)

    async def start(seq: int, job: T, intended_ns: int) -> None:
        if slots is not None:
            async with slots:
                result = await runner(job, intended_ns)
        else:
            result = await runner(job, intended_ns)
        del running[seq]
        record(result)

    for seq, (job, offset) in enumerate(zip(selected, offsets, strict=True)):
        if duration_s is not None and offset > duration_s:
            break
        intended_ns = t0 + int(offset * 1e9)
        delay = (intended_ns - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        running[seq] = job
        tasks.append(asyncio.create_task(start(seq, job, intended_ns)))
    await _wait_until(tasks, deadline)
    _record_cuts(running.values(), cut, record)
    return results


async def _wait_until(tasks: Collection[asyncio.Task[None]], deadline: float | None) -> None:
    """Wait for `tasks`; at `deadline` (time.monotonic) cancel those still running and wait
    for them to unwind. A task's exception cancels the rest and is raised."""
    if not tasks:
        return
    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
    done, pending = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_EXCEPTION)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            raise error


def _record_cuts(
    jobs: Collection[T], cut: Callable[[T], R] | None, record: Callable[[R], None]
) -> None:
    if cut is not None:
        for job in list(jobs):
            record(cut(job))


async def sweep(
    levels: Sequence[int],
    make_jobs: Callable[[int], Sequence[T]],
    runner: Callable[[T, int | None], Awaitable[R]],
    *,
    duration_s: float | None = None,
    on_done: Callable[[R], None] | None = None,
    cut: Callable[[T], R] | None = None,
) -> dict[int, list[R]]:
    """A closed loop at each concurrency level (each bounded by `duration_s`); `make_jobs(level)`
    gives that level's jobs."""
    out: dict[int, list[R]] = {}
    for level in levels:
        out[level] = await closed_loop(
            make_jobs(level),
            runner,
            concurrency=level,
            duration_s=duration_s,
            on_done=on_done,
            cut=cut,
        )
    return out


# -- sub-agents --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Spawn(Generic[T]):
    """A sub-agent: `job` starts `offset_ms` (recorded; scaled at run time) after the end of its
    parent's turn `after_turn`."""

    job: T
    after_turn: int
    offset_ms: float


def _link(rollout: Rollout) -> tuple[str, int, float] | None:
    """(parent id, turn, offset ms) from a sub-agent's meta; None for any other rollout."""
    meta: dict[str, Any] = dict(rollout.meta or {})
    parent, turn, offset = (
        meta.get(k) for k in ("parent_rollout", "spawned_after_turn", "start_after_turn_ms")
    )
    if not isinstance(parent, str) or parent == rollout.id:
        return None
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 0:
        return None
    if not isinstance(offset, int | float) or isinstance(offset, bool):
        return None
    return parent, turn, max(0.0, float(offset))


def families(rollouts: Sequence[Rollout]) -> tuple[list[Rollout], dict[str, list[Spawn[Rollout]]]]:
    """The roots (rollouts no other rollout of the run spawns), in order, and the sub-agents of
    each parent id, in order. A sub-agent whose parent is not in the run is a root."""
    ids = {r.id for r in rollouts}
    roots: list[Rollout] = []
    spawns: dict[str, list[Spawn[Rollout]]] = {}
    for rollout in rollouts:
        link = _link(rollout)
        if link is None or link[0] not in ids:
            roots.append(rollout)
        else:
            spawns.setdefault(link[0], []).append(Spawn(rollout, link[1], link[2]))
    return roots, spawns


def family_members(root: Rollout, spawns: dict[str, list[Spawn[Rollout]]]) -> list[Rollout]:
    """`root` then its sub-agents, depth first."""
    out = [root]
    for spawn in spawns.get(root.id, ()):
        out += family_members(spawn.job, spawns)
    return out


# starts a sub-agent: (spawn, parent's turn end, intended start) in perf_counter ns -> results
StartSpawn = Callable[[Spawn[T], int, int], Awaitable[list[R]]]


async def run_with_spawns(
    run_parent: Callable[[Callable[[int], None]], Awaitable[R]],
    spawns: Sequence[Spawn[T]],
    start: StartSpawn[T, R],
    *,
    time_scale: float,
    not_started: Callable[[Spawn[T], R], list[R]],
) -> list[R]:
    """Run a parent and its sub-agents concurrently: `run_parent(turn_ended)` replays the parent
    and calls `turn_ended(i)` when its turn i ends well; each spawn of turn i then starts
    `offset_ms × time_scale` later. Returns the parent's result, then each spawn's results in
    spawn order (`not_started(spawn, parent_result)` for a turn the parent never ended)."""
    tasks: dict[int, asyncio.Task[list[R]]] = {}

    async def later(spawn: Spawn[T], ended_ns: int) -> list[R]:
        intended_ns = ended_ns + int(spawn.offset_ms * time_scale * 1e6)
        delay_s = (intended_ns - time.perf_counter_ns()) / 1e9
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        return await start(spawn, ended_ns, intended_ns)

    def turn_ended(index: int) -> None:
        ended_ns = time.perf_counter_ns()
        for n, spawn in enumerate(spawns):
            if spawn.after_turn == index and n not in tasks:
                tasks[n] = asyncio.create_task(later(spawn, ended_ns))

    try:
        parent = await run_parent(turn_ended)
        results = [parent]
        for n, spawn in enumerate(spawns):
            results += await tasks[n] if n in tasks else not_started(spawn, parent)
        return results
    finally:  # cancelled (the duration limit) or failed: no sub-agent outlives its parent
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
