"""Measurement error: client TTFT minus the server-stamped TTFT, under load.

The reference server stamps each response with `wsmode.ttft_ms`: from the moment its request began
to arrive (the kernel's receive stamp, SO_TIMESTAMPNS, of the read that brought the request's
first bytes) to the moment it emitted the first output event. The client measures from the moment
the request's bytes were handed to its socket to the moment the first output event arrived at its
socket (the kernel's receive stamp too). The difference is what the measurement adds on top of
the server's own latency: the loopback network both ways, and whatever the client adds.
Reported at 1 and at 32 concurrent rollouts, side by side; the server runs in its own process.
`--mode http` measures the HTTP/SSE path the same way.

Kernel stamps keep both processes' scheduling and event-loop delays out; what is left is the
kernel's own send path. On this VM that path is slow right after a process has been idle: a
`send()` on loopback takes ~0.2 ms after a 50 ms sleep against ~5 us when the sender is busy (the
receiver's kernel stamp is taken inside the sender's syscall, so the delay is in neither
process's code). At 1 rollout every request and every first output follows an idle wait (the
engine's TTFT, the tool wait), so the error there is ~1 ms; at 32 the processes stay busy.
`read lag` = when the event loop handed the bytes over minus the kernel's stamp: what a
user-space stamp would have added on top.

    python bench/ratios/measurement_error.py [--mode ws|http|http-chained] [--concurrency 32] \\
        [--turns 20]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from harness.load.core.gc_policy import load_gc
from harness.load.core.measurements import RolloutResult
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.load.core.schedule import closed_loop
from harness.load.embedded_server import EmbeddedServer
from harness.results.stats import percentile
from harness.traces.format import Rollout, load_traces
from harness.transport import sockets


def run_level(
    server: EmbeddedServer, rollouts: list[Rollout], concurrency: int, turns: int, mode: str
) -> tuple[list[RolloutResult], float]:
    endpoint = Endpoint(server.ws_url, server.http_url)
    options = ReplayOptions(mode=mode, max_turns=turns)  # type: ignore[arg-type]
    jobs = [rollouts[i % len(rollouts)] for i in range(concurrency)]

    async def runner(rollout: Rollout, intended: int | None) -> RolloutResult:
        return await replay_rollout(rollout, endpoint, options)

    start = time.perf_counter()
    with load_gc():  # as `wsmode bench` runs its client
        results = asyncio.run(closed_loop(jobs, runner, concurrency=concurrency))
    return results, time.perf_counter() - start


def summarize(results: list[RolloutResult], min_turn: int = 0) -> dict[str, float]:
    client, server, error = [], [], []
    for r in results:
        for t in r.turns:
            if t.turn_index < min_turn:
                continue
            if t.ok and t.ttft_ms is not None and t.server_ttft_ms is not None:
                client.append(t.ttft_ms)
                server.append(t.server_ttft_ms)
                error.append(t.ttft_ms - t.server_ttft_ms)
    if not error:
        raise SystemExit("no successful turns with server stamps")
    return {
        "turns": len(error),
        "failed": sum(1 for r in results for t in r.turns if not t.ok),
        "client_p50": percentile(client, 50),
        "client_p99": percentile(client, 99),
        "server_p50": percentile(server, 50),
        "server_p99": percentile(server, 99),
        "error_p50": percentile(error, 50),
        "error_p99": percentile(error, 99),
        "error_max": max(error),
        "error_share_p50": percentile([e / c for e, c in zip(error, client, strict=True)], 50),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="spark-1000tps")
    parser.add_argument("--traces", default="traces/corpus")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--turns", type=int, default=20, help="turns replayed per rollout")
    parser.add_argument("--mode", default="ws", choices=("ws", "http", "http-chained"))
    args = parser.parse_args()
    rollouts = load_traces(args.traces)
    rows = []
    with EmbeddedServer(profile=args.profile) as server:
        # warm up: every rollout once, so that each measured run meets the same warm caches
        run_level(server, rollouts, args.concurrency, args.turns, args.mode)
        for level in sorted({1, args.concurrency}):
            lags: list[int] = []
            sockets.read_lags = lags
            try:
                results, _ = run_level(server, rollouts, level, args.turns, args.mode)
            finally:
                sockets.read_lags = None
            lag_ms = [lag / 1e6 for lag in lags] or [float("nan")]
            read_lag = (percentile(lag_ms, 50), percentile(lag_ms, 99), max(lag_ms))
            rows.append((level, "all", summarize(results), read_lag))
            rows.append((level, ">=1", summarize(results, min_turn=1), read_lag))
    print(
        f"measurement error = client TTFT - server-stamped TTFT; {args.mode} mode, profile "
        f"{args.profile}, first {args.turns} turns of each rollout, server in its own process"
    )
    print(
        f"{'rollouts':>9}{'turn#':>7}{'turns':>7}{'fail':>5}{'client p50':>12}{'p99':>9}"
        f"{'server p50':>12}{'p99':>9}{'error p50':>11}{'p99':>9}{'max':>9}{'err/TTFT p50':>14}"
        f"{'read lag p50':>14}{'p99':>8}{'max':>8}"
    )
    for level, which, s, (lag50, lag99, lagmax) in rows:
        print(
            f"{level:>9}{which:>7}{s['turns']:>7}{s['failed']:>5}{s['client_p50']:>12.2f}"
            f"{s['client_p99']:>9.2f}{s['server_p50']:>12.2f}{s['server_p99']:>9.2f}"
            f"{s['error_p50']:>11.2f}{s['error_p99']:>9.2f}{s['error_max']:>9.2f}"
            f"{100 * s['error_share_p50']:>13.1f}%{lag50:>14.3f}{lag99:>8.2f}{lagmax:>8.2f}"
        )
    print(
        "turn# all: every turn; >=1: without turn 0, when all rollouts of the closed loop send "
        "their large first request at the same instant (that burst queues in the server's "
        "socket before its receive stamp, so the stamp cannot see it)"
    )


if __name__ == "__main__":
    main()
