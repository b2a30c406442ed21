"""The server's GC policy: survivors frozen out of the collector's reach, cycles among them
taken by the sweep, CPython's settings back once the last server stops."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from reference_server.runtime.gc_policy import ServerGc

from ..conftest import run


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def cycle() -> weakref.ref[Node]:
    """A garbage cycle: freed only by a collection that reaches it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_survivors_are_frozen_and_the_last_stop_thaws_them() -> None:
    async def body() -> tuple[int, int, int]:
        first, second = ServerGc(0.01, 0), ServerGc(0.01, 0)
        first.start()
        second.start()
        at_start = gc.get_freeze_count()
        kept = [Node() for _ in range(1000)]  # new long-lived state, as a cached response
        while first.tenures < 2:
            await asyncio.sleep(0.01)
        tenured = gc.get_freeze_count()
        first.stop()
        still = gc.get_freeze_count()
        second.stop()
        del kept
        return at_start, tenured, still

    at_start, tenured, still = run(body())
    assert at_start > 0 and tenured >= at_start + 1000
    assert still >= at_start + 1000, "one server still runs: nothing thawed"
    assert gc.get_freeze_count() == 0


def test_a_frozen_garbage_cycle_waits_for_the_sweep() -> None:
    async def body(sweep_interval_s: float) -> bool:
        policy = ServerGc(0.01, sweep_interval_s)
        policy.start()
        ref = cycle()
        gc.freeze()  # as a tick would, once the cycle's objects survived
        while policy.tenures + policy.sweeps < 3:
            await asyncio.sleep(0.01)
        alive = ref() is not None
        policy.stop()
        return alive

    assert run(body(0.0)) is True, "without a sweep the frozen cycle stays"
    assert run(body(0.02)) is False, "the sweep reaches the frozen objects"


def test_switched_off_it_changes_nothing() -> None:
    async def body() -> int:
        policy = ServerGc(0, 0)
        policy.start()
        await asyncio.sleep(0.03)
        count = gc.get_freeze_count()
        policy.stop()
        return count

    assert run(body()) == 0
