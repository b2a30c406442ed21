"""HTTP / SSE parity: PROTOCOL.md §3.1. WebSocket mode reuses the SSE event model, so the same
request over `POST /v1/responses` (stream:true) must follow the same grammar; non-streaming JSON,
retrieval of stored responses and HTTP errors complete the picture."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from harness.conformance.judges.case_exchange import answered
from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext
from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.events import TERMINAL_TYPES

STREAM_RULES = (
    "seq.start",
    "seq.contiguous",
    "lifecycle.first_event",
    "lifecycle.order",
    "item.grammar",
    "item.index_order",
    "item.unknown_index",
    "part.index_order",
    "text.done_matches_deltas",
    "arguments.done_matches_deltas",
    "item.done_matches",
    "event.schema",
    "response.schema",
    "response.id_stable",
    "usage.present",
    "terminal.unfinished_items",
    "terminal.output_matches",
)


def shape(types: list[str]) -> list[str]:
    """The event types with runs of the same delta collapsed: the stream's structure."""
    return [t for t, _ in itertools.groupby(types)]


def expect_sse_done(ctx: CaseContext, status: int, accumulator: ResponseAccumulator) -> None:
    if status != 200:
        ctx.fail("sse.content_type", f"the streaming POST answered HTTP {status}")
    capped = accumulator.terminal_type == "response.incomplete" and answered(accumulator.response)
    ctx.check(
        accumulator.terminal_type == "response.completed" or capped,
        "case.expectation",
        f"the SSE stream ended with {accumulator.terminal_type or 'no terminal'}",
    )


@case(
    "3.1.sse.content-type",
    level="MUST",
    category="http",
    title="POST /responses with stream:true answers 200 text/event-stream",
    rules=("sse.content_type",),
    requires=("http",),
)
async def test_sse_content_type(ctx: CaseContext) -> None:
    stream, _ = await ctx.sse(ctx.body())
    ctx.check(stream.status == 200, "sse.content_type", f"HTTP {stream.status}")
    ctx.check(
        stream.content_type.startswith("text/event-stream"),
        "sse.content_type",
        f"content-type {stream.content_type!r}",
    )


@case(
    "3.1.sse.grammar-text",
    level="MUST",
    category="http",
    title="a text response over SSE follows the same grammar as over WebSocket",
    rules=STREAM_RULES,
    requires=("http",),
)
async def test_sse_text(ctx: CaseContext) -> None:
    stream, accumulator = await ctx.sse(ctx.body())
    expect_sse_done(ctx, stream.status, accumulator)


@case(
    "3.1.sse.grammar-function-call",
    level="MUST",
    category="http",
    title="a function-call response over SSE follows the same grammar as over WebSocket",
    rules=STREAM_RULES,
    requires=("http",),
    setups=("tool_call",),
)
async def test_sse_function_call(ctx: CaseContext) -> None:
    stream, accumulator = await ctx.sse(ctx.tool_body())
    expect_sse_done(ctx, stream.status, accumulator)
    ctx.precondition(
        bool(accumulator.function_calls()),
        "tool_choice named get_weather: no function call",
        setup="tool_call",
    )


@case(
    "3.1.sse.event-name",
    level="SHOULD",
    category="http",
    title="each SSE block's `event:` line names the type its data carries",
    rules=("sse.event_name",),
    requires=("http",),
)
async def test_sse_event_name(ctx: CaseContext) -> None:
    stream, _ = await ctx.sse(ctx.body())
    wrong = [
        (name, timed.type)
        for name, timed in zip(stream.event_names, stream.events, strict=True)
        if name != timed.type
    ]
    ctx.check(not wrong, "sse.event_name", f"event: lines that differ from the type: {wrong[:3]}")


@case(
    "3.1.sse.no-done",
    level="SHOULD",
    category="http",
    title="the SSE stream ends after the terminal event, without a [DONE] sentinel",
    rules=("sse.no_done",),
    requires=("http",),
)
async def test_sse_no_done(ctx: CaseContext) -> None:
    stream, _ = await ctx.sse(ctx.body())
    ctx.check(not stream.saw_done, "sse.no_done", "the stream carried data: [DONE]")
    last = stream.events[-1].type if stream.events else None
    ctx.check(
        last in TERMINAL_TYPES,
        "sse.no_done",
        f"the stream's last event is {last}",
    )


