"""The load engine's one scheduler: closed loop, open loop (Poisson arrivals) and a concurrency
sweep. Every load shape runs its jobs through it: the bench (a rollout in a variant), the
fixed-shape load (one request of a conversation).

A schedule runs jobs through an async `runner(job, intended_ns)` and returns the results in
completion order. It takes each job as it starts it, so a shape gives a list (the bench's
rollouts in every variant) or a lazy iterator that ends when the shape says so (the fixed-shape
load's budget: a request count, a deadline, a dead target; requests in flight then finish).
Bounds: the number of jobs (`max_jobs`), and `duration_s`, a hard limit: no job starts after it,
and jobs still running (or, open loop, still waiting for a slot) then are cancelled. `cut(job)`
gives the result that stands for a cancelled job (a failure, so it is counted and kept out of
the latencies); without `cut` cancelled jobs are left out of the results.

- **Closed loop**: `concurrency` workers; each starts its next job when the previous ends. The
  load adapts to the target's speed, so latency is measured from the actual start.
- **Open loop**: jobs arrive at seeded Poisson times (rate `rate_per_s`) whatever the target
  does. A job's latency is measured from its *intended* start: if the driver is saturated
  (`max_in_flight` reached) the job waits, and that wait counts (no coordinated omission).
- **Sweep**: a closed loop at each concurrency level in turn.

`LoadPattern` is a shape's pattern and bounds in one value: the closed loop, or the open loop
with a rate.

Pairing: `interleaved` lists, for each rollout, every variant, rotating the variant order from
one rollout to the next, so each variant sees the same rollouts at nearly the same time and no
variant is always first (or always last) on a warm or loaded server. A comparison's unit is
such a pair, one rollout in two modes (harness.load.core.results_document).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass
from typing import Final, TypeVar, cast

T = TypeVar("T")
R = TypeVar("R")

_END: Final = object()  # what `next` gives once the jobs are all taken


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


def poisson_arrivals(rate_per_s: float, rng: random.Random) -> Iterator[float]:
    """Arrival offsets (s) of a Poisson process, without end: exponential gaps of mean 1/rate."""
    if rate_per_s <= 0:
        raise ValueError("rate_per_s must be > 0")

    def offsets() -> Iterator[float]:
        t = 0.0
        while True:
            t += rng.expovariate(rate_per_s)
            yield t

    return offsets()


def poisson_offsets(count: int, rate_per_s: float, seed: int) -> list[float]:
    """The first `count` seeded arrival offsets (s) of a Poisson process."""
    return list(itertools.islice(poisson_arrivals(rate_per_s, random.Random(seed)), count))


def _taken(jobs: Iterable[T], max_jobs: int | None) -> Iterator[T]:
    return iter(jobs) if max_jobs is None else itertools.islice(jobs, max_jobs)


async def closed_loop(
    jobs: Iterable[T],
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
    if isinstance(jobs, Sized):  # no more workers than jobs
        known = len(jobs) if max_jobs is None else min(len(jobs), max_jobs)
        concurrency = min(concurrency, max(1, known))
    pending = _taken(jobs, max_jobs)
    deadline = time.monotonic() + duration_s if duration_s is not None else None
    results: list[R] = []
    running: dict[int, T] = {}  # worker -> its job in flight (left behind when cancelled)

    def record(result: R) -> None:
        results.append(result)
        if on_done is not None:
            on_done(result)

    async def worker(i: int) -> None:
        while deadline is None or time.monotonic() < deadline:
            taken = next(pending, _END)
            if taken is _END:
                return
            job = cast(T, taken)
            running[i] = job
            result = await runner(job, None)
            del running[i]
            record(result)

    workers = [asyncio.create_task(worker(i)) for i in range(concurrency)]
    await _wait_until(workers, deadline)
    _record_cuts(running.values(), cut, record)
    return results


async def open_loop(
    jobs: Iterable[T],
    runner: Callable[[T, int | None], Awaitable[R]],
    *,
    rate_per_s: float,
    seed: int = 0,
    rng: random.Random | None = None,
    max_in_flight: int | None = None,
    duration_s: float | None = None,
    max_jobs: int | None = None,
    on_done: Callable[[R], None] | None = None,
    cut: Callable[[T], R] | None = None,
) -> list[R]:
    """Start job i at t0 + offset_i (Poisson); latency runs from that intended start. The
    arrivals are drawn from `rng` when given (a shape that draws its prompts from the same
    source), else from one seeded with `seed`."""
    arrivals = poisson_arrivals(rate_per_s, rng if rng is not None else random.Random(seed))
    slots = asyncio.Semaphore(max_in_flight) if max_in_flight else None
    results: list[R] = []
    running: dict[int, T] = {}  # arrived and not finished: waiting for a slot or running
    tasks: set[asyncio.Task[None]] = set()  # a task that ended well leaves; a failed one stays
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

    def forget(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is None:
            tasks.discard(task)

    for seq, (job, offset) in enumerate(zip(_taken(jobs, max_jobs), arrivals, strict=False)):
        if duration_s is not None and offset > duration_s:
            break
        intended_ns = t0 + int(offset * 1e9)
        delay = (intended_ns - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        running[seq] = job
        task = asyncio.create_task(start(seq, job, intended_ns))
        tasks.add(task)
        task.add_done_callback(forget)
    await _wait_until(list(tasks), deadline)
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
    make_jobs: Callable[[int], Iterable[T]],
    runner: Callable[[T, int | None], Awaitable[R]],
    *,
    duration_s: float | None = None,
    max_jobs: int | None = None,
    on_done: Callable[[R], None] | None = None,
    cut: Callable[[T], R] | None = None,
) -> dict[int, list[R]]:
    """A closed loop at each concurrency level in turn, each bounded by `duration_s` and
    `max_jobs`; `make_jobs(level)` gives that level's jobs just before the level runs."""
    out: dict[int, list[R]] = {}
    for level in levels:
        results = await closed_loop(
            make_jobs(level),
            runner,
            concurrency=level,
            duration_s=duration_s,
            max_jobs=max_jobs,
            on_done=on_done,
            cut=cut,
        )
        out.setdefault(level, []).extend(results)
    return out


@dataclass(frozen=True, slots=True)
class LoadPattern:
    """A shape's load pattern and its bounds: without `rate_per_s` the closed loop
    (`concurrency` jobs in flight), with it the open loop (Poisson arrivals at that rate, seeded
    with `seed`, at most `concurrency` in flight)."""

    concurrency: int
    rate_per_s: float | None = None
    seed: int = 0
    duration_s: float | None = None
    max_jobs: int | None = None

    async def run(
        self,
        jobs: Iterable[T],
        runner: Callable[[T, int | None], Awaitable[R]],
        *,
        on_done: Callable[[R], None] | None = None,
        cut: Callable[[T], R] | None = None,
        rng: random.Random | None = None,
    ) -> list[R]:
        if self.rate_per_s is None:
            return await closed_loop(
                jobs,
                runner,
                concurrency=self.concurrency,
                duration_s=self.duration_s,
                max_jobs=self.max_jobs,
                on_done=on_done,
                cut=cut,
            )
        return await open_loop(
            jobs,
            runner,
            rate_per_s=self.rate_per_s,
            seed=self.seed,
            rng=rng,
            max_in_flight=self.concurrency,
            duration_s=self.duration_s,
            max_jobs=self.max_jobs,
            on_done=on_done,
            cut=cut,
        )
