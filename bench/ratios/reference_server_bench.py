"""Reference-server benchmarks: ratios measured side by side in one run (not timed tests).

    python bench/ratios/reference_server_bench.py            # all three sections, ~1-2 minutes

1. Decode rate: achieved / configured tokens per second, one stream at 1,000 and at 4,000 tok/s,
   and 16 concurrent streams at 1,000 tok/s (every stream reported). Achieved rate is measured at
   the client from the first to the last delta: (tokens - 1) / elapsed.
2. API overhead per turn (client TTFT minus the engine's simulated queue+prefill, which the server
   reports per response) at 1k vs 100k tokens of history, over WebSocket (cached continuation)
   and over stateless HTTP (full history every turn). Profile: production-like.
3. A WebSocket continuation's TTFT (first content token) against a bare `websockets` echo round
   trip of the same frame, both on loopback, both servers in their own process (profile zero),
   in interleaved rounds (the median ratio over rounds is the figure). Placement is held equal
   for the two: left to the scheduler, it put the small echo server on the client's core and the
   reference server on the other, which compares two different things (a same-core echo is
   ~0.07 ms here, a cross-core one ~0.10 ms). Three rows, where the machine has two cores:
   client on core 0 and servers on core 1 (as a server is deployed), back to back (the target
   row); the same with 1 ms between turns in both clients (an agent runs its tool between turns,
   so a server always wakes from idle); everything on one core (pure CPU cost, no wake-up).
   `--only continuation` runs this section alone (`--only continuation --baseline DIR` adds
   the unscripted continuation of the checkout at DIR, a before/after in the same rounds).
   Both sides are timed alike: the same `websockets` client, the user-space clock from `send`
   to the `recv` that returns the first text delta (or the echo), frames told apart by their
   first bytes. The unscripted continuation (generated text: what an SDK or codex user gets)
   is the target; the scripted one (one word, via the `wsmode` extension) is printed beside.
   Under each row, the server's own share of the unscripted TTFT, as its `wsmode` report gives
   it (from the kernel's receive stamp of the frame to the first delta's write): the rest is
   the wire, the wake-ups and the client reading the events before the delta. The floor is a
   bare server replaying the reference server's own first write of an unscripted turn (created,
   in_progress, the item and part added, the first delta: the same bytes, recorded at the start)
   in one write with no work: what any server sending those events pays, so unscripted - floor
   is what the turn itself costs, and 2 x echo - floor what the target leaves it. It replays one
   turn's first write (the chain's second: 3.9 KB here, where the measured turns' are 2.8-11.8 KB,
   median 3.4, quartiles 3.1-4.0).
Medians over repeated turns; the server always runs in a separate process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from harness.load.embedded_server import EmbeddedServer
from harness.protocol import wire
from harness.protocol.extension import read_server_stamps
from harness.transport.exchange import sse_exchange, ws_exchange
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient
from reference_server.cost_profiles import load_cost_profile

sys.path.insert(0, str(Path(__file__).parent))
from _servers import canned_server, echo_server, pinned

TIMEOUT_S = 120.0


def profile_file(name: str, directory: Path, label: str, **overrides: float) -> str:
    """The named profile with `overrides`, written as a TOML file the server can load."""
    profile = dataclasses.replace(load_cost_profile(name), **overrides)
    lines = [f'name = "{profile.name}-{label}"']
    for field in dataclasses.fields(profile):
        value = getattr(profile, field.name)
        if field.name in ("name", "description") or value is None:
            continue
        lines.append(f"{field.name} = {float(value)!r}")
    path = directory / f"{name}-{label}.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def steady_profile(name: str, directory: Path) -> str:
    """Without jitter or bursts, so the configured rate is the exact target."""
    return profile_file(name, directory, "steady", jitter_fraction=0.0, burst_probability=0.0)


def constant_inference_profile(directory: Path) -> str:
    """production-like API stage costs, but simulated inference a constant 50 ms at any size.

    TTFT - inference then compares equal waits: a 100 ms prefill sleep at 100k tokens against a
    10 ms one at 1k would add this VM's longer wake-up latency after long idles (measured: a few
    ms on both sides) to the 100k figure and call it API overhead.
    """
    return profile_file(
        "production-like",
        directory,
        "constant-inference",
        jitter_fraction=0.0,
        burst_probability=0.0,
        queue_ms=50.0,
        prefill_us_per_uncached_token=0.0,
        prefill_us_per_cached_token=0.0,
    )


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


# -- 1. decode rate ------------------------------------------------------------------------------
async def one_stream_rate(url: str, tokens: int) -> float:
    client = await WsClient.connect(url)
    try:
        body = {
            "model": "m",
            "input": "go",
            "store": False,
            "wsmode": {"script": [{"type": "message", "tokens": tokens}]},
        }
        exchange = await ws_exchange(client, body, timeout_s=TIMEOUT_S)
    finally:
        await client.close()
    deltas = [t.received_ns for t in exchange.events if t.type == "response.output_text.delta"]
    return (tokens - 1) / ((deltas[-1] - deltas[0]) / 1e9)


def decode_rates(profiles_dir: Path) -> list[tuple[str, float]]:
    rows = []
    for name, configured, tokens in (
        ("spark-1000tps", 1000.0, 4000),
        ("burst-4000tps", 4000.0, 12000),
    ):
        with EmbeddedServer(profile=steady_profile(name, profiles_dir)) as ref:
            url = ref.ws_url
            rate = asyncio.run(one_stream_rate(url, tokens))
            rows.append((f"1 stream @ {configured:.0f} tok/s", rate / configured))
    with EmbeddedServer(profile=steady_profile("spark-1000tps", profiles_dir)) as ref:
        url = ref.ws_url

        async def many() -> list[float]:
            return list(await asyncio.gather(*(one_stream_rate(url, 3000) for _ in range(16))))

        rates = sorted(asyncio.run(many()))
        rows.append(("16 streams @ 1000 tok/s, slowest", rates[0] / 1000))
        rows.append(("16 streams @ 1000 tok/s, median", statistics.median(rates) / 1000))
    return rows


# -- 2. API overhead vs history size --------------------------------------------------------------
def history(tokens: int) -> list[dict[str, Any]]:
    """A coding-agent-like history of about `tokens` tokens (~4 characters per token)."""
    line = "def handler(request):\n    return process(request.body, retries=3)  # keep going\n"
    chunk = line * 40  # ~800 tokens per item
    items = []
    while sum(len(i["content"][0]["text"]) for i in items) < tokens * 4:
        items.append(user(chunk))
    return items


def overhead_ms(final: dict[str, Any], ttft_ms: float) -> tuple[float, float]:
    """(client TTFT - simulated inference, server-stamped receipt -> engine start)."""
    stamps = read_server_stamps(final)
    assert stamps is not None, "the reference server stamps every terminal Response"
    assert stamps.inference_ttft_ms is not None and stamps.api_overhead_ms is not None
    return ttft_ms - stamps.inference_ttft_ms, stamps.api_overhead_ms


async def ws_overheads(
    url: str, base: list[dict[str, Any]], turns: int
) -> list[tuple[float, float]]:
    client = await WsClient.connect(url)
    samples = []
    try:
        script = {"script": [{"type": "message", "text": "ok"}]}
        first = await ws_exchange(
            client,
            {"model": "m", "input": base, "store": False, "wsmode": script},
            timeout_s=TIMEOUT_S,
        )
        previous = first.response_id
        for turn in range(turns):
            body = {
                "model": "m",
                "input": [user(f"step {turn}: run the tests")],
                "store": False,
                "previous_response_id": previous,
                "wsmode": script,
            }
            exchange = await ws_exchange(client, body, timeout_s=TIMEOUT_S)
            assert (
                exchange.ok and exchange.final_response is not None and exchange.ttft_ms is not None
            )
            samples.append(overhead_ms(exchange.final_response, exchange.ttft_ms))
            previous = exchange.response_id
    finally:
        await client.close()
    return samples


async def http_overheads(
    base_url: str, base: list[dict[str, Any]], turns: int
) -> list[tuple[float, float]]:
    samples = []
    script = {"script": [{"type": "message", "text": "ok"}]}
    items = list(base)
    async with SseClient(base_url, timeout_s=TIMEOUT_S) as client:
        for turn in range(turns):
            items.append(user(f"step {turn}: run the tests"))
            exchange = await sse_exchange(
                client,
                {"model": "m", "input": items, "store": False, "wsmode": script},
                timeout_s=TIMEOUT_S,
            )
            assert (
                exchange.ok and exchange.final_response is not None and exchange.ttft_ms is not None
            )
            samples.append(overhead_ms(exchange.final_response, exchange.ttft_ms))
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "ok"}],
                }
            )
    return samples


def api_overhead(profiles_dir: Path) -> dict[tuple[str, int], tuple[float, float]]:
    """Median (client-measured, server-stamped) API overhead per mode and history size."""
    medians = {}
    with EmbeddedServer(profile=constant_inference_profile(profiles_dir)) as ref:
        for size in (1_000, 100_000):
            base = history(size)
            ws = asyncio.run(ws_overheads(ref.ws_url, base, 15))
            http = asyncio.run(http_overheads(ref.http_url, base, 15))
            for mode, samples in (("ws", ws), ("http", http)):
                client, server = zip(*samples, strict=True)
                medians[(mode, size)] = (statistics.median(client), statistics.median(server))
    return medians


# -- 3. continuation vs echo ---------------------------------------------------------------------
PAUSE_BETWEEN_TURNS_S = 0.001  # the paced row: an agent loop's tool call, shortened


_DELTA_PREFIX = b'{"type":"response.output_text.delta"'  # the server writes `type` first
_TERMINAL_PREFIXES = (b'{"type":"response.completed"', b'{"type":"response.incomplete"')
_CREATED_PREFIX = b'{"type":"response.created"'
_FAILED_PREFIXES = (b'{"type":"error"', b'{"type":"response.failed"')


@dataclasses.dataclass(frozen=True)
class ContinuationTurns:
    """One run of continuation turns: per counted turn, the client's TTFT and the server's own
    share of it (the `wsmode` report's `ttft_ms`: from the kernel's receive stamp of the frame
    to the first delta's write), ms; and the frame's size, for the echo."""

    ttfts: list[float]
    server_ttfts: list[float]
    frame_bytes: int
    # the last turn's events up to its first delta, as received: what the floor server replays
    first_events: list[bytes]


async def continuation_ttfts(
    url: str, turns: int, pause_s: float = 0.0, *, scripted: bool
) -> ContinuationTurns:
    """Per continuation turn, ms from handing the frame to `send` to `recv` returning the first
    text delta: the echo's clock and stamp (user space, `time.perf_counter_ns`, the same
    `websockets` client), reading each frame's type from its first bytes, as the echo reads
    nothing. Unscripted: the reply an SDK or codex user gets (generated text); scripted: one
    word given by the `wsmode` extension."""
    script = {"wsmode": {"script": [{"type": "message", "text": "ok"}]}} if scripted else {}
    samples, server_samples, frame_bytes, previous = [], [], 0, None
    async with connect(url, compression=None, max_size=None) as ws:
        for turn in range(turns + 1):  # turn 0 starts the chain and is not counted
            body: dict[str, Any] = {
                "type": "response.create",
                "model": "m",
                "input": [user(f"turn {turn}")],
                "store": False,
                **script,
            }
            if previous is not None:
                body["previous_response_id"] = previous
            frame = wire.dumps(body).encode()
            if pause_s:
                await asyncio.sleep(pause_s)
            first_delta_ns = 0
            created = terminal = b""
            first_events = []
            async with asyncio.timeout(TIMEOUT_S):  # no task per recv: the echo makes none
                start = time.perf_counter_ns()
                await ws.send(frame.decode())
                while True:
                    message = await ws.recv(decode=False)
                    if not first_delta_ns:
                        first_events.append(message)
                        if message.startswith(_DELTA_PREFIX):
                            first_delta_ns = time.perf_counter_ns()
                            continue
                    if message.startswith(_CREATED_PREFIX):
                        created = message  # parsed after the turn, outside the timed part
                    elif message.startswith(_TERMINAL_PREFIXES):
                        terminal = message  # parsed after the timed part too
                        break
                    elif message.startswith(_FAILED_PREFIXES):
                        raise RuntimeError(f"the continuation failed: {message[:300]!r}")
            previous = wire.loads(created)["response"]["id"]
            if turn and first_delta_ns:
                samples.append((first_delta_ns - start) / 1e6)
                report = wire.loads(terminal)["response"].get("wsmode") or {}
                server_samples.append(float(report.get("ttft_ms") or "nan"))
                frame_bytes = len(frame)
    return ContinuationTurns(samples, server_samples, frame_bytes, first_events)


async def round_trips(
    port: int, frame_bytes: int, turns: int, pause_s: float = 0.0, *, until: bytes = b""
) -> list[float]:
    """Per turn, ms from `send` of a frame of `frame_bytes` to the `recv` of the first message
    starting with `until` (the echo: the first message), on the continuation's clock."""
    payload = "x" * frame_bytes
    samples = []
    async with connect(f"ws://127.0.0.1:{port}", compression=None, max_size=None) as ws:
        for _ in range(turns):
            if pause_s:
                await asyncio.sleep(pause_s)
            async with asyncio.timeout(TIMEOUT_S):  # as the continuation's turn is bounded
                start = time.perf_counter_ns()
                await ws.send(payload)
                while not (await ws.recv(decode=False)).startswith(until):
                    pass
                samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


