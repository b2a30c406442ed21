"""A continuation turn's own CPU path, in process: frame parse -> the first write, and the turn.

    python bench/turn_cpu.py            # ~10 s

No sockets and no event-loop waits: the reference server's `TurnRunner` with a `send` that only
serialises, for chains of 300 continuation turns (profile zero, a scripted "ok"), as the
continuation bench drives it. Printed: median µs from the frame's bytes to the first write and
to the turn's end, warm, and cold (a 16 MiB buffer read between turns, as a server that waited
for the next request finds its CPU caches after an idle wake-up), and at 3,000-turn chains
(what a long rollout costs per turn). Where the socket bench
(`reference_server_bench.py --only continuation`) moves, this shows whether the turn did.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.protocol import wire
from harness.protocol.cache import ResponseCache
from harness.protocol.events import Event
from harness.protocol.requests import parse_client_event, parse_create
from reference_server.config import ServerConfig
from reference_server.services import Services
from reference_server.state.conversation import Conversation
from reference_server.turn import TurnContext, TurnRunner

SCRIPT = {"script": [{"type": "message", "text": "ok"}]}
_CACHE_SPOILER = bytearray(16 * 1024 * 1024)


def frame(turn: int, previous: str | None) -> str:
    text = [{"type": "input_text", "text": f"turn {turn}"}]
    body: dict[str, Any] = {
        "type": "response.create",
        "model": "m",
        "input": [{"type": "message", "role": "user", "content": text}],
        "store": False,
        "wsmode": SCRIPT,
    }
    if previous is not None:
        body["previous_response_id"] = previous
    return wire.dumps(body)


async def timed_turns(
    services: Services, turns: int, chain: int, cold: bool
) -> list[tuple[float, float]]:
    """(µs to the first write, µs to the turn's end) per turn, chains of `chain` turns."""
    runner = TurnRunner(services)
    first_write: list[float] = []

    async def send(*events: Event) -> None:
        for event in events:
            wire.dumps_bytes(event)
        if not first_write:
            first_write.append(time.perf_counter())

    samples = []
    cache: ResponseCache[Conversation] = ResponseCache(services.config.cache)
    previous: str | None = None
    for turn in range(turns):
        if turn % chain == 0:
            cache, previous = ResponseCache(services.config.cache), None
        message = frame(turn, previous)
        if cold:
            sum(_CACHE_SPOILER[::64])  # evict what the last turn left in the caches
        first_write.clear()
        started = time.perf_counter()
        _, body = parse_client_event(wire.loads(message))
        request = parse_create(body, transport="ws")
        context = TurnContext("ws", "bench", cache, started, len(message), (), "bench")
        outcome = await runner.run(request, context, send)
        ended = time.perf_counter()
        previous = str(outcome.response["id"])
        samples.append(((first_write[0] - started) * 1e6, (ended - started) * 1e6))
    return samples


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        config = ServerConfig(profile="zero", data_dir=Path(tmp), log_level="warning")
        services = Services.build(config)
        print("Continuation turn in process (profile zero, scripted 'ok'), median µs")
        for label, turns, chain, cold in (
            ("warm, chains of 300", 3000, 300, False),
            ("cold caches, chains of 300", 3000, 300, True),
            ("warm, chains of 3,000 (last 1,000)", 3000, 3000, False),
        ):
            samples = asyncio.run(timed_turns(services, turns, chain, cold))
            kept = samples[2000:] if chain > 300 else samples[100:]
            first = statistics.median(s[0] for s in kept)
            whole = statistics.median(s[1] for s in kept)
            print(f"   {label:36s} parse -> first write {first:6.1f}   whole turn {whole:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
