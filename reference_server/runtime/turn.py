"""One turn through the reference server: the request pipeline of ARCHITECTURE.md §3.

    frame + parse (done by the session; charged here) -> resolve previous_response_id
    (connection cache -> store -> error) and item references -> prepare: render (append on a
    hit), validate (new items only on a hit), fit the context window, screen (new items only
    on a hit), route (reused on a hit) -> engine: the prefix cache's match, the plan (queue,
    prefill on uncached tokens), the scheduled decode -> events through the protocol emitter
    -> terminal -> cache entry replaced -> post-inference (billing, store write), after the
    terminal when `async_post` is on.

Each stage is one call into `pipeline/`; this module only orders them and handles the ways a
turn ends early. The request's `Seed` is made once here and handed to the two stages that draw
from it (the accounting's jitter, the engine's plan). Shared by the WebSocket session and the
HTTP endpoint: HTTP simply has no connection cache, so every HTTP turn takes the full path (or
hydrates from the store with previous_response_id).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.protocol import errors, wire
from harness.protocol.cache import ResponseCache
from harness.protocol.emitter import ResponseEmitter
from harness.protocol.extension import EXTENSION_FIELD
from harness.protocol.items import item_text
from harness.protocol.requests import CreateRequest
from harness.protocol.tokenizer import count_tokens
from reference_server.engine.engine import Seed
from reference_server.engine.generation_plan import GenerationPlan
from reference_server.hooks.faults import InjectedFailure
from reference_server.pipeline.compaction import compact
from reference_server.pipeline.inference import decode, keep_prefill, plan_turn
from reference_server.pipeline.live import LiveRegistry, LiveResponse, RequiredInputTimeout
from reference_server.pipeline.outbox import Outbox, Send
from reference_server.pipeline.post_inference import PostInference
from reference_server.pipeline.prepare import PreparedTurn, prepare
from reference_server.pipeline.refusals import RequestRefused, SafetyBlock
from reference_server.pipeline.remember import remember
from reference_server.pipeline.resolve import resolve
from reference_server.pipeline.response import (
    Decoded,
    Status,
    fail_response,
    new_id,
    new_response,
    terminal_events,
    usage,
    wsmode_report,
)
from reference_server.pipeline.stages import StageLog
from reference_server.pipeline.turn_cache import TurnCache
from reference_server.runtime.logs import log_refusal, log_response
from reference_server.runtime.services import Services
from reference_server.state.conversation import Conversation

__all__ = ["TurnContext", "TurnOutcome", "TurnRunner"]


@dataclass(frozen=True, slots=True)
class TurnContext:
    transport: Literal["ws", "http"]
    tenant: str
    cache: ResponseCache[Conversation] | None  # the connection's cache; None over HTTP
    received_at: float  # perf_counter() when the request was fully received
    request_bytes: int
    forks: tuple[ResponseCache[Conversation], ...] = ()  # other lanes' caches (cross-lane fork)
    connection_id: str = ""  # names the connection in log lines
    live: LiveRegistry | None = None  # where steers and injects find the response (WS only)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    response: dict[str, Any]
    status: Status
    live: LiveResponse | None = None  # its steers are the session's to settle


@dataclass(frozen=True, slots=True)
class _Generated:
    """What the engine stage produced."""

    plan: GenerationPlan
    decoded: Decoded
    cached_tokens: int  # prompt tokens found in the prefix cache
    engine_start: float  # perf_counter() when the engine took the turn


class TurnRunner:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.config = services.config
        self.optimizations = services.config.optimizations
        self.hooks = services.hooks
        self.faults = services.hooks.faults
        profile = services.profile  # the whole-item model (block 0) has no minimum
        self._cache_min_tokens = (
            int(profile.prompt_cache_min_tokens) if profile.prompt_cache_block_tokens > 0 else 0
        )
        self.post_inference = PostInference(
            services.persistence, services.profile, services.metrics, services.config.workers
        )

    async def run(self, request: CreateRequest, ctx: TurnContext, send: Send) -> TurnOutcome:
        """Run one response; raises RequestRefused for request-scoped errors."""
        await self.services.admission.admit()  # a burst of creates: a few per loop iteration
        if self.hooks.script is not None:  # a client case's short scripted answers
            request = self.hooks.answer(request)
        seed = Seed.of(request)  # the request's own: hashed the first time a stream is drawn
        stages = StageLog.of_request(self.services.engine, ctx.request_bytes, seed)
        if request.multi_agent and (ctx.live is None or not self.config.multi_agent):
            self._evict_parent(request, ctx)
            raise RequestRefused(
                errors.invalid_request(
                    "Multi-agent responses are not enabled on this server"
                    + ("." if ctx.live is not None else " over HTTP (they need response.inject)."),
                    param="multi_agent",
                    code="unsupported_parameter",
                )
            )
        try:
            prepared = await self._prepare(request, ctx, stages)
        except SafetyBlock as block:
            return await self._fail_flagged(request, ctx, block, stages, send)
        except RequestRefused as refused:
            self._evict_parent(request, ctx)
            log_refusal(
                refused.error.code,
                transport=ctx.transport,
                connection_id=ctx.connection_id,
                previous_id=request.previous_response_id,
            )
            raise
        await stages.pay()
        return await self._generate(prepared, ctx, stages, seed, send)

    async def compact(self, request: CreateRequest, ctx: TurnContext) -> dict[str, Any]:
        """`POST /v1/responses/compact` (PROTOCOL.md §5.1): the request's context, resolved,
        checked and rendered as a turn's is, as a compacted window; raises RequestRefused."""
        stages = StageLog.of_request(self.services.engine, ctx.request_bytes)
        try:
            prepared = await self._prepare(request, ctx, stages)
        except SafetyBlock as block:
            raise RequestRefused(block.error) from None
        await stages.pay()
        services = self.services
        return await compact(prepared, services.engine, Seed.of(request), services.prefix_cache)

    # -- before the engine ----------------------------------------------------------------
    async def _prepare(
        self, request: CreateRequest, ctx: TurnContext, stages: StageLog
    ) -> PreparedTurn:
        """Resolve, then render, validate, fit, screen and route; raises RequestRefused."""
        services = self.services
        resolved = await resolve(
            request,
            ctx.tenant,
            self._turn_cache(ctx),
            persistence=services.persistence,
            metrics=services.metrics,
            stages=stages,
        )
        return prepare(
            resolved,
            ctx.tenant,
            stages,
            switches=self.optimizations,
            context_window_tokens=self.config.limits.context_window_tokens,
            drop_context=self.faults.drop_context,  # the fault: the parent resolved, unused
            cache_block_tokens=int(services.profile.prompt_cache_block_tokens),
        )

    def _turn_cache(self, ctx: TurnContext) -> TurnCache:
        return self._cache_of(ctx.cache, ctx.forks)

    def _cache_of(
        self,
        cache: ResponseCache[Conversation] | None,
        forks: tuple[ResponseCache[Conversation], ...] = (),
    ) -> TurnCache:
        shared = self.services.shared_cache
        own = None if cache is None else shared if shared is not None else cache
        return TurnCache(
            own,
            forks,
            enabled=self.optimizations.connection_cache,
            refresh_on_read=not self.faults.cache_fifo,
        )

    def _evict_parent(self, request: CreateRequest, ctx: TurnContext) -> None:
        self.evict_parent(request.previous_response_id, ctx.cache)

    def evict_parent(
        self, previous_id: str | None, cache: ResponseCache[Conversation] | None
    ) -> None:
        """A failed turn evicts the parent it referenced, whatever refused it: the parse, a
        stage, the engine (PROTOCOL.md §5.1: "If a turn fails (4xx or 5xx)")."""
        if previous_id is None or self.faults.no_failure_eviction:
            return
        if self._cache_of(cache).evict(previous_id):
            self.services.metrics.inc("wsmode_cache_evictions_total", reason="failed_turn")

    # -- the engine and the events --------------------------------------------------------
    async def _generate(
        self,
        prepared: PreparedTurn,
        ctx: TurnContext,
        stages: StageLog,
        seed: Seed,
        send: Send,
    ) -> TurnOutcome:
        request, faults = prepared.request, self.faults
        instructions = request.instructions
        if faults.inherit_instructions and instructions is None and prepared.parent is not None:
            instructions = prepared.parent.response.get("instructions")  # the fault inherits them
        emitter = ResponseEmitter(
            new_response(request, new_id("resp"), instructions),
            stream_id=request.stream_id,
            obfuscate=request.include_obfuscation,
            self_check=self.config.self_check,
            agent=self.config.root_agent if request.multi_agent else None,
        )
        hooks = self.hooks
        out = Outbox(send, hooks.event_faults() if hooks.rewrites_events else None)
        live = self._live(request, ctx, emitter, out)
        try:
            outcome = await self._decode_and_finish(prepared, ctx, stages, seed, emitter, out, live)
        except BaseException:
            if live is not None and ctx.live is not None:
                ctx.live.discard(live)
            raise
        return outcome if live is None else dataclasses.replace(outcome, live=live)

    def _live(
        self, request: CreateRequest, ctx: TurnContext, emitter: ResponseEmitter, out: Outbox
    ) -> LiveResponse | None:
        """The handle steers and injects reach this response by (WebSocket only)."""
        if ctx.live is None or not (self.config.steer or request.multi_agent):
            return None
        limits, profile = self.config.limits, self.services.profile

        def prefill_s(items: Sequence[dict[str, Any]]) -> float:
            """Reading injected tool outputs: the profile's prefill of their new tokens."""
            tokens = sum(count_tokens(item_text(item)) for item in items)
            return profile.stage_cost_s("prefill_uncached", tokens)

        live = LiveResponse(
            emitter,
            out,
            multi_agent=request.multi_agent,
            compaction=request.compaction,
            max_pending_steers=limits.max_pending_steers,
            required_input_timeout_s=limits.required_input_timeout_s,
            prefill_s=None if profile.is_zero else prefill_s,
        )
        ctx.live.open(live)
        return live

    async def _decode_and_finish(
        self,
        prepared: PreparedTurn,
        ctx: TurnContext,
        stages: StageLog,
        seed: Seed,
        emitter: ResponseEmitter,
        out: Outbox,
        live: LiveResponse | None,
    ) -> TurnOutcome:
        request, services = prepared.request, self.services
        planned = request  # what the engine plans from
        if self.faults.ignore_named_tool_choice and _names_a_function(request):
            planned = dataclasses.replace(request, tool_choice="none")  # as with no call parser
        try:
            plan, cached_tokens = plan_turn(
                services.engine,
                planned,
                prepared.prompt,
                services.prefix_cache,
                seed=seed,
                output_limit_tokens=self.config.limits.max_output_tokens,
                cache_min_tokens=self._cache_min_tokens,
            )
        except RequestRefused:
            self._evict_parent(request, ctx)
            raise
        engine_start = time.perf_counter()
        # created + in_progress go out with the first token when the engine answers at once,
        # or before the engine's wait otherwise (`decode` flushes them): one write, not two.
        await out.emit([emitter.created(), emitter.in_progress()], hold=True)
        services.metrics.in_flight += 1
        try:
            decoded = await decode(
                plan,
                emitter,
                out,
                engine_start,
                services.metrics,
                max_tokens_per_delta=int(services.profile.max_tokens_per_delta),
                live=live,
                pacer=services.pacer,
            )
            if self.hooks.script is not None:  # a client case may fail it in these deltas
                await out.flush()
        except (ConnectionError, asyncio.CancelledError):
            raise  # the client went away: nothing to tell it
        except RequiredInputTimeout as timeout:  # [I] PROTOCOL.md §2.2
            error = errors.ApiError(
                400, "invalid_request_error", "required_input_timeout", str(timeout)
            )
            return await self._fail_mid_stream(request, ctx, emitter, out, error)
        except Exception as exc:
            injected = exc.error if isinstance(exc, InjectedFailure) else None
            return await self._fail_mid_stream(request, ctx, emitter, out, injected)
        finally:
            services.metrics.in_flight -= 1
            if live is not None:
                live.finished = True  # [I] it takes steers and injects until its last item ends
        generated = _Generated(plan, decoded, cached_tokens, engine_start)
        return await self._finish(prepared, ctx, stages, generated, emitter, out)

    # -- after the engine -----------------------------------------------------------------
    async def _finish(
        self,
        prepared: PreparedTurn,
        ctx: TurnContext,
        stages: StageLog,
        generated: _Generated,
        emitter: ResponseEmitter,
        out: Outbox,
    ) -> TurnOutcome:
        """Terminal, cache entry replaced, post-inference: the terminal event goes out last."""
        request, prompt, services = prepared.request, prepared.prompt, self.services
        plan, status = generated.plan, generated.decoded.status
        cache_write_tokens = keep_prefill(services.prefix_cache, prompt, generated.cached_tokens)
        stages_ms = stages.total_ms()  # every stage of the turn has run: reported and recorded
        emitter.response[EXTENSION_FIELD] = wsmode_report(
            resolution=prepared.resolution,
            received_at=ctx.received_at,
            engine_start=generated.engine_start,
            decoded=generated.decoded,
            plan=plan,
            stages_ms=stages_ms,
            cached_tokens=generated.cached_tokens,
        )
        turn_usage = usage(
            prompt.token_count, generated.cached_tokens, cache_write_tokens, plan, generated.decoded
        )
        terminal = terminal_events(emitter, generated.decoded, plan, turn_usage)
        final_response = terminal[-1]["response"]
        await out.emit(terminal[:-1])
        admission = services.admission
        if admission.busy or not self.optimizations.async_post:
            await out.flush()  # nothing waits out the queue below or the store write
        await admission.admit()  # a burst of ends: a few per loop iteration
        entry = remember(
            prepared,
            ctx.tenant,
            emitter.output,
            final_response,
            plan,
            cache=self._turn_cache(ctx),
            prefix_cache=services.prefix_cache,
            metrics=services.metrics,
        )
        await self.post_inference.run(
            entry,
            storing=request.store or self.faults.store_false_persisted,
            off_path=self.optimizations.async_post,
            parent=prepared.parent,
        )
        await out.emit(terminal[-1])
        await out.flush()
        services.metrics.record_stages(stages_ms)
        return self._outcome(final_response, status, ctx)

    def _outcome(self, response: dict[str, Any], status: Status, ctx: TurnContext) -> TurnOutcome:
        self.services.metrics.inc("wsmode_responses_total", transport=ctx.transport, status=status)
        if self.hooks.observer is not None:
            self.hooks.record(ctx.connection_id, "meta", "response", wire.dumps(response))
        log_response(response, status, transport=ctx.transport, connection_id=ctx.connection_id)
        return TurnOutcome(response, status)

    # -- turns that end early -------------------------------------------------------------
    async def _fail_flagged(
        self,
        request: CreateRequest,
        ctx: TurnContext,
        block: SafetyBlock,
        stages: StageLog,
        send: Send,
    ) -> TurnOutcome:
        """Flagged input: created, then failed (invalid_prompt)."""
        self._evict_parent(request, ctx)
        await stages.pay()
        response = await fail_response(request, block.error, send)
        return self._outcome(response, "failed", ctx)

    async def _fail_mid_stream(
        self,
        request: CreateRequest,
        ctx: TurnContext,
        emitter: ResponseEmitter,
        out: Outbox,
        error: errors.ApiError | None = None,
    ) -> TurnOutcome:
        """A fault mid-stream (or a client case's injected one, with its `error`): `error` then
        `response.failed`, never a traceback."""
        self._evict_parent(request, ctx)
        failed = emitter.failed(error or errors.server_error())
        await out.emit(failed)
        await out.flush()
        return self._outcome(failed[-1]["response"], "failed", ctx)


def _names_a_function(request: CreateRequest) -> bool:
    choice = request.tool_choice  # a str or a dict
    return isinstance(choice, dict) and choice.get("type") == "function"
