"""Generated bad input at scale: tests/reliability/cases.py's generators, `--cases` per transport.

The reference server runs as `wsmode serve` in its own process. WebSocket cases share one
connection (each bad frame is followed by a valid create that must complete on the same socket);
HTTP cases POST one body each. Printed per transport: cases, error answers, responses, leaks (a
traceback or path in what a client saw), wrongly closed sockets, hangs (no answer in 10 s),
server errors (5xx, `server_error`, malformed error bodies); then crashes (the server process
exited) and the tracebacks in the server's own log.

    python bench/ratios/fuzz.py --cases 10000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.load.embedded_server import EmbeddedServer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the generators live in tests/
from tests.reliability.cases import Tally, http_case, run_ws_cases


def report(name: str, tally: Tally, seconds: float) -> None:
    print(
        f"{name}: {tally.cases} cases in {seconds:.0f} s; {tally.errors_answered} error answers, "
        f"{tally.responses} responses; leaks {len(tally.leaks)}, wrong closes "
        f"{len(tally.wrong_closes)}, hangs {len(tally.hangs)}, server errors "
        f"{len(tally.server_errors)}"
    )
    for problem in tally.problems[:5]:
        print("   ", problem[:300])


def run_http(http_url: str, seeds: range, workers: int) -> Tally:
    def one(seed: int) -> Tally:
        tally = Tally()
        http_case(http_url, seed, tally)
        return tally

    total = Tally()
    with ThreadPoolExecutor(workers) as pool:
        for tally in pool.map(one, seeds):
            total.absorb(tally)
    return total


async def run_ws(ws_url: str, seeds: range, connections: int) -> Tally:
    tally = Tally()
    chunks = [seeds[i::connections] for i in range(connections)]
    await asyncio.gather(
        *(run_ws_cases(ws_url, range(c.start, c.stop, c.step), tally) for c in chunks)
    )
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="per transport")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()
    seeds = range(args.seed, args.seed + args.cases)
    with EmbeddedServer(profile="zero") as server:
        started = time.perf_counter()
        ws_tally = asyncio.run(run_ws(server.ws_url, seeds, args.connections))
        report("websocket", ws_tally, time.perf_counter() - started)
        started = time.perf_counter()
        http_tally = run_http(server.http_url, seeds, args.connections)
        report("http", http_tally, time.perf_counter() - started)
        assert server.process is not None
        crashed = server.process.poll() is not None
        log = server.log_tail(50_000_000)
    print(
        f"crashes: {1 if crashed else 0}; tracebacks in the server log: "
        f"{log.count('Traceback (most recent call last)')}"
    )
    return 1 if crashed or ws_tally.problems or http_tally.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
