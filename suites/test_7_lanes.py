"""Named lanes (`stream_id`): PROTOCOL.md §2.1 (the field), §4.2 (`invalid_stream_id`,
`websocket_stream_limit_reached`), §5.1-5.2 (per-lane FIFO, concurrent lanes, 16 active responses
with extras queued, 32 named lanes with the default lane not counted, cross-lane forks) and §7
item 13. Every case needs the declared `lanes` capability; the limit cases also read
`limits.max_lanes` (default 32, as documented upstream).

Responses of different lanes interleave on one socket, so these cases read with
`Conn.lanes()` (every event in arrival order, filed under its `stream_id`) instead of one
exchange at a time, and judge order by arrival position, never by timestamps.
"""

from __future__ import annotations

from harness.conformance.judges.fifo import order_fields
from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext, Conn, LaneAnswer, LaneTraffic
from harness.conformance.targets.profile import DOCUMENTED_MAX_LANES
from harness.transport.failures import TargetTimeout

ACTIVE_LIMIT = 16  # responses generating at once per connection; extras are queued (§5.2)
STREAM_LIMIT = "websocket_stream_limit_reached"
MALFORMED = {"empty": "", "a space": " ", "257 characters long": "a" * 257}


async def read_answers(ctx: CaseContext, traffic: LaneTraffic, count: int, what: str) -> None:
    """Read `count` answers; a create never answered fails the case with what each lane got."""
    try:
        await traffic.read_answers(count)
    except TargetTimeout:
        got = len(traffic.answers)
        ctx.fail(
            "queue.no_drop", f"{what}: {got} of {count} creates answered ({traffic.summary()})"
        )


def refusals(answers: list[LaneAnswer], limit: int = 5) -> str:
    """The refused creates, for a finding: `lane: error 400 code, ...` (the first few)."""
    refused = [f"{a.lane or '(default)'}: {a.describe()}" for a in answers if a.error]
    more = f" and {len(refused) - limit} more" if len(refused) > limit else ""
    return ", ".join(refused[:limit]) + more


def expect_served(ctx: CaseContext, traffic: LaneTraffic) -> None:
    """Every create read so far was served (none refused); else the case cannot judge order."""
    if any(a.error is not None for a in traffic.answers):
        ctx.fail("case.expectation", f"refused: {refusals(traffic.answers)}")


# -- the stream_id field ------------------------------------------------------------------------
@case(
    "5.2.lanes.stream-id-echo",
    level="MUST",
    category="lanes",
    title="every event of a create with stream_id carries that stream_id",
    rules=("lanes.echo",),
    requires=("lanes",),
)
async def test_lane_echo(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(stream_id="wsmode-lane.1"))
    ctx.expect_completed(exchange, "lanes.echo")
    missing = [t.type for t in exchange.events if t.event.get("stream_id") != "wsmode-lane.1"]
    ctx.check(not missing, "lanes.echo", f"events without the lane's stream_id: {missing[:5]}")