@dataclasses.dataclass(frozen=True)
class Placement:
    label: str
    servers: set[int] | None  # cores the servers run on (None: the scheduler decides)
    client: set[int] | None
    pause_s: float = 0.0


def placements() -> list[Placement]:
    """The target row first; one unpinned row where there is no second core to pin to."""
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        return [Placement("unpinned (one core or no affinity here)", None, None)]
    first, second = sorted(os.sched_getaffinity(0))[:2]
    return [
        Placement("separate cores, back to back", {second}, {first}),
        Placement("separate cores, 1 ms between turns", {second}, {first}, PAUSE_BETWEEN_TURNS_S),
        Placement("one shared core, back to back", {first}, {first}),
    ]


@dataclasses.dataclass(frozen=True)
class ContinuationRound:
    """One round's medians, ms: the unscripted and scripted continuations' TTFT, the echo RTT,
    the floor (the unscripted turn's own first write replayed by a server doing no work), and
    with a baseline checkout its unscripted continuation's TTFT."""

    unscripted: float
    scripted: float
    echo: float
    floor: float
    baseline_unscripted: float | None = None
    # the servers' own share (kernel receive stamp -> first delta written), as they report it
    server_unscripted: float = math.nan
    server_baseline_unscripted: float | None = None


@contextlib.contextmanager
def _server(pythonpath: str | None) -> Iterator[EmbeddedServer]:
    """The reference server of this checkout, or of the checkout at `pythonpath` (its
    `reference_server` and `harness` first on the child's path: before/after in one run)."""
    saved, cwd = os.environ.get("PYTHONPATH"), os.getcwd()
    if pythonpath is not None:  # `python -m` puts its working directory first: that one too
        os.environ["PYTHONPATH"] = pythonpath
        os.chdir(pythonpath)
    try:
        server = EmbeddedServer(profile="zero").start()
    finally:
        os.chdir(cwd)
        if pythonpath is not None:
            os.environ.pop("PYTHONPATH")
            if saved is not None:
                os.environ["PYTHONPATH"] = saved
    try:
        yield server
    finally:
        server.stop()


