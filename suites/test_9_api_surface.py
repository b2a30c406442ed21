"""The API surface around the stream, as clients meet it: the upgrade answers of PROTOCOL.md §1.1,
the input shapes of §2.1.1 and compaction (§5.4). Each rule names its evidence
(harness/conformance/model/rules.py); levels follow it: what rests on a client's behaviour and
gateways is SHOULD, what the SDK types and the peer suite (Open Responses) require is MUST.
"""

from __future__ import annotations

import json
from typing import Any

from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext
from harness.transport.failures import HttpStatusError

# A 1x1 PNG as a data URL: the inline image every image-taking model accepts.
PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQ"
    "DJ/pLvAAAAAElFTkSuQmCC"
)


def error_object(body: bytes) -> dict[str, Any] | None:
    """The `error` object of a JSON error body, or None."""
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    return error if isinstance(error, dict) and "message" in error else None


# -- upgrade answers (§1.1) ---------------------------------------------------------------------
@case(
    "1.1.upgrade.plain-get-426",
    level="SHOULD",
    category="handshake",
    title="a plain GET /responses without Upgrade is answered 426 with a JSON error body",
    rules=("upgrade.plain_get",),
    requires=("http",),
)
async def test_plain_get_426(ctx: CaseContext) -> None:
    reply = await ctx.http().request("GET", "/responses")
    ctx.check(
        reply.status == 426,
        "upgrade.plain_get",
        f"a plain GET was answered {reply.status}: codex falls back to HTTP at once only on 426",
    )
    ctx.check(
        error_object(reply.body) is not None,
        "upgrade.plain_get",
        f"the {reply.status} body is not a JSON error: {reply.body[:120]!r}",
    )


@case(
    "1.1.upgrade.disabled-426",
    level="SHOULD",
    category="handshake",
    title="with WebSocket mode off the upgrade is answered 426 with a JSON error body",
    rules=("upgrade.disabled",),
    requires=("ws_off",),
)
async def test_disabled_426(ctx: CaseContext) -> None:
    assert ctx.target.ws_off_url is not None  # `requires` says so
    try:
        conn = await ctx.connect(url=ctx.target.ws_off_url)
    except HttpStatusError as refused:
        ctx.check(
            refused.status == 426,
            "upgrade.disabled",
            f"the upgrade was refused with {refused.status}: codex retries five times "
            "(5-10 s) before it falls back on anything but 426",
        )
        ctx.check(
            error_object(refused.body) is not None,
            "upgrade.disabled",
            f"the {refused.status} body is not a JSON error: {refused.body[:120]!r}",
        )
        return
    await conn.close()
    ctx.fail("upgrade.disabled", "the endpoint declared WebSocket-off accepted the upgrade (101)")


# -- input shapes (§2.1.1) ----------------------------------------------------------------------
def text_part(kind: str, text: str) -> dict[str, Any]:
    return {"type": kind, "text": text}


MESSAGE_SHAPES: list[dict[str, Any]] = [
    {"type": "message", "role": "system", "content": "You answer in one short sentence."},
    {"role": "developer", "content": [text_part("input_text", "Never use lists.")]},
    {"role": "user", "content": "My name is Alice."},
    {"type": "message", "role": "assistant", "content": "Hello Alice! How can I help?"},
    {"type": "message", "role": "assistant", "phase": "commentary", "content": "Noting the name."},
    {
        "type": "message",
        "role": "assistant",
        "phase": "final_answer",
        "content": [text_part("output_text", "Nice to meet you.")],
    },
    {"type": "message", "role": "user", "content": [text_part("input_text", "What is my name?")]},
]


@case(
    "2.1.1.input.message-shapes",
    level="MUST",
    category="continuation",
    title="system, developer, user and assistant messages with string or part content and "
    "assistant phase are accepted",
    rules=("input.shapes",),
)
async def test_message_shapes(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(MESSAGE_SHAPES))
    ctx.expect_completed(exchange, "input.shapes", "the history of every message shape")


