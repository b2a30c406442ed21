"""harness/transport: the SSE parser, as the HTTP client reads a streamed response."""

from __future__ import annotations

from typing import Any

import pytest

from bench.micro.inputs import TEXT_STREAM, read_stream
from harness.transport.received import TimedEvent
from harness.transport.sse_wire import SseParser, encode_events, parse_event

READ_BYTES = 64 * 1024


@pytest.mark.parametrize("reads", ["per-event", "64KiB"])
def test_sse_parse(benchmark: Any, reads: str) -> None:
    """A real 401-event response's SSE body through `SseParser` and `parse_event` into
    `TimedEvent`s, what `SseClient.stream` does for every read off the socket: one read per
    event (a server writing each token as it decodes, read as it arrives) or 64 KiB reads (a
    client that fell behind a fast server). The time is per response."""
    events = read_stream(TEXT_STREAM)
    body = encode_events(events)
    if reads == "per-event":
        chunks = [encode_events([event]) for event in events]
    else:
        chunks = [body[i : i + READ_BYTES] for i in range(0, len(body), READ_BYTES)]
    benchmark.extra_info["events_per_call"] = len(events)

    def parse_body() -> list[TimedEvent]:
        parser = SseParser()
        out = []
        for chunk in chunks:
            for raw, size in parser.feed(chunk):
                out.append(TimedEvent(parse_event(raw), 0, size))
        return out

    parsed = benchmark(parse_body)
    assert [t.event for t in parsed] == events
