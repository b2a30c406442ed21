"""The bench's jobs on the load engine: a rollout in a variant (`Replay`), with its sub-agents
beside it, replayed by the engine's rollout driver and scheduled by its scheduler (the load
pattern, a sweep of closed loops, or one variant after another with --engine-metrics), each
finished, cut at the duration limit, or not started because its parent failed; the live line of
turns done.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TextIO

from harness.load.bench.bench_config import BenchConfig
from harness.load.bench.bench_result import CUT_ERROR, BenchRun
from harness.load.bench.engine_cache import counter_delta, read_counters
from harness.load.bench.variants import Variant
from harness.load.core.measurements import RolloutResult, TurnResult
from harness.load.core.rollout_driver import replay_rollout
from harness.load.core.schedule import LoadPattern, interleaved, sweep
from harness.load.core.session import HttpClientPool
from harness.load.core.subagents import Spawn, families, family_members, run_with_spawns
from harness.load.core.target_watch import TargetWatch
from harness.load.live_metrics import LiveMetrics
from harness.progress import Progress
from harness.traces.format import Rollout


@dataclass(slots=True)
class Replay:
    """One job of a schedule: a rollout in a variant. `turns` collects its turns as they end, so
    a replay cut at the duration limit keeps the turns it finished. `spawns` are the rollout's
    sub-agents (same variant), started while it runs (subagents.run_with_spawns)."""

    rollout: Rollout
    variant: Variant
    turns: list[TurnResult] = field(default_factory=list)
    spawns: tuple[Spawn[Replay], ...] = ()
    finished: RolloutResult | None = None

    def family(self) -> list[Replay]:
        """This replay, then its sub-agents', depth first."""
        out = [self]
        for spawn in self.spawns:
            out += spawn.job.family()
        return out


def make_replay(
    rollout: Rollout, variant: Variant, spawns: Mapping[str, Sequence[Spawn[Rollout]]]
) -> Replay:
    """A job for `rollout` in `variant`, its sub-agents (in the same variant) hung off it."""
    children = tuple(
        Spawn(make_replay(s.job, variant, spawns), s.after_turn, s.offset_ms)
        for s in spawns.get(rollout.id, ())
    )
    return Replay(rollout, variant, spawns=children)


async def run_variants(
    run: BenchRun,
    *,
    progress: TextIO | None = None,
    http_pool: HttpClientPool | None = None,
    watches: dict[str, TargetWatch] | None = None,
    live: LiveMetrics | None = None,
) -> list[RolloutResult]:
    """Replay every (rollout, variant) pair with the configured schedule (each turn into
    `live` too, with --metrics-port).

    HTTP clients come from `http_pool`, filled here with one client per concurrent rollout and
    HTTP variant before the first replay starts (building one stalls the event loop ~22 ms).
    """
    config = run.config
    # a sub-agent runs beside its parent (a job of its own only if its parent is not in the run)
    roots, spawns = families(run.rollouts)
    pairs = interleaved(roots, run.variants, repeats=config.repeats)
    widest = max(len(family_members(r, spawns)) for r in roots) if roots else 1
    own_pool = http_pool is None
    pool = http_pool if http_pool is not None else HttpClientPool()
    levels = config.sweep_levels if config.schedule == "sweep" else ()
    slots = max((config.concurrency, *levels))
    for variant in run.variants:
        if variant.mode != "ws":
            pool.prefill(
                variant.endpoint.for_mode(variant.mode),
                variant.endpoint.api_key,
                variant.options.read_timeout_s,
                min(slots * widest, len(run.rollouts) * config.repeats),
            )
    # one watch per target URL (shared with the warm-up): a dead target stops its rollouts
    replayer = FamilyReplayer(pool, watches if watches is not None else {}, live)
    try:
        per_job = await _schedule_jobs(run, pairs, spawns, replayer, progress)
        return [result for results in per_job for result in results]
    finally:
        if own_pool:
            await pool.aclose()


def _no_turn_hook(turn_index: int) -> None:
    """A replay without sub-agents: nothing waits for its turns to end."""


