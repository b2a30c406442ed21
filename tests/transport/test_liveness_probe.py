"""The one liveness probe (certify after a stalled case, the load harness after a timed-out turn):
a live target passes over either transport, silence and swallowed errors do not, and the probe
is bounded by its budget."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.transport.liveness_probe import probe
from harness.transport.ws import WsClient
from tests.conformance.servers import SLOW_EVENT_S, running
from tests.load.replay_support import endpoint, reference_server, run


def test_a_live_target_passes_over_ws_and_http_also_the_error_check(tmp_path: Path) -> None:
    with reference_server(tmp_path / "data") as server:
        target = endpoint(server)
        assert target.ws_url is not None and target.http_url is not None
        for url, mode in ((target.ws_url, "ws"), (target.http_url, "http")):
            assert run(probe(url, model="m", mode=mode)) is None
            assert run(probe(url, model="m", mode=mode, check_errors=True)) is None


@pytest.mark.parametrize("mode", ["no-answer", "stall"])
def test_silence_is_no_terminal_event(mode: str) -> None:
    with running(mode) as server:
        reason = run(probe(server.url, model="m", event_timeout_s=0.3, budget_s=60))
    assert reason == "a plain create got no terminal event (each event awaited 0.3 s)"


def test_swallowed_errors_fail_the_error_check_only() -> None:
    with running("swallow-errors") as server:
        assert run(probe(server.url, model="m", budget_s=60)) is None
        reason = run(
            probe(server.url, model="m", event_timeout_s=0.3, budget_s=60, check_errors=True)
        )
    assert reason == "an invalid create got no error event within 0.3 s (errors swallowed)"


def test_a_slow_target_passes_each_event_within_the_event_timeout() -> None:
    """Nine events SLOW_EVENT_S apart: the whole answer takes longer than the event timeout."""
    with running("slow") as server:
        reason = run(probe(server.url, model="m", event_timeout_s=SLOW_EVENT_S * 8, budget_s=60))
    assert reason is None


def test_the_budget_bounds_the_whole_probe() -> None:
    with running("slow") as server:
        reason = run(probe(server.url, model="m", event_timeout_s=5.0, budget_s=SLOW_EVENT_S))
    assert reason == f"the probe got no answer within {SLOW_EVENT_S:g} s"


@pytest.mark.parametrize(("mode", "scheme"), [("ws", "ws"), ("http", "http")])
def test_a_closed_port_is_reported(mode: str, scheme: str) -> None:
    async def main() -> str | None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        return await probe(f"{scheme}://127.0.0.1:{port}/v1", model="m", mode=mode)

    reason = run(main())
    assert reason is not None and "failed" in reason


def test_the_probe_opens_its_socket_with_the_given_opener() -> None:
    """Certify passes an opener whose client records the frames in the case's wire log."""
    seen: list[str] = []

    class Recording(WsClient):
        def observe(self, direction: str, data: str | bytes, at_ns: int) -> None:
            seen.append(direction)

    with running("ok") as server:
        assert run(probe(server.url, model="m", open_ws=Recording.connect)) is None
    assert seen[0] == "send" and "recv" in seen
