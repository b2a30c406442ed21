"""Sub-agents: a rollout whose `meta` names a parent in the run (`parent_rollout`,
`spawned_after_turn`, `start_after_turn_ms`, as the kvcache converter writes them) is no job of
its own: `families` hangs it off its parent, and `run_with_spawns` starts it while the parent
runs, `start_after_turn_ms × time_scale` after the end of the parent's turn `spawned_after_turn`
(the parent's own waits stay as recorded).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from harness.traces.format import Rollout

T = TypeVar("T")
R = TypeVar("R")


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
