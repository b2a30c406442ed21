"""One turn through the reference server: the request pipeline of ARCHITECTURE.md §3.

    resolve previous_response_id (connection cache -> store -> error)
    -> validate (new items only on a cache hit) -> safety (same) -> render (append on a hit)
    -> route (reused on a hit) -> engine (queue, prefill on uncached tokens, scheduled decode)
    -> events through the protocol emitter -> terminal -> cache entry replaced
    -> post-inference (billing, store write), after the terminal when `async_post` is on.

Shared by the WebSocket session and the HTTP endpoint: HTTP simply has no connection cache, so
every HTTP turn takes the full path (or hydrates from the store with previous_response_id).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from harness.errors import WsmodeError
from harness.protocol import errors
from harness.protocol.cache import Resolution, ResponseCache
from harness.protocol.emitter import ResponseEmitter
from harness.protocol.errors import ApiError
from harness.protocol.events import Event, response_object
from harness.protocol.requests import CreateRequest
from reference_server.conversation import Conversation, Route, chain_keys, resolve_route
from reference_server.emission import TokenSchedule
from reference_server.engine import GenerationPlan, PlanError, PlannedItem
from reference_server.faults import EventFaults
from reference_server.pipeline.render import Rendering, render_full, render_prefix
from reference_server.pipeline.safety import SafetyState, classify_input, classify_output
from reference_server.pipeline.validate import ValidationState, validate_items
from reference_server.services import Services, new_id
from reference_server.stages import StageLog


class Send(Protocol):
    """Delivers events to the client; events given together go out in one write."""

    async def __call__(self, *events: Event) -> None: ...


Status = Literal["completed", "incomplete", "failed"]


class RequestRefused(WsmodeError):
    """A request-scoped error: no response was created; the caller sends `error`."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(frozen=True, slots=True)
class TurnContext:
    transport: Literal["ws", "http"]
    tenant: str
    cache: ResponseCache[Conversation] | None  # the connection's cache; None over HTTP
    received_at: float  # perf_counter() when the request was fully received
    request_bytes: int
    forks: tuple[ResponseCache[Conversation], ...] = ()  # other lanes' caches (cross-lane fork)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    response: dict[str, Any]
    status: Status


@dataclass(slots=True)
class _Prepared:
    """What the pipeline stages produced before the engine starts."""

    parent: Conversation | None
    resolution: Resolution | None
    items: tuple[dict[str, Any], ...]
    validation: ValidationState
    safety: SafetyState
    rendering: Rendering
    prefix: tuple[int, ...]
    prefix_root: int
    item_keys: tuple[int, ...]
    prompt_tokens: int
    route: Route

    @property
    def prefix_tokens(self) -> int:
        return len(self.prefix)


