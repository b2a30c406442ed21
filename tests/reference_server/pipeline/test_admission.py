"""Turn admission: a few new turns per event-loop iteration, the rest in arrival order."""

from __future__ import annotations

import asyncio
from collections import Counter

from reference_server.pipeline.admission import PER_ITERATION, TurnAdmission


def test_a_turn_alone_starts_without_waiting() -> None:
    async def main() -> None:
        gate = TurnAdmission()
        task = asyncio.ensure_future(gate.admit())
        await asyncio.sleep(0)  # one step: admit() returned without suspending
        assert task.done()

    asyncio.run(main())


def test_a_burst_starts_a_few_per_iteration_in_arrival_order() -> None:
    turns = 3 * PER_ITERATION + 1

    async def main() -> tuple[list[tuple[int, int]], int]:
        gate = TurnAdmission()
        started: list[tuple[int, int]] = []  # (turn, iteration it started in)
        iteration = 0

        async def turn(index: int) -> None:
            await gate.admit()
            started.append((index, iteration))

        tasks = [asyncio.create_task(turn(i)) for i in range(turns)]
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0)  # one loop iteration
            iteration += 1
        return started, gate.waiting

    started, waiting = asyncio.run(main())
    assert [index for index, _ in started] == list(range(turns))
    per_iteration = Counter(at for _, at in started)
    assert max(per_iteration.values()) == PER_ITERATION
    assert len(per_iteration) == 4  # 8 + 8 + 8 + 1
    assert waiting == 0


def test_a_turn_cancelled_while_waiting_is_skipped() -> None:
    async def main() -> list[int]:
        gate = TurnAdmission()
        started: list[int] = []

        async def turn(index: int) -> None:
            await gate.admit()
            started.append(index)

        tasks = [asyncio.create_task(turn(i)) for i in range(PER_ITERATION + 2)]
        await asyncio.sleep(0)  # the first PER_ITERATION went in, two wait
        tasks[PER_ITERATION].cancel()  # its client went away while it waited
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.wait_for(turn(99), 5)  # the gate is open again afterwards
        return started

    expected = [*range(PER_ITERATION), PER_ITERATION + 1, 99]
    assert asyncio.run(main()) == expected


def test_a_new_event_loop_finds_the_gate_open() -> None:
    gate = TurnAdmission()

    async def burst() -> None:
        await asyncio.gather(*(gate.admit() for _ in range(PER_ITERATION + 3)))

    async def leave_it_busy() -> None:
        await gate.admit()  # the loop ends before the next iteration reopens it

    asyncio.run(burst())
    asyncio.run(leave_it_busy())
    asyncio.run(asyncio.wait_for(burst(), 5))  # bounds a hang only


def test_the_turn_admitted_last_goes_on_in_its_iteration() -> None:
    """A reply with no wait in it passes the gate twice in one iteration (start, then its
    bookkeeping after the last token) without waiting for itself; another turn would wait."""

    async def main() -> tuple[list[str], bool]:
        gate = TurnAdmission()
        steps: list[str] = []
        busy_for_itself = True

        async def reply() -> None:
            nonlocal busy_for_itself
            await gate.admit()
            busy_for_itself = gate.busy
            await gate.admit()  # its bookkeeping: the same iteration, at once
            steps.append("reply done")

        async def other() -> None:
            await gate.admit()
            steps.append("other admitted")

        fillers = [asyncio.create_task(gate.admit()) for _ in range(PER_ITERATION - 1)]
        first, second = asyncio.create_task(reply()), asyncio.create_task(other())
        await asyncio.sleep(0)  # all ran one step in this iteration: the gate is full
        steps.append(f"other waiting: {gate.waiting == 1 and not second.done()}")
        await asyncio.gather(first, second, *fillers)
        return steps, busy_for_itself

    steps, busy_for_itself = asyncio.run(main())
    assert steps == ["reply done", "other waiting: True", "other admitted"]
    assert not busy_for_itself
