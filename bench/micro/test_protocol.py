"""harness/protocol: the per-event accumulator, a connection's stream check, strict JSON.

The accumulator and the stream check run on every event the load client measures and the checker
judges, and in the server's emitter under `self_check`; strict JSON parses every request the
reference server takes and serialises every event it sends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bench.micro.inputs import LONG_STREAM, TEXT_STREAM, api_streams, corpus_bodies, read_stream
from harness.protocol import wire
from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.request_rules import judge_exchange
from harness.protocol.stream import StreamAccumulator

CODECS = {"msgspec": True, "stdlib": False}


@pytest.mark.parametrize("name", [TEXT_STREAM, LONG_STREAM], ids=["text-401", "reasoning-1393"])
def test_accumulator_feed(benchmark: Any, name: str) -> None:
    """One real response fed event by event to a fresh `ResponseAccumulator`: what the load
    client and `wsmode certify` pay per received event to check the grammar and rebuild the
    output (the time is per response; `events_per_call` in the JSON divides it)."""
    events = read_stream(name)
    benchmark.extra_info["events_per_call"] = len(events)

    def feed_all() -> ResponseAccumulator:
        accumulator = ResponseAccumulator()
        for event in events:
            accumulator.feed(event)
        return accumulator

    accumulator = benchmark(feed_all)
    assert accumulator.terminal_type == "response.completed"


@pytest.mark.parametrize("name", [TEXT_STREAM, LONG_STREAM], ids=["text-401", "reasoning-1393"])
def test_request_rules(benchmark: Any, name: str) -> None:
    """The field rules that need the request (`request_rules.judge_exchange`: lane, echo, wall
    clock) over one real response's events, once per exchange on the load client's path; set
    beside `test_accumulator_feed` of the same stream, the share they add to the checker."""
    events = read_stream(name)
    request = {"type": "response.create", "model": "m"}
    benchmark.extra_info["events_per_call"] = len(events)
    found = benchmark(lambda: judge_exchange(request, events, None, StreamAccumulator()))
    assert found == []  # a new chain on the default lane, answered as one


def test_stream_check(benchmark: Any) -> None:
    """A connection's worth of real responses (every recorded api.openai.com / Azure stream,
    back to back, as one WebSocket carries a rollout's turns) through `StreamAccumulator`, the
    checker's per-connection split into responses with the cross-response rules."""
    connection = [event for stream in api_streams() for event in stream]
    benchmark.extra_info["events_per_call"] = len(connection)

    def check() -> StreamAccumulator:
        stream = StreamAccumulator()
        for event in connection:
            stream.feed(event)
        return stream

    stream = benchmark(check)
    assert len(stream.finished) >= 30


def _codec(fast_codec: Callable[[bool], None], codec: str) -> None:
    if codec == "msgspec" and wire._fast_decoder is None:
        pytest.skip("msgspec is not installed: the fast path is off")
    fast_codec(CODECS[codec])


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("size", ["continuation", "full-history"])
def test_wire_loads(
    benchmark: Any, fast_codec: Callable[[bool], None], codec: str, size: str
) -> None:
    """Strict JSON parse of a request the reference server takes (`wire.loads`, depth, integer
    and duplicate-key checks included): a WS continuation's `response.create` (~22 KB, the new
    tool output) and an HTTP request resending the whole history (~350 KB), both the last turn of
    the bundled corpus's longest rollout."""
    continuation, full = corpus_bodies()
    text = wire.dumps(continuation if size == "continuation" else full)
    _codec(fast_codec, codec)
    benchmark.extra_info["bytes"] = len(text.encode())
    value = benchmark(wire.loads, text)
    assert isinstance(value, dict) and value["input"]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("kind", ["delta", "completed"])
def test_wire_dumps(
    benchmark: Any, fast_codec: Callable[[bool], None], codec: str, kind: str
) -> None:
    """Strict JSON serialise of the events a server writes (`wire.dumps_bytes`): a text delta,
    written once per token, and the `response.completed` of a long real response (its whole
    Response object), written once per turn."""
    events = read_stream(TEXT_STREAM)
    wanted = "response.output_text.delta" if kind == "delta" else "response.completed"
    event = next(e for e in events if e["type"] == wanted)
    _codec(fast_codec, codec)
    data = benchmark(wire.dumps_bytes, event)
    assert wire.loads(data) == event
