"""Event order and schema: PROTOCOL.md §3.2 (event types and fields), §3.3 (ordering within a
response), §3.4 (the Response object), §4.1 (failures), plus the official SDK's second opinion.

Most cases here only send a request: the stream rules they judge (`rules=`) are applied by the
protocol core to every event received, and violations of those rules become this case's findings.
"""

from __future__ import annotations

from typing import Any

from harness.conformance.judges.case_exchange import CaseExchange
from harness.conformance.judges.response_members import MEMBER_RULES, member_problems
from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext, Conn
from harness.protocol.events import TERMINAL_TYPES

SCHEMA_RULES = ("event.schema", "event.legacy_fields")
GRAMMAR_RULES = (
    "lifecycle.first_event",
    "lifecycle.order",
    "item.grammar",
    "item.index_order",
    "item.unknown_index",
    "part.index_order",
    "part.unknown_index",
)


def reasoning_body(ctx: CaseContext) -> dict[str, Any]:
    return ctx.body(
        "Think step by step: what is 17 * 23? Answer with the number.",
        reasoning={"effort": "low", "summary": "auto"},
    )


async def text(ctx: CaseContext, conn: Conn | None = None) -> CaseExchange:
    conn = conn or await ctx.connect()
    exchange = await conn.create(ctx.body())
    ctx.expect_completed(exchange, "case.expectation", "the text response")
    return exchange


async def function_call(ctx: CaseContext, conn: Conn | None = None) -> CaseExchange:
    conn = conn or await ctx.connect()
    exchange = await conn.create(ctx.tool_body())
    ctx.expect_completed(exchange, "case.expectation", "the tool_choice response")
    # soft: the cases built on it go on (the text turn was judged) but cannot PASS without a call
    ctx.precondition(
        bool(exchange.calls()), "tool_choice named get_weather: answered in text", setup="tool_call"
    )
    return exchange


async def reasoning(ctx: CaseContext, conn: Conn | None = None) -> CaseExchange:
    conn = conn or await ctx.connect()
    exchange = await conn.create(reasoning_body(ctx))
    ctx.expect_completed(exchange, "case.expectation", "the reasoning response")
    items = exchange.items()
    ctx.check(
        any(i.get("type") == "reasoning" for i in items),
        "case.expectation",
        "reasoning declared, but the response has no reasoning item",
    )
    return exchange


async def every_kind(ctx: CaseContext) -> list[CaseExchange]:
    """A text, a function-call and (when declared) a reasoning response on one socket."""
    conn = await ctx.connect()
    exchanges = [await text(ctx, conn), await function_call(ctx, conn)]
    if ctx.profile.has("reasoning"):
        exchanges.append(await reasoning(ctx, conn))
    return exchanges


def first_events(exchange: CaseExchange) -> list[dict[str, Any]]:
    return [t.event for t in exchange.events]


# -- sequence numbers ---------------------------------------------------------------------------
@case(
    "3.3.order.seq-from-zero",
    level="MUST",
    category="events",
    title="the first event of a response has sequence_number 0",
    rules=("seq.start", "seq.resumed"),
)
async def test_seq_from_zero(ctx: CaseContext) -> None:
    await text(ctx)


@case(
    "3.3.order.seq-contiguous",
    level="MUST",
    category="events",
    title="sequence_number increases by exactly 1 per event, without gaps",
    rules=("seq.contiguous",),
)
async def test_seq_contiguous(ctx: CaseContext) -> None:
    await every_kind(ctx)