def continuation_vs_echo(
    place: Placement, rounds: int = 5, baseline: str | None = None
) -> list[ContinuationRound]:
    """Per round, medians over 300 turns of each, interleaved."""
    results = []
    turns = 300
    # the servers inherit the placement they start under; then the client takes its own
    with contextlib.ExitStack() as stack:
        stack.enter_context(pinned(place.servers))
        ref = stack.enter_context(_server(None))
        before = stack.enter_context(_server(baseline)) if baseline else None
        port = stack.enter_context(echo_server())
        # the floor replays the reference server's own first write of an unscripted turn
        sample = asyncio.run(continuation_ttfts(ref.ws_url, 2, scripted=False))
        floor_port = stack.enter_context(canned_server([m.decode() for m in sample.first_events]))
        stack.enter_context(pinned(place.client))
        for _ in range(rounds):
            unscripted = asyncio.run(
                continuation_ttfts(ref.ws_url, turns, place.pause_s, scripted=False)
            )
            scripted = asyncio.run(
                continuation_ttfts(ref.ws_url, turns, place.pause_s, scripted=True)
            )
            size = unscripted.frame_bytes
            echoes = asyncio.run(round_trips(port, size, turns, place.pause_s))
            floors = asyncio.run(
                round_trips(floor_port, size, turns, place.pause_s, until=_DELTA_PREFIX)
            )
            old = old_server = None
            if before is not None:
                old_turns = asyncio.run(
                    continuation_ttfts(before.ws_url, turns, place.pause_s, scripted=False)
                )
                old = statistics.median(old_turns.ttfts[20:])
                old_server = statistics.median(old_turns.server_ttfts[20:])
            results.append(
                ContinuationRound(
                    statistics.median(unscripted.ttfts[20:]),
                    statistics.median(scripted.ttfts[20:]),
                    statistics.median(echoes[20:]),
                    statistics.median(floors[20:]),
                    old,
                    statistics.median(unscripted.server_ttfts[20:]),
                    old_server,
                )
            )
    return results