@case(
    "5.2.lanes.default-no-stream-id",
    level="SHOULD",
    category="lanes",
    title="with a named lane in use, default-lane events (errors too) carry no stream_id",
    rules=("lanes.default_no_stream_id",),
    requires=("lanes",),
)
async def test_lane_default_no_stream_id(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    named = await conn.create(ctx.body(stream_id="wsmode-named"))
    ctx.expect_completed(named, "case.expectation", "the named lane's response")
    exchange = await conn.create(ctx.body())
    ctx.expect_completed(exchange, "case.expectation", "the default lane's response")
    missing_parent = "resp_wsmode_does_not_exist"
    refused = await conn.create(
        ctx.body([bodies.user_message("hi")], previous_response_id=missing_parent)
    )
    ctx.expect_request_error(refused, "case.expectation", what="an unknown previous_response_id")
    tagged = [t.type for t in (*exchange.events, *refused.events) if "stream_id" in t.event]
    ctx.check(not tagged, "lanes.default_no_stream_id", f"events with stream_id: {tagged[:5]}")


@case(
    "5.2.lanes.invalid-stream-id",
    level="MUST",
    category="lanes",
    title="an empty, a space or a 257-char stream_id: 400 invalid_stream_id, the socket stays open",
    rules=("lanes.invalid", "error.code", "error.status", "request.error_socket_open"),
    requires=("lanes",),
)
async def test_lane_invalid(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    for what, stream_id in MALFORMED.items():
        exchange = await conn.create(ctx.body(stream_id=stream_id))
        error = exchange.request_error
        if error is None:
            ctx.check(
                False,
                "lanes.invalid",
                f"a stream_id {what} was accepted ({exchange.terminal_type})",
            )
            continue
        ctx.check(
            error.code == "invalid_stream_id",
            "lanes.invalid",
            f"a stream_id {what}: error code {error.code!r}",
        )
        ctx.check(
            error.param == "stream_id", "error.code", f"a stream_id {what}: param {error.param!r}"
        )
        ctx.check(error.status == 400, "error.status", f"a stream_id {what}: status {error.status}")
    if not conn.is_open:
        ctx.fail(
            "request.error_socket_open", "the target closed the socket after invalid_stream_id"
        )
    longest = await conn.create(ctx.body(stream_id="a" * 256))
    ctx.expect_completed(
        longest, "lanes.invalid", "a 256-character stream_id (the longest allowed)"
    )
    await ctx.expect_usable(conn, what="after invalid_stream_id")


# -- concurrency and order ----------------------------------------------------------------------
async def overlap(
    ctx: CaseContext, long: dict[str, object], short: dict[str, object], rule_id: str
) -> None:
    """A long response on one lane, a short one on another, sent back to back: the second
    lane's first event (response.created) must arrive before the first lane's terminal."""
    first, second = "wsmode-long", "wsmode-short"
    conn = await ctx.connect()
    traffic = conn.lanes()
    await traffic.send({**long, "stream_id": first})
    await traffic.send({**short, "stream_id": second})
    await read_answers(ctx, traffic, 2, "two lanes")
    expect_served(ctx, traffic)
    first_end = next((a.position for a in traffic.answers_of(first)), None)
    second_start = traffic.first(second)  # response.created, unless the target omits it
    if first_end is None or second_start is None:
        ctx.fail(rule_id, f"cannot tell the lanes apart by stream_id ({traffic.summary()})")
    ctx.note(
        f"lane {second} started at event {second_start}, lane {first} ended at event {first_end} "
        f"of {len(traffic.arrivals)}"
    )
    ctx.check(
        second_start < first_end,
        rule_id,
        f"lane {second} started only after lane {first} ended: the lanes ran one after the other",
    )


@case(
    "5.2.lanes.concurrent",
    level="MUST",
    category="lanes",
    title="two lanes run concurrently: the second's response.created precedes the first's terminal",
    rules=("lanes.concurrent",),
    requires=("lanes", "scripted_output"),
)
async def test_lane_concurrent(ctx: CaseContext) -> None:
    script = [{"type": "message", "tokens": 1500}]
    long = ctx.body(
        bodies.long_prompt(),
        wsmode={"script": script},
        max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS,
    )
    short = ctx.body("Lane two.", wsmode={"script": [{"type": "message", "text": "Lane two."}]})
    await overlap(ctx, long, short, "lanes.concurrent")


@case(
    "5.2.lanes.concurrent-long-prompt",
    level="SHOULD",
    category="lanes",
    title="a long prompt and essay on one lane, a short one on another: the short one starts "
    "before the long one ends",
    rules=("lanes.concurrent",),
    requires=("lanes",),
)
async def test_lane_concurrent_long_prompt(ctx: CaseContext) -> None:
    # Without scripted output the overlap depends on how long the model takes: SHOULD.
    long = ctx.body(bodies.long_prompt(), max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS)
    await overlap(ctx, long, ctx.body(), "lanes.concurrent")


@case(
    "5.2.lanes.fifo",
    level="MUST",
    category="lanes",
    title="two creates on one lane (a third on another) run in order, never interleaved",
    rules=("lanes.fifo", "queue.no_drop", "conn.no_interleave"),
    requires=("lanes",),
)
async def test_lane_fifo(ctx: CaseContext) -> None:
    lane, other = "wsmode-fifo", "wsmode-other"
    conn = await ctx.connect()
    traffic = conn.lanes()
    long = ctx.body(bodies.long_prompt(), max_output_tokens=bodies.LONG_ANSWER_MAX_TOKENS)
    await traffic.send({**long, "stream_id": lane, **order_fields("1")})
    await traffic.send(ctx.body("Request 2: say hello.", stream_id=lane, **order_fields("2")))
    await traffic.send(ctx.body("Say hello.", stream_id=other, **order_fields("3")))
    await read_answers(ctx, traffic, 3, "three creates on two lanes")
    expect_served(ctx, traffic)
    traffic.judge_fifo(lane, ["1", "2"], "lanes.fifo")


@case(
    "5.2.lanes.active-limit-queued",
    level="MUST",
    category="lanes",
    title="creates on 20 lanes at once (16 may be active): every one completes, none refused",
    rules=("lanes.active_queued", "queue.no_drop"),
    requires=("lanes",),
)
async def test_lane_active_limit(ctx: CaseContext) -> None:
    count = min(ctx.profile.max_lanes or DOCUMENTED_MAX_LANES, ACTIVE_LIMIT + 4)
    if count <= ACTIVE_LIMIT:
        ctx.note(f"the declared lane limit ({count}) does not exceed {ACTIVE_LIMIT} active")
    lanes = [f"wsmode-active-{n}" for n in range(1, count + 1)]
    conn = await ctx.connect()
    traffic = conn.lanes()
    for n, lane in enumerate(lanes, 1):
        await traffic.send(ctx.body(f"Lane {n}: say hello.", stream_id=lane))
    await read_answers(ctx, traffic, count, f"{count} lanes")
    refused = [a for a in traffic.answers if a.error is not None]
    ctx.check(
        not refused,
        "lanes.active_queued",
        f"{len(refused)} of {count} lanes refused: {refusals(traffic.answers)}",
    )
    unanswered = sorted(set(lanes) - {a.lane for a in traffic.answers})
    ctx.check(not unanswered, "case.expectation", f"lanes without an answer: {unanswered[:5]}")
    ctx.note(f"at most {peak_in_flight(traffic)} responses were in flight at once")


def peak_in_flight(traffic: LaneTraffic) -> int:
    ends = {a.position for a in traffic.answers}
    running: set[str | None] = set()
    peak = 0
    for position, (lane, timed) in enumerate(traffic.arrivals):
        if timed.type == "response.created":
            running.add(lane)
            peak = max(peak, len(running))
        elif position in ends:
            running.discard(lane)
    return peak


# -- the named-lane limit -----------------------------------------------------------------------
@case(
    "5.2.lanes.limit",
    level="MUST",
    category="lanes",
    title="the named lane past the declared limit (default 32): websocket_stream_limit_reached, "
    "stream_id echoed",
    rules=("lanes.limit", "error.status", "request.error_socket_open"),
    requires=("lanes", "lane_limit"),
)
async def test_lane_limit(ctx: CaseContext) -> None:
    limit = ctx.profile.max_lanes
    lanes = [f"wsmode-limit-{n}" for n in range(1, limit + 2)]
    over = lanes[-1]
    conn = await ctx.connect()
    traffic = conn.lanes()
    for n, lane in enumerate(lanes, 1):
        await traffic.send(ctx.body(f"Lane {n}: say hello.", stream_id=lane))
    await read_answers(ctx, traffic, len(lanes), f"{len(lanes)} lanes")
    refused = [a for a in traffic.answers if a.error is not None]
    if not refused:
        ctx.fail("lanes.limit", f"{len(lanes)} named lanes were all served: no {STREAM_LIMIT}")
    ctx.check(
        len(refused) == 1,
        "lanes.limit",
        f"{len(refused)} of {len(lanes)} lanes refused, expected only {over}: "
        f"{refusals(traffic.answers)}",
    )
    answer = next((a for a in refused if a.lane == over), refused[0])
    error = answer.error
    assert error is not None
    ctx.check(error.code == STREAM_LIMIT, "lanes.limit", f"error code {error.code!r}")
    ctx.check(error.param == "stream_id", "lanes.limit", f"param {error.param!r}")
    ctx.check(
        answer.lane == over,
        "lanes.limit",
        f"the error's stream_id is {answer.lane!r}, not the lane over the limit ({over})",
    )
    ctx.check(error.status == 400, "error.status", f"status {error.status}")
    again = await conn.create(ctx.body("Again: say hello.", stream_id=lanes[0]))
    ctx.expect_completed(again, "request.error_socket_open", f"a create on {lanes[0]} afterwards")


@case(
    "5.2.lanes.default-not-counted",
    level="MUST",
    category="lanes",
    title="with the default lane in use, the declared number of named lanes is still served",
    rules=("lanes.default_not_counted", "queue.no_drop"),
    requires=("lanes", "lane_limit"),
)
async def test_lane_default_not_counted(ctx: CaseContext) -> None:
    limit = ctx.profile.max_lanes
    conn = await ctx.connect()
    traffic = conn.lanes()
    await traffic.send(ctx.body("Default lane first: say hello."))
    await read_answers(ctx, traffic, 1, "the default lane")
    for n in range(1, limit + 1):
        await traffic.send(ctx.body(f"Lane {n}: say hello.", stream_id=f"wsmode-count-{n}"))
    await traffic.send(ctx.body("Default lane again: say hello."))
    await read_answers(ctx, traffic, limit + 2, f"the default lane and {limit} named lanes")
    refused = [a for a in traffic.answers if a.error is not None]
    ctx.check(
        not refused,
        "lanes.default_not_counted",
        f"with the default lane in use, {len(refused)} of {limit + 2} creates were refused: "
        f"{refusals(traffic.answers)}",
    )


# -- forks ----------------------------------------------------------------------------------------
SOURCE, FORK = "wsmode-source", "wsmode-fork"


async def parent_on_source_lane(ctx: CaseContext) -> tuple[Conn, str]:
    """A new connection and a store=false response on the source lane: the fork's parent."""
    conn = await ctx.connect()
    exchange = await conn.create(ctx.body(stream_id=SOURCE))
    ctx.expect_completed(exchange, "case.expectation", f"the parent on lane {SOURCE}")
    assert exchange.response_id is not None
    return conn, exchange.response_id


@case(
    "5.2.lanes.fork",
    level="MUST",
    category="lanes",
    title="store=false: a create on a new lane continues another lane's response (a fork)",
    rules=("lanes.fork", "continuation.echo"),
    requires=("lanes",),
)
async def test_lane_fork(ctx: CaseContext) -> None:
    conn, parent = await parent_on_source_lane(ctx)
    traffic = conn.lanes()
    fork = [bodies.user_message("A different direction, please.")]
    await traffic.send(ctx.body(fork, previous_response_id=parent, stream_id=FORK))
    # §5.2: with store=false, advance the source lane only once the fork is in progress.
    try:
        await traffic.read_until(
            lambda: bool(traffic.answers) or traffic.first(FORK, "response.in_progress") is not None
        )
    except TargetTimeout:
        ctx.fail("lanes.fork", "the fork neither started nor was answered")
    advance = [bodies.user_message("Go on.")]
    await traffic.send(ctx.body(advance, previous_response_id=parent, stream_id=SOURCE))
    await read_answers(ctx, traffic, 2, "the fork and the source lane")
    for lane, what in ((FORK, "the fork"), (SOURCE, "the source lane, advanced after the fork")):
        got = traffic.answers_of(lane)
        ctx.check(
            bool(got) and got[0].completed,
            "lanes.fork",
            f"{what} from {parent} ended with {got[0].describe() if got else 'nothing'} "
            f"({traffic.summary()})",
        )
    forked = traffic.answers_of(FORK)
    if forked and forked[0].completed:
        echoed = forked[0].response.get("previous_response_id")
        ctx.check(echoed == parent, "continuation.echo", f"the fork echoes {echoed!r}")


@case(
    "5.2.lanes.fork-error-keeps-parent",
    level="MUST",
    category="lanes",
    title="an errored cross-lane fork keeps the shared parent: its own lane still continues",
    rules=("lanes.fork_error_keeps_parent", "request.invalid_input"),
    requires=("lanes",),
)
async def test_lane_fork_error(ctx: CaseContext) -> None:
    conn, parent = await parent_on_source_lane(ctx)
    bad = ctx.body([bodies.invalid_item()], previous_response_id=parent, stream_id=FORK)
    failed = await conn.create(bad)
    ctx.expect_request_error(
        failed, "request.invalid_input", status=400, what="a fork with an invalid item"
    )
    item = [bodies.user_message("Go on.")]
    again = await conn.create(ctx.body(item, previous_response_id=parent, stream_id=SOURCE))
    error = again.request_error
    ctx.check(
        error is None and again.ok,
        "lanes.fork_error_keeps_parent",
        f"after the errored fork, lane {SOURCE} could not continue from {parent}: "
        + (f"error {error.code}" if error else str(again.terminal_type)),
    )
