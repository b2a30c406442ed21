"""Requests, errors and limits: PROTOCOL.md §2.1 (what a create may carry), §4 (the error event,
codes, the connection after errors), §5.2 (queueing on the default lane; named lanes are in
test_7_lanes.py), §5.3 (lifetime), docs/RELIABILITY.md §2 (message size)."""

from __future__ import annotations

import asyncio
import json

from harness.conformance.judges.case_exchange import CaseExchange
from harness.conformance.judges.fifo import order_fields
from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext, Conn
from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.events import TERMINAL_TYPES
from harness.protocol.stream import RequestError
from harness.transport.failures import HttpStatusError, TargetClosed, TargetTimeout

NOT_FOUND = "previous_response_not_found"


async def not_found(ctx: CaseContext, conn: Conn, *, judge_code: bool = True) -> CaseExchange:
    """An unknown previous_response_id, refused. Its error code is judged here only when
    `judge_code` (4.2.not-found.fields judges it); otherwise a wrong code is a note."""
    body = ctx.body([bodies.user_message("hi")], previous_response_id="resp_wsmode_does_not_exist")
    exchange = await conn.create(body)
    error = ctx.expect_request_error(exchange, "error.code", code=NOT_FOUND if judge_code else None)
    if not judge_code and error.code != NOT_FOUND:
        ctx.note(f"refused with code {error.code!r}, not {NOT_FOUND!r} (4.2.not-found.fields)")
    return exchange


def error_event(exchange: CaseExchange) -> dict[str, object]:
    return next((t.event for t in exchange.events if t.type == "error"), {})


