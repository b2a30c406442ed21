"""Handshake and transport: PROTOCOL.md §1 (upgrade, auth, headers), §3.1 (framing), §4.3
(binary frames, close behaviour). RFC 6455 basics the protocol relies on (ping, close)."""

from __future__ import annotations

import json

from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext
from harness.transport.failures import HttpStatusError, TargetClosed, TargetTimeout

REFUSAL_CLOSE_CODES = (1003, 1007, 1008)  # unsupported data, invalid payload, policy
NO_CLOSE_FRAME = (None, 1006)  # the TCP connection dropped: no close frame was sent


@case(
    "1.handshake.upgrade",
    level="MUST",
    category="handshake",
    title="an upgrade with a bearer key, no subprotocol and no OpenAI-Beta gets 101 and serves",
    rules=("handshake.upgrade", "handshake.subprotocol", "handshake.beta_header"),
)
async def test_upgrade(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    selected = conn.client.connection.subprotocol
    ctx.check(selected is None, "handshake.subprotocol", f"server selected subprotocol {selected}")
    ctx.expect_completed(await conn.create(ctx.body()), "handshake.upgrade")


@case(
    "1.handshake.beta-header",
    level="MUST",
    category="handshake",
    title="OpenAI-Beta: responses_websockets=2026-02-06 on the upgrade is accepted",
    rules=("handshake.beta_header",),
)
async def test_beta_header_accepted(ctx: CaseContext) -> None:
    conn = await ctx.connect(beta_header=True)
    ctx.expect_completed(await conn.create(ctx.body()), "handshake.beta_header")


@case(
    "1.handshake.sdk-headers",
    level="MUST",
    category="handshake",
    title="the headers openai-python sends (accept, content-type, x-stainless-*) are accepted",
    rules=("handshake.upgrade",),
)
async def test_sdk_headers(ctx: CaseContext) -> None:
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "X-Stainless-Lang": "python",
        "X-Stainless-Package-Version": "3.57.0",
    }
    conn = await ctx.connect(extra_headers=headers)
    ctx.expect_completed(await conn.create(ctx.body()), "handshake.upgrade")


async def _refused(ctx: CaseContext, auth: str) -> HttpStatusError | None:
    try:
        conn = await ctx.connect(auth="none" if auth == "none" else "wrong")
    except HttpStatusError as exc:
        return exc
    await conn.close()
    return None


@case(
    "1.auth.missing-key",
    level="MUST",
    category="handshake",
    title="an upgrade without Authorization is refused with 401 before the upgrade",
    rules=("auth.before_upgrade",),
    requires=("auth",),
)
async def test_missing_key(ctx: CaseContext) -> None:
    refused = await _refused(ctx, "none")
    if refused is None:
        ctx.fail("auth.before_upgrade", "the upgrade without a key was accepted (101)")
    ctx.check(refused.status == 401, "auth.before_upgrade", f"refused with {refused.status}")


@case(
    "1.auth.wrong-key",
    level="MUST",
    category="handshake",
    title="an upgrade with a wrong bearer key is refused with 401 before the upgrade",
    rules=("auth.before_upgrade",),
    requires=("auth",),
)
async def test_wrong_key(ctx: CaseContext) -> None:
    refused = await _refused(ctx, "wrong")
    if refused is None:
        ctx.fail("auth.before_upgrade", "the upgrade with a wrong key was accepted (101)")
    ctx.check(refused.status == 401, "auth.before_upgrade", f"refused with {refused.status}")


@case(
    "1.auth.error-body",
    level="SHOULD",
    category="handshake",
    title="the 401 refusal carries a JSON body {error: {type, code, message, param}}",
    rules=("auth.error_body",),
    requires=("auth",),
)
async def test_auth_error_body(ctx: CaseContext) -> None:
    refused = await _refused(ctx, "wrong")
    if refused is None:
        ctx.fail("auth.error_body", "the upgrade with a wrong key was accepted (101)")
    try:
        body = json.loads(refused.body)
    except ValueError:
        ctx.fail("auth.error_body", f"the 401 body is not JSON: {refused.body[:100]!r}")
    error = body.get("error") if isinstance(body, dict) else None
    ctx.check(
        isinstance(error, dict) and {"type", "message"} <= error.keys(),
        "auth.error_body",
        f"the 401 body has no error object with type and message: {body}",
    )