def print_continuation_vs_echo(baseline: str | None = None) -> None:
    print(
        "3. WS continuation TTFT vs bare websockets echo RTT (same frame size, same client, same "
        "user-space clock: send -> recv of the first delta / of the echo), median ms, profile "
        "zero, 5 interleaved rounds of 300 turns per row; unscripted (generated text, what an SDK "
        "user gets) is the target, scripted (one word) beside it; floor: a bare server replaying "
        "the unscripted turn's own first write (created .. first delta) in one write, no work; "
        f"load average {_load()}"
    )
    for index, place in enumerate(placements()):
        rounds = continuation_vs_echo(place, baseline=baseline)
        echo = statistics.median(r.echo for r in rounds)
        cells = []
        labels = ("floor", "unscripted", "scripted", *(["baseline_unscripted"] if baseline else []))
        for label in labels:
            ratios = [getattr(r, label) / r.echo for r in rounds]
            ttft = statistics.median(getattr(r, label) for r in rounds)
            cells.append(
                f"{label} {ttft:.3f} ratio {statistics.median(ratios):.2f} "
                f"({min(ratios):.2f}-{max(ratios):.2f})"
            )
        target = "  (target: unscripted <= 2)" if index == 0 else ""
        print(f"   {place.label:36s} echo {echo:.3f}  {'  '.join(cells)}{target}")
        # where the unscripted turn's time went: the server's own share, the rest is the wire
        # and the client's reading of the events before the delta
        shares = [("unscripted", "server_unscripted")]
        if baseline:
            shares.append(("baseline_unscripted", "server_baseline_unscripted"))
        parts = []
        for label, server_label in shares:
            server = statistics.median(getattr(r, server_label) for r in rounds)
            client = statistics.median(getattr(r, label) for r in rounds)
            parts.append(f"{label} {server:.3f} of {client:.3f}")
        print(
            f"   {'':36s} server's share (receive stamp -> first delta written): {'  '.join(parts)}"
        )
        # what the turn adds to the bytes it sends: the floor is the same first write, no work
        added = statistics.median(r.unscripted - r.floor for r in rounds)
        budget = statistics.median(2 * r.echo - r.floor for r in rounds)
        print(
            f"   {'':36s} the unscripted turn's own cost (unscripted - floor): {added:.3f} ms = "
            f"{added / echo:.1f} echoes; 2 x echo would leave it {budget:.3f} ms"
        )


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def main() -> int:
    started = time.monotonic()
    if sys.argv[1:3] == ["--only", "continuation"]:
        # --baseline DIR: also the unscripted continuation of the checkout at DIR, same rounds
        rest = sys.argv[3:]
        print_continuation_vs_echo(rest[1] if rest[:1] == ["--baseline"] else None)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        print("1. Decode rate (achieved / configured; target >= 0.99 single, >= 0.95 each of 16)")
        for label, ratio in decode_rates(Path(tmp)):
            print(f"   {label:38s} {ratio:6.3f}")
        print(
            "2. API overhead per turn, median ms: client TTFT - simulated inference "
            "(server-stamped receipt -> engine start)"
        )
        print("   production-like stage costs, simulated inference held at 50 ms for every size")
        medians = api_overhead(Path(tmp))
    for mode in ("ws", "http"):
        (small, small_server), (large, large_server) = (
            medians[(mode, 1_000)],
            medians[(mode, 100_000)],
        )
        print(
            f"   {mode:5s} 1k history {small:8.2f} ({small_server:6.2f}) ms   100k history "
            f"{large:8.2f} ({large_server:6.2f}) ms   ratio {large / small:6.2f} "
            f"({large_server / small_server:5.2f})"
        )
    print("   target: ws ratio <= 1.2 while http grows")
    print_continuation_vs_echo()
    print(f"(ran in {time.monotonic() - started:.0f} s on {sys.platform}, server in a subprocess)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
