"""The client's ceiling: how many events per second can the wsmode WebSocket client consume?

A raw-socket server in its own process (`minimal_servers.py ws-blast`) answers each
`response.create` with one pre-encoded response of N output-text deltas written as one buffer,
so the client is the bottleneck. Three clients read the same responses, side by side:

- `bare`:          websockets' own `recv()` in a loop (no parsing): the floor of the stack;
- `bare+json`:     the same plus `json.loads` per frame;
- `wsmode`:        `ws_exchange` over `WsClient`: per-frame timestamp, JSON, and the protocol
                   checker / reassembler (`StreamAccumulator`) that the load driver runs.

Printed: events/s (median of the repeats), the ratio to `bare`, and client CPU per 1000 events
(process time of this process / events). Run: `python bench/client_ceiling.py [--events N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from websockets.asyncio.client import connect

from harness.transport.exchange import ws_exchange
from harness.transport.ws import WsClient

HERE = Path(__file__).resolve().parent
CREATE = json.dumps({"type": "response.create", "model": "bench", "input": "go"})


async def bare(url: str, parse: bool) -> int:
    async with connect(url, compression=None, max_size=None, ping_interval=None) as ws:
        await ws.send(CREATE)
        count = 0
        while True:
            raw = await ws.recv()
            count += 1
            if parse:
                event = json.loads(raw)
                if event["type"] == "response.completed":
                    return count
            elif b'"response.completed"' in (raw if isinstance(raw, bytes) else raw.encode()[:64]):
                return count


async def wsmode(url: str) -> int:
    client = await WsClient.connect(url, timeout_s=10)
    try:
        exchange = await ws_exchange(client, {"model": "bench", "input": "go"}, timeout_s=120)
        assert exchange.ok, (exchange.transport_error, exchange.request_error)
        assert exchange.response is not None and not exchange.response.violations
        return len(exchange.events)
    finally:
        await client.close()


def measure(run: Callable[[], Awaitable[int]], repeats: int) -> tuple[float, float, int]:
    """(events/s median, CPU ms per 1000 events median, events per run)."""
    rates, cpus = [], []
    events = 0
    for _ in range(repeats):
        cpu0, t0 = time.process_time(), time.perf_counter()
        events = asyncio.run(run())
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        rates.append(events / wall)
        cpus.append(cpu * 1000 / events * 1000)
    return statistics.median(rates), statistics.median(cpus), events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="deltas per response")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    server = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "minimal_servers.py"),
            "ws-blast",
            "--events",
            str(args.events),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split()[1])
        url = f"ws://127.0.0.1:{port}/v1/responses"
        asyncio.run(bare(url, False))  # warm up
        rows = [
            ("bare", measure(lambda: bare(url, False), args.repeats)),
            ("bare+json", measure(lambda: bare(url, True), args.repeats)),
            ("wsmode", measure(lambda: wsmode(url), args.repeats)),
        ]
    finally:
        server.kill()
        server.wait()
    base = rows[0][1][0]
    print(f"client ceiling: one response of {args.events} deltas, median of {args.repeats}")
    print(f"{'client':<12}{'events/s':>12}{'vs bare':>10}{'CPU ms / 1000 events':>24}")
    for name, (rate, cpu, _) in rows:
        print(f"{name:<12}{rate:>12,.0f}{rate / base:>10.2f}{cpu:>24.2f}")


if __name__ == "__main__":
    main()
