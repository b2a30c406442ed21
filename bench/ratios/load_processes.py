"""`wsmode load --processes`: requests per second at the ceiling with 1 and with 2 client processes.

The target is the SSE mock (`minimal_servers.py sse`, 128-token responses written as one buffer,
no wait): writing a prepared buffer costs it a small fraction of what parsing the 128 deltas
costs the client, and it runs pinned to its own core (`--mock-cpu`, default the last one) so
the clients' processes are scheduled elsewhere when there is anywhere else. Per run the script
also reads the mock's CPU time: a mock near 100 % of its core would be the bottleneck, and the
ratio would then measure the mock.

Runs alternate (1, 2, 1, 2, ...) so drift on a shared machine hits both alike; medians of
`--repeats`. Each run is `wsmode load` over HTTP/SSE at `--in-flight` requests in flight for
`--seconds` seconds, through the same `run_processes` the CLI calls.

    python bench/ratios/load_processes.py [--seconds 5] [--in-flight 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _servers import process_cpu_s, sse_mock

from harness.load.core.replay_options import Endpoint
from harness.load.fixed.load_result import throughput
from harness.load.fixed.load_spec import LoadSpec
from harness.load.fixed.processes import run_processes


def one_run(url: str, mock_pid: int, processes: int, args: argparse.Namespace) -> dict[str, float]:
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
    mock_cpu0 = process_cpu_s(mock_pid)
    shard = run_processes(spec, processes)
    mock_cpu = process_cpu_s(mock_pid) - mock_cpu0
    figures = throughput(spec, shard, processes)
    elapsed = figures["elapsed_s"]
    return {
        "req_s": figures["requests_per_s"],
        "failed": figures["requests_failed"],
        "client_cpu_ms": figures["client_cpu_ms_per_request"] or 0.0,
        "mock_core_pct": 100.0 * mock_cpu / elapsed,
        "ttft_p50_ms": shard.metrics["ttft_ms"].percentile_ms(50),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mock-cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    with sse_mock(args.tokens, 0.0, announce_early=False, cpu=args.mock_cpu) as (url, pid):
        run_processes(
            LoadSpec(mode="http", endpoint=Endpoint(http_url=url), requests=200), 1
        )  # warm-up
        for _ in range(args.repeats):
            for processes in (1, 2):
                runs[processes].append(one_run(url, pid, processes, args))
                print(f"  processes={processes}: {runs[processes][-1]}", file=sys.stderr)
    print(
        f"wsmode load, HTTP/SSE, {args.in_flight} in flight, {args.tokens}-token responses, "
        f"{args.seconds:g} s per run, medians of {args.repeats} alternating runs; "
        f"mock pinned to core {args.mock_cpu}, {os.cpu_count()} cores"
    )
    head = f"{'processes':>10}{'req/s':>10}{'client CPU ms/req':>19}{'mock core %':>13}"
    print(head + f"{'TTFT p50':>10}")
    medians = {}
    for processes, rows in runs.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        medians[processes] = med
        print(
            f"{processes:>10}{med['req_s']:>10.0f}{med['client_cpu_ms']:>19.3f}"
            f"{med['mock_core_pct']:>13.0f}{med['ttft_p50_ms']:>10.2f}"
        )
    print(f"ratio 2 / 1 processes: {medians[2]['req_s'] / medians[1]['req_s']:.2f}x")


if __name__ == "__main__":
    main()