class FamilyReplayer:
    """The runner every schedule calls: replays a job, and its sub-agents beside it (each
    started at its recorded offset after the parent's turn that spawns it). HTTP clients come
    from one pool; rollouts against one target URL share a `TargetWatch`."""

    def __init__(
        self,
        pool: HttpClientPool,
        watches: dict[str, TargetWatch],
        live: LiveMetrics | None = None,
    ) -> None:
        self.pool = pool
        self.watches = watches
        self.live = live  # --metrics-port (harness.load.live_metrics)
        self.turn_seen: Callable[[TurnResult], None] | None = None  # live progress

    async def __call__(self, job: Replay, intended_ns: int | None) -> list[RolloutResult]:
        """The job's result, then its sub-agents' (depth first)."""
        if not job.spawns:
            return [await self.replay(job, intended_ns, _no_turn_hook)]
        return await run_with_spawns(
            functools.partial(self.replay, job, intended_ns),
            job.spawns,
            functools.partial(self.start_spawn, job),
            time_scale=job.variant.options.time_scale,
            not_started=not_spawned,
        )

    async def start_spawn(
        self, parent: Replay, spawn: Spawn[Replay], ended_ns: int, at_ns: int
    ) -> list[RolloutResult]:
        """A sub-agent of `parent` (with its own), intended to start at `at_ns`; its result
        names the parent and the delay since the parent's turn ended (`ended_ns`)."""
        delay_ms = (time.perf_counter_ns() - ended_ns) / 1e6
        results = await self(spawn.job, at_ns)
        results[0].parent_rollout = parent.rollout.id
        results[0].spawn_delay_ms = delay_ms
        return results

    async def replay(
        self, job: Replay, intended_ns: int | None, turn_ended: Callable[[int], None]
    ) -> RolloutResult:
        """One rollout of `job`; `turn_ended(i)` as each of its turns ends well."""
        variant = job.variant
        url = variant.endpoint.for_mode(variant.mode)

        live = self.live

        def on_turn(turn: TurnResult) -> None:
            job.turns.append(turn)
            if self.turn_seen is not None:
                self.turn_seen(turn)
            if live is not None:
                live.turn_ended(turn)
            if turn.ok:
                turn_ended(turn.turn_index)

        if live is not None:
            live.started(variant.name)
        try:
            job.finished = await replay_rollout(
                job.rollout,
                variant.endpoint,
                variant.options,
                name=variant.name,
                intended_start_ns=intended_ns,
                http_pool=self.pool,
                on_turn=on_turn,
                watch=self.watches.setdefault(url, TargetWatch()),
            )
        finally:
            if live is not None:
                live.finished(variant.name)
        return job.finished


def not_spawned(spawn: Spawn[Replay], parent: RolloutResult) -> list[RolloutResult]:
    """A sub-agent whose parent never ended the turn that spawns it: left out when the parent
    stopped early by design (`max_turns`), a failed rollout when the parent failed."""
    if parent.ok:
        return []
    error = f"not run: parent {parent.rollout_id} failed before turn {spawn.after_turn} ended"
    results = []
    for job in spawn.job.family():
        name = job.variant.name
        result = RolloutResult(job.rollout.id, name, job.variant.mode, ok=False, error=error)
        result.turns.append(TurnResult(job.rollout.id, name, 0, False, error))
        result.time_scale = job.variant.options.time_scale
        results.append(result)
    results[0].parent_rollout = parent.rollout_id
    return results


JobResults = list[RolloutResult]  # a job's results: its rollout's, then its sub-agents'


async def _schedule_jobs(
    run: BenchRun,
    pairs: list[tuple[Rollout, Variant]],
    spawns: Mapping[str, Sequence[Spawn[Rollout]]],
    runner: FamilyReplayer,
    progress: TextIO | None,
) -> list[JobResults]:
    """Each job is a rollout with its sub-agents; its results: the rollout's, then theirs. The
    jobs go through the engine's scheduler: the load pattern, a sweep of closed loops, or (with
    --engine-metrics) one variant after another, the engine's counters read around each."""
    config = run.config
    # pairs are interleaved (every variant per rollout), so a prefix of N x variants pairs
    # replays the first N rollouts in every variant
    variant_count = len({v.name for _, v in pairs})
    max_jobs = config.max_rollouts * variant_count if config.max_rollouts is not None else None
    live = _LiveProgress(progress, config, runner)

    def cut(job: Replay) -> JobResults:
        return [m.finished or cut_result(m, config.duration_s) for m in job.family()]

    pattern = LoadPattern(
        concurrency=config.concurrency,
        rate_per_s=config.rate_per_s if config.schedule == "open" else None,
        seed=config.seed,
        duration_s=config.duration_s,
        max_jobs=max_jobs,
    )
    try:
        if config.schedule == "sweep":

            def level_jobs(level: int) -> list[Replay]:
                live.close()  # the last level's line, before this level's warning
                jobs = [
                    make_replay(r, replace(v, name=f"{v.name}-c{level}"), spawns) for r, v in pairs
                ]
                shortfall = sweep_shortfall(level, len(jobs[:max_jobs]))
                if shortfall is not None:
                    run.warnings.append(shortfall)
                    if progress is not None:
                        progress.write(f"warning: {shortfall}\n")
                live.start(jobs[:max_jobs], f"bench, concurrency {level}")
                return jobs

            by_level = await sweep(
                config.sweep_levels,
                level_jobs,
                runner,
                duration_s=config.duration_s,
                max_jobs=max_jobs,
                on_done=live.job_done,
                cut=cut,
            )
            return [results for level in by_level.values() for results in level]
        if config.engine_metrics_url is not None:  # one variant after another, counters around each
            results: list[JobResults] = []
            one_variant = replace(pattern, max_jobs=config.max_rollouts)
            for variant in dict.fromkeys(v for _, v in pairs):
                jobs = [make_replay(r, v, spawns) for r, v in pairs if v is variant]
                before = await read_counters(config.engine_metrics_url)
                live.start(jobs[: one_variant.max_jobs], f"bench, {variant.name}")
                results += await one_variant.run(jobs, runner, on_done=live.job_done, cut=cut)
                live.close()
                after = await read_counters(config.engine_metrics_url)
                run.engine_cache[variant.name] = counter_delta(before, after)
            return results
        jobs = [make_replay(r, v, spawns) for r, v in pairs]
        live.start(jobs[:max_jobs], "bench")
        return await pattern.run(jobs, runner, on_done=live.job_done, cut=cut)
    finally:
        live.close()


