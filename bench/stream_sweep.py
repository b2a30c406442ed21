"""Concurrent streams against one reference-server process: does each hold its decode rate?

    python bench/stream_sweep.py                     # 64, 256, 512 and 1,000 streams
    python bench/stream_sweep.py --streams 1000 --tokens 3000 --client-processes 2

One `wsmode serve` process (profile `spark-1000tps` with jitter and bursts off, so 1,000 tok/s is
the exact target), its clients on the same machine in `--client-processes` processes. Every
stream connects first; then all send one create asking for `--tokens` tokens of scripted
filler at once. A stream's achieved rate is measured at its client from the first to the last
text delta, `(tokens - 1) / elapsed` (as `reference_server_bench.py` measures one stream), and
divided by the configured 1,000 tok/s. Clients read each frame's type from its first bytes and
parse nothing else, so that they cost the machine as little as possible.

Printed per row: streams, the min and median ratio over the streams (target: min >= 0.95),
the streams that failed and those that got every token in one delta (the server reached them
only when all their tokens were due: no rate to measure; the ratios are over the others),
the server's CPU over the streaming window (user + system seconds / wall seconds, from /proc:
1.00 is one core kept busy), the clients' CPU likewise, and the load average before the row.
On a machine shared with other work the ratios measure the machine as well as the server:
compare rows of one run, and read the server CPU: a server near 1.00 is the ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from websockets.asyncio.client import connect

from harness.load.bench.embedded_server import EmbeddedServer
from harness.protocol import wire

sys.path.insert(0, str(Path(__file__).parent))
from _servers import process_cpu_s
from reference_server_bench import steady_profile

CONFIGURED_TOKENS_PER_S = 1000.0
_DELTA_PREFIX = b'{"type":"response.output_text.delta"'
_END_PREFIXES = (
    b'{"type":"response.completed"',
    b'{"type":"response.incomplete"',
    b'{"type":"response.failed"',
    b'{"type":"error"',
)
TIMEOUT_S = 120.0


async def _one_stream(url: str, tokens: int, start: asyncio.Event) -> float:
    """This stream's achieved / configured rate; 0.0 when it did not complete, -1.0 when every
    token came in one delta (the server reached this stream only once all its tokens were
    due: no rate to measure, counted apart)."""
    frame = wire.dumps(
        {
            "type": "response.create",
            "model": "m",
            "input": "go",
            "store": False,
            "wsmode": {"script": [{"type": "message", "tokens": tokens}]},
        }
    )
    async with connect(url, compression=None, max_size=None, open_timeout=TIMEOUT_S) as ws:
        await start.wait()
        await ws.send(frame)
        first_ns = last_ns = 0
        while True:
            message = await asyncio.wait_for(ws.recv(decode=False), TIMEOUT_S)
            if message.startswith(_DELTA_PREFIX):
                last_ns = time.perf_counter_ns()
                first_ns = first_ns or last_ns
            elif message.startswith(_END_PREFIXES):
                if not message.startswith(b'{"type":"response.completed"') or not last_ns:
                    return 0.0
                if last_ns == first_ns:
                    return -1.0
                break
    return (tokens - 1) / ((last_ns - first_ns) / 1e9) / CONFIGURED_TOKENS_PER_S


async def _streams(url: str, count: int, tokens: int, start_at: float) -> list[float]:
    start = asyncio.Event()
    tasks = [asyncio.create_task(_one_stream(url, tokens, start)) for _ in range(count)]
    # every process opens its connections, then all send together at `start_at` (wall clock)
    await asyncio.sleep(max(0.0, start_at - time.time()))
    start.set()
    return list(await asyncio.gather(*tasks))


def client_process(url: str, count: int, tokens: int, start_at: float) -> tuple[list[float], float]:
    """One client process's streams: their ratios, and its CPU seconds while it ran them."""
    cpu_before = time.process_time()
    ratios = asyncio.run(_streams(url, count, tokens, start_at))
    return ratios, time.process_time() - cpu_before


def sweep_row(
    url: str, server_pid: int, streams: int, tokens: int, processes: int, connect_s: float
) -> dict[str, float]:
    """One row: `streams` streams over `processes` client processes, started together."""
    shares = [streams // processes + (i < streams % processes) for i in range(processes)]
    load = os.getloadavg()[0]
    start_at = time.time() + connect_s  # time for every connection to open before the go
    with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
        futures = [
            pool.submit(client_process, url, share, tokens, start_at) for share in shares if share
        ]
        time.sleep(max(0.0, start_at - time.time()))
        server_cpu_before, wall_before = process_cpu_s(server_pid), time.monotonic()
        results = [future.result() for future in futures]
        server_cpu = process_cpu_s(server_pid) - server_cpu_before
        wall = time.monotonic() - wall_before
    every = [ratio for part, _ in results for ratio in part]
    ratios = [ratio for ratio in every if ratio > 0] or [0.0]
    return {
        "streams": streams,
        "min": min(ratios),
        "median": statistics.median(ratios),
        "failed": sum(1 for r in every if r == 0.0),
        "one_delta": sum(1 for r in every if r < 0),
        "server_cpu": server_cpu / wall,
        "client_cpu": sum(cpu for _, cpu in results) / wall,
        "load": load,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[64, 256, 512, 1000])
    parser.add_argument("--tokens", type=int, default=3000, help="per stream (3 s at 1,000/s)")
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--connect-s", type=float, default=8.0, help="time to open connections")
    args = parser.parse_args()
    print(
        f"Streams at {CONFIGURED_TOKENS_PER_S:.0f} tok/s against one server process (jitter off), "
        f"{args.tokens} tokens each, {args.client_processes} client processes, "
        f"{os.cpu_count()} cores; ratio = achieved / configured per stream (target min >= 0.95)"
    )
    print(
        "   streams   min ratio  median ratio  failed  one delta  server CPU  clients CPU  load avg"
    )
    with tempfile.TemporaryDirectory() as tmp:
        profile = steady_profile("spark-1000tps", Path(tmp))
        extra = ("--max-connections", "4096", "--max-connections-per-key", "4096")
        with EmbeddedServer(profile=profile, extra_args=extra) as server:
            assert server.process is not None
            for streams in args.streams:
                row = sweep_row(
                    server.ws_url,
                    server.process.pid,
                    streams,
                    args.tokens,
                    args.client_processes,
                    args.connect_s,
                )
                print(
                    f"   {row['streams']:7.0f}   {row['min']:9.3f}  {row['median']:12.3f}  "
                    f"{row['failed']:6.0f}  {row['one_delta']:9.0f}  {row['server_cpu']:10.2f}  "
                    f"{row['client_cpu']:11.2f}"
                    f"  {row['load']:8.1f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
