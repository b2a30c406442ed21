"""Dead-target detection: a timed-out turn triggers one probe; a dead target stops the run.
The probe itself is tested in tests/transport/test_liveness_probe.py."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve

from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.load.core.target_watch import TargetWatch

from ..replay_support import endpoint, reference_server, run, smoke_rollouts


async def _silent(connection: ServerConnection) -> None:
    async for _ in connection:  # accepts the upgrade, reads every create, never answers
        pass


def test_a_silent_target_is_found_dead_and_the_other_rollouts_are_not_run() -> None:
    rollouts = smoke_rollouts()[:3]

    async def main() -> list[str | None]:
        async with ws_serve(_silent, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            target = Endpoint(ws_url=f"ws://127.0.0.1:{port}/v1/responses")
            options = ReplayOptions(mode="ws", turn_timeout_s=0.3)
            watch = TargetWatch(probe_timeout_s=0.3)
            results = []
            for rollout in rollouts:
                results.append(await replay_rollout(rollout, target, options, watch=watch))
            assert watch.probes == 1  # one probe decided; the rest did not wait at all
            return [result.error for result in results]

    errors = run(main())
    assert errors[0] is not None and "no terminal event" in errors[0]
    for error in errors[1:]:
        assert error is not None and error.startswith("not run: target stopped answering")


def test_a_live_target_passes_the_probe_and_the_run_goes_on(tmp_path: Path) -> None:
    with reference_server(tmp_path / "data") as server:
        target = endpoint(server)
        assert target.ws_url is not None and target.http_url is not None
        watch = TargetWatch()
        run(watch.after_failure(target.ws_url, "ws", "m", None))
        run(watch.after_failure(target.http_url, "http", "m", None))
    assert watch.probes == 2 and watch.dead_reason is None


async def _dripping(connection: ServerConnection) -> None:
    """Answers each create with response.created, then a delta every 50 ms, never a terminal."""
    async for _ in connection:
        created = {"type": "response.created", "sequence_number": 0, "response": {"id": "r1"}}
        await connection.send(json.dumps(created))
        for seq in itertools.count(1):
            delta = {"type": "response.output_text.delta", "sequence_number": seq, "delta": "a"}
            await connection.send(json.dumps(delta))
            await asyncio.sleep(0.05)


def test_a_dripping_target_is_given_up_at_the_turn_timeout_and_found_dead() -> None:
    """A target that keeps streaming never trips the event timeout: the turn timeout ends the
    turn, the probe (its own create drips too) finds it stuck, the rest is not run."""
    rollouts = smoke_rollouts()[:2]

    async def main() -> list[str | None]:
        async with ws_serve(_dripping, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            target = Endpoint(ws_url=f"ws://127.0.0.1:{port}/v1/responses")
            options = ReplayOptions(mode="ws", turn_timeout_s=0.5, event_timeout_s=0.3)
            watch = TargetWatch(probe_timeout_s=0.3)
            results = [await replay_rollout(r, target, options, watch=watch) for r in rollouts]
            assert watch.probes == 1 and watch.dead_reason is not None
            return [result.error for result in results]

    first, second = run(main())
    assert first is not None and "no terminal event within 0.5 s" in first
    assert second is not None and second.startswith("not run: target stopped answering")


def test_a_silent_target_is_found_by_the_event_timeout_not_the_turn_timeout() -> None:
    async def main() -> str | None:
        async with ws_serve(_silent, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            target = Endpoint(ws_url=f"ws://127.0.0.1:{port}/v1/responses")
            options = ReplayOptions(mode="ws", turn_timeout_s=300.0, event_timeout_s=0.3)
            watch = TargetWatch(probe_timeout_s=0.3)
            result = await replay_rollout(smoke_rollouts()[0], target, options, watch=watch)
            return result.error

    error = run(main())
    assert error is not None and "no event within 0.3 s" in error


def test_a_turn_in_flight_is_given_up_once_a_probe_finds_the_target_dead() -> None:
    async def main() -> tuple[object, bool]:
        watch = TargetWatch()
        never = asyncio.Event()
        racing = asyncio.ensure_future(watch.race(never.wait()))
        await asyncio.sleep(0)
        watch.dead_reason = "target stopped answering: test"
        watch._dead.set()  # what a failed probe does
        return await asyncio.wait_for(racing, 10), racing.done()

    outcome, done = run(main())
    assert outcome is None and done


def test_wsmode_load_ends_early_with_one_line_against_a_dripping_target(capsys: Any) -> None:
    from harness.load.fixed.conversations import run_shard
    from harness.load.fixed.load_spec import LoadSpec

    async def main() -> Any:
        async with ws_serve(_dripping, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            target = Endpoint(ws_url=f"ws://127.0.0.1:{port}/v1/responses")
            spec = LoadSpec(mode="ws", endpoint=target, requests=40, concurrency=2, timeout_s=0.5)
            return await run_shard(spec)

    shard = run(main())
    assert shard.stopped.startswith("target stopped answering"), shard.stopped
    assert shard.ok == 0 and sum(shard.failed.values()) < 40, "the run ended early"
