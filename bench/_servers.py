"""Benchmark plumbing: bare `websockets` servers in a subprocess (client and server never share a
GIL), each printing its port once it listens, so nobody probes it (a bare TCP probe makes
`websockets` log an "opening handshake failed" traceback).

The reference server in a subprocess is harness.load.embedded_server.EmbeddedServer.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

_SERVE = """
import asyncio, sys, websockets.asyncio.server as s
{handler}
async def main():
    async with s.serve(handler, '127.0.0.1', 0, compression=None) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()
asyncio.run(main())
"""

_ECHO = """
async def handler(ws):
    async for m in ws: await ws.send(m)
"""

# One response per received frame: `frames` pre-serialized events sent one `send` each, as
# `websockets` sends them: the floor of what a server pays per event it writes.
_FRAMES = """
from harness.protocol import wire
sys.path.insert(0, {bench_dir!r})
from minimal_servers import response_events
FRAMES = [wire.dumps(e) for e in response_events({deltas})]
async def handler(ws):
    async for _ in ws:
        for frame in FRAMES: await ws.send(frame)
"""


@contextlib.contextmanager
def _server(handler: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    code = _SERVE.format(handler=handler)
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"bench server did not start: {line!r}")
        yield int(line), process
    finally:
        process.terminate()
        process.wait(15)


@contextlib.contextmanager
def echo_server() -> Iterator[int]:
    """A bare `websockets` echo server: the floor a WebSocket round trip costs on this machine."""
    with _server(_ECHO) as (port, _):
        yield port


@contextlib.contextmanager
def frames_server(deltas: int) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """A bare `websockets` server answering each frame with one pre-serialized response of
    `deltas` text deltas (valid events); yields its port and process (for its CPU time)."""
    bench_dir = str(Path(__file__).parent)
    with _server(_FRAMES.format(bench_dir=bench_dir, deltas=deltas)) as served:
        yield served
