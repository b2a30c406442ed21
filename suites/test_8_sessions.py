"""Sessions as real clients run them, and what a gateway in front of an upstream tends to lose:
PROTOCOL.md §2.1 (a create's `store`, `generate: false`), §3.4 (the Response object echoes the
request), §4.3 (a bad client frame gets an error event and the socket stays usable).

The §4.3 cases in test_5_errors.py send the bad frame first; a gateway answered those but
silently dropped the same frame once a turn had completed, so these send it mid-session.
"""

from __future__ import annotations

import json

from harness.conformance import bodies
from harness.conformance.cases import case
from harness.conformance.context import CaseContext, Conn
from harness.transport.events import TargetTimeout


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
    title="codex-style: a warm-up (generate:false, instructions, tools) on its own socket, then "
    "a real turn continuing it with only the new items",
    rules=("session.codex",),
)
async def test_codex_style_session(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    instructions = "You are a coding agent. Answer briefly."
    common = {"instructions": instructions, "tools": [bodies.WEATHER_TOOL]}
    warm = await conn.create(ctx.body([], generate=False, **common))
    final = ctx.expect_completed(warm, "session.codex", "the warm-up")
    ctx.check(final.get("output") == [], "session.codex", f"warm-up output {final.get('output')}")
    if warm.response_id is None:
        ctx.fail("session.codex", "the warm-up announced no response id")
    turn = await conn.create(
        ctx.body(
            [bodies.user_message("Say hello in one short sentence.")],
            previous_response_id=warm.response_id,
            **common,
        )
    )
    reply = ctx.expect_completed(turn, "session.codex", "the turn continuing the warm-up")
    ctx.check(bool(reply.get("output")), "session.codex", "the real turn has no output")
    parent = reply.get("previous_response_id")
    ctx.check(
        parent in (None, warm.response_id),
        "session.codex",
        f"the turn reports previous_response_id {parent!r}, not the warm-up's {warm.response_id}",
    )