class TurnRunner:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.config = services.config
        self.optimizations = services.config.optimizations

    async def run(self, request: CreateRequest, ctx: TurnContext, send: Send) -> TurnOutcome:
        """Run one response; raises RequestRefused for request-scoped errors."""
        seed_material = _seed_material(request)
        stages = StageLog(self.services.profile, self.services.engine.rng(seed_material, "stages"))
        kib = ctx.request_bytes / 1024
        stages.charge("transfer", kib)
        stages.charge("parse", kib)
        try:
            prepared = await self._prepare(request, ctx, stages)
        except _SafetyBlock as block:
            self._evict_parent(request, ctx)
            await stages.pay()
            response = await fail_response(request, block.error, send)
            self.services.metrics.inc(
                "wsmode_responses_total", transport=ctx.transport, status="failed"
            )
            return TurnOutcome(response, "failed")
        except RequestRefused:
            self._evict_parent(request, ctx)
            raise
        await stages.pay()
        return await self._generate(request, ctx, prepared, stages, seed_material, send)

    # -- pipeline -------------------------------------------------------------------------
    async def _prepare(
        self, request: CreateRequest, ctx: TurnContext, stages: StageLog
    ) -> _Prepared:
        parent, resolution = await self._resolve(request, ctx, stages)
        incremental = parent is not None and self.optimizations.incremental_checks
        history = parent.items if parent is not None else ()
        new_items = request.input

        with stages.measure("validate"):
            if incremental and parent is not None:
                validation, problems = validate_items(parent.validation, new_items)
                checked = new_items
            else:
                validation, problems = validate_items(
                    ValidationState.initial(), (*history, *new_items), first_index=-len(history)
                )
                checked = (*history, *new_items)
        if problems:
            first = problems[0]
            raise RequestRefused(errors.invalid_request(first.message, param=first.param))

        with stages.measure("safety"):
            if incremental and parent is not None:
                safety, verdict = classify_input(parent.safety, new_items)
            else:
                safety, verdict = classify_input(SafetyState.initial(), (*history, *new_items))

        with stages.measure("tokenize"):
            reuse = parent is not None and self.optimizations.render_cache
            if reuse and parent is not None and parent.prefix_matches(request):
                # Instructions and tools are resent every turn; unchanged, their tokens are too.
                prefix, root, rendered_tokens = parent.prefix, parent.prefix_root, 0
            else:
                prefix = render_prefix(request.instructions, request.tools)
                root, rendered_tokens = hash((ctx.tenant, prefix)), len(prefix)
            if reuse and parent is not None:
                rendering = parent.rendering.append(new_items)
                rendered_tokens += rendering.token_count - parent.rendering.token_count
            else:
                rendering = render_full((*history, *new_items))
                rendered_tokens += rendering.token_count
            if (
                parent is not None
                and self.optimizations.render_cache
                and parent.item_keys
                and (parent.prefix_root == root)
            ):
                keys = chain_keys(root, rendering.chunks[len(parent.item_keys) :], parent.item_keys)
            else:
                keys = chain_keys(root, rendering.chunks)
        checked_tokens = _tokens_of(rendering, len(checked))
        stages.charge("validate_items", len(checked), name="validate")
        stages.charge("validate_tokens", checked_tokens, name="validate")
        stages.charge("safety", checked_tokens if incremental else rendering.token_count)
        stages.charge("tokenize", rendered_tokens)

        prompt_tokens = len(prefix) + rendering.token_count
        if prompt_tokens > self.config.limits.context_window_tokens:
            raise RequestRefused(
                errors.context_length_exceeded(
                    prompt_tokens, self.config.limits.context_window_tokens
                )
            )
        if verdict.blocked:
            raise _SafetyBlock(verdict.category or "unsafe content", verdict.rule_ids)

        with stages.measure("routing"):
            if (
                parent is not None
                and self.optimizations.routing_reuse
                and (parent.route.requested_model == request.model)
            ):
                route = parent.route
            else:
                route = resolve_route(request.model, ctx.tenant)
                stages.charge("routing", 1)
        return _Prepared(
            parent=parent,
            resolution=resolution,
            items=(*history, *new_items),
            validation=validation,
            safety=safety,
            rendering=rendering,
            prefix=prefix,
            prefix_root=root,
            item_keys=keys,
            prompt_tokens=prompt_tokens,
            route=route,
        )

    async def _resolve(
        self, request: CreateRequest, ctx: TurnContext, stages: StageLog
    ) -> tuple[Conversation | None, Resolution | None]:
        previous_id = request.previous_response_id
        if previous_id is None:
            return None, None
        metrics = self.services.metrics
        cache = self._cache(ctx)
        use_cache = cache is not None and self.optimizations.connection_cache
        cached = None
        if use_cache and cache is not None:
            # The cache-fifo fault reads without refreshing recency: LRU degrades to FIFO.
            fifo = "cache-fifo" in self.config.faults
            cached = cache.peek(previous_id) if fifo else cache.get(previous_id)
            if cached is None:  # a fork: the parent lives on another lane of this connection
                cached = next((c.get(previous_id) for c in ctx.forks if previous_id in c), None)
        if cached is not None and cached.tenant == ctx.tenant:
            metrics.inc("wsmode_cache_total", outcome="hit")
            return cached, Resolution.HIT
        with stages.measure("hydrate"):
            record = await self.services.persistence.get(ctx.tenant, previous_id)
        if record is None:
            metrics.inc("wsmode_cache_total", outcome="miss")
            raise RequestRefused(errors.previous_response_not_found(previous_id))
        stages.charge("hydrate", 1)
        metrics.inc("wsmode_cache_total", outcome="hydrate")
        return self._hydrate(record, ctx, stages), Resolution.HYDRATE

    def _hydrate(self, record: dict[str, Any], ctx: TurnContext, stages: StageLog) -> Conversation:
        """The slow path: rebuild a cache entry from a stored record (re-validate, re-render)."""
        items = tuple(record["items"])
        with stages.measure("hydrate"):
            validation, _ = validate_items(ValidationState.initial(), items)
            safety, _ = classify_input(SafetyState.initial(), items)
            rendering = render_full(items)
        stages.charge("validate_items", len(items), name="hydrate")
        stages.charge("safety", rendering.token_count, name="hydrate")
        stages.charge("tokenize", rendering.token_count, name="hydrate")
        response = record["response"]
        return Conversation(
            response=response,
            items=items,
            tools=tuple(response.get("tools") or ()),
            rendering=rendering,
            instructions=None,
            prefix=(),
            prefix_root=0,
            item_keys=(),
            validation=validation,
            safety=safety,
            route=resolve_route(str(response.get("model", "")), ctx.tenant),
            tenant=ctx.tenant,
            store=True,
            size_bytes=int(record.get("size_bytes", 0)),
        )

    def _cache(self, ctx: TurnContext) -> ResponseCache[Conversation] | None:
        if ctx.cache is None:
            return None
        shared = self.services.shared_cache
        return shared if shared is not None else ctx.cache

    def _evict_parent(self, request: CreateRequest, ctx: TurnContext) -> None:
        """A failed turn evicts the parent it referenced (PROTOCOL.md §5.1)."""
        cache = self._cache(ctx)
        if cache is None or request.previous_response_id is None:
            return
        if "no-failure-eviction" in self.config.faults:
            return
        if cache.evict(request.previous_response_id):
            self.services.metrics.inc("wsmode_cache_evictions_total", reason="failed_turn")

    # -- generation -----------------------------------------------------------------------
    async def _generate(
        self,
        request: CreateRequest,
        ctx: TurnContext,
        prepared: _Prepared | None,
        stages: StageLog,
        seed_material: str,
        send: Send,
    ) -> TurnOutcome:
        assert prepared is not None
        services = self.services
        response_id = new_id("resp")
        instructions = request.instructions
        if (
            instructions is None
            and prepared.parent
            and "inherit-instructions" in self.config.faults
        ):
            instructions = prepared.parent.response.get("instructions")
        emitter = ResponseEmitter(
            _response_object(request, response_id, instructions),
            stream_id=request.stream_id,
            obfuscate=request.include_obfuscation,
        )
        faults = EventFaults(self.config.faults)

        held: list[Event] = []  # lifecycle events waiting to ride with the next write

        async def emit(events: Event | Sequence[Event], *, hold: bool = False) -> None:
            batch = [events] if isinstance(events, dict) else list(events)
            if faults:
                batch = [out for event in batch for out in faults.apply(event)]
            batch = [*held, *batch]
            held.clear()
            if hold:
                held.extend(batch)
            elif batch:
                await send(*batch)

        cached_tokens = services.prefix_cache.match(prepared.item_keys)
        try:
            plan = self._plan(request, prepared, seed_material, cached_tokens)
        except PlanError as exc:
            self._evict_parent(request, ctx)
            raise RequestRefused(errors.invalid_request(str(exc), param="wsmode.script")) from None
        engine_start = time.perf_counter()
        api_overhead_ms = (engine_start - ctx.received_at) * 1000
        # created + in_progress go out with the first output when the engine answers at once,
        # or before the engine's wait otherwise (`_decode` flushes them): one write, not two.
        await emit([emitter.created(), emitter.in_progress()], hold=True)
        services.metrics.in_flight += 1
        try:
            status, first_output_at = await self._decode(plan, emitter, emit, engine_start)
        except (ConnectionError, asyncio.CancelledError):
            raise  # the client went away: nothing to tell it
        except Exception:
            # An internal fault mid-stream: `error` then `response.failed`, never a traceback.
            self._evict_parent(request, ctx)
            failed = emitter.failed(errors.server_error())
            await emit(failed)
            services.metrics.inc("wsmode_responses_total", transport=ctx.transport, status="failed")
            return TurnOutcome(failed[-1]["response"], "failed")
        finally:
            services.metrics.in_flight -= 1

        if prepared.item_keys:  # the prompt is now prefilled: its KV prefix is reusable
            services.prefix_cache.insert(prepared.item_keys[-1], prepared.prompt_tokens)
        usage = _usage(prepared.prompt_tokens, cached_tokens, plan)
        emitter.response["wsmode"] = {
            "resolution": prepared.resolution.value if prepared.resolution else "none",
            "api_overhead_ms": round(api_overhead_ms, 3),
            "inference_ttft_ms": round(plan.ttft_s * 1000, 3),
            "ttft_ms": round((first_output_at - ctx.received_at) * 1000, 3)
            if first_output_at
            else None,
            "stages_ms": stages.total_ms(),
            "cached_tokens": cached_tokens,
        }
        if status == "incomplete":
            reason = "max_output_tokens" if plan.truncated else "content_filter"
            terminal = emitter.incomplete(reason, usage)
        else:
            terminal = [emitter.completed(usage, completed_at=int(time.time()))]
        final_response = terminal[-1]["response"]
        await emit(terminal[:-1])
        entry = self._remember(request, ctx, prepared, emitter.output, final_response)
        storing = request.store or "store-false-persisted" in self.config.faults
        if storing:
            record = {
                "response": final_response,
                "items": list(entry.items),
                "size_bytes": entry.size_bytes,
            }
            services.persistence.stage(ctx.tenant, entry.response_id, record)
        post = self._post_inference(ctx, final_response, storing)
        if self.optimizations.async_post:
            services.persistence.spawn(post)
        else:
            await post
        await emit(terminal[-1])
        services.metrics.record_stages(stages.total_ms())
        services.metrics.inc("wsmode_responses_total", transport=ctx.transport, status=status)
        return TurnOutcome(final_response, status)

    def _plan(
        self, request: CreateRequest, prepared: _Prepared, seed_material: str, cached_tokens: int
    ) -> GenerationPlan:
        engine = self.services.engine
        if not request.generate:
            return engine.plan(
                seed_material=seed_material,
                input_tokens=prepared.prompt_tokens,
                cached_tokens=cached_tokens,
                script=[],
            )
        max_output = request.max_output_tokens or self.config.limits.max_output_tokens
        return engine.plan(
            seed_material=seed_material,
            input_tokens=prepared.prompt_tokens,
            cached_tokens=cached_tokens,
            tools=request.tools,
            tool_choice=request.tool_choice,
            parallel_tool_calls=request.parallel_tool_calls,
            max_output_tokens=min(max_output, self.config.limits.max_output_tokens),
            reasoning_effort=request.reasoning_effort,
            script=request.script,
        )

    async def _decode(
        self,
        plan: GenerationPlan,
        emitter: ResponseEmitter,
        emit: Callable[[Any], Awaitable[None]],
        engine_start: float,
    ) -> tuple[Status, float | None]:
        """Emit the plan's items on the token schedule; due tokens coalesce into one delta."""
        schedule = TokenSchedule(
            start_s=engine_start,
            ttft_s=plan.ttft_s,
            tokens_per_s=plan.decode_tokens_per_s,
            total_tokens=plan.output_tokens,
        )
        if schedule.first_due_s > time.perf_counter():
            await emit([])  # flush what is held: the client sees the response start meanwhile
            await _sleep_until(schedule.first_due_s)
        emitted = 0
        first_output_at: float | None = None
        for item in plan.items:
            if first_output_at is None:
                first_output_at = time.perf_counter()
            emitted = await self._emit_item(item, emitter, emit, schedule, emitted)
            if item.kind == "message" and classify_output(item.text).blocked:
                return "incomplete", first_output_at
        self.services.metrics.record_tokens(emitted)
        return ("incomplete" if plan.truncated else "completed"), first_output_at

    async def _emit_item(
        self,
        item: PlannedItem,
        emitter: ResponseEmitter,
        emit: Callable[[Any], Awaitable[None]],
        schedule: TokenSchedule,
        emitted: int,
    ) -> int:
        if item.kind == "reasoning":
            await emit(emitter.begin_reasoning(new_id("rs")))
            emitted += item.hidden_tokens  # hidden reasoning takes decode time, shows nothing
            emitted = await _stream(
                item.summary_pieces, emitter.summary_delta, emit, schedule, emitted
            )
            await emit(emitter.end_reasoning())
        elif item.kind == "function_call":
            await emit(
                emitter.begin_function_call(
                    new_id("fc"), item.call_id or new_id("call"), item.name or ""
                )
            )
            emitted = await _stream(item.pieces, emitter.arguments_delta, emit, schedule, emitted)
            await emit(emitter.end_function_call())
        else:
            await emit(emitter.begin_message(new_id("msg"), refusal=item.refusal))
            if classify_output(item.text).blocked:
                return emitted  # content filter: the message is cut before any text
            emitted = await _stream(item.pieces, emitter.text_delta, emit, schedule, emitted)
            await emit(emitter.end_message())
        return emitted

    # -- after the response ---------------------------------------------------------------
    def _remember(
        self,
        request: CreateRequest,
        ctx: TurnContext,
        prepared: _Prepared,
        output: list[dict[str, Any]],
        response: dict[str, Any],
    ) -> Conversation:
        output_items = tuple(output)
        parent_size = prepared.parent.size_bytes if prepared.parent else 0
        new_size = len(json.dumps([request.input, output_items], default=str))
        entry = Conversation(
            response=response,
            items=(*prepared.items, *output_items),
            tools=request.tools,
            rendering=prepared.rendering.append(output_items),
            instructions=request.instructions,
            prefix=prepared.prefix,
            prefix_root=prepared.prefix_root,
            item_keys=(),
            validation=prepared.validation.with_output(output_items),
            safety=prepared.safety,
            route=prepared.route,
            tenant=ctx.tenant,
            store=request.store,
            size_bytes=parent_size + new_size,
        )
        # Keys for the output items too, so the next turn's prefix match covers them.
        entry = _with_keys(entry, prepared)
        if entry.item_keys:  # decoded output is in the KV cache too
            tokens = prepared.prefix_tokens + entry.rendering.token_count
            self.services.prefix_cache.insert(entry.item_keys[-1], tokens)
        cache = self._cache(ctx)
        if cache is not None and self.optimizations.connection_cache:
            evicted = cache.put(entry.response_id, entry, entry.size_bytes)
            for _ in evicted:
                self.services.metrics.inc("wsmode_cache_evictions_total", reason="replaced")
        return entry

    async def _post_inference(
        self, ctx: TurnContext, response: dict[str, Any], storing: bool
    ) -> None:
        """Billing and the store write: the work `async_post` moves off the critical path."""
        profile = self.services.profile
        await asyncio.sleep(profile.stage_cost_s("billing", 1))
        self.services.metrics.inc("wsmode_billed_tokens_total", response["usage"]["total_tokens"])
        if storing:
            await asyncio.sleep(profile.stage_cost_s("store_write", 1))
            await self.services.persistence.commit(ctx.tenant, str(response["id"]))


