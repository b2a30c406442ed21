"""`wsmode serve --workers N`: one port, one store, every worker stopped by one SIGTERM."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from harness.load.embedded_server import EmbeddedServer
from harness.transport.exchange import ws_exchange
from harness.transport.ws import WsClient
from reference_server.front.workers import HAS_REUSE_PORT

pytestmark = pytest.mark.skipif(not HAS_REUSE_PORT, reason="needs SO_REUSEPORT")

SCRIPT = {"script": [{"type": "message", "text": "ok"}]}


def _alive(pid: int) -> bool:
    """Running (a zombie, exited but not yet reaped by its new parent, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


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
        # a worker that dies: the parent notices, stops the other and exits 1
        assert srv.process is not None
        pids = _worker_pids(srv.process.pid)
        os.kill(pids[0], signal.SIGKILL)
        assert srv.process.wait(30) == 1
        _wait_until_gone(pids)


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


async def _open_until_refused(ws_url: str, api_key: str, attempts: int) -> tuple[int, list[str]]:
    """Open up to `attempts` connections with one key and keep them; (opened, refusals)."""
    opened: list[ClientConnection] = []
    refusals: list[str] = []
    try:
        for _ in range(attempts):
            try:
                opened.append(await connect(ws_url, additional_headers=_bearer(api_key)))
            except InvalidStatus as refused:
                refusals.append(str(refused.response.status_code))
        # the other key is not held back by the first one's cap
        other = await connect(ws_url, additional_headers=_bearer("sk-b"))
        await other.close()
        return len(opened), refusals
    finally:
        await asyncio.gather(*(ws.close() for ws in opened))


def _bearer(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"}


def test_the_caps_hold_across_two_workers_and_the_workers_die_with_their_parent(
    tmp_path: Path,
) -> None:
    args = ("--workers", "2", "--max-connections-per-key", "6")
    server = EmbeddedServer(
        profile="zero", data_dir=tmp_path, api_keys=("sk-a", "sk-b"), extra_args=args
    )
    server.start()
    try:
        assert server.process is not None
        opened, refusals = asyncio.run(_open_until_refused(server.ws_url, "sk-a", 10))
        # the kernel spread the 10 over both workers; the per-key cap of 6 held in total
        assert (opened, refusals) == (6, ["429"] * 4)
        # the places are given back when the connections close
        assert asyncio.run(_open_until_refused(server.ws_url, "sk-a", 6)) == (6, [])
        pids = _worker_pids(server.process.pid)
        assert len(pids) == 2
        server.process.send_signal(signal.SIGKILL)  # no handler runs: only the lifeline tells
        server.process.wait(30)
        _wait_until_gone(pids)
        port = int(server.http_url.rsplit(":", 1)[1].split("/")[0])
        with pytest.raises(ConnectionRefusedError):  # no orphan keeps serving the port
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
    finally:
        server.stop()


def _wait_until_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 30  # bounds a hang only
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)