@case(
    "2.1.1.input.image-data-url",
    level="MUST",
    category="continuation",
    title="an input_image part with a base64 data URL is accepted",
    rules=("input.image",),
    requires=("image_input",),
)
async def test_image_data_url(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    content = [
        text_part("input_text", "What do you see? Answer in one sentence."),
        {"type": "input_image", "image_url": PNG, "detail": "low"},
    ]
    exchange = await conn.create(ctx.body([{"role": "user", "content": content}]))
    ctx.expect_completed(exchange, "input.image", "the image turn")


@case(
    "2.1.1.input.malformed-param",
    level="SHOULD",
    category="errors",
    title="a malformed item is refused 400 invalid_request_error with param naming the field",
    rules=("input.param",),
)
async def test_malformed_param(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    bad = [bodies.user_message("Hi."), {"role": "user", "content": [{"type": "input_text"}]}]
    exchange = await conn.create(ctx.body(bad))
    error = exchange.request_error
    if error is None:
        ctx.fail("input.param", f"an input_text part without text ended {exchange.terminal_type}")
    ctx.check(
        (error.status, error.type) == (400, "invalid_request_error"),
        "input.param",
        f"refused with {error.status} {error.type}",
    )
    ctx.check(
        error.param == "input[1].content[0].text",
        "input.param",
        f"param is {error.param!r}, not 'input[1].content[0].text'",
    )
    await ctx.expect_usable(conn, "input.param", "after the refused item")


# -- compaction (§5.4) --------------------------------------------------------------------------
HISTORY: list[dict[str, Any]] = [
    bodies.user_message("Remember the compaction code word: slate."),
    {"type": "message", "role": "assistant", "content": [text_part("output_text", "OK.")]},
    bodies.user_message("Compress this conversation for later continuation."),
]


async def compacted(ctx: CaseContext) -> dict[str, Any]:
    reply = await ctx.http().request(
        "POST", "/responses/compact", {"model": ctx.model, "input": HISTORY}
    )
    body = reply.json()
    if reply.status != 200 or not isinstance(body, dict):
        ctx.fail(
            "compact.shape",
            f"POST /responses/compact answered {reply.status}: {reply.body[:200]!r}",
        )
    return body


@case(
    "5.4.compact.shape",
    level="MUST",
    category="http",
    title="POST /responses/compact answers response.compaction: the user messages, then one "
    "compaction item, and usage",
    rules=("compact.shape",),
    requires=("compaction", "http"),
)
async def test_compact_shape(ctx: CaseContext) -> None:
    body = await compacted(ctx)
    ctx.check(
        body.get("object") == "response.compaction",
        "compact.shape",
        f"object {body.get('object')!r}",
    )
    for name, kind in (("id", str), ("created_at", int), ("usage", dict), ("output", list)):
        ctx.check(
            isinstance(body.get(name), kind), "compact.shape", f"{name} is {body.get(name)!r}"
        )
    output = [i for i in body.get("output") or [] if isinstance(i, dict)]
    last = output[-1] if output else {}
    ctx.check(
        last.get("type") == "compaction" and isinstance(last.get("encrypted_content"), str),
        "compact.shape",
        f"the output does not end with a compaction item: {[i.get('type') for i in output]}",
    )
    others = [
        i for i in output[:-1] if not (i.get("type") == "message" and i.get("role") == "user")
    ]
    ctx.check(not others, "compact.shape", f"non-user items before the compaction: {others[:2]}")


@case(
    "5.4.compact.missing-model",
    level="MUST",
    category="http",
    title="a compact request without model is refused 400 invalid_request_error",
    rules=("compact.missing_model",),
    requires=("compaction", "http"),
)
async def test_compact_missing_model(ctx: CaseContext) -> None:
    reply = await ctx.http().request("POST", "/responses/compact", {"input": HISTORY})
    error = error_object(reply.body) or {}
    ctx.check(reply.status == 400, "compact.missing_model", f"answered {reply.status}")
    ctx.check(
        error.get("type") == "invalid_request_error",
        "compact.missing_model",
        f"error {error or reply.body[:120]!r}",
    )


@case(
    "5.4.compact.new-chain",
    level="MUST",
    category="continuation",
    title="the compacted output starts a new WebSocket chain without previous_response_id",
    rules=("compact.new_chain",),
    requires=("compaction", "http"),
)
async def test_compact_new_chain(ctx: CaseContext) -> None:
    body = await compacted(ctx)
    follow_up = bodies.user_message("Continue from here. Reply with one short sentence.")
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body([*(body.get("output") or []), follow_up]))
    final = ctx.expect_completed(exchange, "compact.new_chain", "the turn after compaction")
    ctx.check(
        final.get("previous_response_id") is None,
        "compact.new_chain",
        f"the new chain reports previous_response_id {final.get('previous_response_id')!r}",
    )


# -- structured output (§3.4) -------------------------------------------------------------------
_TRIP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
    },
    "required": ["city", "days", "units"],
    "additionalProperties": False,
}
_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int}


def _schema_problems(document: Any) -> list[str]:
    """What makes `document` invalid against `_TRIP_SCHEMA` (its keywords only)."""
    if not isinstance(document, dict):
        return [f"not an object: {type(document).__name__}"]
    properties = _TRIP_SCHEMA["properties"]
    problems = [f"missing {name!r}" for name in _TRIP_SCHEMA["required"] if name not in document]
    problems += [f"unexpected {name!r}" for name in document if name not in properties]
    for name, rule in properties.items():
        value = document.get(name)
        if name not in document:
            continue
        if not isinstance(value, _TYPES[rule["type"]]) or isinstance(value, bool):
            problems.append(f"{name!r} is not a {rule['type']}")
        elif "enum" in rule and value not in rule["enum"]:
            problems.append(f"{name!r} is {value!r}, not one of {rule['enum']}")
    return problems


@case(
    "3.4.text.structured-output",
    level="SHOULD",
    category="events",
    title="text.format json_schema (strict) answers JSON valid against the schema; json_object "
    "answers a JSON object",
    rules=("output.structured",),
)
async def test_structured_output(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    formats: tuple[tuple[str, dict[str, Any]], ...] = (
        (
            "json_schema",
            {"type": "json_schema", "name": "trip", "schema": _TRIP_SCHEMA, "strict": True},
        ),
        ("json_object", {"type": "json_object"}),
    )
    for what, fmt in formats:
        prompt = "Plan a short trip and answer in JSON with the city, days and units."
        body = ctx.body(
            prompt, text={"format": fmt}, max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS
        )
        exchange = await conn.create(body)
        ctx.expect_completed(exchange, "case.expectation", what)
        output = (exchange.final_response or {}).get("output") or []
        texts = [
            part.get("text", "")
            for item in output
            if isinstance(item, dict) and item.get("type") == "message"
            for part in item.get("content") or []
            if isinstance(part, dict) and part.get("type") == "output_text"
        ]
        try:
            document = json.loads("".join(texts))
        except ValueError:
            ctx.check(False, "output.structured", f"{what}: the reply is not JSON: {texts!r:.120}")
            continue
        if what == "json_schema":
            problems = _schema_problems(document)
            ctx.check(not problems, "output.structured", f"{what}: {'; '.join(problems)}")
        else:
            ctx.check(isinstance(document, dict), "output.structured", f"{what}: not an object")
