"""Realistic inputs and drivers shared by the micro-benchmarks.

Inputs are real: recorded Responses API streams read from `../shared/recorded` through
`tests/recorded.py` (a benchmark that needs them skips, saying where it looked), the bundled
generated corpus, and the reference server itself in process.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

from harness.bundled import corpus_dir
from harness.protocol import wire
from harness.traces.format.loader import load_traces
from tests.recorded import RECORDED, recorded

T = TypeVar("T")

STREAMS = RECORDED / "streams-set1"
#: The longest real stream: one api.openai.com response, 1,393 events (12 reasoning-summary parts
#: streamed as 1,347 deltas), what a reasoning model's long answer puts through a client.
LONG_STREAM = "vercel-reasoning-12-summary-parts-gpt54.jsonl"
#: A plain long text answer: 401 events, 391 of them text deltas.
TEXT_STREAM = "pai-compaction-item-gpt41.jsonl"


def read_stream(name: str) -> list[dict[str, Any]]:
    """The events of one recorded stream (skips the benchmark when the recordings are absent)."""
    path = recorded(STREAMS / name)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def api_streams() -> list[list[dict[str, Any]]]:
    """Every recorded api.openai.com / Azure stream with sequence numbers, one list per response."""
    streams = []
    for path in sorted(recorded(STREAMS).glob("*.jsonl")):
        if path.name.startswith("thirdparty-"):
            continue
        events = read_stream(path.name)
        if all("sequence_number" in e for e in events):
            streams.append(events)
    return streams


def frames(events: list[dict[str, Any]]) -> list[str]:
    """The events as a server writes them: one compact JSON text each."""
    return [wire.dumps(e) for e in events]


def run_now(coroutine: Any) -> Any:
    """Run a coroutine that never waits (the turn of a zero-cost profile) to its end, here.

    Driven by hand, inside the running loop, so the measurement holds the work and no event-loop
    hop; a coroutine that does wait fails loudly instead of measuring the wrong thing.
    """
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise RuntimeError("the measured coroutine waited on the event loop")


def in_loop(body: Callable[[], T]) -> T:
    """`body()` inside a running event loop (what the server and the client code expect)."""

    async def main() -> T:
        return body()

    return asyncio.run(main())


def per_event(benchmark: Any, events: int) -> None:
    """Note how many events one call handles, so a reader can divide (extra_info in the JSON)."""
    benchmark.extra_info["events_per_call"] = events


@functools.cache
def corpus_bodies() -> tuple[dict[str, Any], dict[str, Any]]:
    """(a WS continuation's `response.create`, an HTTP full-history request) of the bundled
    generated corpus: the last turn of its longest rollout, as the replay client sends it in
    each mode (the continuation carries the new items only; HTTP resends the whole history)."""
    rollouts = [r for path in sorted(corpus_dir().glob("*.jsonl")) for r in load_traces(path)]
    rollout = max(rollouts, key=lambda r: len(r.turns))
    last = rollout.turns[-1]
    common = {"model": rollout.model, "instructions": rollout.instructions, "tools": rollout.tools}
    continuation = {
        "type": "response.create",
        **common,
        "input": list(last.input),
        "previous_response_id": "resp_" + "0" * 32,
        "store": False,
    }
    history: list[dict[str, Any]] = []
    for turn in rollout.turns[:-1]:
        history += turn.input
        history += [i for i in (spec.history_item() for spec in turn.output) if i is not None]
    full = {**common, "input": [*history, *last.input], "stream": True, "store": False}
    return continuation, full
