"""The server's ceiling: events/s one reference-server process sustains, and what workers add.

    python bench/ratios/server_ceiling.py              # both sections, ~1 minute
    python bench/ratios/server_ceiling.py --section events|workers

1. Events/s: 32 concurrent streams, each asking for responses of 2,000 tokens, one delta per
   token (a profile with `max_tokens_per_delta = 1` and no simulated cost, so nothing waits and
   nothing coalesces), against a bare `websockets` server answering each frame with the same
   number of pre-serialized events, one `send` each (bench/ratios/_servers.py). Both servers in
   their own process; the clients (2 processes) read frames without parsing them (they must not be
   the bottleneck: their CPU is printed). Printed: events/s, server CPU per 1,000 events (from
   /proc: user + system) and the ratios of both (target >= 0.5). On a machine shared with other
   work events/s measures the machine; events per server CPU-second is the one-core ceiling.
2. Workers: events/s (as above) and turns/s (64 connections doing short continuation turns of
   one "ok") with `wsmode serve --workers 1` and `--workers 2`, and the ratio (target >= 1.7 on
   a machine with a core per worker and one for the client; this script prints the core count),
   with the server CPU each unit cost (equal for 1 and 2 workers: nothing shared limits them)
   and how many cores the servers and clients kept busy (at the core count: the machine is the
   ceiling, not the workers). A third row, heavy turns/s: continuations that each bring a long
   tool output (~8k tokens, the server validates, scans and tokenizes it; the client only
   frames it), so the servers, not the clients, use the cores: on a 2-core machine this is the
   row that can show what a second worker adds.
Medians of 3 runs of 4 s each, the configurations interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from harness.load.embedded_server import EmbeddedServer
from harness.protocol import wire

sys.path.insert(0, str(Path(__file__).parent))
from _servers import frames_server

STREAMS = 32
TOKENS = 2000
TURN_CONNECTIONS = 64
RUN_S = 4.0
CLIENT_PROCESSES = 2
REPEATS = 3
PROFILE = """name = "ceiling"
decode_tokens_per_s = 1e9
max_tokens_per_delta = 1.0
"""


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def server_pids(parent: int) -> list[int]:
    """The process and, with --workers, its children."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return [parent, *map(int, children)]


def create(**extra: Any) -> str:
    body = {"model": "bench", "input": "go", "store": False, **extra}
    return wire.dumps({"type": "response.create", **body})


async def stream_events(url: str, deadline: float) -> int:
    """Responses of TOKENS deltas back to back until `deadline`; the events received."""
    frame = create(wsmode={"script": [{"type": "message", "tokens": TOKENS}]})
    events = 0
    async with connect(url, compression=None, max_size=None) as ws:
        while time.perf_counter() < deadline:
            await ws.send(frame)
            while True:
                raw = await ws.recv(decode=False)
                events += 1
                if b'"response.completed"' in raw[:64]:
                    break
    return events


async def continuation_turns(url: str, deadline: float) -> int:
    """Short turns, each continuing the previous (the connection cache), until `deadline`."""
    script = {"script": [{"type": "message", "text": "ok"}]}
    turns, previous = 0, None
    async with connect(url, compression=None) as ws:
        while time.perf_counter() < deadline:
            extra: dict[str, Any] = {"wsmode": script}
            if previous is not None:
                extra["previous_response_id"] = previous
            await ws.send(create(**extra))
            previous = await _response_id(ws)
            turns += 1
    return turns


# A file read by the agent: ~8k tokens of new input a turn, validated, scanned and tokenized by
# the server, while the client only frames it: a turn whose cost is the server's.
_TOOL_OUTPUT = "    return parse_config(path)  # the service's settings, read once at start\n" * 400
HEAVY_CHAIN_TURNS = 16  # then a new chain: the cache stays small


async def heavy_turns(url: str, deadline: float) -> int:
    """Continuations that each bring a long tool output, until `deadline`."""
    script = {"script": [{"type": "message", "text": "ok"}]}
    item = {"type": "message", "role": "user", "content": _TOOL_OUTPUT}
    turns, previous = 0, None
    async with connect(url, compression=None, max_size=None) as ws:
        while time.perf_counter() < deadline:
            extra: dict[str, Any] = {"wsmode": script, "input": [item]}
            if previous is not None and turns % HEAVY_CHAIN_TURNS:
                extra["previous_response_id"] = previous
            await ws.send(create(**extra))
            previous = await _response_id(ws)
            turns += 1
    return turns


async def _response_id(ws: Any) -> str:
    """Read one response to its terminal; its id. Anything but a completed one stops the bench
    (a stream the bench does not expect must fail it, not leave it waiting)."""
    while True:
        raw = await ws.recv(decode=False)
        head = raw[:64]
        if b'"response.completed"' in head:
            return str(wire.loads(raw)["response"]["id"])
        if b'"response.failed"' in head or b'"response.incomplete"' in head or b'"error"' in head:
            raise RuntimeError(f"the server did not complete a turn: {raw[:300]!r}")