class _SafetyBlock(RequestRefused):
    """Flagged input: surfaces as a failed response (created, then failed), not a bare error."""

    def __init__(self, category: str, rule_ids: tuple[str, ...]) -> None:
        super().__init__(
            ApiError(
                400,
                "invalid_request_error",
                "content_policy_violation",
                f"Your request was flagged by the safety system ({category}).",
                "input",
            )
        )
        self.rule_ids = rule_ids


async def fail_response(
    request: CreateRequest, error: ApiError, send: Send, *, obfuscate: bool = True
) -> dict[str, Any]:
    """An early failure: response.created then response.failed (PROTOCOL.md §3.3)."""
    emitter = ResponseEmitter(
        _response_object(request, new_id("resp"), request.instructions),
        stream_id=request.stream_id,
        obfuscate=obfuscate,
    )
    events = emitter.failed(error)
    await send(*events)
    return dict(events[-1]["response"])


# -- helpers ----------------------------------------------------------------------------------
def _response_object(
    request: CreateRequest, response_id: str, instructions: str | None
) -> dict[str, Any]:
    return response_object(
        response_id,
        request.model,
        created_at=int(time.time()),
        instructions=instructions,
        metadata=dict(request.metadata),
        parallel_tool_calls=request.parallel_tool_calls,
        temperature=request.temperature if request.temperature is not None else 1.0,
        top_p=request.top_p if request.top_p is not None else 1.0,
        tool_choice=request.tool_choice,
        tools=list(request.tools),
        previous_response_id=request.previous_response_id,
        store=request.store,
        max_output_tokens=request.max_output_tokens,
        reasoning={"effort": request.reasoning_effort, "summary": None},
        text={"format": {"type": "text"}},
        truncation="disabled",
        service_tier="default",
        user=None,
    )