# -- the error event ----------------------------------------------------------------------------
@case(
    "4.1.error.nested-shape",
    level="MUST",
    category="errors",
    title="an error event nests {type, code, message, param} under 'error'",
    rules=("error.shape", "event.flat_error"),
)
async def test_nested_shape(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await not_found(ctx, conn)
    await conn.send_text("{this is not json")
    await conn.next_event()


@case(
    "4.1.error.status",
    level="SHOULD",
    category="errors",
    title="a request-level error carries status (400 for previous_response_not_found)",
    rules=("error.status",),
)
async def test_error_status(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    event = error_event(await not_found(ctx, conn))
    ctx.check(event.get("status") == 400, "error.status", f"status {event.get('status')!r}")


@case(
    "4.2.not-found.fields",
    level="MUST",
    category="errors",
    title="previous_response_not_found: type invalid_request_error, param previous_response_id",
    rules=("error.code",),
)
async def test_not_found_fields(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    error = (await not_found(ctx, conn)).request_error
    assert error is not None
    ctx.check(error.type == "invalid_request_error", "error.code", f"type {error.type!r}")
    ctx.check(error.param == "previous_response_id", "error.code", f"param {error.param!r}")


@case(
    "4.3.malformed-json.socket-open",
    level="MUST",
    category="errors",
    title="a text frame that is not JSON gets an error event; the socket stays usable",
    rules=("request.malformed_json", "request.error_socket_open"),
)
async def test_malformed_json(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await conn.send_text('{"type": "response.create", "model": ')
    timed = await conn.next_event()
    ctx.check(timed.type == "error", "request.malformed_json", f"answered with {timed.type}")
    await ctx.expect_usable(conn, what="after malformed JSON")


@case(
    "4.3.unknown-type.socket-open",
    level="MUST",
    category="errors",
    title="an unknown client event type gets an error event; the socket stays usable",
    rules=("request.unknown_type", "request.error_socket_open"),
)
async def test_unknown_type(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await conn.send_text(json.dumps({"type": "response.wsmode_bogus", "model": ctx.model}))
    timed = await conn.next_event()
    ctx.check(timed.type == "error", "request.unknown_type", f"answered with {timed.type}")
    await ctx.expect_usable(conn, what="after an unknown event type")


@case(
    "4.3.invalid-input.socket-open",
    level="MUST",
    category="errors",
    title="a create with an invalid input item is refused with 400; the socket stays usable",
    rules=("request.invalid_input", "request.error_socket_open"),
)
async def test_invalid_input(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body([bodies.invalid_item()]))
    ctx.expect_request_error(exchange, "request.invalid_input", status=400)
    await ctx.expect_usable(conn, what="after an invalid input item")


@case(
    "4.3.not-found.socket-open",
    level="MUST",
    category="errors",
    title="after previous_response_not_found the same socket serves the next request",
    rules=("request.error_socket_open",),
)
async def test_not_found_socket_open(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await not_found(ctx, conn, judge_code=False)
    await ctx.expect_usable(conn, what="after previous_response_not_found")


# -- what a create may carry --------------------------------------------------------------------
@case(
    "2.1.request.background-rejected",
    level="SHOULD",
    category="errors",
    title="background:true is refused over WebSocket with an error; the socket stays usable",
    rules=("request.background_rejected", "request.error_socket_open"),
)
async def test_background_rejected(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(background=True))
    ctx.expect_request_error(exchange, "request.background_rejected", status=400)
    await ctx.expect_usable(conn, what="after background:true")


@case(
    "2.1.request.max-output-tokens-minimum",
    level="SHOULD",
    category="errors",
    title="max_output_tokens below 16 is refused with 400 integer_below_min_value",
    rules=("request.max_output_minimum", "request.error_socket_open"),
)
async def test_max_output_tokens_minimum(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(max_output_tokens=15))
    ctx.expect_request_error(
        exchange, "request.max_output_minimum", code="integer_below_min_value", status=400
    )
    await ctx.expect_usable(conn, what="after max_output_tokens: 15")
    at_minimum = await conn.create(ctx.body(max_output_tokens=16))
    ctx.check(
        at_minimum.request_error is None,
        "request.max_output_minimum",
        "max_output_tokens: 16 (the minimum itself) was refused",
    )


@case(
    "2.1.request.conversation-with-previous",
    level="MUST",
    category="errors",
    title="conversation with previous_response_id is refused with 400, never resolved as a parent",
    rules=("request.conversation_exclusive", "request.error_socket_open"),
)
async def test_conversation_with_previous(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    parent = await conn.create(ctx.body())
    ctx.expect_completed(parent, "case.expectation", "the parent")
    assert parent.response_id is not None
    body = ctx.body(
        [bodies.user_message("Continue.")],
        previous_response_id=parent.response_id,
        conversation="conv_wsmode_case",
    )
    exchange = await conn.create(body)
    error = ctx.expect_request_error(exchange, "request.conversation_exclusive", status=400)
    ctx.check(
        error.code != NOT_FOUND,
        "request.conversation_exclusive",
        "refused as previous_response_not_found: the parent was looked up, the pair not refused",
    )
    await ctx.expect_usable(conn, what="after conversation with previous_response_id")


@case(
    "2.1.request.stream-true-accepted",
    level="MUST",
    category="errors",
    title="stream:true (sent by codex and the official example) is accepted and ignored",
    rules=("request.stream_ignored",),
)
async def test_stream_true(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    ctx.expect_completed(await conn.create(ctx.body(stream=True)), "request.stream_ignored")


@case(
    "2.1.request.unknown-fields",
    level="MUST",
    category="errors",
    title="unknown create fields (codex's client_metadata) are tolerated",
    rules=("request.unknown_fields",),
)
async def test_unknown_fields(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    body = ctx.body(client_metadata={"session": "wsmode"}, include=[], stream_options={})
    ctx.expect_completed(await conn.create(body), "request.unknown_fields")


# -- queueing -----------------------------------------------------------------------------------
async def read_answers(ctx: CaseContext, conn: Conn, count: int) -> list[object]:
    """Read until `count` creates are answered, in arrival order: each answer is a request
    error, or the Response object of a terminal event (judged by the raw terminal, so a broken
    grammar does not hide the order)."""
    answers: list[object] = []
    while len(answers) < count:
        timed = await conn.client.recv(ctx.event_timeout_s)
        routed = conn.stream.feed(timed.event)
        if isinstance(routed, RequestError):
            answers.append(routed)
        elif timed.type in TERMINAL_TYPES and not (
            isinstance(routed, ResponseAccumulator) and routed.event_count == 1
        ):
            answers.append(timed.event.get("response") or {})
    return answers


@case(
    "5.2.queue.fifo",
    level="MUST",
    category="errors",
    title="three creates sent back to back all complete, in order, never interleaved",
    rules=("queue.fifo", "queue.no_drop", "conn.no_interleave"),
)
async def test_queue_fifo(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    traffic = conn.lanes()
    tags = ["1", "2", "3"]
    for tag in tags:
        await traffic.send(ctx.body(f"Request {tag}: say hello.", **order_fields(tag)))
    try:
        await traffic.read_answers(len(tags))
    except TargetTimeout:
        ctx.fail("queue.no_drop", f"not every queued create was answered ({traffic.summary()})")
    traffic.judge_fifo(None, tags, "queue.fifo")


@case(
    "5.2.queue.mid-stream",
    level="MUST",
    category="errors",
    title="a create sent while a response streams is queued and runs after it",
    rules=("queue.fifo", "queue.no_drop", "conn.no_interleave"),
)
async def test_queue_mid_stream(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    traffic = conn.lanes()
    long = ctx.body(bodies.LONG_PROMPT, max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS)
    await traffic.send({**long, **order_fields("1")})
    await traffic.read_until(lambda: bool(traffic.arrivals))
    first = traffic.arrivals[0][1]
    ctx.check(first.type == "response.created", "case.expectation", f"first event {first.type}")
    await traffic.send(ctx.body("Say hello.", **order_fields("2")))
    try:
        await traffic.read_answers(2)
    except TargetTimeout:
        ctx.fail("queue.no_drop", "the create sent mid-stream was never answered")
    traffic.judge_fifo(None, ["1", "2"], "queue.fifo")


@case(
    "5.2.queue.no-silent-drop",
    level="MUST",
    category="errors",
    title="eight creates back to back: each gets a response or an error (a queue bound), none lost",
    rules=("queue.no_drop", "conn.no_interleave"),
)
async def test_no_silent_drop(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    for n in range(8):
        await conn.send(ctx.body(f"Request {n}: say hello.", metadata={"wsmode_order": str(n)}))
    try:
        answers = await read_answers(ctx, conn, 8)
    except TargetTimeout:
        ctx.fail("queue.no_drop", "fewer than 8 answers for 8 creates")
    refused = [a for a in answers if isinstance(a, RequestError)]
    if refused:
        codes = sorted({str(a.error.code) for a in refused})
        ctx.note(f"{len(refused)} creates refused ({', '.join(codes)}): a queue bound")


# -- lifetime and size --------------------------------------------------------------------------
async def aged_socket(ctx: CaseContext) -> tuple[Conn, dict[str, object] | None, int | None]:
    """Connect to the lifetime endpoint and idle: the error event (if any) and the close code."""
    conn = await ctx.connect(url=ctx.target.lifetime_url or ctx.target.ws_url)
    wait = ctx.profile.lifetime_s + ctx.event_timeout_s
    try:
        timed = await conn.next_event(timeout_s=wait)
    except TargetClosed as exc:
        return conn, None, exc.code
    except TargetTimeout:
        ctx.fail("lifetime.error", f"nothing arrived within the lifetime + {ctx.event_timeout_s} s")
    try:
        code, _ = await conn.wait_closed()
    except TargetTimeout:
        return conn, timed.event, None
    return conn, timed.event, code


@case(
    "5.3.lifetime.limit-reached",
    level="MUST",
    category="errors",
    title="an idle socket past its lifetime gets websocket_connection_limit_reached, then a close",
    rules=("lifetime.error", "lifetime.close"),
    requires=("lifetime",),
)
async def test_lifetime(ctx: CaseContext) -> None:
    _, event, code = await aged_socket(ctx)
    error = event.get("error") if isinstance(event, dict) else None
    got = error.get("code") if isinstance(error, dict) else None
    ctx.check(
        got == "websocket_connection_limit_reached",
        "lifetime.error",
        f"the aged socket got {event.get('type') if event else 'a close'} (code {got!r})",
    )
    ctx.check(code is not None, "lifetime.close", "the socket was not closed after the error")


@case(
    "5.3.lifetime.close-code",
    level="MAY",
    category="errors",
    title="the close after the lifetime error uses 1000 (final: the SDK does not reconnect)",
    rules=("lifetime.close_code",),
    requires=("lifetime",),
)
async def test_lifetime_close_code(ctx: CaseContext) -> None:
    _, _, code = await aged_socket(ctx)
    ctx.check(code == 1000, "lifetime.close_code", f"closed with {code}")


async def oversize(ctx: CaseContext) -> tuple[Conn, str | None, int | None]:
    """Send one message over the declared size: what came back (error type) and the close code."""
    limit = ctx.profile.max_message_bytes
    conn = await ctx.connect()
    body = json.dumps({"type": "response.create", **ctx.body("x" * (limit + 1))})
    try:
        await conn.send_text(body)
        timed = await conn.next_event()
    except TargetClosed as exc:
        return conn, None, exc.code
    try:
        code, _ = await conn.wait_closed()
    except TargetTimeout:
        code = None
    return conn, timed.type, code


@case(
    "4.3.max-message.refused",
    level="MUST",
    category="errors",
    title="a message over the declared size is refused: close 1009 or an error event",
    rules=("limits.max_message", "ws.isolation"),
    requires=("max_message",),
)
async def test_max_message(ctx: CaseContext) -> None:
    _, answer, code = await oversize(ctx)
    ctx.check(
        answer == "error" or code is not None,
        "limits.max_message",
        f"the over-size message was answered with {answer}",
    )
    fresh = await ctx.connect()
    ctx.expect_completed(await fresh.create(ctx.body()), "ws.isolation", "a fresh connection")


@case(
    "4.3.max-message.close-1009",
    level="MAY",
    category="errors",
    title="the close after an over-size message uses 1009 (message too big)",
    rules=("limits.max_message_code",),
    requires=("max_message",),
)
async def test_max_message_code(ctx: CaseContext) -> None:
    _, answer, code = await oversize(ctx)
    ctx.check(code == 1009, "limits.max_message_code", f"answered {answer}, closed with {code}")


# -- connections at once (§5.3) -----------------------------------------------------------------
@case(
    "5.3.connections.limit",
    level="MUST",
    category="errors",
    title="the connection past the declared limit is refused, never served or dropped; a closed "
    "one frees its place",
    rules=("connections.limit", "connections.within_limit", "connections.freed"),
    requires=("connection_limit",),
)
async def test_connection_limit(ctx: CaseContext) -> None:
    """Open `limits.max_connections` sockets with one key (each must upgrade; the first and the
    last must serve a create), then one more: it must be refused in a way a client can act on
    (vLLM's `--max-websocket-connections` and the reference server answer past the limit each in
    their own way: an HTTP status, or an error event and/or a close frame). Then close one and
    connect again: the place is free."""
    limit = ctx.profile.max_connections
    held: list[Conn] = []
    for n in range(limit):
        try:
            held.append(await ctx.connect())
        except HttpStatusError as exc:
            ctx.fail(
                "connections.within_limit", f"connection {n + 1} of {limit}: HTTP {exc.status}"
            )
    for conn in (held[0], held[-1]):
        exchange = await conn.create(ctx.body())
        ctx.expect_completed(exchange, "connections.within_limit", f"a create on {conn.label}")
    await judge_extra_connection(ctx, limit)
    await held[0].close()
    fresh = await connect_when_freed(ctx)
    ctx.expect_completed(await fresh.create(ctx.body()), "connections.freed", "the freed place")


async def judge_extra_connection(ctx: CaseContext, limit: int) -> None:
    try:
        extra = await ctx.connect()
    except HttpStatusError as exc:
        ctx.check(exc.status >= 400, "connections.limit", f"the upgrade answered {exc.status}")
        ctx.note(f"connection {limit + 1}: upgrade refused with HTTP {exc.status}")
        return
    except TargetClosed as exc:
        ctx.check(False, "connections.limit", f"connection {limit + 1} dropped: {exc}")
        return
    try:
        exchange = await extra.create(ctx.body())
    except TargetClosed as exc:
        refused = exc.code not in (None, 1006)
        ctx.check(refused, "connections.limit", f"connection {limit + 1} dropped (no close frame)")
        ctx.note(f"connection {limit + 1}: accepted, then closed with {exc.code} {exc.reason!r}")
        return
    if exchange.request_error is not None:
        ctx.note(f"connection {limit + 1}: accepted, then refused: {exchange.request_error.code}")
        return
    ctx.check(
        False,
        "connections.limit",
        f"connection {limit + 1} was served ({exchange.terminal_type}) past the declared limit "
        f"of {limit}",
    )


async def connect_when_freed(ctx: CaseContext) -> Conn:
    """A new connection once the closed one's place is free (a server may take a moment to see
    the close): tried for up to the event timeout."""
    deadline = asyncio.get_running_loop().time() + ctx.event_timeout_s
    while True:
        try:
            return await ctx.connect()
        except HttpStatusError as exc:
            if asyncio.get_running_loop().time() >= deadline:
                ctx.fail("connections.freed", f"still refused after a close: HTTP {exc.status}")
            await asyncio.sleep(0.1)
