"""Benchmark plumbing: run a server in a subprocess, so client and server never share a GIL."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def reference_server(*args: str) -> Iterator[int]:
    """`wsmode serve` on a free loopback port with a temp data dir; yields the port."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        command = [
            sys.executable,
            "-m",
            "harness.cli",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            data_dir,
            *args,
        ]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        try:
            _wait_healthy(port)
            yield port
        finally:
            process.terminate()
            process.wait(15)


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


def _wait_healthy(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                return
        time.sleep(0.05)
    raise RuntimeError("reference server did not become healthy")