def _client_process(
    one: Callable[[str, float], Awaitable[int]], url: str, clients: int, start_at: float
) -> tuple[int, float, float]:
    """One client process's share of the load from `start_at` (wall clock, so all processes
    start together): (count, its CPU seconds, the seconds it ran)."""
    time.sleep(max(0.0, start_at - time.time()))

    async def many() -> int:
        deadline = time.perf_counter() + RUN_S
        return sum(await asyncio.gather(*(one(url, deadline) for _ in range(clients))))

    cpu0, wall0 = time.process_time(), time.perf_counter()
    count = asyncio.run(many())
    return count, time.process_time() - cpu0, time.perf_counter() - wall0


def run_load(
    one: Callable[[str, float], Awaitable[int]], url: str, clients: int, pids: list[int]
) -> tuple[float, float, float]:
    """(count/s, server CPU s per count, client CPU in cores) over RUN_S, the clients spread
    over CLIENT_PROCESSES processes so that one client process's GIL is not the ceiling."""
    share = clients // CLIENT_PROCESSES
    server0 = cpu_s(pids)
    with ProcessPoolExecutor(CLIENT_PROCESSES, mp_context=get_context("spawn")) as pool:
        jobs = [(one, url, share, time.time() + 3.0)] * CLIENT_PROCESSES  # 3 s to start up
        results = list(pool.map(_client_process, *zip(*jobs, strict=True)))
    count, client = sum(r[0] for r in results), sum(r[1] for r in results)
    wall = max(r[2] for r in results)
    return count / wall, (cpu_s(pids) - server0) / count, client / wall


def medians(rows: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    rates, cpus, clients = zip(*rows, strict=True)
    return statistics.median(rates), statistics.median(cpus), statistics.median(clients)


def events_section(profile: str) -> None:
    print(f"1. Server event ceiling: {STREAMS} streams x {TOKENS}-token responses, one delta/token")
    ref_rows, bare_rows = [], []
    with (
        EmbeddedServer(profile=profile) as ref,
        frames_server(TOKENS) as (port, bare),
    ):
        assert ref.process is not None
        ref_pids, bare_url = server_pids(ref.process.pid), f"ws://127.0.0.1:{port}"
        for _ in range(REPEATS):
            ref_rows.append(run_load(stream_events, ref.ws_url, STREAMS, ref_pids))
            bare_rows.append(run_load(stream_events, bare_url, STREAMS, [bare.pid]))
    ref_rate, ref_cpu, ref_client = medians(ref_rows)
    bare_rate, bare_cpu, bare_client = medians(bare_rows)
    for name, rate, cpu, client in (
        ("reference server", ref_rate, ref_cpu, ref_client),
        ("bare websockets", bare_rate, bare_cpu, bare_client),
    ):
        print(
            f"   {name:17s} {rate:9.0f} events/s   server CPU {cpu * 1e6:6.1f} ms/1000 events"
            f"   client CPU {client:4.2f} cores"
        )
    print(
        f"   ratio {ref_rate / bare_rate:.2f} in events/s, {bare_cpu / ref_cpu:.2f} in events per "
        "server CPU-second (the one-core ceiling, robust to a shared machine)  (target >= 0.5)"
    )


def workers_section(profile: str) -> None:
    print(f"2. Workers (this machine: {os.cpu_count()} cores, shared)")
    rows: dict[tuple[int, str], list[tuple[float, float, float]]] = {}
    servers = [
        EmbeddedServer(profile=profile, extra_args=("--workers", str(n))).start() for n in (1, 2)
    ]
    try:
        for _ in range(REPEATS):
            for workers, server in zip((1, 2), servers, strict=True):
                assert server.process is not None
                pids = server_pids(server.process.pid)
                for kind, one, clients in (
                    ("events", stream_events, STREAMS),
                    ("turns", continuation_turns, TURN_CONNECTIONS),
                    ("heavy turns", heavy_turns, TURN_CONNECTIONS),
                ):
                    rows.setdefault((workers, kind), []).append(
                        run_load(one, server.ws_url, clients, pids)
                    )
    finally:
        for server in servers:
            server.stop()
    for kind in ("events", "turns", "heavy turns"):
        (one, one_cpu, one_client), (two, two_cpu, two_client) = (
            medians(rows[(1, kind)]),
            medians(rows[(2, kind)]),
        )
        print(
            f"   {kind + '/s':14s} 1 worker {one:9.0f}   2 workers {two:9.0f}   "
            f"ratio {two / one:.2f}  (target >= 1.7)"
        )
        # Whether a second worker could double the rate: does a unit cost the same server CPU
        # with two (no shared bottleneck), and were the cores already busy (servers + clients)?
        print(
            f"   {'':14s} server CPU per 1,000 {kind}: {one_cpu * 1e6:.1f} vs "
            f"{two_cpu * 1e6:.1f} ms"
            f"   cores busy (servers + clients): {one * one_cpu + one_client:.2f} vs "
            f"{two * two_cpu + two_client:.2f} of {os.cpu_count()}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=("events", "workers"))
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "ceiling.toml"
        profile.write_text(PROFILE)
        if args.section in (None, "events"):
            events_section(str(profile))
        if args.section in (None, "workers"):
            workers_section(str(profile))
    print(f"(ran in {time.monotonic() - started:.0f} s; servers in their own processes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
