"""Benchmark plumbing: a bare echo server in a subprocess, so client and server never share a GIL.

The reference server in a subprocess is harness.load.embedded_server.EmbeddedServer.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator


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