@case(
    "3.1.sse.sdk",
    level="MUST",
    category="http",
    title="openai-python's parser and accumulator accept the SSE stream",
    rules=("sdk.accumulate", "sdk.event_model"),
    requires=("http",),
)
async def test_sse_sdk(ctx: CaseContext) -> None:
    for body in (ctx.body(), ctx.tool_body()):
        stream, _ = await ctx.sse(body)
        ctx.sdk_check(stream.events)


@case(
    "3.1.sse.parity-with-ws",
    level="SHOULD",
    category="http",
    title="the same request streams the same event structure over WebSocket and SSE",
    rules=("parity.shape",),
    requires=("http",),
)
async def test_parity(ctx: CaseContext) -> None:
    body = ctx.tool_body()
    conn = await ctx.connect()
    ws = await conn.create(body)
    ctx.expect_completed(ws, "case.expectation", "the WebSocket response")
    stream, _ = await ctx.sse(body)
    ws_shape = shape([t.type for t in ws.events])
    sse_shape = shape([t.type for t in stream.events])
    ctx.check(
        ws_shape == sse_shape,
        "parity.shape",
        f"WebSocket {ws_shape} vs SSE {sse_shape}",
    )


@case(
    "3.1.http.json",
    level="MUST",
    category="http",
    title="POST /responses without stream returns the completed Response object as JSON",
    rules=("http.json_response",),
    requires=("http",),
)
async def test_http_json(ctx: CaseContext) -> None:
    reply = await ctx.http().request("POST", "/responses", ctx.body())
    payload: Any = reply.json()
    ctx.check(reply.status == 200, "http.json_response", f"HTTP {reply.status}")
    if not isinstance(payload, dict):
        ctx.fail("http.json_response", "the body is not a JSON object")
    ctx.check(payload.get("object") == "response", "http.json_response", "object is not 'response'")
    ctx.check(answered(payload), "http.json_response", f"{payload.get('status')}")
    ctx.check(bool(payload.get("output")), "http.json_response", "output is empty")
    usage = payload.get("usage") or {}
    ctx.check("total_tokens" in usage, "http.json_response", "no usage")


_RATE_LIMIT_HEADERS = (
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
)


@case(
    "3.1.http.request-id",
    level="SHOULD",
    category="http",
    title="HTTP answers, errors too, carry x-request-id (and the API's processing and rate-limit "
    "headers)",
    rules=("http.request_id", "http.api_headers"),
    requires=("http",),
)
async def test_http_request_id(ctx: CaseContext) -> None:
    created = await ctx.http().request("POST", "/responses", ctx.body())
    refused = await ctx.http().request("POST", "/responses", ctx.body(temperature="hot"))
    for what, reply in (("a create", created), ("a refused create", refused)):
        request_id = reply.headers.get("x-request-id", "")
        ctx.check(
            request_id.startswith("req_"),
            "http.request_id",
            f"{what} (HTTP {reply.status}): x-request-id is {request_id or 'missing'!r}",
        )
    ids = {created.headers.get("x-request-id"), refused.headers.get("x-request-id")}
    ctx.check(len(ids) == 2, "http.request_id", "two requests answered with one x-request-id")
    processing = created.headers.get("openai-processing-ms", "")
    ctx.check(processing.isdigit(), "http.api_headers", f"openai-processing-ms {processing!r}")
    missing = [name for name in _RATE_LIMIT_HEADERS if name not in created.headers]
    ctx.check(not missing, "http.api_headers", f"missing {', '.join(missing)}")


async def retrieve_and_compare(ctx: CaseContext, response_id: str, output_ids: list[Any]) -> None:
    reply = await ctx.http().request("GET", f"/responses/{response_id}")
    payload: Any = reply.json()
    if reply.status != 200 or not isinstance(payload, dict):
        ctx.fail("http.retrieve", f"GET /responses/{response_id} answered HTTP {reply.status}")
    ctx.check(payload.get("id") == response_id, "http.retrieve", f"id {payload.get('id')!r}")
    ctx.check(answered(payload), "http.retrieve", f"{payload.get('status')}")
    got = [i.get("id") for i in payload.get("output") or [] if isinstance(i, dict)]
    ctx.check(got == output_ids, "http.retrieve", f"output ids {got}, streamed {output_ids}")


@case(
    "3.1.http.retrieve-ws-stored",
    level="MUST",
    category="http",
    title="GET /responses/{id} returns a store=true response created over WebSocket",
    rules=("http.retrieve",),
    requires=("http", "store"),
)
async def test_retrieve_ws(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(store=True))
    final = ctx.expect_completed(exchange, "case.expectation")
    ids = [i.get("id") for i in final.get("output") or []]
    await retrieve_and_compare(ctx, str(exchange.response_id), ids)