@case(
    "1.ws.ping",
    level="MUST",
    category="handshake",
    title="a WebSocket ping is answered with a pong, also between responses",
    rules=("ws.ping",),
)
async def test_ping(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await conn.client.ping(ctx.event_timeout_s)
    ctx.expect_completed(await conn.create(ctx.body()), "case.expectation")
    await conn.client.ping(ctx.event_timeout_s)


@case(
    "1.ws.close-handshake",
    level="MUST",
    category="handshake",
    title="a client close (1000) on an idle socket is answered with a close frame",
    rules=("ws.close_handshake",),
)
async def test_close_handshake(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    ctx.expect_completed(await conn.create(ctx.body()), "case.expectation")
    await conn.close()
    ctx.check(
        conn.client.close_received is not None, "ws.close_handshake", "no close frame came back"
    )


@case(
    "3.1.framing.text-json",
    level="MUST",
    category="handshake",
    title="every server event is one JSON object in one text frame (no SSE prefixes, no [DONE])",
    rules=("transport.garbage",),
)
async def test_text_frames(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    ctx.expect_completed(await conn.create(ctx.body()), "case.expectation")
    ctx.expect_completed(await conn.create(ctx.tool_body()), "case.expectation")


@case(
    "4.3.binary.refused",
    level="MUST",
    category="handshake",
    title="a binary frame from the client is refused with an error event and/or a close",
    rules=("ws.binary_refused",),
)
async def test_binary_refused(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await conn.send_bytes(json.dumps(ctx.body()).encode())
    try:
        timed = await conn.next_event()
    except TargetClosed as exc:
        judge_close_after_binary(ctx, exc.code, exc.reason, "with no error event")
        return
    if not ctx.check(
        timed.type == "error",
        "ws.binary_refused",
        f"the binary frame was answered with {timed.type}, not an error",
        event=timed.event,
    ):
        return
    try:  # an error event followed by a dropped connection is a crash, not a refusal
        code, reason = await conn.wait_closed(timeout_s=min(1.0, ctx.event_timeout_s))
    except TargetClosed as exc:
        code, reason = exc.code, exc.reason
    except TargetTimeout:
        return  # the error event, socket open: a refusal
    judge_close_after_binary(ctx, code, reason, "after the error event")


def judge_close_after_binary(ctx: CaseContext, code: int | None, reason: str, when: str) -> None:
    """A refusal closes with a close frame; 1006 (no close frame: the TCP connection dropped)
    means the target broke. Close codes are not documented (PROTOCOL.md §4.3): any code in a
    clean close frame is a refusal here, one outside the suggested 1003, 1007, 1008 is a note
    (4.3.binary.close-1003 judges the code)."""
    if code not in NO_CLOSE_FRAME:
        suggested = (
            ""
            if code in REFUSAL_CLOSE_CODES
            else (
                f" (a clean close, so a refusal; {', '.join(map(str, REFUSAL_CLOSE_CODES))} would "
                "say why, and close codes are not documented)"
            )
        )
        ctx.note(f"closed {when} with {code} {reason!r}: a refusal{suggested}")
        return
    ctx.check(
        False,
        "ws.binary_refused",
        f"closed {when} with 1006 (no close frame: the connection dropped): a crash, not a "
        f"refusal (a refusal is an error event and/or a close frame)",
    )


@case(
    "4.3.binary.close-1003",
    level="MAY",
    category="handshake",
    title="the close after a binary frame uses code 1003 (unsupported data)",
    rules=("ws.binary_close_code",),
)
async def test_binary_close_code(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    await conn.send_bytes(b"\x00\x01\x02")
    try:
        code, reason = await conn.wait_closed()
    except TargetClosed as exc:
        code, reason = exc.code, exc.reason
    except TargetTimeout:
        ctx.inform("the socket stayed open after a binary frame")
        return
    ctx.check(code == 1003, "ws.binary_close_code", f"closed with {code} {reason!r}")


@case(
    "4.3.close.isolation",
    level="MUST",
    category="handshake",
    title="a client dropping mid-stream does not disturb other connections",
    rules=("ws.isolation",),
)
async def test_isolation(ctx: CaseContext) -> None:
    first = await ctx.connect()
    await first.send(ctx.body(bodies.LONG_PROMPT, max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS))
    await first.next_event()
    first.client.connection.transport.abort()
    ctx.log.note(first.label, "transport aborted by the harness (client vanished mid-stream)")
    second = await ctx.connect()
    ctx.expect_completed(await second.create(ctx.body()), "ws.isolation", "the next connection")
    third = await ctx.connect()
    ctx.expect_completed(await third.create(ctx.body()), "ws.isolation", "one more connection")
