"""The engine stage: plan the response, then emit its tokens on the decode schedule.

The prompt's longest cached prefix is looked up first (the engine's KV prefix cache: those
tokens prefill cheaply). The engine's plan fixes the output and its timing (queue + prefill on
the uncached tokens, then
the profile's decode rate); emission sends token i at t0 + ttft + i/tps, and a late wake-up
sends every due token as one delta, so the achieved rate matches the configured one
(ARCHITECTURE.md §3). A message the output classifier flags is cut before its text and ends the
response `incomplete` (content_filter). A response that client events can reach (`live`,
PROTOCOL.md §2.2) is asked at every item boundary whether to go on: it may wait there for
injected tool outputs (the schedule moves by the wait) or stop for a steer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.protocol import errors
from harness.protocol.beta import STEERED
from harness.protocol.emitter import ResponseEmitter
from harness.protocol.events import Event
from harness.protocol.requests import CreateRequest
from reference_server.engine.emission import DeltaPacer, TokenSchedule
from reference_server.engine.engine import Engine, Seed
from reference_server.engine.filler_text import pool_texts
from reference_server.engine.generation_plan import GenerationPlan, PlanError, PlannedItem
from reference_server.pipeline.live import LiveResponse
from reference_server.pipeline.outbox import Outbox
from reference_server.pipeline.prepare import Prompt
from reference_server.pipeline.refusals import RequestRefused
from reference_server.pipeline.response import Decoded, Status, new_id
from reference_server.pipeline.stages import Counters
from reference_server.state.prefix import PrefixCache
from reference_server.state.safety import classify_output, output_screen_passes_joined


@dataclass(frozen=True)
class _Schedule(TokenSchedule):
    """The token schedule, the cap on tokens per delta, and the server's bound on deltas/s."""

    max_tokens_per_delta: int = 1
    pacer: DeltaPacer | None = None  # only without a cap: a capped stream must send them all


def plan_turn(
    engine: Engine,
    request: CreateRequest,
    prompt: Prompt,
    prefix_cache: PrefixCache,
    *,
    seed: Seed,
    output_limit_tokens: int,
    cache_min_tokens: int = 0,
) -> tuple[GenerationPlan, int]:
    """The engine's plan, and how many prompt tokens its prefix cache holds; raises
    RequestRefused for a request it cannot plan (a bad script)."""
    prompt_tokens = prompt.token_count
    cached_tokens = prefix_cache.lookup(prompt.cache_keys, prompt_tokens, cache_min_tokens)
    try:
        if not request.generate:  # a warm-up: no output, the prompt is prefilled
            plan = engine.plan(
                seed=seed, input_tokens=prompt_tokens, cached_tokens=cached_tokens, script=[]
            )
            return plan, cached_tokens
        max_output = min(request.max_output_tokens or output_limit_tokens, output_limit_tokens)
        plan = engine.plan(
            seed=seed,
            input_tokens=prompt_tokens,
            cached_tokens=cached_tokens,
            tools=request.tools,
            tool_choice=request.tool_choice,
            parallel_tool_calls=request.parallel_tool_calls,
            max_output_tokens=max_output,
            reasoning_effort=request.reasoning_effort,
            script=request.script,
            answer_after_calls=request.multi_agent,  # its agent resumes once they are answered
            text_format=request.text.get("format"),
        )
    except PlanError as exc:
        raise RequestRefused(errors.invalid_request(str(exc), param="wsmode.script")) from None
    return plan, cached_tokens


