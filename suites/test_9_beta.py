"""The 2026 beta client events, PROTOCOL.md §2.2: steering (`response.steer`) and multi-agent
injection (`response.inject`, `OpenAI-Beta: responses_multi_agent=v1`).

Every case but the last needs a declared capability (`steer`, `multi_agent`): a target without
it is UNIMPLEMENTED, never FAIL. The last one (MAY) sends both events to any target and only
reports what came back: a beta reply from a target that does not declare the capability is
information, never a failure. Reply shapes are judged against the protocol core
(`beta.schema`) and openai-python's beta models (`sdk.event_model`).

A steer needs a response that is still running when it arrives: the create carries a long
prompt (about 60k tokens of filler; the lanes cases do the same), and the steer goes out as soon
as `response.created` arrives. A response that finished anyway makes the case PRECONDITION, not
FAIL. The multi-agent cases need no timing: the response waits for the inject, and a reply that
does not come within the event timeout is the deadlock of an inject queued behind its target.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext, Conn, PreconditionNotMet, describe_error
from harness.errors import TransportError
from harness.protocol.beta import (
    BETA_CLIENT_EVENT_TYPES,
    MULTI_AGENT_BETA_HEADER,
    agent_name,
    beta_target,
    is_beta_event,
)
from harness.protocol.errors import ApiError
from harness.protocol.events import TERMINAL_TYPES
from harness.transport.failures import TargetTimeout
from harness.transport.received import TimedEvent

MULTI_AGENT = {MULTI_AGENT_BETA_HEADER[0]: MULTI_AGENT_BETA_HEADER[1]}
STEER_TEXT = "Please keep the answer to one short sentence."
NO_SUCH_RESPONSE = "resp_wsmode_does_not_exist"
SHAPE_RULES = ("beta.schema", "sdk.event_model")
Predicate = Callable[[Mapping[str, Any]], bool]


# -- reading --------------------------------------------------------------------------------------
async def read_until(
    ctx: CaseContext, conn: Conn, done: Predicate, rule: str, what: str
) -> list[TimedEvent]:
    """Read (every event through the checker) until `done`; silence fails `rule`."""
    events: list[TimedEvent] = []
    while True:
        try:
            timed = await conn.next_event()
        except TargetTimeout:
            seen = ", ".join(t.type for t in events[-4:]) or "nothing"
            ctx.fail(rule, f"{what}: no answer within {ctx.event_timeout_s:g} s (last: {seen})")
        events.append(timed)
        if done(timed.event):
            return events


async def read_on(
    ctx: CaseContext,
    conn: Conn,
    seen: list[TimedEvent],
    done: Predicate,
    rule: str,
    what: str,
) -> list[TimedEvent]:
    """As `read_until`, unless an event already `seen` is the one awaited (then nothing)."""
    if any(done(t.event) for t in seen):
        return []
    return await read_until(ctx, conn, done, rule, what)


def reply_to(kind: str, target: str) -> Predicate:
    """A `response.steer.*` / `response.inject.*` reply about `target` (or an error event)."""
    return lambda e: (
        e.get("type") == "error"
        or (str(e.get("type", "")).startswith(kind + ".") and beta_target(e) == target)
    )


def terminal_of(response_id: str) -> Predicate:
    return lambda e: e.get("type") in TERMINAL_TYPES and _response_id(e) == response_id


def _response_id(event: Mapping[str, Any]) -> str | None:
    response = event.get("response")
    value = response.get("id") if isinstance(response, Mapping) else None
    return value if isinstance(value, str) else None


def refusal(event: Mapping[str, Any]) -> str:
    if event.get("type") == "error":
        return describe_error(ApiError.from_event(dict(event)))
    error = event.get("error")
    code = error.get("code") if isinstance(error, Mapping) else None
    return f"{event.get('type')} ({code or 'no code'})"


def failure_code(event: Mapping[str, Any]) -> str | None:
    error = event.get("error")
    code = error.get("code") if isinstance(error, Mapping) else None
    return code if isinstance(code, str) else None


# -- steering -------------------------------------------------------------------------------------
# Prompt sizes (tokens of filler) of the attempts to steer a running response: a target that
# finished before the steer arrived is tried again with a longer prefill.
STEER_ATTEMPTS = (20_000, 60_000, 120_000)


def long_answer(ctx: CaseContext) -> Callable[[str], dict[str, Any]]:
    """Bodies whose response must run to its own end (a steer or inject lands in flight): the
    long-answer cap, not the short one `ctx.body` sets."""
    return lambda prompt: ctx.body(prompt, max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS)


async def steer_running(
    ctx: CaseContext, conn: Conn, make_body: Callable[[str], dict[str, Any]]
) -> tuple[str, dict[str, Any], list[TimedEvent]]:
    """Send `make_body(long prompt)` and steer its response as soon as it is created; (its id,
    the accepted reply, every event so far). Responses that finished before the steer reached
    them are retried with a longer prompt, then the case is PRECONDITION."""
    events: list[TimedEvent] = []
    for tokens in STEER_ATTEMPTS:
        await conn.send(make_body(bodies.long_prompt(tokens)))
        start = await read_until(
            ctx,
            conn,
            lambda e: e.get("type") in ("response.created", "error"),
            "case.expectation",
            "the create",
        )
        events += start
        first = start[-1].event
        if first.get("type") == "error":
            ctx.fail("case.expectation", f"the create was refused: {refusal(first)}")
        steered = str(_response_id(first))
        steer = {"type": "response.steer", "previous_response_id": steered, "input": STEER_TEXT}
        await conn.send_event(steer)
        events += await read_until(
            ctx, conn, reply_to("response.steer", steered), "steer.answered", "the steer"
        )
        reply = events[-1].event
        if reply.get("type") == "response.steer.accepted":
            return steered, reply, events
        if failure_code(reply) != "response_already_completed":
            ctx.fail(
                "steer.answered", f"a steer on a running response was refused: {refusal(reply)}"
            )
        ctx.note(f"a {tokens}-token prompt's response finished before the steer reached it")
    ctx.precondition(False, "every response finished before the steer reached it")
    raise PreconditionNotMet("every response finished before the steer reached it")


def sdk_check_each(ctx: CaseContext, events: list[TimedEvent]) -> None:
    """The SDK's opinion of each response's events (with the replies about it), one by one."""
    groups: list[list[TimedEvent]] = []
    for timed in events:
        if timed.type == "response.created" or not groups:
            groups.append([])
        groups[-1].append(timed)
    for group in groups:
        ctx.sdk_check(group, beta=True)


@case(
    "2.2.steer.successor",
    level="MUST",
    category="beta",
    title="a steer on a running response is accepted; the response ends (completed, or incomplete "
    "with reason steered) and an automatic successor takes the input",
    rules=("steer.answered", "steer.outcome", "incomplete.reason", *SHAPE_RULES),
    requires=("steer",),
)
async def test_steer_successor(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    steered, accepted, events = await steer_running(ctx, conn, long_answer(ctx))
    steer = accepted.get("steer") or {}
    events += await read_on(
        ctx, conn, events, terminal_of(steered), "steer.outcome", "the steered response"
    )
    terminal = next(t.event for t in events if terminal_of(steered)(t.event))
    if terminal["type"] == "response.incomplete":
        reason = (terminal["response"].get("incomplete_details") or {}).get("reason")
        ctx.check(
            reason == "steered", "steer.outcome", f"steered response incomplete with {reason!r}"
        )
    else:
        ctx.check(
            terminal["type"] == "response.completed", "steer.outcome", f"ended {terminal['type']}"
        )

    def successor_or_reply(event: Mapping[str, Any]) -> bool:
        created = event.get("type") == "response.created"
        parent = (event.get("response") or {}).get("previous_response_id") if created else None
        return parent == steered or reply_to("response.steer", steered)(event)

    events += await read_until(ctx, conn, successor_or_reply, "steer.outcome", "the successor")
    started = events[-1].event
    if started["type"] != "response.created":
        ctx.fail(
            "steer.outcome",
            f"no successor for the accepted steer {steer.get('id')}: {refusal(started)}",
        )
    successor = str(_response_id(started))
    events += await read_until(ctx, conn, terminal_of(successor), "steer.outcome", "the successor")
    ctx.check(
        events[-1].type == "response.completed",
        "steer.outcome",
        f"the successor ended {events[-1].type}",
    )
    sdk_check_each(ctx, events)


@case(
    "2.2.steer.pending",
    level="MUST",
    category="beta",
    title="a steer on a response that stops for a client-owned tool call is reported pending "
    "after response.completed; the explicit continuation answering it completes",
    rules=("steer.answered", "steer.pending", *SHAPE_RULES),
    requires=("steer",),
)
async def test_steer_pending(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    tool = {
        "tools": [bodies.WEATHER_TOOL],
        "tool_choice": {"type": "function", "name": "get_weather"},
    }

    def make_body(prompt: str) -> dict[str, Any]:
        return ctx.body(f"{prompt}\n\n{bodies.WEATHER_PROMPT}", **tool)

    steered, accepted, events = await steer_running(ctx, conn, make_body)
    events += await read_on(
        ctx, conn, events, terminal_of(steered), "steer.pending", "the steered response"
    )
    ended = next(t for t in events if terminal_of(steered)(t.event))
    final = ended.event.get("response") or {}
    calls = [
        i
        for i in final.get("output") or []
        if isinstance(i, dict) and i.get("type") == "function_call"
    ]
    if ended.type != "response.completed" or not calls:
        ctx.precondition(False, f"the steered response ended {ended.type} without a call")
        raise PreconditionNotMet("the steered response made no call")
    events += await read_until(
        ctx, conn, reply_to("response.steer", steered), "steer.pending", "the pending steer"
    )
    pending = events[-1].event
    if pending["type"] != "response.steer.pending":
        ctx.fail(
            "steer.pending", f"a steer on a response that stopped for a call: {refusal(pending)}"
        )
    ctx.check(
        (pending.get("steer") or {}).get("id") == (accepted.get("steer") or {}).get("id"),
        "steer.pending",
        "response.steer.pending names another steer id than response.steer.accepted",
    )
    stubs = {s.get("call_id") for s in pending.get("required_input") or [] if isinstance(s, dict)}
    ctx.check(
        {c.get("call_id") for c in calls} <= stubs,
        "steer.pending",
        f"required_input {sorted(map(str, stubs))} does not name the calls it waits for",
    )
    answers = [bodies.function_output(str(c["call_id"])) for c in calls]
    exchange = await conn.create(ctx.body(answers, previous_response_id=steered))
    ctx.expect_completed(exchange, "steer.pending", "the continuation answering required_input")
    sdk_check_each(ctx, [*events, *exchange.events])


@case(
    "2.2.steer.failures",
    level="MUST",
    category="beta",
    title="a steer naming no response on the socket, or with a non-user input, gets "
    "response.steer.failed returning its input; the socket stays usable",
    rules=("steer.failed", "request.error_socket_open", *SHAPE_RULES),
    requires=("steer",),
)
async def test_steer_failures(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    seen: list[TimedEvent] = []
    for what, steer_input, codes in (
        ("a steer naming an unknown response", STEER_TEXT, {"response_not_found"}),
        (
            "a steer whose input is an assistant message",
            [{"type": "message", "role": "assistant", "content": "no"}],
            {"invalid_input", "response_not_found"},  # a target may look the target up first
        ),
    ):
        event = {
            "type": "response.steer",
            "previous_response_id": NO_SUCH_RESPONSE,
            "input": steer_input,
        }
        await conn.send_event(event)
        seen += await read_until(
            ctx, conn, reply_to("response.steer", NO_SUCH_RESPONSE), "steer.failed", what
        )
        reply = seen[-1].event
        if reply["type"] != "response.steer.failed":
            ctx.check(False, "steer.failed", f"{what}: answered with {refusal(reply)}")
            continue
        steer = reply.get("steer") or {}
        ctx.check(
            failure_code(reply) in codes, "steer.failed", f"{what}: code {failure_code(reply)!r}"
        )
        ctx.check(
            steer.get("input") == steer_input,
            "steer.failed",
            f"{what}: the input did not come back",
        )
        ctx.check(
            "id" not in steer or steer["id"] is None,
            "steer.failed",
            f"{what}: a steer id was allocated",
        )
    sdk_check_each(ctx, seen)
    await ctx.expect_usable(conn, what="after the failed steers")


COMPACTION = [{"type": "compaction", "compact_threshold": 200_000}]


@case(
    "2.2.steer.compaction-refused",
    level="MUST",
    category="beta",
    title="a steer on a running response created with context_management compaction gets "
    "response.steer.failed (steering_not_supported); the response runs on",
    rules=("steer.compaction_refused", *SHAPE_RULES),
    requires=("steer",),
)
async def test_steer_refused_on_compaction(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    seen: list[TimedEvent] = []
    for tokens in STEER_ATTEMPTS:
        body = long_answer(ctx)(bodies.long_prompt(tokens)) | {"context_management": COMPACTION}
        await conn.send(body)
        start = await read_until(
            ctx,
            conn,
            lambda e: e.get("type") in ("response.created", "error"),
            "case.expectation",
            "the create",
        )
        seen += start
        if start[-1].event.get("type") == "error":
            ctx.fail("case.expectation", f"the create was refused: {refusal(start[-1].event)}")
        target = str(_response_id(start[-1].event))
        steer = {"type": "response.steer", "previous_response_id": target, "input": STEER_TEXT}
        await conn.send_event(steer)
        seen += await read_until(
            ctx, conn, reply_to("response.steer", target), "steer.answered", "the steer"
        )
        reply = seen[-1].event
        seen += await read_on(ctx, conn, seen, terminal_of(target), "case.expectation", "its end")
        if failure_code(reply) == "response_already_completed":
            ctx.note(f"a {tokens}-token prompt's response finished before the steer reached it")
            continue
        ctx.check(
            reply.get("type") == "response.steer.failed",
            "steer.compaction_refused",
            f"the steer was answered with {reply.get('type')}",
        )
        code = failure_code(reply)
        if reply.get("type") == "response.steer.failed" and code != "steering_not_supported":
            ctx.note(f"refused with code {code!r} (the code set is open)")
        sdk_check_each(ctx, seen)
        return
    ctx.precondition(False, "every response finished before the steer reached it")


# -- multi-agent injection ------------------------------------------------------------------------
def multi_agent_body(ctx: CaseContext) -> dict[str, Any]:
    return ctx.tool_body(
        multi_agent={"enabled": True}, max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS
    )


def inject(response_id: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "response.inject", "response_id": response_id, "input": items}


async def waiting_response(
    ctx: CaseContext, conn: Conn
) -> tuple[str, dict[str, Any], list[TimedEvent]]:
    """Start a multi-agent response with a client-owned call; read until the call is done (the
    response now waits for its output): (response id, the call, the events)."""
    await conn.send(multi_agent_body(ctx))

    def call_done(event: Mapping[str, Any]) -> bool:
        item = event.get("item")
        done = event.get("type") == "response.output_item.done"
        return event.get("type") in (*TERMINAL_TYPES, "error") or (
            done and isinstance(item, Mapping) and item.get("type") == "function_call"
        )

    events = await read_until(ctx, conn, call_done, "case.expectation", "the multi-agent response")
    last = events[-1].event
    if last["type"] == "error":
        ctx.fail("case.expectation", f"the multi-agent create was refused: {refusal(last)}")
    if last["type"] in TERMINAL_TYPES:
        ctx.precondition(
            False, f"the multi-agent response ended ({last['type']}) without waiting for a call"
        )
        raise PreconditionNotMet("no client-owned call to answer")
    response_id = next((r for t in events if (r := _response_id(t.event))), None)
    return str(response_id), dict(last["item"]), events


async def complete_with(
    ctx: CaseContext, conn: Conn, response_id: str, items: list[dict[str, Any]], rule: str
) -> list[TimedEvent]:
    """Inject `items`, expect response.inject.created, then the response's completion."""
    await conn.send_event(inject(response_id, items))
    events = await read_until(
        ctx,
        conn,
        reply_to("response.inject", response_id),
        "inject.no_deadlock",
        "an inject while its target waits for that tool output (queued behind it?)",
    )
    reply = events[-1].event
    if reply["type"] != "response.inject.created":
        ctx.fail(rule, f"a valid inject into the waiting response: {refusal(reply)}")
    events += await read_until(
        ctx, conn, terminal_of(response_id), "inject.commit", "the resumed response"
    )
    ctx.check(
        events[-1].type == "response.completed", "inject.commit", f"it ended {events[-1].type}"
    )
    return events