@case(
    "3.3.order.seq-per-response",
    level="MUST",
    category="events",
    title="every response on a socket numbers its events from 0 again (judged per response)",
    rules=("seq.start", "seq.contiguous"),
)
async def test_seq_per_response(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    for _ in range(3):
        exchange = await text(ctx, conn)
        seq = exchange.events[0].event.get("sequence_number") if exchange.events else None
        ctx.check(seq == 0, "seq.start", f"a later response starts at sequence_number {seq}")


# -- lifecycle grammar --------------------------------------------------------------------------
@case(
    "3.3.lifecycle.created-first",
    level="MUST",
    category="events",
    title="a response starts with response.created, then response.in_progress",
    rules=("lifecycle.first_event", "lifecycle.order"),
)
async def test_created_first(ctx: CaseContext) -> None:
    exchange = await text(ctx)
    types = [t.type for t in exchange.events[:2]]
    ctx.check(
        types == ["response.created", "response.in_progress"],
        "lifecycle.order",
        f"the response starts with {types}",
    )


@case(
    "3.3.lifecycle.created-snapshot",
    level="SHOULD",
    category="events",
    title="response.created carries status in_progress, output [] and usage null",
    rules=("response.created_snapshot",),
)
async def test_created_snapshot(ctx: CaseContext) -> None:
    exchange = await text(ctx)
    created = next((e for e in first_events(exchange) if e["type"] == "response.created"), None)
    if created is None:
        ctx.fail("response.created_snapshot", "no response.created event")
    response = created.get("response") or {}
    ctx.check(
        response.get("status") in ("in_progress", "queued"),
        "response.created_snapshot",
        f"status {response.get('status')!r}",
        event=created,
    )
    ctx.check(
        response.get("output") == [],
        "response.created_snapshot",
        "output is not []",
        event=created,
    )
    ctx.check(
        response.get("usage") is None,
        "response.created_snapshot",
        "usage is set before the terminal",
        event=created,
    )


@case(
    "3.3.lifecycle.text",
    level="MUST",
    category="events",
    title="a message streams item.added, part.added, text deltas, text.done, part.done, item.done",
    rules=GRAMMAR_RULES,
)
async def test_text_grammar(ctx: CaseContext) -> None:
    exchange = await text(ctx)
    items = exchange.items()
    ctx.check(
        any(i.get("type") == "message" for i in items),
        "case.expectation",
        "a text request produced no message item",
    )


@case(
    "3.3.lifecycle.function-call",
    level="MUST",
    category="events",
    title="a function call streams item.added, argument deltas, arguments.done, item.done",
    rules=GRAMMAR_RULES,
    setups=("tool_call",),
)
async def test_function_call_grammar(ctx: CaseContext) -> None:
    await function_call(ctx)


@case(
    "3.3.lifecycle.reasoning",
    level="MUST",
    category="events",
    title="a reasoning item streams its summary parts (part.added, deltas, text.done, part.done)",
    rules=GRAMMAR_RULES,
    requires=("reasoning",),
)
async def test_reasoning_grammar(ctx: CaseContext) -> None:
    await reasoning(ctx)


@case(
    "3.3.lifecycle.multi-item",
    level="MUST",
    category="events",
    title="message, function call, message: indices 0, 1, 2, each item finished before the next",
    rules=(*GRAMMAR_RULES, "item.sequential", "terminal.output_matches"),
    requires=("scripted_output",),
)
async def test_multi_item(ctx: CaseContext) -> None:
    script = [
        {"type": "message", "text": "First, let me check."},
        {
            "type": "function_call",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "call_id": "call_wsmode_1",
        },
        {"type": "message", "text": "Done."},
    ]
    conn = await ctx.connect()
    body = ctx.body(tools=[bodies.WEATHER_TOOL], wsmode={"script": script})
    exchange = await conn.create(body)
    ctx.expect_completed(exchange, "case.expectation", "the scripted response")
    types = [i.get("type") for i in exchange.items()]
    ctx.check(
        types == ["message", "function_call", "message"],
        "case.expectation",
        f"scripted three items, streamed {types}",
    )
    ctx.sdk_check(exchange.events)


# -- items, parts, deltas -----------------------------------------------------------------------
@case(
    "3.3.items.index-announced",
    level="MUST",
    category="events",
    title="output_item.added announces indices 0, 1, 2 in order; events use only announced ones",
    rules=("item.index_order", "item.unknown_index", "part.index_order", "part.unknown_index"),
)
async def test_index_announced(ctx: CaseContext) -> None:
    await every_kind(ctx)


@case(
    "3.3.items.sequential",
    level="SHOULD",
    category="events",
    title="message, function-call and reasoning items stream one after another, not interleaved",
    rules=("item.sequential",),
)
async def test_items_sequential(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    if ctx.profile.has("reasoning"):
        body = ctx.tool_body(reasoning={"effort": "low", "summary": "auto"})
    else:
        body = ctx.body(
            "Get the weather and the local time in Paris, using both tools.",
            tools=[bodies.WEATHER_TOOL, bodies.TIME_TOOL],
            tool_choice="required",
        )
    ctx.expect_completed(await conn.create(body), "case.expectation")


@case(
    "3.3.text.deltas-match-done",
    level="MUST",
    category="events",
    title="output_text deltas concatenate to output_text.done, and content_part.done carries it",
    rules=("text.done_matches_deltas", "part.done_matches"),
)
async def test_text_deltas(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await text(ctx, conn)
    if ctx.profile.has("reasoning"):
        await reasoning(ctx, conn)


@case(
    "3.3.arguments.deltas-match-done",
    level="MUST",
    category="events",
    title="function_call_arguments deltas concatenate to function_call_arguments.done",
    rules=("arguments.done_matches_deltas",),
    setups=("tool_call",),
)
async def test_argument_deltas(ctx: CaseContext) -> None:
    await function_call(ctx)


@case(
    "3.3.items.done-matches-stream",
    level="MUST",
    category="events",
    title="output_item.done carries the id and the content the events streamed",
    rules=("item.done_matches", "item.id_match"),
)
async def test_done_matches_stream(ctx: CaseContext) -> None:
    await every_kind(ctx)


@case(
    "3.3.items.done-repeats-id",
    level="SHOULD",
    category="events",
    title="output_item.done and the terminal's output repeat each item's id (optional in the "
    "API's types: an omitted id loses nothing, a different one is item.id_match)",
    rules=("item.id_omitted",),
)
async def test_done_repeats_id(ctx: CaseContext) -> None:
    await every_kind(ctx)


@case(
    "3.3.response.id-stable",
    level="MUST",
    category="events",
    title="the response id is the same in created, in_progress and the terminal event",
    rules=("response.id_stable",),
)
async def test_id_stable(ctx: CaseContext) -> None:
    await every_kind(ctx)


@case(
    "3.3.terminal.exactly-one",
    level="MUST",
    category="events",
    title="exactly one terminal event per response; nothing follows it before the next create",
    rules=("lifecycle.after_terminal",),
)
async def test_exactly_one_terminal(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    first = await text(ctx, conn)
    second = await text(ctx, conn)  # anything stray lands between the two responses
    terminals = [t for t in (*first.events, *second.events) if t.type in TERMINAL_TYPES]
    ctx.check(
        len(terminals) == 2,
        "lifecycle.after_terminal",
        f"{len(terminals)} terminal events for 2 responses",
    )


@case(
    "3.3.terminal.after-items",
    level="MUST",
    category="events",
    title="response.completed comes after every item's done and lists exactly the streamed items",
    rules=("terminal.unfinished_items", "terminal.output_matches", "terminal.listed_not_done"),
)
async def test_terminal_after_items(ctx: CaseContext) -> None:
    await every_kind(ctx)


@case(
    "3.3.terminal.incomplete-max-output-tokens",
    level="MUST",
    category="events",
    title="max_output_tokens cut short: response.incomplete, reason max_output_tokens, usage set",
    rules=("incomplete.reason", "incomplete.max_output_tokens", "usage.present", *GRAMMAR_RULES),
)
async def test_incomplete_max_tokens(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(bodies.LONG_PROMPT, max_output_tokens=16))
    if exchange.request_error is not None:
        ctx.fail("incomplete.max_output_tokens", f"refused: {exchange.request_error.message}")
    final = exchange.final_response or {}
    status, details = final.get("status"), final.get("incomplete_details")
    if exchange.terminal_type == "response.completed" and (status != "completed" or details):
        # a cut response announced as completed: clients stop at the event type and never see
        # the cut (the status/event mismatch itself is 3.4.response.status's SHOULD finding)
        ctx.fail(
            "incomplete.max_output_tokens",
            f"cut by max_output_tokens 16 but ended with response.completed carrying status "
            f"{status!r}, incomplete_details {details!r}: the terminal must be response.incomplete",
        )
    if exchange.terminal_type == "response.completed":
        used = (final.get("usage") or {}).get("output_tokens")
        ctx.check(
            isinstance(used, int) and used <= 16,
            "incomplete.max_output_tokens",
            f"completed with {used} output tokens despite max_output_tokens 16",
        )
        ctx.note("the response fitted in 16 tokens: completed")
        return
    ctx.check(
        exchange.terminal_type == "response.incomplete",
        "incomplete.max_output_tokens",
        f"ended with {exchange.terminal_type}",
    )
    reason = (final.get("incomplete_details") or {}).get("reason")
    ctx.check(
        reason == "max_output_tokens",
        "incomplete.max_output_tokens",
        f"incomplete_details.reason {reason!r}",
    )


@case(
    "3.3.terminal.incomplete-content-filter",
    level="MUST",
    category="events",
    title="output stopped by the content filter ends response.incomplete, reason content_filter",
    rules=("incomplete.reason", "incomplete.content_filter", *GRAMMAR_RULES),
    requires=("scripted_output", "safety_markers"),
)
async def test_incomplete_content_filter(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    script = [{"type": "message", "text": "Here it is: WSMODE-UNSAFE-OUTPUT"}]
    exchange = await conn.create(ctx.body(wsmode={"script": script}))
    terminal = exchange.terminal_type
    ctx.check(
        terminal == "response.incomplete",
        "incomplete.content_filter",
        f"ended with {terminal or exchange.request_error}",
    )
    reason = ((exchange.final_response or {}).get("incomplete_details") or {}).get("reason")
    ctx.check(reason == "content_filter", "incomplete.content_filter", f"reason {reason!r}")
    ctx.sdk_check(exchange.events)


# -- the Response object ------------------------------------------------------------------------
@case(
    "3.4.response.required-fields",
    level="MUST",
    category="events",
    title="every Response object carries id, object, created_at, model, output, error, ... tools",
    rules=("response.schema", "response.status_terminal"),
)
async def test_response_required(ctx: CaseContext) -> None:
    await every_kind(ctx)


async def judge_members(ctx: CaseContext, level: str) -> None:
    """Every terminal Response of the kinds (and of a cut response) at one level of §3.4."""
    exchanges = await every_kind(ctx)
    conn = await ctx.connect()
    exchanges.append(await conn.create(ctx.body(bodies.LONG_PROMPT, max_output_tokens=16)))
    rule_id = MEMBER_RULES[level]
    for exchange in exchanges:
        final = exchange.final_response
        if final is None:
            continue  # the cases about terminals judge that
        for problem in member_problems(level, final, exchange.request):
            ctx.check(
                False, rule_id, f"{exchange.terminal_type}: {problem}", event=exchange.terminal
            )


@case(
    "3.4.response.member-values",
    level="MUST",
    category="events",
    title="Response members hold their values: metadata an object, error/incomplete_details shaped",
    rules=("response.member_values",),
)
async def test_response_member_values(ctx: CaseContext) -> None:
    await judge_members(ctx, "MUST")


@case(
    "3.4.response.usual-members",
    level="SHOULD",
    category="events",
    title="the terminal Response carries every member api.openai.com sends, as the request implies",
    rules=("response.usual_members",),
)
async def test_response_usual_members(ctx: CaseContext) -> None:
    await judge_members(ctx, "SHOULD")


@case(
    "3.4.response.optional-members",
    level="MAY",
    category="events",
    title="usage details carry cache_write_tokens (required by openai-python 3.57)",
    rules=("response.optional_members",),
)
async def test_response_optional_members(ctx: CaseContext) -> None:
    await judge_members(ctx, "MAY")


@case(
    "3.4.response.status",
    level="SHOULD",
    category="events",
    title="the terminal's response.status matches the terminal event type",
    rules=("response.status",),
)
async def test_response_status(ctx: CaseContext) -> None:
    await every_kind(ctx)


@case(
    "3.4.response.id-prefixes",
    level="SHOULD",
    category="events",
    title="ids use the API's prefixes: resp_, msg_, fc_ (call_id call_), rs_",
    rules=("response.id_prefix",),
)
async def test_id_prefixes(ctx: CaseContext) -> None:
    prefixes = {"message": "msg_", "function_call": "fc_", "reasoning": "rs_"}
    for exchange in await every_kind(ctx):
        rid = exchange.response_id or ""
        ctx.check(rid.startswith("resp_"), "response.id_prefix", f"response id {rid!r}")
        for item in exchange.items():
            prefix = prefixes.get(str(item.get("type")))
            item_id = str(item.get("id", ""))
            if prefix:
                ctx.check(
                    item_id.startswith(prefix),
                    "response.id_prefix",
                    f"{item.get('type')} id {item_id!r}",
                )
            if item.get("type") == "function_call":
                call_id = str(item.get("call_id", ""))
                ctx.check(call_id.startswith("call_"), "response.id_prefix", f"call_id {call_id!r}")


@case(
    "3.4.usage.present",
    level="MUST",
    category="events",
    title="a completed response reports usage {input_tokens, output_tokens, total_tokens}",
    rules=("usage.present",),
)
async def test_usage_present(ctx: CaseContext) -> None:
    await every_kind(ctx)


@case(
    "3.4.usage.consistent",
    level="MUST",
    category="events",
    title="usage adds up: total = input + output, cached <= input",
    rules=("usage.consistent",),
)
async def test_usage_consistent(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    first = await text(ctx, conn)
    follow = ctx.body(
        [bodies.user_message("And one more.")], previous_response_id=first.response_id
    )
    ctx.expect_completed(await conn.create(follow), "case.expectation", "the continuation")


@case(
    "3.4.usage.null-until-terminal",
    level="SHOULD",
    category="events",
    title="usage is null in response.created and response.in_progress",
    rules=("usage.null_until_terminal",),
)
async def test_usage_null_until_terminal(ctx: CaseContext) -> None:
    exchange = await text(ctx)
    for event in first_events(exchange):
        if event["type"] in ("response.created", "response.in_progress"):
            usage = (event.get("response") or {}).get("usage")
            ctx.check(
                usage is None,
                "usage.null_until_terminal",
                f"{event['type']} carries usage {usage}",
                event=event,
            )


# -- event schema and the SDK -------------------------------------------------------------------
@case(
    "3.2.event.required-fields",
    level="MUST",
    category="events",
    title="every known event carries type, sequence_number and its required fields (§3.2 table)",
    rules=SCHEMA_RULES,
)
async def test_event_fields(ctx: CaseContext) -> None:
    await every_kind(ctx)


@case(
    "3.2.event.unknown-types",
    level="MAY",
    category="events",
    title="event types outside the §3.2 table are reported, never failed (PROTOCOL.md §9)",
    rules=("event.unknown_type", "item.after_done"),
)
async def test_unknown_types(ctx: CaseContext) -> None:
    unknown: set[str] = set()
    for exchange in await every_kind(ctx):
        if exchange.response is not None:
            unknown |= exchange.response.unknown_types
    if unknown:
        ctx.inform(f"event types outside the table: {', '.join(sorted(unknown))}")


@case(
    "3.2.sdk.event-models",
    level="MUST",
    category="events",
    title="every event the SDK knows (error events too) validates against openai-python's model",
    rules=("sdk.event_model",),
)
async def test_sdk_models(ctx: CaseContext) -> None:
    for exchange in await every_kind(ctx):
        ctx.sdk_check(exchange.events)
    conn = await ctx.connect()
    unknown = "resp_wsmode_does_not_exist"
    refused = await conn.create(ctx.body([bodies.user_message("hi")], previous_response_id=unknown))
    ctx.expect_request_error(refused, "case.expectation", what="an unknown previous id")
    ctx.sdk_check(refused.events)  # the WebSocket error event: ResponseWsError, nested


@case(
    "3.3.sdk.accumulator-text",
    level="MUST",
    category="events",
    title="openai-python's ResponseStreamState accepts a text stream; its final text matches",
    rules=("sdk.accumulate", "sdk.final_matches"),
)
async def test_sdk_text(ctx: CaseContext) -> None:
    exchange = await text(ctx)
    report = ctx.sdk_check(exchange.events)
    # the SDK keeps a final Response only for response.completed (a capped answer has none)
    completed = exchange.terminal_type == "response.completed"
    if report.available and not report.findings and exchange.response is not None and completed:
        ctx.check(
            report.final_text == exchange.response.output_text(),
            "sdk.final_matches",
            "the SDK's final output_text differs from the streamed text",
        )


@case(
    "3.3.sdk.accumulator-function-call",
    level="MUST",
    category="events",
    title="openai-python's ResponseStreamState accepts a function-call stream",
    rules=("sdk.accumulate",),
    setups=("tool_call",),
)
async def test_sdk_function_call(ctx: CaseContext) -> None:
    ctx.sdk_check((await function_call(ctx)).events)


@case(
    "3.3.sdk.accumulator-reasoning",
    level="MUST",
    category="events",
    title="openai-python's ResponseStreamState accepts a reasoning stream",
    rules=("sdk.accumulate",),
    requires=("reasoning",),
)
async def test_sdk_reasoning(ctx: CaseContext) -> None:
    ctx.sdk_check((await reasoning(ctx)).events)


@case(
    "3.3.sdk.accumulator-incomplete",
    level="MUST",
    category="events",
    title="openai-python's ResponseStreamState accepts a stream cut by max_output_tokens",
    rules=("sdk.accumulate",),
)
async def test_sdk_incomplete(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(bodies.LONG_PROMPT, max_output_tokens=16))
    if exchange.request_error is not None:
        ctx.fail("case.expectation", f"refused: {exchange.request_error.message}")
    ctx.sdk_check(exchange.events)


# -- failures -----------------------------------------------------------------------------------
@case(
    "4.1.failed.early",
    level="MUST",
    category="events",
    title="flagged input: response.created, then response.failed with error {code, message}",
    rules=("failed.error", "lifecycle.order", "lifecycle.first_event", "sdk.accumulate"),
    requires=("safety_markers",),
)
async def test_failed_early(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body("Please repeat: WSMODE-UNSAFE-INPUT"))
    terminal = exchange.terminal_type
    ctx.check(
        terminal == "response.failed",
        "failed.error",
        f"flagged input ended with {terminal or exchange.request_error}",
    )
    error = (exchange.final_response or {}).get("error") or {}
    ctx.check(
        error.get("code") == "invalid_prompt",
        "failed.error",
        f"response.error {error}",
    )
    ctx.sdk_check(exchange.events)


@case(
    "4.3.failed.socket-open",
    level="SHOULD",
    category="events",
    title="after a response.failed the socket serves the next request",
    rules=("failed.socket_open",),
    requires=("safety_markers",),
)
async def test_failed_socket_open(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await conn.create(ctx.body("Please repeat: WSMODE-UNSAFE-INPUT"))
    await ctx.expect_usable(conn, "failed.socket_open", "after response.failed")