@case(
    "3.1.http.retrieve-http-stored",
    level="MUST",
    category="http",
    title="GET /responses/{id} returns a store=true response created over HTTP",
    rules=("http.retrieve",),
    requires=("http", "store"),
)
async def test_retrieve_http(ctx: CaseContext) -> None:
    reply = await ctx.http().request("POST", "/responses", ctx.body(store=True))
    payload: Any = reply.json()
    if reply.status != 200 or not isinstance(payload, dict):
        ctx.fail("http.json_response", f"POST /responses answered HTTP {reply.status}")
    ids = [i.get("id") for i in payload.get("output") or [] if isinstance(i, dict)]
    await retrieve_and_compare(ctx, str(payload.get("id")), ids)


@case(
    "3.1.http.error-shape",
    level="MUST",
    category="http",
    title="an HTTP error is a 4xx with {error: {type, code, message, param}} (not found: 400)",
    rules=("http.error_shape",),
    requires=("http",),
)
async def test_http_error(ctx: CaseContext) -> None:
    body = ctx.body([bodies.user_message("hi")], previous_response_id="resp_wsmode_does_not_exist")
    reply = await ctx.http().request("POST", "/responses", body)
    payload: Any = reply.json()
    ctx.check(reply.status == 400, "http.error_shape", f"HTTP {reply.status}")
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        ctx.fail("http.error_shape", f"the body has no error object: {reply.body[:200]!r}")
    missing = [k for k in ("type", "code", "message", "param") if k not in error]
    ctx.check(not missing, "http.error_shape", f"error object lacks {missing}")
    ctx.check(
        error.get("code") == "previous_response_not_found",
        "http.error_shape",
        f"code {error.get('code')!r}",
    )


@case(
    "3.1.http.auth",
    level="MUST",
    category="http",
    title="an HTTP request without a valid key gets 401",
    rules=("http.auth",),
    requires=("http", "auth"),
)
async def test_http_auth(ctx: CaseContext) -> None:
    reply = await ctx.http(auth="wrong").request("POST", "/responses", ctx.body())
    ctx.check(reply.status == 401, "http.auth", f"HTTP {reply.status} with a wrong key")


def _sse_data(body: bytes) -> list[dict[str, Any]]:
    events = []
    for line in body.decode("utf-8", "replace").splitlines():
        if line.startswith("data: ") and line[6:].strip() != "[DONE]":
            events.append(json.loads(line[6:]))
    return events


@case(
    "5.5.background.lifecycle",
    level="SHOULD",
    category="http",
    title="background:true over HTTP is queued at once, polled to its end, resumed with "
    "starting_after, and cancel answers its state",
    rules=("http.background",),
    requires=("http", "store"),
)
async def test_background_lifecycle(ctx: CaseContext) -> None:
    http = ctx.http()
    body = ctx.body(store=True, background=True)
    created: Any = (await http.request("POST", "/responses", body)).json()
    if not isinstance(created, dict) or not isinstance(created.get("id"), str):
        ctx.fail("http.background", f"the create answered {created!r:.160}")
    ctx.check(
        created.get("status") in ("queued", "in_progress") and created.get("background") is True,
        "http.background",
        f"the create answered status {created.get('status')!r}, background "
        f"{created.get('background')!r} (expected queued/in_progress, true)",
    )
    response_id = created["id"]
    status = created.get("status")
    for _ in range(100):
        polled: Any = (await http.request("GET", f"/responses/{response_id}")).json()
        status = polled.get("status") if isinstance(polled, dict) else None
        if status not in ("queued", "in_progress"):
            break
        await asyncio.sleep(0.1)
    # incomplete: cut at the short answer's max_output_tokens, an answer all the same
    ctx.check(
        status in ("completed", "incomplete"), "http.background", f"polled to status {status!r}"
    )
    replay = await http.request("GET", f"/responses/{response_id}?stream=true&starting_after=1")
    events = _sse_data(replay.body) if replay.status == 200 else []
    numbers = [e.get("sequence_number") for e in events]
    ctx.check(
        bool(numbers) and numbers[0] == 2 and numbers == list(range(2, 2 + len(numbers))),
        "http.background",
        f"the resumed stream (HTTP {replay.status}) started at {numbers[:1] or 'nothing'}",
    )
    cancel = await http.request("POST", f"/responses/{response_id}/cancel")
    answer: Any = cancel.json()
    ctx.check(
        cancel.status == 200 and isinstance(answer, dict) and answer.get("id") == response_id,
        "http.background",
        f"cancel answered HTTP {cancel.status}",
    )
