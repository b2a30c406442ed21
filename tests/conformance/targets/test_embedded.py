"""The embedded target is started with what its profile declares (limits included)."""

from __future__ import annotations

import asyncio

from harness.conformance.targets.embedded import embedded_limits, embedded_target
from harness.conformance.targets.plan import PlannedTarget, TargetSpec
from harness.conformance.targets.profile import TargetProfile
from harness.transport.failures import TargetClosed
from harness.transport.ws import WsClient


def test_a_declared_connection_limit_is_the_servers_per_key_one() -> None:
    assert embedded_limits(TargetProfile(max_connections=16)).max_connections_per_key == 16


def test_a_short_lifetime_declared_without_an_endpoint_is_the_main_servers() -> None:
    """A profile that declares `limits.lifetime_s` and no `lifetime_url` (a target whose whole
    lifetime is configured short): the lifetime cases run against the main URL, and its sockets
    get websocket_connection_limit_reached after that lifetime."""
    profile = TargetProfile(ws_url="embedded", lifetime_s=0.5, model="wsmode-reference")
    planned = PlannedTarget("short-lived", TargetSpec("embedded"), profile)
    with embedded_target(planned) as live:
        assert live.lifetime_url == live.ws_url and live.profile.missing("lifetime") is None

        async def aged() -> list[str]:
            """What an idle socket receives (its codes) until the server closes it."""
            client = await WsClient.connect(live.ws_url, timeout_s=10)
            codes: list[str] = []
            try:
                while True:
                    codes.append(str((await client.recv(10)).event.get("error", {}).get("code")))
            except TargetClosed:
                return codes
            finally:
                await client.close()

        assert "websocket_connection_limit_reached" in asyncio.run(aged())
