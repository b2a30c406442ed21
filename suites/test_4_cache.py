"""The connection cache: PROTOCOL.md §5.1. The target declares its depth N (default 1, as
upstream) and optionally a byte bound; a `CacheTwin` (the protocol core's own LRU) predicts
what every continuation must resolve to, and each step is compared with the prediction."""

from __future__ import annotations

from harness.conformance.judges.cache_twin import CacheTwin
from harness.conformance.judges.case_exchange import CaseExchange
from harness.conformance.model.cases import case
from harness.conformance.runner import bodies
from harness.conformance.runner.context import CaseContext, Conn
from harness.protocol.cache import Resolution

NOT_FOUND = "previous_response_not_found"


async def new_chain(ctx: CaseContext, conn: Conn, twin: CacheTwin, n: int, *, store: bool) -> str:
    exchange = await conn.create(ctx.body(f"Chain {n}: say hello.", store=store))
    ctx.expect_completed(exchange, "case.expectation", f"new chain {n}")
    assert exchange.response_id is not None
    twin.on_completed(None, exchange.response_id, store=store)
    return exchange.response_id


async def continue_from(
    ctx: CaseContext,
    conn: Conn,
    twin: CacheTwin,
    parent: str,
    rule_id: str,
    *,
    store: bool,
    label: str,
) -> CaseExchange:
    """One continuation, judged against the twin's prediction; the twin then follows along."""
    expected = twin.predict(parent)
    before = twin.describe()
    item = bodies.user_message(f"Continue ({label}).")
    exchange = await conn.create(ctx.body([item], previous_response_id=parent, store=store))
    error = exchange.request_error
    if expected is Resolution.MISS:
        ctx.check(
            error is not None and error.code == NOT_FOUND,
            rule_id,
            f"{label}: expected previous_response_not_found ({before}), got "
            + (f"error {error.code}" if error else "a response"),
        )
    else:
        ctx.check(
            error is None and exchange.ok,
            rule_id,
            f"{label}: expected a {expected.value if expected else 'response'} ({before}), got "
            + (f"error {error.code}" if error else str(exchange.terminal_type)),
        )
    if error is not None:
        twin.on_failed(parent)
    elif exchange.response_id is not None:
        twin.on_completed(parent, exchange.response_id, store=store)
    return exchange