def keep_prefill(prefix_cache: PrefixCache, prompt: Prompt, cached_tokens: int) -> int:
    """The prompt is prefilled now: its KV prefix is reusable. Returns the prompt tokens this
    added to the prefix cache (the usage's `cache_write_tokens`)."""
    if prompt.blocks is not None:  # every new block: a later prompt may share any of them
        prompt.blocks.insert_into(prefix_cache, cached_tokens // prompt.blocks.block_tokens)
        return prompt.token_count - cached_tokens
    if not prompt.item_keys:
        return 0
    prefix_cache.insert(prompt.item_keys[-1], prompt.token_count)
    return prompt.token_count - cached_tokens


async def decode(
    plan: GenerationPlan,
    emitter: ResponseEmitter,
    out: Outbox,
    engine_start: float,
    metrics: Counters,
    *,
    max_tokens_per_delta: int = 0,
    live: LiveResponse | None = None,
    pacer: DeltaPacer | None = None,
) -> Decoded:
    """Emit the plan's items on the token schedule; due tokens coalesce into one delta (of at
    most `max_tokens_per_delta` tokens, where > 0; else at most one delta per `pacer`
    interval). Raises `RequiredInputTimeout` when `live` waits for a tool output that never
    comes."""
    schedule = _Schedule(
        start_s=engine_start,
        ttft_s=plan.ttft_s,
        tokens_per_s=plan.decode_tokens_per_s,
        total_tokens=plan.output_tokens,
        max_tokens_per_delta=max_tokens_per_delta or plan.output_tokens or 1,
        pacer=None if max_tokens_per_delta else pacer,
    )
    pacer = schedule.pacer
    if pacer is not None:
        pacer.active += 1  # this stream counts in every stream's interval while it decodes
    try:
        return await _decode(plan, emitter, out, schedule, metrics, live)
    finally:
        if pacer is not None:
            pacer.active -= 1


async def _decode(
    plan: GenerationPlan,
    emitter: ResponseEmitter,
    out: Outbox,
    schedule: _Schedule,
    metrics: Counters,
    live: LiveResponse | None,
) -> Decoded:
    if schedule.first_due_s > time.perf_counter():
        await _sleep_until(schedule.first_due_s, out)  # the client sees the start meanwhile
    emitted = 0
    first_output_at: float | None = None
    for index, item in enumerate(plan.items):
        if live is not None:
            paused_s = live.paused_s
            if await live.before_item(item.kind, first=index == 0) == "stop":
                metrics.record_tokens(emitted)
                return _steered(plan, index, emitted, first_output_at, out, live)
            if live.paused_s != paused_s:  # it waited for tool outputs: the schedule moves
                shift = live.paused_s - paused_s
                schedule = dataclasses.replace(schedule, start_s=schedule.start_s + shift)
        if first_output_at is None:
            first_output_at = time.perf_counter()
        emitted, filtered = await _emit_item(item, emitter, out, schedule, emitted, live)
        if filtered:
            return Decoded("incomplete", first_output_at, out.first_token_at)
    if live is not None:
        await live.before_item(None)  # the end: outstanding tool outputs are waited for
    metrics.record_tokens(emitted)
    status: Status = "incomplete" if plan.truncated else "completed"
    return Decoded(status, first_output_at, out.first_token_at)


def _steered(
    plan: GenerationPlan,
    index: int,
    emitted: int,
    first_output_at: float | None,
    out: Outbox,
    live: LiveResponse,
) -> Decoded:
    """A steer ended the response before item `index`: `completed` when it stopped for
    client-owned tool output (it emitted calls), else `incomplete` (steered). [I] §2.2"""
    reasoning = sum(i.token_count for i in plan.items[:index] if i.kind == "reasoning")
    status: Status = "completed" if live.calls else "incomplete"
    reason = None if live.calls else STEERED
    return Decoded(status, first_output_at, out.first_token_at, reason, emitted, reasoning)


async def _emit_item(
    item: PlannedItem,
    emitter: ResponseEmitter,
    out: Outbox,
    schedule: _Schedule,
    emitted: int,
    live: LiveResponse | None = None,
) -> tuple[int, bool]:
    """Emit one item; (tokens emitted so far, whether the output classifier cut it)."""
    if item.kind == "reasoning":
        await out.emit(emitter.begin_reasoning(new_id("rs"), agent=item.agent))
        emitted += item.hidden_tokens  # hidden reasoning takes decode time, shows nothing
        emitted = await _stream(item.summary_pieces, emitter.summary_delta, out, schedule, emitted)
        await out.emit(emitter.end_reasoning())
    elif item.kind == "function_call":
        item_id = new_id("fc")
        call_id = item.call_id or new_id("call")
        name = item.name or ""
        await out.emit(emitter.begin_function_call(item_id, call_id, name, agent=item.agent))
        emitted = await _stream(item.pieces, emitter.arguments_delta, out, schedule, emitted)
        await out.emit(emitter.end_function_call())
        if live is not None:
            live.call_emitted(call_id, name, item.agent)
    else:
        await out.emit(emitter.begin_message(new_id("msg"), refusal=item.refusal, agent=item.agent))
        # classified once the item has started (its first event is built), before any of its
        # text; generated text needs no scan when the pool it is made of passes (checked once)
        if (
            not (item.pool_text and pool_passes_output_screen())
            and classify_output(item.text).blocked
        ):
            return emitted, True  # content filter: the message is cut before any text
        emitted = await _stream(item.pieces, emitter.text_delta, out, schedule, emitted)
        await out.emit(emitter.end_message())
    return emitted, False


@functools.cache
def pool_passes_output_screen() -> bool:
    """Whether every text made of the filler pool's paragraphs passes the output classifier
    (true for the pool as it is; a pool holding a flagged phrase would be scanned per reply).
    A few ms once: the server asks at start-up, not in a first reply."""
    return output_screen_passes_joined(pool_texts())


async def _stream(
    pieces: Sequence[str],
    make_delta: Callable[[str], Event],
    out: Outbox,
    schedule: _Schedule,
    emitted: int,
) -> int:
    """Send `pieces` as deltas when due; a late wake-up sends every due piece as one delta.

    Deadlines are absolute (the schedule's), so a stream that fell behind catches up in its
    next delta. With a pacer, a delta waits at least the pacer's interval after the one before
    (the tokens due meanwhile ride together), except the item's last piece: it goes when due.
    """
    if not pieces:
        return emitted
    index = 0
    pacer = schedule.pacer
    last_due_s = schedule.due_s(emitted + len(pieces) - 1)
    hold_until_s = 0.0  # no delta before this (the pacer's interval after the last one)
    while index < len(pieces):
        now = time.perf_counter()
        due = schedule.due_count(now) - emitted
        if due <= 0 or now < hold_until_s:
            await _sleep_until(max(schedule.due_s(emitted), hold_until_s), out)
            continue
        take = min(due, len(pieces) - index, schedule.max_tokens_per_delta)
        await out.emit(make_delta("".join(pieces[index : index + take])))
        index += take
        emitted += take
        if pacer is not None:
            hold_until_s = min(now + pacer.interval_s(), last_due_s)
    return emitted


async def _sleep_until(deadline: float, out: Outbox) -> None:
    """Wait for `deadline`; what is held goes out first (nothing waits out a sleep)."""
    await out.flush()
    delay = deadline - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)
