"""Soak: chained store=true turns on many connections for a long time; does server RSS level off?

The reference server runs in its own process (harness.load.embedded_server). `--connections`
clients each run chains of `--chain-turns` turns (`previous_response_id`, store=true; every
`--fresh-every`-th create reconnects, so some continuations hydrate from the store), then start a
new chain. Every `--sample-s` (30 s) the server's RSS (/proc/<pid>/status VmRSS) is printed; at
the end, the least-squares slope over the samples after `--warmup-minutes` (5) in MiB/min,
the target being < 0.5. Also printed: turns done, failures, store bytes (from /metrics).

    python bench/ratios/soak.py                # 30 minutes
    python bench/ratios/soak.py --minutes 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import urllib.request
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect

from harness.load.embedded_server import EmbeddedServer

MIB = 1024 * 1024


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def slope_mib_per_min(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, bytes) in MiB per minute."""
    if len(samples) < 2:
        return float("nan")
    xs = [t / 60 for t, _ in samples]
    ys = [b / MIB for _, b in samples]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    num = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    den = sum((x - mean_x) ** 2 for x in xs)
    return num / den if den else float("nan")


class Counts:
    def __init__(self) -> None:
        self.turns = 0
        self.failures = 0


async def one_turn(ws: ClientConnection, previous: str | None, turn: int) -> str | None:
    create = {
        "type": "response.create",
        "model": "gpt-soak",
        "store": True,
        "input": [{"type": "message", "role": "user", "content": f"turn {turn}: " + "x" * 400}],
        "max_output_tokens": 64,
    }
    if previous is not None:
        create["previous_response_id"] = previous
    await ws.send(json.dumps(create))
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), 60))
        if event["type"] in ("response.completed", "response.incomplete"):  # incomplete: the cap
            return str(event["response"]["id"])
        if event["type"] in ("error", "response.failed"):
            print("failed turn:", json.dumps(event)[:300], flush=True)
            return None


async def client(url: str, args: argparse.Namespace, stop_at: float, counts: Counts) -> None:
    creates = 0
    while time.monotonic() < stop_at:
        previous: str | None = None
        ws = await connect(url, max_size=None)
        try:
            for turn in range(args.chain_turns):
                if time.monotonic() >= stop_at:
                    break
                creates += 1
                if creates % args.fresh_every == 0:  # a new socket: the next turn hydrates
                    await ws.close()
                    ws = await connect(url, max_size=None)
                answer = await one_turn(ws, previous, turn)
                counts.turns += 1
                if answer is None:
                    counts.failures += 1
                    break
                previous = answer
        finally:
            await ws.close()


def store_bytes(http_url: str) -> str:
    base = http_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("wsmode_store_bytes "):
                return line.split()[1]
    return "?"


async def soak(args: argparse.Namespace) -> int:
    with EmbeddedServer(profile=args.profile) as server:
        assert server.process is not None
        pid = server.process.pid
        start = time.monotonic()
        stop_at = start + args.minutes * 60
        counts = Counts()
        clients = [
            asyncio.create_task(client(server.ws_url, args, stop_at, counts))
            for _ in range(args.connections)
        ]
        samples: list[tuple[float, int]] = []
        while time.monotonic() < stop_at:
            elapsed = time.monotonic() - start
            rss = rss_bytes(pid)
            samples.append((elapsed, rss))
            print(
                f"t={elapsed / 60:5.1f} min  rss={rss / MIB:7.1f} MiB  turns={counts.turns}  "
                f"failures={counts.failures}  store_bytes={store_bytes(server.http_url)}",
                flush=True,
            )
            await asyncio.sleep(min(args.sample_s, max(0.0, stop_at - time.monotonic())))
        await asyncio.gather(*clients, return_exceptions=True)
        samples.append((time.monotonic() - start, rss_bytes(pid)))
    settled = [(t, b) for t, b in samples if t >= args.warmup_minutes * 60]
    print(
        f"RSS {samples[0][1] / MIB:.1f} -> {samples[-1][1] / MIB:.1f} MiB over "
        f"{args.minutes} min; slope after {args.warmup_minutes} min: "
        f"{slope_mib_per_min(settled):.3f} MiB/min (target < 0.5); "
        f"turns {counts.turns}, failures {counts.failures}"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--warmup-minutes", type=float, default=5.0)
    parser.add_argument("--sample-s", type=float, default=30.0)
    parser.add_argument("--connections", type=int, default=48)
    parser.add_argument("--chain-turns", type=int, default=50)
    parser.add_argument("--fresh-every", type=int, default=10)
    parser.add_argument("--profile", default="zero")
    return asyncio.run(soak(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
