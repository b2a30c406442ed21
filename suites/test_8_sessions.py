"""Sessions as real clients run them, and what a gateway in front of an upstream tends to lose:
PROTOCOL.md §2.1 (a create's `store`, `generate: false`), §3.4 (the Response object echoes the
request), §4.3 (a bad client frame gets an error event and the socket stays usable).

The §4.3 cases in test_5_errors.py send the bad frame first; a gateway answered those but
silently dropped the same frame once a turn had completed, so these send it mid-session.
"""

from __future__ import annotations

import json
from typing import Any

from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext, Conn
from harness.transport.failures import TargetTimeout

CODEX_ROUNDS = 4  # three tool rounds (tool_choice required), then a final answer


async def completed_turn(ctx: CaseContext, conn: Conn) -> str | None:
    exchange = await conn.create(ctx.body())
    ctx.expect_completed(exchange, "case.expectation", "the first turn")
    return exchange.response_id


async def expect_error_mid_session(ctx: CaseContext, conn: Conn, frame: str, what: str) -> None:
    await conn.send_text(frame)
    try:
        timed = await conn.next_event()
    except TargetTimeout:
        ctx.fail(
            "request.error_mid_session",
            f"{what} after a completed turn: no error event within {ctx.event_timeout_s:g} s "
            "(the frame was dropped silently)",
        )
    ctx.check(
        timed.type == "error",
        "request.error_mid_session",
        f"{what} after a completed turn was answered with {timed.type}, not an error event",
    )
    await ctx.expect_usable(conn, "request.error_mid_session", f"after {what} mid-session")


@case(
    "4.3.unknown-type.mid-session",
    level="MUST",
    category="errors",
    title="an unknown client event type after a completed turn gets an error; the socket works",
    rules=("request.error_mid_session",),
)
async def test_unknown_type_mid_session(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await completed_turn(ctx, conn)
    frame = json.dumps({"type": "response.wsmode_bogus", "model": ctx.model})
    await expect_error_mid_session(ctx, conn, frame, "an unknown event type")


@case(
    "4.3.malformed-json.mid-session",
    level="MUST",
    category="errors",
    title="a frame that is not JSON after a completed turn gets an error; the socket works",
    rules=("request.error_mid_session",),
)
async def test_malformed_json_mid_session(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await completed_turn(ctx, conn)
    await expect_error_mid_session(ctx, conn, '{"type": "response.create", "model": ', "bad JSON")


@case(
    "3.4.store.echoed",
    level="MUST",
    category="events",
    title="the Response object echoes the request's store (false, and true where declared)",
    rules=("request.store_echo",),
)
async def test_store_echoed(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    for store in (False, True) if ctx.profile.has("store") else (False,):
        exchange = await conn.create(ctx.body(store=store))
        final = ctx.expect_completed(exchange, "case.expectation", f"the store={store} turn")
        first = exchange.events[0].event if exchange.events else {}
        created = first.get("response") if first.get("type") == "response.created" else None
        created = created if isinstance(created, dict) else {}
        for where, response in (("response.created", created), ("the terminal", final)):
            if "store" not in response:
                continue  # a missing member is the Response-completeness case's finding
            ctx.check(
                response["store"] is store,
                "request.store_echo",
                f"a store={str(store).lower()} request: {where} reports store: "
                f"{json.dumps(response['store'])}",
            )


@case(
    "2.1.session.codex-style",
    level="MUST",
    category="continuation",
    title="a codex session on one socket: a warm-up with instructions and tools, then "
    "function-call rounds (parallel calls answered together) continued with only new items",
    rules=("session.codex",),
)
async def test_codex_style_session(ctx: CaseContext) -> None:
    """What codex 0.171 sent to the reference server (PROTOCOL.md §10): a warm-up
    (`generate: false`) carrying the instructions, tools and the prompt, then each turn with
    `previous_response_id` and only the new items (`input: []` after the warm-up, the outputs of
    every call of the last response after a tool round), instructions and tools resent each time,
    `stream: true` and `parallel_tool_calls: true`."""
    conn = await ctx.connect()
    common: dict[str, Any] = {
        "instructions": "You are a coding agent. Use the tools for every city, all at once.",
        "tools": [bodies.WEATHER_TOOL, bodies.TIME_TOOL],
        "parallel_tool_calls": True,
        "stream": True,
        "include": [],
    }
    prompt = bodies.user_message(
        "What are the weather and the local time in Paris and in Tokyo? Call the tools for "
        "every city in one go."
    )
    warm = await conn.create(ctx.body([prompt], generate=False, tool_choice="auto", **common))
    final = ctx.expect_completed(warm, "session.codex", "the warm-up")
    ctx.check(final.get("output") == [], "session.codex", f"warm-up output {final.get('output')}")
    if warm.response_id is None:
        ctx.fail("session.codex", "the warm-up announced no response id")
    previous: str | None = warm.response_id
    new_items: list[dict[str, Any]] = []
    rounds = parallel = 0
    for index in range(CODEX_ROUNDS):
        last = index == CODEX_ROUNDS - 1
        turn = await conn.create(
            ctx.body(
                new_items,
                previous_response_id=previous,
                tool_choice="none" if last else "required",
                **common,
            )
        )
        reply = ctx.expect_completed(turn, "session.codex", f"turn {index + 1}")
        reported = reply.get("previous_response_id")
        ctx.check(
            reported in (None, previous),
            "session.codex",
            f"turn {index + 1} reports previous_response_id {reported!r}, not {previous}",
        )
        if last:
            ctx.check(bool(reply.get("output")), "session.codex", "the last turn has no output")
            break
        calls = turn.calls()
        if not calls:
            ctx.fail("session.codex", f"turn {index + 1} (tool_choice required) made no call")
        rounds += 1
        parallel += len(calls) > 1
        # codex answers every call of a response in the next create, together
        new_items = [bodies.function_output(str(c.get("call_id"))) for c in calls]
        previous = turn.response_id
    ctx.check(rounds >= 2, "session.codex", f"{rounds} function-call round(s), expected 2 or more")
    ctx.precondition(
        parallel > 0,
        f"no response of {rounds} tool rounds made parallel calls: the answer to parallel "
        "calls was not exercised",
    )
