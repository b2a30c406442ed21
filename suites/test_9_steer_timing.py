"""Steer timing, PROTOCOL.md §2.2 and §3.5: a steer sent while its response runs is answered
before that response's terminal event. A gateway that queues client events it does not know
behind the in-flight response delivers the steer only once the response is over, so the steer
never steers (every attempt then ends `response_already_completed`, which `2.2.steer.successor`
reads as a race it retries and finally calls PRECONDITION).

The response must still be running when the steer arrives: a long prompt and a long answer, and
the steer goes out as soon as `response.created` arrives. SHOULD: the sources say what a steer
does to an active response, not how soon a server must read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext
from harness.protocol.beta import beta_target
from harness.protocol.events import TERMINAL_TYPES
from harness.transport.failures import TargetTimeout
from harness.transport.received import TimedEvent

STEER_TEXT = "Please keep the answer to one short sentence."
PROMPT_TOKENS = 60_000  # long enough that the response is still running when the steer arrives


def _response_id(event: Mapping[str, Any]) -> str | None:
    response = event.get("response")
    value = response.get("id") if isinstance(response, Mapping) else None
    return value if isinstance(value, str) else None


@case(
    "2.2.steer.in-flight",
    level="SHOULD",
    category="beta",
    title="a steer sent while its response runs is answered before that response's terminal "
    "event (not queued behind it)",
    rules=("steer.in_flight",),
    requires=("steer",),
)
async def test_steer_answered_in_flight(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    body = ctx.body(
        bodies.long_prompt(PROMPT_TOKENS), max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS
    )
    await conn.send(body)
    events: list[TimedEvent] = []
    target: str | None = None
    reply_at: int | None = None
    terminal_at: int | None = None
    try:
        while reply_at is None or terminal_at is None:
            timed = await conn.next_event()
            events.append(timed)
            event = timed.event
            if target is None:
                if event.get("type") == "error":
                    ctx.fail("case.expectation", "the create was refused")
                if event.get("type") == "response.created":
                    target = _response_id(event)
                    steer = {"type": "response.steer", "previous_response_id": target}
                    await conn.send_event({**steer, "input": STEER_TEXT})
                continue
            kind = str(event.get("type"))
            if (
                reply_at is None
                and kind.startswith("response.steer.")
                and beta_target(event) == target
            ):
                reply_at = len(events)
            if terminal_at is None and kind in TERMINAL_TYPES and _response_id(event) == target:
                terminal_at = len(events)
    except TargetTimeout:
        seen = ", ".join(t.type for t in events[-4:]) or "nothing"
        ctx.fail("steer.in_flight", f"the steer or the response went unanswered (last: {seen})")
    assert reply_at is not None and terminal_at is not None
    reply = events[reply_at - 1].event
    ctx.note(
        f"steer answered with {reply.get('type')} at event {reply_at}, terminal at {terminal_at}"
    )
    ctx.check(
        reply_at < terminal_at,
        "steer.in_flight",
        f"the steer sent after response.created was answered ({reply.get('type')}) only after "
        f"the response's terminal (event {reply_at} vs {terminal_at}): it never reached the "
        "running response",
    )
