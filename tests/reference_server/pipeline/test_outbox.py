"""The events stage's writes: what the engine produces back to back shares one write, nothing
waits out an engine sleep, and the first token goes out the moment it exists."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from harness.protocol.emitter import ResponseEmitter
from harness.protocol.events import Event, response_object
from reference_server.cost_profiles import load_cost_profile
from reference_server.engine.engine import Engine, Seed
from reference_server.hooks.faults import EventFaults, Faults
from reference_server.pipeline import inference
from reference_server.pipeline.outbox import Outbox
from reference_server.runtime.metrics import ServerMetrics


def _decode_writes(script: list[dict[str, Any]], **profile: Any) -> tuple[list[list[str]], Outbox]:
    """Run a scripted response through decode; the event types of each write, in order."""
    engine_profile = load_cost_profile("zero").with_overrides(**profile)
    plan = Engine(engine_profile).plan(seed=Seed("x"), input_tokens=1, script=script)
    writes: list[list[str]] = []

    async def send(*events: Event) -> None:
        writes.append([str(event["type"]) for event in events])

    async def respond() -> Outbox:
        emitter = ResponseEmitter(response_object("resp_1", "m", created_at=1_760_000_000))
        out = Outbox(send, EventFaults(Faults()))
        await out.emit([emitter.created(), emitter.in_progress()], hold=True)
        await inference.decode(plan, emitter, out, time.perf_counter(), ServerMetrics())
        await out.flush()
        return out

    return writes, asyncio.run(respond())


def test_without_an_engine_wait_everything_up_to_the_first_token_is_one_write() -> None:
    writes, out = _decode_writes([{"type": "message", "text": "hello there"}])
    assert writes[0] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert out.first_token_at is not None
    assert writes[1][-1] == "response.output_item.done"  # the rest rides in the final flush


def test_an_engine_wait_flushes_what_is_held_before_sleeping() -> None:
    # 20 ms to the first token: created + in_progress must not wait it out
    writes, _ = _decode_writes([{"type": "message", "text": "hi"}], queue_ms=20.0)
    assert writes[0] == ["response.created", "response.in_progress"]
    assert writes[1][:3] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]


def test_a_response_without_content_still_sends_every_event() -> None:
    writes, out = _decode_writes([{"type": "function_call", "name": "f", "arguments": ""}])
    assert out.first_token_at is None  # no content: no first-token write
    sent = [kind for write in writes for kind in write]
    assert sent[:3] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
    ]
    assert sent[-1] == "response.output_item.done"
