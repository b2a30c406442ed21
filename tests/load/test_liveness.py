"""Dead-target detection: a timed-out turn triggers one probe; a dead target stops the run.
The probe itself is tested in tests/transport/test_liveness.py."""

from __future__ import annotations

from pathlib import Path

from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve

from harness.load.liveness import TargetWatch
from harness.load.replay import Endpoint, ReplayOptions, replay_rollout

from .replay_support import endpoint, reference_server, run, smoke_rollouts


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
        run(watch.after_timeout(target.ws_url, "ws", "m", None))
        run(watch.after_timeout(target.http_url, "http", "m", None))
    assert watch.probes == 2 and watch.dead_reason is None
