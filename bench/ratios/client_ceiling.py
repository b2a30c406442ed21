"""The client's ceiling: how many events per second can the wsmode WebSocket client consume?

A raw-socket server in its own process (`minimal_servers.py ws-blast`) answers each
`response.create` with one pre-encoded response of N output-text deltas written as one buffer,
so the client is the bottleneck. Four clients read the same responses, side by side:

- `bare`:          websockets' own `recv()` in a loop (no parsing): the floor of the stack;
- `bare+json`:     the same plus `json.loads` per frame;
- `bare+json+keep`: the same, keeping every parsed event in a list (as any client that returns
                   the events must): what holding them costs in CPython's cyclic GC;
- `wsmode`:        `ws_exchange` over `WsClient`: per-frame timestamp, JSON, and the protocol
                   checker / reassembler (`StreamAccumulator`) that the load driver runs;
                   under CPython's default GC settings;
- `wsmode+gc`:     the same under the load driver's GC policy (`harness/load/core/gc_policy.py`), as
                   `wsmode bench` and the locust users run it: the client as shipped.

Two shapes: one response of `--events` deltas (every event of the run held at once: the GC's
worst case), and `--responses` responses of `--small-events` deltas on one connection (each
exchange dropped before the next, as in the load driver).

Printed: events/s (median of the repeats), the ratio to `bare`, client CPU per 1000 events
(process time / events) and the part of it spent in the cyclic GC.
Run: `python bench/ratios/client_ceiling.py [--events N] [--responses R --small-events M]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from websockets.asyncio.client import connect

from harness.load.core.gc_policy import load_gc
from harness.transport.exchange import ws_exchange
from harness.transport.ws import WsClient

HERE = Path(__file__).resolve().parent
CREATE = json.dumps({"type": "response.create", "model": "bench", "input": "go"})


async def bare(url: str, parse: bool, keep: bool = False, responses: int = 1) -> int:
    async with connect(url, compression=None, max_size=None, ping_interval=None) as ws:
        count = 0
        kept: list[object] = []
        for _ in range(responses):
            await ws.send(CREATE)
            kept = []
            while True:
                raw = await ws.recv()
                count += 1
                if parse:
                    event = json.loads(raw)
                    if keep:
                        kept.append(event)
                    if event["type"] == "response.completed":
                        break
                elif b'"response.completed"' in (
                    raw if isinstance(raw, bytes) else raw.encode()[:64]
                ):
                    break
        return count


async def wsmode(url: str, responses: int = 1) -> int:
    client = await WsClient.connect(url, timeout_s=10)
    count = 0
    try:
        for _ in range(responses):
            exchange = await ws_exchange(client, {"model": "bench", "input": "go"}, timeout_s=120)
            assert exchange.ok, (exchange.transport_error, exchange.request_error)
            assert exchange.response is not None and not exchange.response.violations
            count += len(exchange.events)
        return count
    finally:
        await client.close()


class GcTimer:
    """Time spent in the cyclic GC, from its callbacks."""

    def __init__(self) -> None:
        self.total_s = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total_s += time.perf_counter() - self._start


def measure(
    run: Callable[[], Awaitable[int]],
    repeats: int,
    policy: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
) -> tuple[float, float, float, int]:
    """(events/s, CPU ms per 1000 events, GC ms per 1000 events, events per run); medians."""
    rates, cpus, gcs = [], [], []
    events = 0
    for _ in range(repeats):
        gc.collect()
        timer = GcTimer()
        gc.callbacks.append(timer)
        try:
            with policy():
                cpu0, t0 = time.process_time(), time.perf_counter()
                events = asyncio.run(run())
                wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        finally:
            gc.callbacks.remove(timer)
        rates.append(events / wall)
        cpus.append(cpu * 1000 / events * 1000)
        gcs.append(timer.total_s * 1000 / events * 1000)
    return statistics.median(rates), statistics.median(cpus), statistics.median(gcs), events


def blast_server(events: int) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, str(HERE / "minimal_servers.py"), "ws-blast", "--events", str(events)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    port = int(server.stdout.readline().split()[1])
    return server, f"ws://127.0.0.1:{port}/v1/responses"


def table(
    url: str, responses: int, repeats: int
) -> list[tuple[str, tuple[float, float, float, int]]]:
    asyncio.run(bare(url, False, responses=responses))  # warm up
    return [
        ("bare", measure(lambda: bare(url, False, responses=responses), repeats)),
        ("bare+json", measure(lambda: bare(url, True, responses=responses), repeats)),
        ("bare+json+keep", measure(lambda: bare(url, True, True, responses), repeats)),
        ("wsmode", measure(lambda: wsmode(url, responses), repeats)),
        ("wsmode+gc", measure(lambda: wsmode(url, responses), repeats, load_gc)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="deltas of the one response")
    parser.add_argument("--responses", type=int, default=200, help="responses of the second shape")
    parser.add_argument(
        "--small-events", type=int, default=1_000, help="deltas per response, second shape"
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    shapes = [
        (f"one response of {args.events} deltas", args.events, 1),
        (
            f"{args.responses} responses of {args.small_events} deltas",
            args.small_events,
            args.responses,
        ),
    ]
    for title, events, responses in shapes:
        server, url = blast_server(events)
        try:
            rows = table(url, responses, args.repeats)
        finally:
            server.kill()
            server.wait()
        base = rows[0][1][0]
        print(f"client ceiling: {title}, median of {args.repeats}")
        print(
            f"{'client':<16}{'events/s':>12}{'vs bare':>10}{'CPU ms/1000 ev':>16}{'of it GC':>10}"
        )
        for name, (rate, cpu, gc_ms, _) in rows:
            print(f"{name:<16}{rate:>12,.0f}{rate / base:>10.2f}{cpu:>16.2f}{gc_ms:>10.2f}")
        print()


if __name__ == "__main__":
    main()
