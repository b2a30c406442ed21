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
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

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
