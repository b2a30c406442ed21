"""What `--metrics-port` costs the client: `wsmode load` at its ceiling with and without the
live registry (served on a port and scraped every 0.5 s during the run, as a Prometheus would),
side by side in one run.

The target is the SSE mock (`minimal_servers.py sse`, pinned to its own core), so the client is
the bottleneck and any cost of the registry shows as fewer requests per second and more client
CPU per request. Runs alternate (off, on, off, on, ...) so drift on a shared machine hits both
alike; medians of `--repeats`, one client process.

    python bench/ratios/live_metrics_overhead.py [--seconds 5] [--in-flight 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _servers import sse_mock

from harness.load.core.replay_options import Endpoint
from harness.load.fixed.load_result import throughput
from harness.load.fixed.load_spec import LoadSpec
from harness.load.fixed.processes import run_processes
from harness.load.live_metrics import LiveMetrics, MetricsServer

SCRAPE_EVERY_S = 0.5


def one_run(url: str, live_on: bool, args: argparse.Namespace) -> dict[str, float]:
    spec = LoadSpec(
        mode="http",
        endpoint=Endpoint(http_url=url),
        model="bench",
        input_tokens=64,
        output_tokens=args.tokens,
        concurrency=args.in_flight,
        duration_s=args.seconds,
        keep_samples=0,
    )
    if not live_on:
        shard = run_processes(spec, 1)
        scrapes = 0
    else:
        live, stop, count = LiveMetrics(), threading.Event(), [0]
        with MetricsServer(live, 0) as server:

            def scrape() -> None:
                while not stop.wait(SCRAPE_EVERY_S):
                    with urllib.request.urlopen(server.url, timeout=5) as reply:
                        reply.read()
                    count[0] += 1

            scraper = threading.Thread(target=scrape, daemon=True)
            scraper.start()
            shard = run_processes(spec, 1, live=live)
            stop.set()
            scraper.join()
        scrapes = count[0]
    figures = throughput(spec, shard, 1)
    return {
        "req_s": figures["requests_per_s"],
        "client_cpu_ms": figures["client_cpu_ms_per_request"] or 0.0,
        "scrapes": scrapes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mock-cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    with sse_mock(args.tokens, 0.0, announce_early=False, cpu=args.mock_cpu) as (url, _):
        run_processes(LoadSpec(mode="http", endpoint=Endpoint(http_url=url), requests=200), 1)
        for _ in range(args.repeats):
            for live_on in (False, True):
                runs[live_on].append(one_run(url, live_on, args))
                print(f"  live={live_on}: {runs[live_on][-1]}", file=sys.stderr)
    medians = {
        on: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for on, rows in runs.items()
    }
    print(
        f"wsmode load, HTTP/SSE, {args.in_flight} in flight, {args.tokens}-token responses, "
        f"{args.seconds:g} s per run, medians of {args.repeats} alternating runs, 1 process"
    )
    print(f"{'live metrics':>13}{'req/s':>10}{'client CPU ms/req':>19}{'scrapes':>9}")
    for on, med in medians.items():
        label = "on" if on else "off"
        print(
            f"{label:>13}{med['req_s']:>10.0f}{med['client_cpu_ms']:>19.3f}{med['scrapes']:>9.0f}"
        )
    on, off = medians[True], medians[False]
    print(
        f"ratio on / off: req/s {on['req_s'] / off['req_s']:.3f}x, "
        f"client CPU per request {on['client_cpu_ms'] / off['client_cpu_ms']:.3f}x"
    )


if __name__ == "__main__":
    main()
