"""HTTP/SSE load: requests per second at 32 in flight, and the TTFT error against a known TTFT.

The wsmode HTTP client path (`SseClient` + `sse_exchange`: SSE parsing, timestamps and the
protocol accumulator) drives 32 concurrent request loops for a fixed time against:

- `minimal, 0 ms`:   a minimal SSE server (`minimal_servers.py sse`, its own process) answering
                     every request at once with one pre-encoded 128-token response: the ceiling
                     of the client + loopback;
- `reference zero`:  the reference server with profile `zero` (no simulated cost; its real
                     pipeline work per request limits it; it coalesces the 128 tokens, all due
                     at once, into a few deltas);
- `minimal, 50 ms`:  the minimal server waiting exactly 50 ms before the first byte: the client's
                     TTFT p50 minus 50 ms is the error the client adds at 32 in flight.

Printed side by side: req/s, TTFT p50/p99, and for the 50 ms server the TTFT p50 error (absolute
and relative) by requests in flight, with the client's receive stamps taken by the kernel (the
default) and by the event loop, and the floor: a bare socket reader stamped by the kernel (1 in
flight), i.e. what the server itself adds to its 50 ms.
Run: `python bench/ratios/sse_load.py [--seconds 5] [--in-flight 32] [--tokens 128]`.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

from harness.load.embedded_server import EmbeddedServer
from harness.results.stats import percentile
from harness.transport import sockets
from harness.transport.exchange import sse_exchange
from harness.transport.sockets import arrival_ns, open_socket
from harness.transport.sse import SseClient

HERE = Path(__file__).resolve().parent


async def load(base_url: str, in_flight: int, seconds: float, tokens: int) -> dict[str, float]:
    body = {
        "model": "bench",
        "input": "go",
        "store": False,
        "wsmode": {"script": [{"type": "message", "tokens": tokens}]},
    }
    clients = [SseClient(base_url, max_connections=1) for _ in range(in_flight)]
    ttfts: list[float] = []
    done = failed = events = 0
    deadline = 0.0

    async def worker(client: SseClient) -> None:
        nonlocal done, failed, events
        while time.perf_counter() < deadline:
            exchange = await sse_exchange(client, body, timeout_s=30)
            if exchange.ok and exchange.ttft_ms is not None:
                done += 1
                events += len(exchange.events)
                ttfts.append(exchange.ttft_ms)
            else:
                failed += 1

    # one request per client first: connections open, nothing measured
    await asyncio.gather(*(sse_exchange(c, body, timeout_s=30) for c in clients))
    start = time.perf_counter()
    deadline = start + seconds
    await asyncio.gather(*(worker(c) for c in clients))
    wall = time.perf_counter() - start
    for c in clients:
        await c.close()
    return {
        "req_s": done / wall,
        "events_s": events / wall,
        "events_per_response": events / done if done else 0.0,
        "done": done,
        "failed": failed,
        "ttft_p50": percentile(ttfts, 50) if ttfts else float("nan"),
        "ttft_p99": percentile(ttfts, 99) if ttfts else float("nan"),
    }


async def raw_ttft(base_url: str, requests: int = 30) -> float:
    """TTFT p50 seen by a bare socket reader (no HTTP library, no parsing): the server's floor.

    Stamped like the client: the send right before the write, the arrival by the kernel.
    """
    host_port = base_url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    loop = asyncio.get_running_loop()
    sock = await open_socket(host, int(port))
    body = b'{"model":"bench","input":"go"}'
    request = (
        b"POST /v1/responses HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (host.encode(), len(body), body)
    )
    ttfts = []
    try:
        for _ in range(requests):
            start = time.perf_counter_ns()
            await loop.sock_sendall(sock, request)
            buffer = b""
            while b"response.output_item.added" not in buffer:
                buffer += await loop.sock_recv(sock, 65536)
            ttfts.append((arrival_ns(sock, 0) - start) / 1e6)
            while not buffer.endswith(b"0\r\n\r\n"):
                buffer += await loop.sock_recv(sock, 65536)
    finally:
        sock.close()
    return percentile(ttfts, 50)


def minimal_server(tokens: int, ttft_ms: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "minimal_servers.py"),
            "sse",
            "--tokens",
            str(tokens),
            "--ttft-ms",
            str(ttft_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline().split()[1])
    return proc, f"http://127.0.0.1:{port}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    rows: list[tuple[str, dict[str, float]]] = []
    for name, ttft in (("minimal, 0 ms", 0.0), ("minimal, 50 ms", 50.0)):
        proc, url = minimal_server(args.tokens, ttft)
        try:
            rows.append((name, asyncio.run(load(url, args.in_flight, args.seconds, args.tokens))))
        finally:
            proc.kill()
            proc.wait()
    with EmbeddedServer(profile="zero") as server:
        stats = asyncio.run(load(server.http_url, args.in_flight, args.seconds, args.tokens))
        rows.insert(1, ("reference zero", stats))
    print(
        f"HTTP/SSE load: {args.in_flight} requests in flight, {args.tokens}-token responses, "
        f"{args.seconds:g} s per server, wsmode SseClient + sse_exchange"
    )
    print(
        f"{'server':<18}{'req/s':>9}{'events/resp':>13}{'events/s':>10}{'done':>7}{'failed':>8}"
        f"{'TTFT p50':>10}{'p99':>9}"
    )
    for name, s in rows:
        print(
            f"{name:<18}{s['req_s']:>9.0f}{s['events_per_response']:>13.0f}{s['events_s']:>10.0f}"
            f"{s['done']:>7.0f}{s['failed']:>8.0f}{s['ttft_p50']:>10.2f}{s['ttft_p99']:>9.2f}"
        )
    proc, url = minimal_server(args.tokens, 50.0)
    levels = [n for n in (1, 4, 8, 16) if n < args.in_flight] + [args.in_flight]
    errors: dict[str, list[float]] = {}
    try:
        floor = asyncio.run(raw_ttft(url))
        stamp_modes = ["kernel", "loop"] if sockets.SO_TIMESTAMPNS is not None else ["loop"]
        for stamps in stamp_modes:
            sockets.kernel_stamps = stamps == "kernel"
            errors[stamps] = [
                asyncio.run(load(url, n, min(args.seconds, 2.0), args.tokens))["ttft_p50"] - 50.0
                for n in levels
            ]
    finally:
        sockets.kernel_stamps = True
        proc.kill()
        proc.wait()
    for stamps, values in errors.items():
        print(
            f"TTFT p50 error vs the 50 ms server by requests in flight ({stamps} stamps): "
            + ", ".join(f"{n}: {e:+.2f} ms" for n, e in zip(levels, values, strict=True))
        )
    print(
        f"a bare socket reader (1 in flight, kernel stamps) sees {floor:.2f} ms, so the server "
        f"itself adds {floor - 50:+.2f} ms"
    )
    fixed = dict(rows)["minimal, 50 ms"]
    error = fixed["ttft_p50"] - 50.0
    print(
        f"TTFT p50 error against the 50 ms server at {args.in_flight} in flight (5 s run): "
        f"{error:+.2f} ms ({100 * error / 50:+.1f}%). The minimal servers send one delta per "
        "token; the reference server on `zero` has every token due at once and coalesces them "
        "into a few deltas, so its req/s is not limited by the client's per-event cost the same "
        "way (compare events/s)."
    )


if __name__ == "__main__":
    main()