def _usage(prompt_tokens: int, cached_tokens: int, plan: GenerationPlan) -> dict[str, Any]:
    return {
        "input_tokens": prompt_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens},
        "output_tokens": plan.output_tokens,
        "output_tokens_details": {"reasoning_tokens": plan.reasoning_tokens},
        "total_tokens": prompt_tokens + plan.output_tokens,
    }


def _seed_material(request: CreateRequest) -> str:
    """What seeds a turn's random draws (content, jitter, bursts), the same on every transport.

    A scripted turn is identified by its script, anything else by its newest input item: never
    by the whole input, which differs between a WebSocket continuation (new items only) and its
    stateless HTTP twin (full history), so paired replays get identical draws.
    """
    seed = request.seed if request.seed is not None else 0
    basis: Any = request.script if request.script is not None else request.input[-1:]
    digest = hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()
    return f"{seed}:{request.model}:{digest}"


def _tokens_of(rendering: Rendering, last_n_items: int) -> int:
    return sum(len(chunk) for chunk in rendering.chunks[len(rendering.chunks) - last_n_items :])


def _with_keys(entry: Conversation, prepared: _Prepared) -> Conversation:
    new_chunks = entry.rendering.chunks[len(prepared.item_keys) :]
    keys = chain_keys(prepared.prefix_root, new_chunks, prepared.item_keys)
    return dataclasses.replace(entry, item_keys=keys)


async def _sleep_until(deadline: float) -> None:
    delay = deadline - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)


async def _stream(
    pieces: Sequence[str],
    make_delta: Callable[[str], Event],
    emit: Callable[[Any], Awaitable[None]],
    schedule: TokenSchedule,
    emitted: int,
) -> int:
    """Send `pieces` as deltas when due; a late wake-up sends every due piece as one delta."""
    index = 0
    while index < len(pieces):
        due = schedule.due_count(time.perf_counter()) - emitted
        if due <= 0:
            next_due = schedule.next_due_s(emitted)
            if next_due is not None:
                await _sleep_until(next_due)
            continue
        take = min(due, len(pieces) - index)
        await emit(make_delta("".join(pieces[index : index + take])))
        index += take
        emitted += take
    return emitted