class _LiveProgress:
    """The live line of the stage that runs: the whole run, a sweep level, or one variant (with
    --engine-metrics); none without a progress stream."""

    def __init__(self, stream: TextIO | None, config: BenchConfig, runner: FamilyReplayer):
        self.stream, self.config, self.runner = stream, config, runner
        self.current: _TurnProgress | None = None

    def start(self, jobs: Sequence[Replay], label: str) -> None:
        self.close()
        if self.stream is not None:
            self.current = _TurnProgress(jobs, self.stream, label, self.config)
            self.runner.turn_seen = self.current.turn_seen

    def job_done(self, results: JobResults) -> None:
        if self.current is not None:
            self.current.job_done(results)

    def close(self) -> None:
        if self.current is not None:
            self.runner.turn_seen = None
            self.current.show.close()
            self.current = None


class _TurnProgress:
    """Turns done of all turns to replay, failed rollouts, the ETA: one live line
    (harness.progress). A rollout that ends early (failed, cut) counts its turns not run as
    done, so the count reaches the total when the last replay ends."""

    def __init__(
        self, jobs: Sequence[Replay], stream: TextIO, label: str, config: BenchConfig
    ) -> None:
        self.members = {id(m): m for job in jobs for m in job.family()}
        self.max_turns = config.max_turns
        total = sum(self.planned(m) for m in self.members.values())
        self.show = Progress(
            label, total=total, unit="turns", duration_s=config.duration_s, stream=stream
        )
        self.turns = self.skipped = self.rollouts = self.failed = 0

    def planned(self, replay: Replay) -> int:
        turns = len(replay.rollout.turns)
        return min(turns, self.max_turns) if self.max_turns else turns

    def detail(self) -> str:
        return f"{self.rollouts:,}/{len(self.members):,} rollouts"

    def turn_seen(self, turn: TurnResult) -> None:
        self.turns += 1
        self.show.update(self.turns + self.skipped, detail=self.detail())

    def job_done(self, results: JobResults) -> None:
        by_result = {id(m.finished): m for m in self.members.values() if m.finished}
        for result in results:
            self.rollouts += 1
            self.failed += 0 if result.ok else 1
            replay = by_result.get(id(result))
            if replay is not None:
                self.skipped += max(0, self.planned(replay) - len(result.turns))
        self.show.update(self.turns + self.skipped, failed=self.failed, detail=self.detail())


def sweep_shortfall(level: int, jobs: int) -> str | None:
    """Why a sweep level cannot reach its concurrency (too few replays), or None."""
    if jobs >= level:
        return None
    return (
        f"sweep level {level}: only {jobs} replays to run, so at most {jobs} were in flight, "
        f"not {level} (replay more rollouts: --max-rollouts, --per-kind, --repeats)"
    )


def cut_result(job: Replay, limit_s: float | None) -> RolloutResult:
    """A replay cancelled at the duration limit: a failed rollout, so it is counted and kept out
    of the rollout latencies. The turns it finished stay (measured like any failed rollout's ok
    turns); the turn it was in becomes a failed turn carrying the error (turn error rates count
    it)."""
    error = f"{CUT_ERROR} ({limit_s:g} s)" if limit_s is not None else CUT_ERROR
    rollout, name = job.rollout, job.variant.name
    index = job.turns[-1].turn_index + 1 if job.turns else 0
    return RolloutResult(
        rollout.id,
        name,
        job.variant.mode,
        turns=[*job.turns, TurnResult(rollout.id, name, index, False, error)],
        ok=False,
        error=error,
        time_scale=job.variant.options.time_scale,
    )


async def warm_up(
    variants: Sequence[Variant],
    rollout: Rollout,
    http_pool: HttpClientPool | None = None,
    watches: dict[str, TargetWatch] | None = None,
) -> None:
    """One unrecorded turn per variant: first connections, imports and caches out of the way.
    With `watches`, a warm-up turn that times out probes its target (a dead one ends the run)."""
    for variant in variants:
        options = replace(variant.options, max_turns=1, time_scale=0.0)
        url = variant.endpoint.for_mode(variant.mode)
        watch = watches.setdefault(url, TargetWatch()) if watches is not None else None
        await replay_rollout(
            rollout, variant.endpoint, options, name=variant.name, http_pool=http_pool, watch=watch
        )