@case(
    "5.1.cache.most-recent",
    level="MUST",
    category="cache",
    title="the most recent response is always continuable (store=false, same socket)",
    rules=("cache.most_recent",),
)
async def test_most_recent(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    twin = CacheTwin(ctx.profile.cache_depth)
    await new_chain(ctx, conn, twin, 1, store=False)
    latest = await new_chain(ctx, conn, twin, 2, store=False)
    await continue_from(ctx, conn, twin, latest, "cache.most_recent", store=False, label="latest")


@case(
    "5.1.cache.older-miss",
    level="MUST",
    category="cache",
    title="store=false: an id older than the declared depth is previous_response_not_found",
    rules=("cache.store_false_miss", "cache.depth"),
    requires=("cache_eviction",),
)
async def test_older_miss(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    depth = ctx.profile.cache_depth
    twin = CacheTwin(depth)
    ids = [await new_chain(ctx, conn, twin, n, store=False) for n in range(depth + 1)]
    await continue_from(
        ctx, conn, twin, ids[0], "cache.store_false_miss", store=False, label="the oldest id"
    )
    await ctx.expect_usable(conn, what="after the miss")


@case(
    "5.1.cache.older-hydrates",
    level="MUST",
    category="cache",
    title="store=true: an id older than the declared depth still continues (hydrated)",
    rules=("cache.hydrate",),
    requires=("cache_eviction", "store"),
)
async def test_older_hydrates(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    depth = ctx.profile.cache_depth
    twin = CacheTwin(depth)
    ids = [await new_chain(ctx, conn, twin, n, store=True) for n in range(depth + 1)]
    await continue_from(ctx, conn, twin, ids[0], "cache.hydrate", store=True, label="the oldest id")


@case(
    "5.1.cache.failed-continuation-evicts",
    level="MUST",
    category="cache",
    title="a continuation refused with 400 evicts its parent: a retry is not found (store=false)",
    rules=("cache.failure_evicts", "request.invalid_input"),
)
async def test_failure_evicts(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    twin = CacheTwin(ctx.profile.cache_depth)
    parent = await new_chain(ctx, conn, twin, 1, store=False)
    bad = ctx.body([bodies.invalid_item()], previous_response_id=parent)
    failed = await conn.create(bad)
    ctx.expect_request_error(failed, "request.invalid_input", status=400, what="an invalid item")
    twin.on_failed(parent)
    await continue_from(
        ctx, conn, twin, parent, "cache.failure_evicts", store=False, label="retry of the parent"
    )


# Refusals of different causes, found at different points of a server (the parse, the value
# checks, the item validation): each is a failed turn, and each must evict.
_REFUSALS: tuple[tuple[str, dict[str, object]], ...] = (
    ("a wrong field type (temperature: 'hot')", {"temperature": "hot"}),
    ("a bad value (tool_choice: 'sometimes')", {"tool_choice": "sometimes"}),
    ("a wrong input type (input: 7)", {"input": 7}),
    ("an invalid input item", {"input": [bodies.invalid_item()]}),
)


@case(
    "5.1.cache.every-refusal-evicts",
    level="MUST",
    category="cache",
    title="a continuation refused for any cause evicts its parent (four causes, store=false)",
    rules=("cache.every_failure_evicts",),
)
async def test_every_refusal_evicts(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    twin = CacheTwin(ctx.profile.cache_depth)
    for n, (cause, fields) in enumerate(_REFUSALS):
        parent = await new_chain(ctx, conn, twin, n, store=False)
        body = ctx.body([bodies.user_message("Continue.")], previous_response_id=parent)
        failed = await conn.create(body | fields)
        if not ctx.check(
            failed.request_error is not None, "case.expectation", f"{cause}: accepted"
        ):
            if failed.response_id is not None:
                twin.on_completed(parent, failed.response_id, store=False)
            continue
        twin.on_failed(parent)
        await continue_from(
            ctx,
            conn,
            twin,
            parent,
            "cache.every_failure_evicts",
            store=False,
            label=f"retry after {cause}",
        )


_LONG_PREFIX = "The tide tables list each harbour's high and low water for the month. " * 150


def _cached_tokens(ctx: CaseContext, exchange: CaseExchange, what: str) -> tuple[int, int] | None:
    usage = (exchange.final_response or {}).get("usage") or {}
    details = usage.get("input_tokens_details") or {}
    tokens, hit = usage.get("input_tokens"), details.get("cached_tokens")
    if not isinstance(tokens, int) or not isinstance(hit, int):
        ctx.fail("case.expectation", f"{what}: no usage.input_tokens_details.cached_tokens")
    return tokens, hit


@case(
    "5.6.cache.block-rule",
    level="SHOULD",
    category="cache",
    title="cached_tokens follows the API's block rule: 0 under 1,024 tokens, else 0 or a "
    "multiple of 128",
    rules=("cache.block_rule",),
)
async def test_cached_tokens_block_rule(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    prompts = (
        ("a short prompt", "Say hello in one word."),
        ("the same short prompt again", "Say hello in one word."),
        ("a long prompt", _LONG_PREFIX + "First question: when is high water?"),
        ("the long prefix with another tail", _LONG_PREFIX + "And when is low water?"),
    )
    for what, text in prompts:
        exchange = await conn.create(ctx.body(text))
        ctx.expect_completed(exchange, "case.expectation", what)
        counts = _cached_tokens(ctx, exchange, what)
        assert counts is not None
        tokens, hit = counts
        if tokens < 1024:
            ctx.check(hit == 0, "cache.block_rule", f"{what}: {hit} of {tokens} tokens cached")
        else:
            ctx.check(
                hit == 0 or (hit >= 1024 and hit % 128 == 0),
                "cache.block_rule",
                f"{what}: {hit} of {tokens} tokens cached (not 0 or 1,024 + n x 128)",
            )


@case(
    "5.1.cache.failed-continuation-store-true",
    level="MUST",
    category="cache",
    title="store=true: after a failed continuation evicts the parent, it still hydrates",
    rules=("cache.hydrate",),
    requires=("store",),
)
async def test_failure_store_true(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    twin = CacheTwin(ctx.profile.cache_depth)
    parent = await new_chain(ctx, conn, twin, 1, store=True)
    bad = ctx.body([bodies.invalid_item()], previous_response_id=parent, store=True)
    ctx.expect_request_error(
        await conn.create(bad), "request.invalid_input", what="an invalid item"
    )
    twin.on_failed(parent)
    await continue_from(ctx, conn, twin, parent, "cache.hydrate", store=True, label="retry")


@case(
    "5.1.cache.depth-keeps-n",
    level="MUST",
    category="cache",
    title="a declared depth N keeps the N most recent responses: the N-th newest still continues",
    rules=("cache.depth",),
    requires=("cache_lru",),
)
async def test_depth_keeps_n(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    depth = ctx.profile.cache_depth
    twin = CacheTwin(depth)
    ids = [await new_chain(ctx, conn, twin, n, store=False) for n in range(depth)]
    await continue_from(ctx, conn, twin, ids[0], "cache.depth", store=False, label="N-th newest")


@case(
    "5.1.cache.lru-order",
    level="MUST",
    category="cache",
    title="a declared depth N evicts the least recently used entry, not the oldest inserted",
    rules=("cache.lru",),
    requires=("cache_lru",),
)
async def test_lru_order(ctx: CaseContext) -> None:
    conn = await ctx.connect()
    depth = ctx.profile.cache_depth
    twin = CacheTwin(depth)
    ids = [await new_chain(ctx, conn, twin, n, store=False) for n in range(depth)]
    # Using the oldest entry makes it recent: the next insertion must evict the second one.
    await continue_from(ctx, conn, twin, ids[0], "cache.lru", store=False, label="use the oldest")
    await continue_from(ctx, conn, twin, ids[1], "cache.lru", store=False, label="LRU victim")
    await continue_from(ctx, conn, twin, ids[0], "cache.lru", store=False, label="refreshed entry")


@case(
    "5.1.cache.byte-bound",
    level="SHOULD",
    category="cache",
    title="a declared byte bound: two responses each over half of it cannot both stay cached",
    rules=("cache.bytes", "cache.most_recent"),
    requires=("cache_bytes",),
)
async def test_byte_bound(ctx: CaseContext) -> None:
    bound = ctx.profile.cache_max_bytes
    words = "lorem ipsum dolor sit amet consectetur adipiscing elit "
    filler = (words * (int(bound * 0.6) // len(words) + 1))[: int(bound * 0.6)]
    conn = await ctx.connect()
    ids = []
    for n in (1, 2):
        exchange = await conn.create(ctx.body(f"Summarize in one line: {filler}", store=False))
        ctx.expect_completed(exchange, "case.expectation", f"large response {n}")
        ids.append(exchange.response_id)
    older = await conn.create(
        ctx.body([bodies.user_message("Go on.")], previous_response_id=ids[0])
    )
    error = older.request_error
    ctx.check(
        error is not None and error.code == NOT_FOUND,
        "cache.bytes",
        f"both {2 * int(bound * 0.6)} bytes of state stayed cached under a {bound} byte bound",
    )
    newest = await conn.create(
        ctx.body([bodies.user_message("Go on.")], previous_response_id=ids[1])
    )
    ctx.expect_completed(newest, "cache.most_recent", "the most recent large response")
