"""Benchmark plumbing: a bare echo server in a subprocess, so client and server never share a GIL.

The reference server in a subprocess is harness.load.embedded_server.EmbeddedServer.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def echo_server() -> Iterator[int]:
    """A bare `websockets` echo server: the floor a WebSocket round trip costs on this machine."""
    port = free_port()
    code = (
        "import asyncio, websockets.asyncio.server as s\n"
        "async def echo(ws):\n    async for m in ws: await ws.send(m)\n"
        f"async def main():\n    async with s.serve(echo, '127.0.0.1', {port}, compression=None):\n"
        "        await asyncio.Future()\n"
        "asyncio.run(main())\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(15)


@contextlib.contextmanager
def sse_mock(
    tokens: int, ttft_ms: float, *, announce_early: bool = True, cpu: int | None = None
) -> Iterator[tuple[str, int]]:
    """`minimal_servers.py sse` in its own process, pinned to core `cpu` when given (so it
    stays off the client's cores); yields (base URL `http://127.0.0.1:N/v1`, its pid)."""
    command = [sys.executable, str(Path(__file__).with_name("minimal_servers.py")), "sse"]
    command += ["--tokens", str(tokens), "--ttft-ms", str(ttft_ms)]
    command += ["--announce-early"] if announce_early else []
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, preexec_fn=pin)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().split()[1])
        yield f"http://127.0.0.1:{port}/v1", process.pid
    finally:
        process.terminate()
        process.wait(15)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds `pid` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mock_stats(base_url: str, reset: bool = False) -> dict[str, float]:
    """The mock's own record of what it sent (`GET /stats`)."""
    root = base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/stats{'?reset' if reset else ''}", timeout=10) as r:
        data: dict[str, float] = json.loads(r.read())
    return data
