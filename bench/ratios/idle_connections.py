"""Scale of connections: what 1,000 idle WebSocket connections cost the reference server.

    python bench/ratios/idle_connections.py            # ~1 minute

One server process (profile zero). A helper process holds IDLE connections open (handshake
done, nothing sent) so that the measuring client stays as light as when it runs alone.
Printed:
- server RSS growth for the idle connections (target < 100 MiB for 1,000) and per connection;
- RSS per cached response: each idle connection then runs one short turn, whose response stays
  in its connection cache;
- TTFT p99 of 32 active streams (continuation turns of one "ok", back to back) with the idle
  connections open against the same 32 streams alone (target <= 1.2), in interleaved rounds
  (alone, with idle, ...), medians of the rounds' p99s.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from harness.load.embedded_server import EmbeddedServer
from harness.transport.exchange import ws_exchange
from harness.transport.ws import WsClient

IDLE = 1000
ACTIVE = 32
TURNS = 60  # per active stream per round
ROUNDS = 3
SCRIPT = {"script": [{"type": "message", "text": "ok"}]}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _hold_idle(url: str, count: int, control: Connection) -> None:
    """Open `count` connections; on "turn" run one turn on each; close all on "close"."""

    async def main() -> None:
        clients = []
        for _ in range(count):
            clients.append(await WsClient.connect(url, timeout_s=30))
        control.send("open")
        while (command := await asyncio.to_thread(control.recv)) == "turn":
            for client in clients:
                body = {"model": "m", "input": "hi", "store": False, "wsmode": SCRIPT}
                assert (await ws_exchange(client, body, timeout_s=30)).ok
            control.send("done")
        assert command == "close"
        for client in clients:
            await client.close()

    asyncio.run(main())


async def active_ttfts(url: str) -> list[float]:
    async def stream() -> list[float]:
        client = await WsClient.connect(url, timeout_s=30)
        samples, previous = [], None
        try:
            for turn in range(TURNS):
                body: dict[str, Any] = {"model": "m", "input": f"t{turn}", "store": False}
                body["wsmode"] = SCRIPT
                if previous is not None:
                    body["previous_response_id"] = previous
                exchange = await ws_exchange(client, body, timeout_s=30)
                assert exchange.ok and exchange.ttft_ms is not None
                samples.append(exchange.ttft_ms)
                previous = exchange.response_id
        finally:
            await client.close()
        return samples[5:]  # the first turns open the chain

    return [
        t for samples in await asyncio.gather(*(stream() for _ in range(ACTIVE))) for t in samples
    ]


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98]


def main() -> int:
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    limits = ("--max-connections", "4096", "--max-connections-per-key", "4096")
    alone, with_idle = [], []
    rss: dict[str, float] = {}
    with EmbeddedServer(profile="zero", extra_args=limits) as server:
        assert server.process is not None
        pid = server.process.pid
        asyncio.run(active_ttfts(server.ws_url))  # warm up: imports, caches, allocator
        for round_index in range(ROUNDS):
            alone.append(p99(asyncio.run(active_ttfts(server.ws_url))))
            rss.setdefault("before", rss_mib(pid))
            ours, theirs = context.Pipe()
            holder = context.Process(target=_hold_idle, args=(server.ws_url, IDLE, theirs))
            holder.start()
            assert ours.recv() == "open"
            time.sleep(0.5)
            rss.setdefault("idle", rss_mib(pid))
            with_idle.append(p99(asyncio.run(active_ttfts(server.ws_url))))
            if round_index == 0:
                ours.send("turn")
                assert ours.recv() == "done"
                rss["cached"] = rss_mib(pid)
            ours.send("close")
            holder.join(60)
    idle_mib = rss["idle"] - rss["before"]
    cached_kib = (rss["cached"] - rss["idle"]) * 1024 / IDLE
    print("Connection scale (profile zero, one server process; RSS from /proc)")
    print(
        f"   {IDLE} idle connections: +{idle_mib:.1f} MiB RSS "
        f"({idle_mib * 1024 / IDLE:.1f} KiB each)  (target < 100 MiB)"
    )
    print(f"   one cached response on each: +{cached_kib:.1f} KiB per cached response")
    ratio = statistics.median(with_idle) / statistics.median(alone)
    print(
        f"   {ACTIVE} active streams, TTFT p99 per round: alone "
        + " ".join(f"{v:.2f}" for v in alone)
        + " ms, with idle "
        + " ".join(f"{v:.2f}" for v in with_idle)
        + f" ms; median ratio {ratio:.2f}  (target <= 1.2)"
    )
    print(f"(ran in {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
