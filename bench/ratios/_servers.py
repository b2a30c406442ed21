"""Benchmark plumbing: bare `websockets` servers in a subprocess (client and server never share a
GIL), each printing its port once it listens, so nobody probes it (a bare TCP probe makes
`websockets` log an "opening handshake failed" traceback).

The reference server in a subprocess is harness.load.embedded_server.EmbeddedServer.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
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

# Answers each received frame with the same recorded events, framed once at start-up and written
# in one `transport.write`: the cheapest a server can put those bytes on the wire (no parsing, no
# work, no serialising), so what a real server's turn adds is measured against it.
_CANNED = """
import json
from websockets.frames import Frame, Opcode
with open({path!r}, encoding="utf-8") as file:
    WRITE = b"".join(
        Frame(Opcode.TEXT, text.encode()).serialize(mask=False) for text in json.load(file)
    )
async def handler(ws):
    async for _ in ws: ws.transport.write(WRITE)
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
def canned_server(texts: list[str]) -> Iterator[int]:
    """A bare `websockets` server answering each frame with `texts` (events as recorded from
    another server) in one write; yields its port."""
    with tempfile.TemporaryDirectory(prefix="wsmode-canned-") as tmp:
        path = Path(tmp) / "events.json"
        path.write_text(json.dumps(texts), encoding="utf-8")
        with _server(_CANNED.format(path=str(path))) as (port, _):
            yield port


@contextlib.contextmanager
def frames_server(deltas: int) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """A bare `websockets` server answering each frame with one pre-serialized response of
    `deltas` text deltas (valid events); yields its port and process (for its CPU time)."""
    bench_dir = str(Path(__file__).parent)
    with _server(_FRAMES.format(bench_dir=bench_dir, deltas=deltas)) as served:
        yield served


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


@contextlib.contextmanager
def pinned(cores: set[int] | None) -> Iterator[None]:
    """This process on `cores` inside the block (processes started there inherit it); None, or
    a platform without affinity, leaves placement to the scheduler."""
    if cores is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


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
