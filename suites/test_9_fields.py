"""Field values, PROTOCOL.md §3.5: usage against what streamed, a continuation's own output, the
timestamps' unit and clock, the previous_response_id echo, each lane's stream_id.

The rules are the protocol core's (`harness.protocol.field_rules`): every exchange a case reads is
judged by them (the response rules at its terminal, the request rules against the create it
answers), so these cases only bring the target into each situation and name the rules they
judge. Levels and sources: §3.5.
"""

from __future__ import annotations

from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext
from harness.protocol.events import reached_output_cap
from harness.protocol.field_rules import lane_consistency_problems
from harness.transport.failures import TargetTimeout


@case(
    "3.5.usage.output-streamed",
    level="MUST",
    category="events",
    title="a response that streamed text reports output_tokens >= 1, each detail within its total",
    rules=("usage.output_streamed", "usage.details_bounded"),
)
async def test_usage_output_streamed(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body())
    ctx.expect_completed(exchange, "case.expectation", "a short answer")
    text = exchange.response.output_text() if exchange.response is not None else ""
    ctx.precondition(bool(text), "the response streamed no text to count")


@case(
    "3.5.usage.output-cap",
    level="MUST",
    category="events",
    title="a response cut by max_output_tokens 16 reports output_tokens <= 16",
    rules=("usage.output_cap", "usage.details_bounded"),
)
async def test_usage_output_cap(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(bodies.LONG_PROMPT, max_output_tokens=16))
    if exchange.request_error is not None:
        ctx.fail("case.expectation", f"refused: {exchange.request_error.message}")
    ctx.precondition(
        reached_output_cap(exchange.final_response),
        f"the response was not cut by its cap ({exchange.terminal_type})",
    )


@case(
    "3.5.output.own-items",
    level="SHOULD",
    category="continuation",
    title="a continuation's terminal output lists only its own items, never its parent's",
    rules=("output.own_items",),
)
async def test_output_own_items(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    parent = await conn.create(ctx.body())
    ctx.expect_completed(parent, "case.expectation", "the parent")
    item = bodies.user_message("One more sentence, please.")
    child = await conn.create(ctx.body([item], previous_response_id=parent.response_id))
    ctx.expect_completed(child, "case.expectation", "the continuation")


@case(
    "3.5.time.unix-seconds",
    level="MUST",
    category="events",
    title="created_at and completed_at are unix seconds (not milliseconds), completed_at not "
    "before created_at",
    rules=("time.unix_seconds", "time.order"),
)
async def test_time_unix_seconds(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body())
    final = ctx.expect_completed(exchange, "case.expectation", "a short answer")
    ctx.precondition(final.get("created_at") is not None, "the Response has no created_at")


@case(
    "3.5.time.wall-clock",
    level="SHOULD",
    category="events",
    title="a live response's created_at lies within 65 minutes before, 5 after, the client's clock",
    rules=("time.wall_clock",),
)
async def test_time_wall_clock(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body())
    ctx.expect_completed(exchange, "case.expectation", "a short answer")


@case(
    "3.5.echo.previous-response-id",
    level="MUST",
    category="continuation",
    title="each Response echoes its own request's previous_response_id: the parent for a "
    "continuation, null for a new chain after one, an older parent (store) when that is named",
    rules=("response.previous_response_id",),
)
async def test_echo_previous_response_id(ctx: CaseContext) -> None:
    stored = ctx.profile.has("store")  # then the first chain can be continued later, too
    conn = await ctx.connect()
    first = await conn.create(ctx.body(store=stored))
    ctx.expect_completed(first, "case.expectation", "the first chain")
    item = bodies.user_message("Go on, briefly.")
    child = await conn.create(ctx.body([item], previous_response_id=first.response_id))
    ctx.expect_completed(child, "case.expectation", "the continuation")
    # a new chain right after a finished response: its echo is null, not the last response
    fresh = await conn.create(ctx.body())
    ctx.expect_completed(fresh, "case.expectation", "the new chain")
    if stored:  # a continuation from an older parent (hydrated from the store): that parent
        older = ctx.body([item], previous_response_id=first.response_id, store=True)
        ctx.expect_completed(await conn.create(older), "case.expectation", "the older parent's")


@case(
    "3.5.lanes.own-stream-id",
    level="MUST",
    category="lanes",
    title="every event carries its own create's lane: a named lane's id, none on the default "
    "lane after a named one, never another running lane's id",
    rules=("lane.stream_id", "lane.default_stream_id"),
    requires=("lanes",),
)
async def test_lanes_own_stream_id(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    named = await conn.create(ctx.body(stream_id="wsmode-fields.a"))
    ctx.expect_completed(named, "case.expectation", "the named lane's response")
    default = await conn.create(ctx.body())
    ctx.expect_completed(default, "case.expectation", "the default lane's response after it")
    # two lanes at once: a long answer on one, a short one started while it runs on another
    traffic = conn.lanes()
    long = ctx.body(bodies.long_prompt(), max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS)
    await traffic.send({**long, "stream_id": "wsmode-fields.long"})
    try:
        await traffic.read_until(lambda: traffic.first("wsmode-fields.long") is not None)
        await traffic.send({**ctx.body(), "stream_id": "wsmode-fields.short"})
        await traffic.read_answers(2)
    except TargetTimeout:
        ctx.fail("case.expectation", f"the two lanes were not both answered ({traffic.summary()})")
    events = [timed.event for _, timed in traffic.arrivals]
    for rule_id, message in lane_consistency_problems(events):
        ctx.check(False, rule_id, message)
