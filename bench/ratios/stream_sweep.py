"""Concurrent streams against one reference-server process: does each hold its decode rate?

    python bench/ratios/stream_sweep.py                     # 64, 256, 512 and 1,000 streams
    python bench/ratios/stream_sweep.py --streams 1000 --tokens 3000 --client-processes 1
    python bench/ratios/stream_sweep.py --max-deltas-per-s 0    # the server's delta bound off

One `wsmode serve` process (profile `spark-1000tps` with jitter and bursts off, so 1,000 tok/s is
the exact target), its clients on the same machine in `--client-processes` processes (the
project's own `WsClient`). Every stream connects first; then all send one create asking for
`--tokens` tokens of scripted filler at once. A stream's achieved rate is measured at its client
from the first text delta to the last: the tokens after the first delta (a late first delta
carries every token due by then) over the time between the two arrivals, divided by the
configured 1,000 tok/s. Arrivals are the kernel's receive stamps, so a client process that gets
to a frame late does not lower the figure; only a server that sent it late does (a client that
stops reading would fill its socket and slow the server: the clients' CPU column shows whether
they kept up).

Printed per row: streams, the min and median ratio over the streams (target: min >= 0.95),
the TTFT (send to first delta) median and max: a burst of creates is admitted a few per tick
of the server's loop (`pipeline/admission.py`), so the last of 1,000 waits for the 999 before it,
the streams that failed and those that got every token in one delta (the server reached them
only when all their tokens were due: no rate to measure; the ratios are over the others),
deltas per second over all streams (the server bounds them: `max_deltas_per_s` in the
profile, 5,000 by default), the server's CPU over the streaming window (user + system seconds
/ wall seconds, from /proc: 1.00 is one core kept busy), the clients' CPU likewise (from the
go, their connections' opening not counted), and the load average before the row.
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
from typing import NamedTuple

from harness.load.embedded_server import EmbeddedServer
from harness.protocol import wire
from harness.protocol.tokenizer import split
from harness.transport.ws import WsClient
from reference_server.cost_profiles import load_cost_profile

sys.path.insert(0, str(Path(__file__).parent))
from _servers import process_cpu_s
from reference_server_bench import profile_file

CONFIGURED_TOKENS_PER_S = 1000.0
_END_TYPES = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})
TIMEOUT_S = 120.0


class Stream(NamedTuple):
    ratio: float
    deltas: int
    ttft_s: float


async def _one_stream(url: str, tokens: int, start: asyncio.Event) -> Stream:
    """This stream's achieved / configured rate, its count of deltas and its TTFT (from the
    create's write to the first delta's arrival); the rate is 0.0 when
    it did not complete, -1.0 when every token came in one delta (the server reached this
    stream only once all its tokens were due: no rate to measure, counted apart).

    The rate counts the tokens after the first delta over the time from the first delta's
    arrival to the last's: a first delta that came late carries every token due by then, and
    counting those as if they took no time would credit the stream with a rate it never kept.
    Arrivals are the kernel's receive stamps (`WsClient`), so a client process that gets to a
    frame late does not move the figure; only a server that sent it late does."""
    frame = wire.dumps(
        {
            "type": "response.create",
            "model": "m",
            "input": "go",
            "store": False,
            "wsmode": {"script": [{"type": "message", "tokens": tokens}]},
        }
    )
    client = await WsClient.connect(url, timeout_s=TIMEOUT_S, max_size=None)
    try:
        await start.wait()
        await client.send_text(frame)
        deadline = asyncio.get_running_loop().time() + TIMEOUT_S
        first_ns = last_ns = 0
        first_tokens = deltas = 0
        while True:
            event, received_ns, _ = await client.recv_until(deadline)
            kind = event.get("type")
            if kind == "response.output_text.delta":
                last_ns = received_ns
                deltas += 1
                if not first_ns:
                    first_ns = received_ns
                    first_tokens = len(split(event["delta"]))
            elif kind in _END_TYPES:
                if kind != "response.completed" or not last_ns:
                    return Stream(0.0, deltas, 0.0)
                ttft_s = (first_ns - client.last_sent_ns) / 1e9
                if last_ns == first_ns:
                    return Stream(-1.0, deltas, ttft_s)
                break
    finally:
        await client.close()
    rate = (tokens - first_tokens) / ((last_ns - first_ns) / 1e9)
    return Stream(rate / CONFIGURED_TOKENS_PER_S, deltas, ttft_s)


async def _streams(
    url: str, count: int, tokens: int, start_at: float
) -> tuple[list[Stream], float]:
    """The streams' results, and this process's CPU seconds from the go to the end."""
    start = asyncio.Event()
    tasks = [asyncio.create_task(_one_stream(url, tokens, start)) for _ in range(count)]
    # every process opens its connections, then all send together at `start_at` (wall clock)
    await asyncio.sleep(max(0.0, start_at - time.time()))
    cpu_at_go = time.process_time()
    start.set()
    results = list(await asyncio.gather(*tasks))
    return results, time.process_time() - cpu_at_go


def client_process(
    url: str, count: int, tokens: int, start_at: float
) -> tuple[list[Stream], float]:
    """One client process's streams: their results, and its CPU seconds after the go
    (the connections' opening is not counted)."""
    return asyncio.run(_streams(url, count, tokens, start_at))


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
    streams_done = [stream for part, _ in results for stream in part]
    every = [stream.ratio for stream in streams_done]
    deltas = sum(stream.deltas for stream in streams_done)
    ttfts = [stream.ttft_s for stream in streams_done if stream.ratio != 0.0] or [0.0]
    ratios = [ratio for ratio in every if ratio > 0] or [0.0]
    return {
        "streams": streams,
        "min": min(ratios),
        "median": statistics.median(ratios),
        "failed": sum(1 for r in every if r == 0.0),
        "one_delta": sum(1 for r in every if r < 0),
        "ttft_p50_s": statistics.median(ttfts),
        "ttft_max_s": max(ttfts),
        "deltas_per_s": deltas / wall,
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
    parser.add_argument(
        "--max-deltas-per-s",
        type=float,
        default=None,
        help="the server's bound on deltas/s over all streams (default: the profile's; 0: off)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bound = {} if args.max_deltas_per_s is None else {"max_deltas_per_s": args.max_deltas_per_s}
        profile = profile_file(
            "spark-1000tps",
            Path(tmp),
            "steady",
            jitter_fraction=0.0,  # without jitter or bursts: the configured rate is the target
            burst_probability=0.0,
            **bound,
        )
        print(
            f"Streams at {CONFIGURED_TOKENS_PER_S:.0f} tok/s against one server process (jitter "
            f"off, at most {load_cost_profile(profile).max_deltas_per_s:.0f} deltas/s), "
            f"{args.tokens} tokens each, {args.client_processes} client processes, "
            f"{os.cpu_count()} cores; ratio = achieved / configured per stream (target min >= 0.95)"
        )
        print(
            "   streams   min ratio  median ratio  TTFT p50 / max s  failed  one delta  deltas/s"
            "  server CPU  clients CPU  load avg"
        )
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
                    f"{row['ttft_p50_s']:8.2f} / {row['ttft_max_s']:5.2f}  "
                    f"{row['failed']:6.0f}  {row['one_delta']:9.0f}  {row['deltas_per_s']:8.0f}  "
                    f"{row['server_cpu']:10.2f}  "
                    f"{row['client_cpu']:11.2f}"
                    f"  {row['load']:8.1f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
