"""previous_response_id: PROTOCOL.md §2.1 (continuation, generate:false, instructions, function
calls) and §5.1 (what a connection can resolve: its cache, the store, or nothing), §5.3
(reconnects)."""

from __future__ import annotations

import secrets
from typing import Any

from harness.conformance.judges.carried import expect_context_carried
from harness.conformance.judges.case_exchange import CaseExchange
from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext, Conn
from harness.protocol.items import item_text

NOT_FOUND = "previous_response_not_found"


async def first_turn(ctx: CaseContext, conn: Conn, *, store: bool = False) -> str:
    exchange = await conn.create(ctx.body(store=store))
    ctx.expect_completed(exchange, "case.expectation", "the first turn")
    assert exchange.response_id is not None
    return exchange.response_id


async def parent_turn(ctx: CaseContext, conn: Conn, **fields: Any) -> dict[str, Any]:
    """The first turn's final Response (its usage is what a continuation must build on)."""
    exchange = await conn.create(ctx.body(**fields))
    return ctx.expect_completed(exchange, "case.expectation", "the first turn")


async def carried_follow_up(
    ctx: CaseContext,
    conn: Conn,
    parent: dict[str, Any],
    *,
    rule_id: str = "continuation.works",
    what: str = "the continuation",
    **fields: Any,
) -> dict[str, Any]:
    """Continue `parent` with one new message; it must complete and carry the parent's context."""
    new_input = [bodies.user_message(fields.pop("text", "Thanks. One more sentence, please."))]
    body = ctx.body(new_input, previous_response_id=parent.get("id"), **fields)
    final = ctx.expect_completed(await conn.create(body), rule_id, what)
    expect_context_carried(ctx, parent, final, new_input, what)
    return final


async def follow_up(
    ctx: CaseContext, conn: Conn, previous_id: str | None, *, store: bool = False, text: str = ""
) -> CaseExchange:
    item = bodies.user_message(text or "Thanks. One more sentence, please.")
    return await conn.create(ctx.body([item], previous_response_id=previous_id, store=store))


