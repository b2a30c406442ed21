"""`wsmode serve --workers N`: one port, one store, every worker stopped by one SIGTERM."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from pathlib import Path

import httpx
import pytest

from harness.load.bench.embedded_server import EmbeddedServer
from harness.transport.exchange import ws_exchange
from harness.transport.ws import WsClient
from reference_server.workers import HAS_REUSE_PORT

pytestmark = pytest.mark.skipif(not HAS_REUSE_PORT, reason="needs SO_REUSEPORT")

SCRIPT = {"script": [{"type": "message", "text": "ok"}]}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _workers_answering(http_url: str, connections: int) -> set[str]:
    """The worker labels /metrics names over fresh connections (the kernel spreads them)."""
    seen = set()
    for _ in range(connections):
        with httpx.Client() as client:  # a new connection each time
            text = client.get(f"{http_url.removesuffix('/v1')}/metrics").text
        seen |= set(re.findall(r'wsmode_worker_info\{worker="(\d+)"\}', text))
    return seen


async def _store_then_continue_elsewhere(ws_url: str, turns: int) -> list[bool]:
    """Each response is created on one connection and continued at once on another."""
    outcomes = []
    for turn in range(turns):
        first, second = await WsClient.connect(ws_url), await WsClient.connect(ws_url)
        try:
            body = {"model": "m", "input": f"turn {turn}", "store": True, "wsmode": SCRIPT}
            created = await ws_exchange(first, body, timeout_s=30)
            assert created.ok
            follow = {
                "model": "m",
                "input": "next",
                "store": True,
                "previous_response_id": created.response_id,
                "wsmode": SCRIPT,
            }
            outcomes.append((await ws_exchange(second, follow, timeout_s=30)).ok)
        finally:
            await first.close()
            await second.close()
    return outcomes


def test_two_workers_share_the_port_and_the_store(tmp_path: Path) -> None:
    # a slow store write: a commit left until after the terminal would lose the race
    profile = tmp_path / "slow-store.toml"
    profile.write_text('name = "slow-store"\ndecode_tokens_per_s = 1e9\nstore_write_ms = 200.0\n')
    args = ("--workers", "2")
    with EmbeddedServer(profile=str(profile), data_dir=tmp_path, extra_args=args) as srv:
        assert _workers_answering(srv.http_url, 40) == {"0", "1"}
        # 12 continuations from fresh connections: with two workers, many cross over, and
        # every one must hydrate from the shared store (committed before the terminal)
        assert asyncio.run(_store_then_continue_elsewhere(srv.ws_url, 12)) == [True] * 12


def test_one_sigterm_stops_every_worker(tmp_path: Path) -> None:
    server = EmbeddedServer(profile="zero", data_dir=tmp_path, extra_args=("--workers", "2"))
    server.start()
    assert server.process is not None
    line_pids = _worker_pids(server.process.pid)
    assert len(line_pids) == 2 and all(_alive(pid) for pid in line_pids)
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 0
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in line_pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in line_pids)
    assert "Traceback" not in server.log_tail()
    server.stop()


def _worker_pids(parent: int) -> list[int]:
    """The parent's worker processes (multiprocessing's spawned children, not its tracker)."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return [
        int(pid) for pid in children if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