@case(
    "2.2.inject.waiting",
    level="MUST",
    category="beta",
    title="an inject answering the call a multi-agent response waits for is answered at once "
    "(no deadlock) and committed; the response resumes and completes",
    rules=("inject.no_deadlock", "inject.commit", *SHAPE_RULES),
    requires=("multi_agent",),
)
async def test_inject_waiting(ctx: CaseContext) -> None:
    conn = await ctx.connect(extra_headers=MULTI_AGENT)
    response_id, call, events = await waiting_response(ctx, conn)
    events += await complete_with(
        ctx, conn, response_id, [bodies.function_output(call["call_id"])], "inject.commit"
    )
    sdk_check_each(ctx, events)


@case(
    "2.2.inject.atomic",
    level="MUST",
    category="beta",
    title="an inject with one invalid item fails as a whole: response.inject.failed returns its "
    "input, nothing is committed, the response still waits",
    rules=("inject.atomic", "inject.no_deadlock", "inject.commit", *SHAPE_RULES),
    requires=("multi_agent",),
)
async def test_inject_atomic(ctx: CaseContext) -> None:
    conn = await ctx.connect(extra_headers=MULTI_AGENT)
    response_id, call, events = await waiting_response(ctx, conn)
    call_id = str(call["call_id"])
    first = [bodies.function_output(call_id, "first try"), bodies.invalid_item()]
    await conn.send_event(inject(response_id, first))
    events += await read_until(
        ctx,
        conn,
        reply_to("response.inject", response_id),
        "inject.no_deadlock",
        "an inject while its target waits for that tool output (queued behind it?)",
    )
    reply = events[-1].event
    if reply["type"] != "response.inject.failed":
        ctx.fail("inject.atomic", f"an inject with an invalid item: {refusal(reply)}")
    ctx.check(
        reply.get("input") == first,
        "inject.atomic",
        "response.inject.failed did not return the input",
    )
    events += await complete_with(
        ctx, conn, response_id, [bodies.function_output(call_id, "second try")], "inject.atomic"
    )
    listed = [
        i
        for i in (events[-1].event["response"].get("output") or [])
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    ctx.check(
        all(i.get("output") != "first try" for i in listed),
        "inject.atomic",
        "the response lists the valid item of the failed inject: it was committed",
    )
    sdk_check_each(ctx, events)


@case(
    "2.2.inject.unknown-target",
    level="MUST",
    category="beta",
    title="an inject naming an unknown or a finished response gets response.inject.failed "
    "returning its input (response_not_found, response_already_completed)",
    rules=("inject.unknown_target", "inject.finished_code", *SHAPE_RULES),
    requires=("multi_agent",),
)
async def test_inject_unknown_target(ctx: CaseContext) -> None:
    conn = await ctx.connect(extra_headers=MULTI_AGENT)
    items = [bodies.function_output("call_wsmode_unknown")]
    await conn.send_event(inject(NO_SUCH_RESPONSE, items))
    events = await read_until(
        ctx,
        conn,
        reply_to("response.inject", NO_SUCH_RESPONSE),
        "inject.unknown_target",
        "an inject to an unknown response",
    )
    reply = events[-1].event
    ctx.check(
        reply["type"] == "response.inject.failed" and reply.get("input") == items,
        "inject.unknown_target",
        f"an inject to an unknown response: {refusal(reply)}, "
        f"input returned: {reply.get('input') == items}",
    )
    ctx.check(
        failure_code(reply) in (None, "response_not_found") or reply["type"] == "error",
        "inject.unknown_target",
        f"an inject to an unknown response: code {failure_code(reply)!r}",
    )
    response_id, call, more = await waiting_response(ctx, conn)
    events += more
    events += await complete_with(
        ctx, conn, response_id, [bodies.function_output(call["call_id"])], "inject.commit"
    )
    late = [bodies.function_output(str(call["call_id"]), "too late")]
    await conn.send_event(inject(response_id, late))
    events += await read_until(
        ctx,
        conn,
        reply_to("response.inject", response_id),
        "inject.unknown_target",
        "an inject to a finished response",
    )
    reply = events[-1].event
    ctx.check(
        reply["type"] == "response.inject.failed" and reply.get("input") == late,
        "inject.unknown_target",
        f"an inject to a finished response: {refusal(reply)}",
    )
    ctx.check(
        failure_code(reply) == "response_already_completed",
        "inject.finished_code",
        f"an inject to a finished response: code {failure_code(reply)!r}",
    )
    sdk_check_each(ctx, events)


@case(
    "2.2.agent.tagged",
    level="MUST",
    category="beta",
    title="a multi-agent response's stream, agent tags on events and items included, follows the "
    "grammar and the SDK's beta models (tags tolerated, never required)",
    rules=(
        "lifecycle.order",
        "lifecycle.after_terminal",
        "item.grammar",
        "item.index_order",
        "seq.contiguous",
        "event.schema",
        "terminal.output_matches",
        "sdk.accumulate",
        *SHAPE_RULES,
    ),
    requires=("multi_agent",),
)
async def test_agent_tagged(ctx: CaseContext) -> None:
    conn = await ctx.connect(extra_headers=MULTI_AGENT)
    response_id, call, events = await waiting_response(ctx, conn)
    events += await complete_with(
        ctx, conn, response_id, [bodies.function_output(call["call_id"])], "inject.commit"
    )
    tagged = sorted(
        {name for t in events if (name := agent_name(t.event) or agent_name(t.event.get("item")))}
    )
    ctx.note(f"agent tags seen: {', '.join(tagged) or 'none'}")
    sdk_check_each(ctx, events)


# -- any target -----------------------------------------------------------------------------------
@case(
    "2.2.beta.unknown-events",
    level="MAY",
    category="beta",
    title="a steer and an inject naming no response, sent to any target: what comes back is "
    "reported; a beta reply from a target without the capability is information, never a FAIL",
    rules=("beta.answered", "event.beta"),
)
async def test_beta_unknown_events(ctx: CaseContext) -> None:
    declared = [c for c in ("steer", "multi_agent") if ctx.profile.has(c)]
    conn = await ctx.connect()
    for event_type in sorted(BETA_CLIENT_EVENT_TYPES):
        target_field = "previous_response_id" if event_type == "response.steer" else "response_id"
        body = (
            [bodies.function_output("call_wsmode_unknown")]
            if event_type == "response.inject"
            else "hi"
        )
        try:
            await conn.send_event(
                {"type": event_type, target_field: NO_SUCH_RESPONSE, "input": body}
            )
            timed = await conn.next_event()
        except TransportError as exc:  # silence or a close: reported, never failed
            ctx.check(False, "beta.answered", f"{event_type}: {type(exc).__name__}: {exc}")
            return
        answer = timed.event
        kind = "a beta reply" if is_beta_event(answer) else "an answer"
        ctx.inform(
            f"{event_type} (capabilities declared: {', '.join(declared) or 'none'}): "
            f"{kind}, {refusal(answer)}"
        )