@case(
    "2.1.continuation.new-items-only",
    level="MUST",
    category="continuation",
    title="store=false: a continuation with previous_response_id and only the new items completes",
    rules=("continuation.works", "continuation.context_carried"),
)
async def test_new_items_only(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await carried_follow_up(ctx, conn, await parent_turn(ctx, conn))


@case(
    "2.1.continuation.echo",
    level="MUST",
    category="continuation",
    title="a continuation's Response echoes previous_response_id (in created and the terminal)",
    rules=("continuation.echo",),
)
async def test_echo(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    parent = await first_turn(ctx, conn)
    exchange = await follow_up(ctx, conn, parent)
    final = ctx.expect_completed(exchange, "continuation.works")
    created = next((t.event for t in exchange.events if t.type == "response.created"), {})
    for name, response in (
        ("response.created", created.get("response") or {}),
        ("terminal", final),
    ):
        echoed = response.get("previous_response_id")
        ctx.check(
            echoed == parent, "continuation.echo", f"{name} echoes {echoed!r}, not the parent"
        )


@case(
    "2.1.continuation.chain",
    level="MUST",
    category="continuation",
    title="a five-turn store=false chain, each turn continuing the one before, completes",
    rules=("continuation.works", "cache.most_recent", "continuation.context_carried"),
)
async def test_chain(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    previous = await parent_turn(ctx, conn)
    for turn in range(2, 6):
        previous = await carried_follow_up(
            ctx,
            conn,
            previous,
            rule_id="cache.most_recent",
            what=f"turn {turn}",
            text=f"Turn {turn}: go on.",
        )


def output_text(response: dict[str, Any]) -> str:
    items = [i for i in response.get("output") or [] if isinstance(i, dict)]
    return "".join(item_text(i) for i in items if i.get("type") == "message")


@case(
    "2.1.continuation.recall",
    level="SHOULD",
    category="continuation",
    title="a real model recalls a code word from turn 1 when asked in turn 3 of a chain",
    rules=("continuation.recall", "continuation.works"),
    requires=("model_recall",),
)
async def test_recall(ctx: CaseContext) -> None:
    nonce = f"WSM{secrets.token_hex(3).upper()}"
    conn = await ctx.connect()
    first = await parent_turn(
        ctx, conn, input=f"Remember this code word: {nonce}. Reply with just: OK."
    )
    second = await carried_follow_up(ctx, conn, first, text="What is 2 + 2? Reply with a number.")
    third = await carried_follow_up(
        ctx,
        conn,
        second,
        text="What was the code word I gave you? Reply with the code word only.",
        what="turn 3",
    )
    answer = output_text(third)
    ctx.check(
        nonce.lower() in answer.lower(),
        "continuation.recall",
        f"turn 3 answered {answer[:120]!r}, without the code word {nonce} from turn 1",
    )


@case(
    "5.1.store-false.other-connection",
    level="MUST",
    category="continuation",
    title="a store=false id on another open socket: 400 previous_response_not_found, socket open",
    rules=("cache.per_connection", "cache.store_false_miss", "request.error_socket_open"),
)
async def test_store_false_other_connection(ctx: CaseContext) -> None:
    owner = await ctx.connect()
    parent = await first_turn(ctx, owner)
    other = await ctx.connect()
    exchange = await follow_up(ctx, other, parent)
    ctx.expect_request_error(exchange, "cache.per_connection", code=NOT_FOUND, status=400)
    await ctx.expect_usable(other, what="after previous_response_not_found")


@case(
    "5.1.store-false.after-reconnect",
    level="MUST",
    category="continuation",
    title="after a reconnect a store=false id is not found; the full context with no id recovers",
    rules=("cache.store_false_miss", "continuation.works"),
)
async def test_store_false_after_reconnect(ctx: CaseContext) -> None:
    first = await ctx.connect()
    parent_exchange = await first.create(ctx.body())
    ctx.expect_completed(parent_exchange, "case.expectation", "the first turn")
    parent = parent_exchange.response_id
    await first.close()
    second = await ctx.connect()
    exchange = await follow_up(ctx, second, parent)
    ctx.expect_request_error(exchange, "cache.store_false_miss", code=NOT_FOUND)
    # Replay the parent's output as plain input items (no ids: nothing was stored).
    output = [
        {k: v for k, v in i.items() if k not in ("id", "status")} for i in parent_exchange.items()
    ]
    full = [bodies.user_message(bodies.SHORT_PROMPT), *output, bodies.user_message("Go on.")]
    recovered = await second.create(ctx.body(full, previous_response_id=None))
    ctx.expect_completed(recovered, "continuation.works", "the full-context retry")


@case(
    "5.1.store-true.other-connection",
    level="MUST",
    category="continuation",
    title="a store=true id continues on another socket (hydrated from the store)",
    rules=("cache.hydrate", "continuation.context_carried"),
    requires=("store",),
)
async def test_store_true_other_connection(ctx: CaseContext) -> None:
    owner = await ctx.connect()
    parent = await parent_turn(ctx, owner, store=True)
    other = await ctx.connect()
    await carried_follow_up(
        ctx, other, parent, rule_id="cache.hydrate", what="the hydrated continuation", store=True
    )


@case(
    "5.1.store-true.after-reconnect",
    level="MUST",
    category="continuation",
    title="after a reconnect a store=true id still continues",
    rules=("cache.hydrate", "continuation.context_carried"),
    requires=("store",),
)
async def test_store_true_after_reconnect(ctx: CaseContext) -> None:
    first = await ctx.connect()
    parent = await parent_turn(ctx, first, store=True)
    await first.close()
    second = await ctx.connect()
    await carried_follow_up(
        ctx, second, parent, rule_id="cache.hydrate", what="the hydrated continuation", store=True
    )


@case(
    "5.1.store-true.http-created",
    level="MUST",
    category="continuation",
    title="an id created over HTTP (store=true) continues over WebSocket",
    rules=("cache.hydrate", "continuation.context_carried"),
    requires=("store", "http"),
)
async def test_http_created(ctx: CaseContext) -> None:
    reply = await ctx.http().request("POST", "/responses", ctx.body(store=True))
    payload = reply.json()
    if reply.status != 200 or not isinstance(payload, dict) or not payload.get("id"):
        ctx.fail("http.json_response", f"POST /responses answered {reply.status}")
    conn = await ctx.connect()
    await carried_follow_up(
        ctx, conn, payload, rule_id="cache.hydrate", what="the WebSocket continuation", store=True
    )


@case(
    "5.1.store-true.http-continuation",
    level="MUST",
    category="continuation",
    title="a store=true WebSocket id continues over HTTP (POST with previous_response_id)",
    rules=("cache.hydrate", "continuation.context_carried"),
    requires=("store", "http"),
)
async def test_http_continuation(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    parent = await parent_turn(ctx, conn, store=True)
    new_input = [bodies.user_message("Thanks. One more sentence, please.")]
    body = ctx.body(new_input, previous_response_id=parent.get("id"), store=True)
    reply = await ctx.http().request("POST", "/responses", body)
    payload = reply.json()
    if reply.status != 200 or not isinstance(payload, dict):
        ctx.fail("cache.hydrate", f"POST /responses continuing a WebSocket id: {reply.status}")
    ctx.check(
        payload.get("status") == "completed",
        "cache.hydrate",
        f"the HTTP continuation ended {payload.get('status')!r}",
    )
    expect_context_carried(ctx, parent, payload, new_input, "the HTTP continuation")


@case(
    "2.1.generate-false.warmup",
    level="MUST",
    category="continuation",
    title="generate:false completes with output [] and no output events (in_progress: SHOULD)",
    rules=(
        "generate_false.no_output",
        "generate_false.in_progress",
        "lifecycle.no_in_progress",  # INFO: the protocol core's note of the same
        "lifecycle.first_event",
        "lifecycle.order",
        "usage.present",
    ),
)
async def test_warmup(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(generate=False))
    final = ctx.expect_completed(exchange, "generate_false.no_output", "the warm-up")
    types = [t.type for t in exchange.events]
    # The vendor's own warm-up sends in_progress; the released gateways go created -> completed
    # and codex accepts that (PROTOCOL.md §2.1): valid in the grammar, a SHOULD here, never a MUST.
    ctx.check(
        "response.in_progress" in types,
        "generate_false.in_progress",
        f"the warm-up streamed {types} without response.in_progress",
    )
    ctx.check(
        final.get("output") == [], "generate_false.no_output", f"output {final.get('output')}"
    )
    extra = [t.type for t in exchange.events if t.type.startswith("response.output_")]
    ctx.check(not extra, "generate_false.no_output", f"output events: {sorted(set(extra))}")


@case(
    "2.1.generate-false.empty-input-chain",
    level="MUST",
    category="continuation",
    title="a warm-up id continues with input: [] and the real turn generates",
    rules=("generate_false.chainable",),
)
async def test_warmup_chain(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    warm = await conn.create(ctx.body(generate=False))
    ctx.expect_completed(warm, "generate_false.chainable", "the warm-up")
    turn = await conn.create(ctx.body([], previous_response_id=warm.response_id))
    final = ctx.expect_completed(turn, "generate_false.chainable", "the input: [] turn")
    ctx.check(bool(final.get("output")), "generate_false.chainable", "the real turn has no output")


@case(
    "2.1.instructions.not-inherited",
    level="MUST",
    category="continuation",
    title="instructions are not inherited through previous_response_id",
    rules=("continuation.instructions", "continuation.context_carried"),
)
async def test_instructions_not_inherited(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    first = await conn.create(ctx.body(instructions="Answer like a pirate."))
    final = ctx.expect_completed(first, "case.expectation", "the first turn")
    ctx.check(
        final.get("instructions") == "Answer like a pirate.",
        "case.expectation",
        f"the first turn echoes instructions {final.get('instructions')!r}",
    )
    second = await carried_follow_up(ctx, conn, final)
    inherited = second.get("instructions")
    ctx.check(
        inherited in (None, "", []),
        "continuation.instructions",
        f"the continuation carries instructions {inherited!r} it was not sent",
    )


@case(
    "2.1.function-call.round-trip",
    level="MUST",
    category="continuation",
    title="a function_call_output answering the calls of a tool_choice required turn completes",
    rules=("function_call.round_trip",),
    setups=("tool_call",),
)
async def test_function_round_trip(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.tool_body(tool_choice="required"))
    ctx.expect_completed(exchange, "function_call.round_trip", "the tool turn")
    # that tool_choice yields a call is 2.1.function-call.named's to judge: the setup here
    calls = ctx.expect_calls(exchange, "tool_choice required")
    outputs = [bodies.function_output(str(call.get("call_id"))) for call in calls]
    answer = ctx.body(
        outputs,
        previous_response_id=exchange.response_id,
        tools=[bodies.WEATHER_TOOL],
        tool_choice="none",
    )
    ctx.expect_completed(await conn.create(answer), "function_call.round_trip", "the answer turn")


@case(
    "2.1.function-call.named",
    level="MUST",
    category="continuation",
    title="tool_choice {type: function, name} calls exactly that function; required calls one",
    rules=("function_call.emitted",),
)
async def test_named_function(ctx: CaseContext) -> None:
    """The judge of the `tool_call` setup (model.SETUPS): it runs first, and the cases built on
    a tool call are not run when it fails."""
    conn = await ctx.connect()
    body = ctx.body(
        "What time is it in Paris?",
        tools=[bodies.WEATHER_TOOL, bodies.TIME_TOOL],
        tool_choice={"type": "function", "name": "get_time"},
    )
    exchange = await conn.create(body)
    ctx.expect_completed(exchange, "function_call.emitted")
    names = [c.get("name") for c in exchange.calls()]
    ctx.check(
        bool(names),
        "function_call.emitted",
        f"tool_choice named get_time was answered without a function_call "
        f"(output: {[i.get('type') for i in exchange.items()]})",
    )
    ctx.check(
        all(name == "get_time" for name in names),
        "function_call.emitted",
        f"named get_time, called {names}",
    )
    required = await conn.create(ctx.tool_body(tool_choice="required"))
    ctx.expect_completed(required, "function_call.emitted", "the tool_choice required turn")
    ctx.check(
        bool(required.calls()),
        "function_call.emitted",
        f"tool_choice required was answered without a function_call "
        f"(output: {[i.get('type') for i in required.items()]})",
    )


@case(
    "2.1.function-call.unknown-call-id",
    level="MUST",
    category="continuation",
    title="a function_call_output answering no issued call is refused (400); the socket stays open",
    rules=("continuation.unknown_call_id", "request.error_socket_open"),
)
async def test_unknown_call_id(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    parent = await first_turn(ctx, conn)
    body = ctx.body(
        [bodies.function_output("call_wsmode_never_issued")],
        previous_response_id=parent,
        tools=[bodies.WEATHER_TOOL],
    )
    exchange = await conn.create(body)
    ctx.expect_request_error(exchange, "continuation.unknown_call_id", status=400)
    await ctx.expect_usable(conn, what="after the refused function_call_output")


@case(
    "2.1.function-call.after-reconnect",
    level="MUST",
    category="continuation",
    title="store=true: a function call answered on a new socket after a reconnect completes",
    rules=("function_call.round_trip", "cache.hydrate"),
    requires=("store",),
    setups=("tool_call",),
)
async def test_function_after_reconnect(ctx: CaseContext) -> None:
    first = await ctx.connect()
    exchange = await first.create(ctx.tool_body(store=True))
    ctx.expect_completed(exchange, "function_call.emitted", "the tool turn")
    calls = ctx.expect_calls(exchange, "tool_choice named get_weather")
    await first.close()
    second = await ctx.connect()
    answer = ctx.body(
        [bodies.function_output(str(c.get("call_id"))) for c in calls],
        previous_response_id=exchange.response_id,
        tools=[bodies.WEATHER_TOOL],
        tool_choice="none",
        store=True,
    )
    ctx.expect_completed(await second.create(answer), "function_call.round_trip")
