"""The replay driver: one rollout of a trace, replayed against a target, acting as the agent.

Three modes (ARCHITECTURE.md §4):

``ws``
    one WebSocket per rollout; turn 0 carries instructions, tools and the first input, every later
    turn only ``previous_response_id`` + the new items (``store`` false by default, so the
    connection cache is the only way to continue). Optional ``generate: false`` prewarm, as codex
    does: the full first prompt is sent without generation, then turn 0 continues it with
    ``input: []``.
``http``
    stateless HTTP + SSE: ``store: false``, the whole history resent on every turn.
``http-chained``
    HTTP + SSE with ``previous_response_id`` and ``store: true`` (the server hydrates the chain
    from its store).

The driver answers the function calls the server *actually* emitted. The recorded calls of turn
*i* and the emitted ones are matched by position; each emitted call gets the recorded output of
its recorded twin (the recorded outputs in order), and calls the trace does not have get
``generic_output``. Against the reference server the turn's recorded output is sent as
``wsmode.script`` (on by default for the embedded server), so the emitted calls *are* the recorded
ones and the replay reproduces the trace; against another server (``send_script=False``) the
rollout still runs exactly the recorded number of turns.

Tool time: before turn *i* the driver sleeps ``tool_wait_ms × time_scale``. It is never silently
shrunk: the rollout's end-to-end time counts the recorded tool time at its recorded value::

    e2e_ms = wall_ms - waited_tool_ms + recorded_tool_ms          (= model-side time + tool time)

where ``wall_ms`` runs from the (intended) start to the last terminal event. The model-side time
splits into ``inference_ms`` (the server's simulated queue + prefill, from the terminal response's
``wsmode`` stamps, plus the decode span measured at the client) and ``api_ms`` (everything else:
connection setup, transport, the server's API stages, client work).

Output caps: each create asks ``max_output_tokens`` = the turn's recorded output length
(``Turn.output_tokens``) x ``output_cap_scale`` (at least :data:`MIN_OUTPUT_CAP_TOKENS`, the
API's smallest), so a real model that would generate until its context is full does the
recorded work; ``output_cap_scale=None`` lifts the cap. A scripted replay (``send_script``, the
reference server) sends no cap: the script is the recorded output, counted in the server's own
tokens. A response that ends ``incomplete`` because it reached the cap is a turn done; each turn
records the cap it asked for, and the bench reports the turns whose target produced more (the
cap ignored) or less than asked (:func:`harness.load.replay_results.output_cap_summary`). A
function call the cap cut (``status: incomplete``, or its arguments unfinished JSON) is neither
answered nor resent over ``http`` (the API refuses such arguments in an input); over ``ws`` and
``http-chained`` the server holds it in the chain and it is answered like any call.

Abandoned turns are cancelled on the target: a turn that times out, or that a probe or the
run's duration limit gives up, has its stream closed (HTTP: the connection is dropped, never
returned to the keep-alive pool; ws: the socket is closed), which is how the API cancels a
streaming response; the turn's error says so (:data:`CANCELLED_NOTE`).

Failures are counted apart: a failed turn yields a sample with ``ok=False`` and its error, no
latency values, and ends the rollout (its e2e is not a latency sample either).

A multi-agent rollout (trace version 2, PROTOCOL.md §2.2) replays over ``ws`` only: each create
carries the rollout's ``multi_agent``, and the turn's calls are answered in flight with
``response.inject`` (``harness.load.injects``); the time the response waited for those tools
counts as tool time, like the time before a turn.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.errors import TransportError
from harness.load.exchange_outcome import capped_exchange_error, exchange_error, fill_metrics
from harness.load.injects import InjectedExchange, multi_agent_exchange
from harness.load.liveness import DEFAULT_EVENT_TIMEOUT_S, DEFAULT_TURN_TIMEOUT_S, TargetWatch
from harness.load.modes import Mode, parse_mode
from harness.load.replay_results import RolloutResult, TurnResult
from harness.protocol.events import reached_output_cap
from harness.protocol.items import content_text, history_item, summary_text
from harness.traces.format import OutputSpec, Rollout, Turn, input_message
from harness.transport.exchange import Exchange, sse_exchange, ws_exchange
from harness.transport.failures import TargetTimeout
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient

GENERIC_OUTPUT = "ok"
CONTINUE_TEXT = "Continue."
#: the smallest ``max_output_tokens`` the API accepts
MIN_OUTPUT_CAP_TOKENS = 16
#: what a timed-out or abandoned turn's error ends with: its stream was closed on the target
CANCELLED_NOTE = "cancelled on the target (stream closed)"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a rollout is replayed: the WS URL and/or the HTTP base URL (`.../v1`)."""

    ws_url: str | None = None
    http_url: str | None = None
    api_key: str | None = None
    beta_header: bool = False

    def for_mode(self, mode: Mode) -> str:
        url = self.ws_url if mode == "ws" else self.http_url
        if not url:
            kind = "WebSocket" if mode == "ws" else "HTTP"
            raise ValueError(f"mode {mode!r} needs a {kind} URL")
        return url


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    mode: Mode = "ws"
    time_scale: float = 0.0  # fraction of the recorded tool time actually waited
    send_script: bool = True  # send the recorded output as `wsmode.script` (reference server)
    prewarm: bool = False  # ws: codex-style `generate: false` warm-up before turn 0
    store: bool | None = None  # default: false for ws/http; http-chained always stores
    include_reasoning: bool = True  # http: resend emitted reasoning items (id, summary, encrypted)
    model: str | None = None  # the model every request names; default: the rollout's
    seed: int | None = None  # `wsmode.seed`; default: the rollout's seed
    max_turns: int | None = None  # replay only the first N turns
    turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S
    event_timeout_s: float = DEFAULT_EVENT_TIMEOUT_S  # one event; silence ends the turn here
    connect_timeout_s: float = 10.0
    generic_output: str = GENERIC_OUTPUT
    # a line put before the instructions so that no other variant or run shares this one's
    # prompt prefix in the target's prefix cache (results.work); None: the trace's instructions
    cache_salt: str | None = None
    # max_output_tokens = the turn's recorded output tokens x this; None: no cap sent
    output_cap_scale: float | None = 1.0

    @property
    def read_timeout_s(self) -> float:
        """Each read of an HTTP stream: the event timeout (silence), within the turn's."""
        return min(self.event_timeout_s, self.turn_timeout_s)

    def __post_init__(self) -> None:
        parse_mode(self.mode)
        if self.time_scale < 0:
            raise ValueError("time_scale must be >= 0")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError("max_turns must be >= 1")
        scale = self.output_cap_scale
        if scale is not None and not (math.isfinite(scale) and scale > 0):
            raise ValueError("output_cap_scale must be > 0 (None lifts the cap)")

    @property
    def effective_store(self) -> bool:
        if self.mode == "http-chained":
            return True
        return bool(self.store)


# -- building requests (no I/O) --------------------------------------------------------------------
def output_cap_tokens(turn: Turn, scale: float | None) -> int | None:
    """The `max_output_tokens` a turn asks for: its recorded output tokens x `scale`, at least
    the API's minimum; None when the cap is lifted."""
    if scale is None:
        return None
    return max(MIN_OUTPUT_CAP_TOKENS, math.ceil(turn.output_tokens * scale))


def reproduces(items: Sequence[Mapping[str, Any]], specs: Sequence[OutputSpec]) -> bool:
    """True when the emitted output items are exactly the recorded ones (the tool outputs a
    multi-agent response lists are the client's own, not the model's)."""
    items = [i for i in items if i.get("type") != "function_call_output"]
    return len(items) == len(specs) and all(
        _reproduces(item, spec) for item, spec in zip(items, specs, strict=True)
    )


def _reproduces(item: Mapping[str, Any], spec: OutputSpec) -> bool:
    if item.get("type") != spec.type:
        return False
    if spec.type == "message":
        return content_text(item.get("content")) == spec.text
    if spec.type == "function_call":
        emitted = (item.get("name"), item.get("arguments"), item.get("call_id"))
        return emitted == (spec.name, spec.arguments, spec.call_id)
    return summary_text(item) == spec.summary


@dataclass(slots=True)
class Answers:
    """A turn's new input items after mapping recorded call ids onto the emitted ones."""

    items: list[dict[str, Any]]
    answered_call_ids: tuple[str, ...]
    generic_answers: int


def answer_calls(
    turn: Turn,
    recorded_calls: Sequence[str],
    emitted_calls: Sequence[Mapping[str, Any]],
    *,
    generic_output: str = GENERIC_OUTPUT,
) -> Answers:
    """Turn `turn`'s recorded input into what the agent sends after the emitted calls.

    The k-th recorded call of the previous turn is matched with the k-th emitted call: its
    recorded `function_call_output` is sent with the emitted `call_id`. Recorded outputs without
    an emitted twin are dropped (the server issued fewer calls); emitted calls without a recorded
    twin get `generic_output`. Other items (user messages) pass through in place. An input left
    empty becomes one user message, so every turn still asks for a response.
    """
    emitted_ids = [str(c.get("call_id")) for c in emitted_calls]
    mapping = dict(zip(recorded_calls, emitted_ids, strict=False))
    items: list[dict[str, Any]] = []
    answered: list[str] = []
    for item in turn.input:
        if item.get("type") != "function_call_output":
            items.append(dict(item))
            continue
        target = mapping.get(str(item.get("call_id")))
        if target is None or target in answered:
            continue
        items.append({**item, "call_id": target})
        answered.append(target)
    generic = 0
    for call_id in emitted_ids:
        if call_id not in answered:
            items.append(
                {"type": "function_call_output", "call_id": call_id, "output": generic_output}
            )
            answered.append(call_id)
            generic += 1
    if not items:
        items.append(input_message(CONTINUE_TEXT))
    return Answers(items, tuple(answered), generic)


class RolloutState:
    """What the agent knows between turns: the chain id, the history, the calls to answer."""

    def __init__(self, rollout: Rollout, options: ReplayOptions) -> None:
        self.rollout = rollout
        self.options = options
        self.previous_response_id: str | None = None
        self.history: list[dict[str, Any]] = []  # http: everything sent and received so far
        self.emitted_calls: list[dict[str, Any]] = []
        self.recorded_calls: tuple[str, ...] = ()

    def request(self, turn: Turn) -> tuple[dict[str, Any], Answers]:
        """The body of the create for `turn` (without `type`; WS adds it)."""
        opts = self.options
        if turn.index == 0:
            answers = Answers([dict(i) for i in turn.input], (), 0)
        else:
            answers = answer_calls(
                turn,
                self.recorded_calls,
                self.emitted_calls,
                generic_output=opts.generic_output,
            )
        body: dict[str, Any] = {
            "model": opts.model or self.rollout.model,
            "store": opts.effective_store,
            "tool_choice": "auto",
            "parallel_tool_calls": True,
        }
        if opts.cache_salt is not None:
            instructions = self.rollout.instructions
            body["instructions"] = opts.cache_salt + (f"\n{instructions}" if instructions else "")
        elif self.rollout.instructions is not None:
            body["instructions"] = self.rollout.instructions
        if self.rollout.tools:
            body["tools"] = list(self.rollout.tools)
        if self.rollout.multi_agent is not None:
            body["multi_agent"] = dict(self.rollout.multi_agent)
        # a script fixes the output itself (its length in the server's own tokens)
        cap = None if opts.send_script else output_cap_tokens(turn, opts.output_cap_scale)
        if cap is not None:
            body["max_output_tokens"] = cap
        if opts.mode == "http":
            body["input"] = [*self.history, *answers.items]
            if opts.include_reasoning:
                # without a stored response, reasoning can only come back encrypted
                body["include"] = ["reasoning.encrypted_content"]
        else:
            body["input"] = answers.items
            if self.previous_response_id is not None:
                body["previous_response_id"] = self.previous_response_id
        extension: dict[str, Any] = {}
        if opts.send_script:
            extension["script"] = turn.script()
        seed = opts.seed if opts.seed is not None else self.rollout.seed
        if seed is not None and opts.send_script:
            extension["seed"] = seed
        if extension:
            body["wsmode"] = extension
        return body, answers

    def prewarm_request(self, turn: Turn) -> dict[str, Any]:
        body, _ = self.request(turn)
        body.pop("wsmode", None)
        body.pop("max_output_tokens", None)  # nothing is generated
        body["generate"] = False
        return body

    def observe(
        self, turn: Turn, sent_items: Sequence[Mapping[str, Any]], exchange: Exchange
    ) -> None:
        """Remember what the server emitted, for the next turn."""
        assert exchange.response is not None
        output = exchange.response.output_items()
        self.previous_response_id = exchange.response_id
        in_flight = self.rollout.multi_agent is not None  # its calls were answered by inject
        stateless = self.options.mode == "http"
        if stateless:  # a call cut by max_output_tokens cannot be resent (its arguments are cut)
            output = [i for i in output if not _cut_call(i)]
        calls = [] if in_flight else [i for i in output if i.get("type") == "function_call"]
        self.emitted_calls = [dict(i) for i in calls]
        self.recorded_calls = turn.call_ids
        if stateless:
            self.history.extend(dict(i) for i in sent_items)
            for item in output:
                converted = history_item(item, include_reasoning=self.options.include_reasoning)
                if converted is not None:
                    self.history.append(converted)


def _cut_call(item: Mapping[str, Any]) -> bool:
    """A function call cut short: marked incomplete, or its arguments not whole JSON (a server
    that truncates at max_output_tokens without saying so)."""
    if item.get("type") != "function_call":
        return False
    if item.get("status") == "incomplete":
        return True
    try:
        json.loads(str(item.get("arguments") or "{}"))
    except ValueError:
        return True
    return False


# -- transports ------------------------------------------------------------------------------------
_PoolKey = tuple[str, str | None, float]


class HttpClientPool:
    """Keep-alive HTTP clients handed to rollouts one at a time, reused across rollouts.

    Building an `SseClient` is cheap (its TLS context is built once per process), so the pool
    is no longer needed to keep a ~22 ms event-loop stall out of the measurements; it keeps each
    client's keep-alive connection open across rollouts, like an agent process that keeps its
    HTTP client across tasks. A client serves one rollout at a time (its byte counters stay per
    rollout).
    """

    def __init__(self) -> None:
        self._free: dict[_PoolKey, list[SseClient]] = {}
        self._keys: dict[int, _PoolKey] = {}
        self._all: list[SseClient] = []

    def _new(self, key: _PoolKey) -> SseClient:
        url, api_key, timeout_s = key
        client = SseClient(url, api_key=api_key, timeout_s=timeout_s, max_connections=1)
        self._all.append(client)
        self._keys[id(client)] = key
        return client

    def prefill(self, url: str, api_key: str | None, timeout_s: float, count: int) -> None:
        key = (url, api_key, timeout_s)
        free = self._free.setdefault(key, [])
        while len(free) < count:
            free.append(self._new(key))

    def acquire(self, url: str, api_key: str | None, timeout_s: float) -> SseClient:
        key = (url, api_key, timeout_s)
        free = self._free.setdefault(key, [])
        return free.pop() if free else self._new(key)

    def release(self, client: SseClient) -> None:
        key = self._keys.get(id(client))
        if key is not None:  # else the pool was closed meanwhile (Ctrl-C): the client with it
            self._free.setdefault(key, []).append(client)

    @property
    def size(self) -> int:
        return len(self._all)

    async def aclose(self) -> None:
        for client in self._all:
            await client.close()
        self._all.clear()
        self._free.clear()
        self._keys.clear()


class Session:
    """One rollout's connection: a WebSocket, or an HTTP client with keep-alive."""

    def __init__(
        self, endpoint: Endpoint, options: ReplayOptions, pool: HttpClientPool | None = None
    ) -> None:
        self.endpoint = endpoint
        self.options = options
        self.pool = pool
        self.ws: WsClient | None = None
        self.sse: SseClient | None = None
        self.timed_out = False  # the last exchange ran out of time (a liveness probe decides)
        self.broken = False  # ... or its connection failed (refused, reset, closed)

    async def open(self) -> None:
        url = self.endpoint.for_mode(self.options.mode)
        if self.options.mode == "ws":
            self.ws = await WsClient.connect(
                url,
                api_key=self.endpoint.api_key,
                beta_header=self.endpoint.beta_header,
                timeout_s=self.options.connect_timeout_s,
            )
        elif self.pool is not None:
            self.sse = self.pool.acquire(url, self.endpoint.api_key, self.options.read_timeout_s)
        else:
            self.sse = SseClient(
                url,
                api_key=self.endpoint.api_key,
                timeout_s=self.options.read_timeout_s,
                max_connections=1,
            )

    async def exchange(self, body: Mapping[str, Any]) -> tuple[Exchange, int, int]:
        """(exchange, bytes sent, bytes received) for one create."""
        timeout = self.options.turn_timeout_s
        if self.ws is not None:
            ex = await ws_exchange(
                self.ws, body, timeout_s=timeout, event_timeout_s=self.options.event_timeout_s
            )
            self.timed_out = isinstance(ex.transport_error, TargetTimeout)
            self.broken = ex.transport_error is not None
            if self.timed_out:
                await self.cancel()
            return ex, ex.bytes_sent, ex.bytes_received
        assert self.sse is not None
        sent0, received0 = self.sse.bytes_sent, self.sse.bytes_received
        try:
            async with asyncio.timeout(timeout):
                ex = await sse_exchange(self.sse, body, timeout_s=timeout)
        except TimeoutError:
            ex = Exchange(dict(body), time.perf_counter_ns())
            ex.transport_error = TargetTimeout(f"no terminal event within {timeout} s")
        self.timed_out = isinstance(ex.transport_error, TargetTimeout)
        self.broken = ex.transport_error is not None
        return ex, self.sse.bytes_sent - sent0, self.sse.bytes_received - received0

    async def inject_exchange(
        self, body: dict[str, Any], turn: Turn
    ) -> tuple[InjectedExchange, int, int]:
        """A multi-agent turn: its calls answered in flight (ws only)."""
        assert self.ws is not None
        sent0, received0 = self.ws.bytes_sent, self.ws.bytes_received
        done = await multi_agent_exchange(
            self.ws,
            body,
            turn,
            scripted=self.options.send_script,
            time_scale=self.options.time_scale,
            timeout_s=self.options.turn_timeout_s,
        )
        self.timed_out = isinstance(done.exchange.transport_error, TargetTimeout)
        sent, received = self.ws.bytes_sent - sent0, self.ws.bytes_received - received0
        if self.timed_out:
            await self.cancel()
        return done, sent, received

    async def cancel(self) -> None:
        """Abandon the response in flight: over ws close the socket now (the API cancels a
        response whose connection goes); an HTTP stream given up has already had its connection
        dropped by the client (never pooled half-read). The rollout ends after this turn."""
        if self.ws is not None:
            await self.ws.close()

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.sse is not None:
            if self.pool is not None:
                self.pool.release(self.sse)
            else:
                await self.sse.close()


# -- the driver ------------------------------------------------------------------------------------
async def replay_rollout(
    rollout: Rollout,
    endpoint: Endpoint,
    options: ReplayOptions,
    *,
    name: str | None = None,
    intended_start_ns: int | None = None,
    http_pool: HttpClientPool | None = None,
    on_turn: Callable[[TurnResult], None] | None = None,
    watch: TargetWatch | None = None,
) -> RolloutResult:
    """Replay one rollout; never raises for target misbehaviour (it becomes a failed turn).

    With `watch` (shared by the rollouts against one target), a turn that times out triggers a
    liveness probe; once the target is found dead this rollout stops before its next turn, or
    before its first (harness/load/liveness.py).

    `intended_start_ns` (perf_counter_ns) is when an open-loop schedule meant to start it: the
    rollout's wall time and turn 0's TTFT and e2e are measured from there, so a late start counts
    as latency (no coordinated omission). `http_pool` supplies pre-built HTTP clients (see
    `HttpClientPool`); without it each HTTP rollout builds (and closes) its own. `on_turn` sees
    each turn's result as soon as the turn ends (live progress; a rollout can take minutes).
    """
    mode_name = name or options.mode
    started_ns = time.perf_counter_ns()
    origin_ns = intended_start_ns if intended_start_ns is not None else started_ns
    lag_ms = max(0.0, (started_ns - origin_ns) / 1e6)
    result = RolloutResult(
        rollout.id,
        mode_name,
        options.mode,
        start_lag_ms=lag_ms,
        time_scale=options.time_scale,
        started_ns=started_ns,
    )
    turns = rollout.turns[: options.max_turns] if options.max_turns else rollout.turns
    state = RolloutState(rollout, options)
    session = Session(endpoint, options, http_pool)
    last_ns = started_ns
    try:
        if watch is not None and watch.dead_reason is not None:
            reason = f"not run: {watch.dead_reason}"
            return _failed_at_start(result, rollout, mode_name, reason, on_turn)
        try:
            connect_start = time.perf_counter_ns()
            await session.open()
            result.connect_ms = (time.perf_counter_ns() - connect_start) / 1e6
        except (TransportError, ValueError, OSError) as exc:
            if watch is not None and isinstance(exc, TransportError | OSError):
                await _probe(watch, endpoint, options, rollout)  # refused, reset, no handshake
            return _failed_at_start(result, rollout, mode_name, f"connect: {exc}", on_turn)
        for turn in turns:
            if watch is not None and watch.dead_reason is not None:
                result.ok = False
                result.error = f"turn {turn.index}: not run: {watch.dead_reason}"
                break
            running = _run_turn(
                rollout, turn, state, session, result, lag_ms if turn.index == 0 else 0.0
            )
            finished = await (watch.race(running) if watch is not None else running)
            if finished is None:  # a probe found the target dead while this turn was in flight
                assert watch is not None
                result.ok = False
                result.error = f"turn {turn.index}: given up: {watch.dead_reason}"
                result.turns.append(
                    TurnResult(rollout.id, mode_name, turn.index, False, result.error)
                )
                break
            turn_result = finished
            result.turns.append(turn_result)
            last_ns = time.perf_counter_ns()
            if on_turn is not None:
                on_turn(turn_result)
            if not turn_result.ok:
                result.ok = False
                result.error = f"turn {turn.index}: {turn_result.error}"
                if watch is not None and (session.timed_out or session.broken):
                    await _probe(watch, endpoint, options, rollout)
                break
    finally:
        await session.close()
    result.wall_ms = (last_ns - origin_ns) / 1e6
    return result


async def _probe(
    watch: TargetWatch, endpoint: Endpoint, options: ReplayOptions, rollout: Rollout
) -> None:
    url = endpoint.for_mode(options.mode)
    await watch.after_failure(url, options.mode, options.model or rollout.model, endpoint.api_key)


def _failed_at_start(
    result: RolloutResult,
    rollout: Rollout,
    mode_name: str,
    error: str,
    on_turn: Callable[[TurnResult], None] | None,
) -> RolloutResult:
    """A rollout that ended before turn 0: it could not connect, or its target is dead."""
    result.ok = False
    result.error = error
    result.turns.append(TurnResult(rollout.id, mode_name, 0, False, result.error))
    if on_turn is not None:
        on_turn(result.turns[-1])
    return result


async def _run_turn(
    rollout: Rollout,
    turn: Turn,
    state: RolloutState,
    session: Session,
    result: RolloutResult,
    lag_ms: float,
) -> TurnResult:
    options = state.options
    out = TurnResult(rollout.id, result.mode, turn.index, ok=False, start_lag_ms=lag_ms)
    out.tool_wait_recorded_ms = turn.tool_wait_ms
    result.recorded_tool_ms += turn.tool_wait_ms
    wait_s = turn.tool_wait_ms * options.time_scale / 1000.0
    if wait_s > 0:
        slept = time.perf_counter_ns()
        await asyncio.sleep(wait_s)
        out.tool_wait_waited_ms = (time.perf_counter_ns() - slept) / 1e6
        result.waited_tool_ms += out.tool_wait_waited_ms
    if options.prewarm and options.mode == "ws" and turn.index == 0:
        warm, sent, received = await session.exchange(state.prewarm_request(turn))
        out.bytes_sent += sent
        out.bytes_received += received
        out.prewarm_ms = warm.e2e_ms
        error = exchange_error(warm)
        if error is not None:
            out.error = f"prewarm: {error}"
            return out
        state.previous_response_id = warm.response_id
        body, answers = state.request(turn)
        body["input"] = []
    else:
        body, answers = state.request(turn)
    out.answered_call_ids = answers.answered_call_ids
    out.generic_answers = answers.generic_answers
    injected: InjectedExchange | None = None
    if rollout.multi_agent is not None:
        if options.mode != "ws":
            out.error = "a multi-agent turn replays over ws only (its calls need response.inject)"
            return out
        injected, sent, received = await session.inject_exchange(body, turn)
        exchange = injected.exchange
    else:
        exchange, sent, received = await session.exchange(body)
    out.bytes_sent += sent
    out.bytes_received += received
    out.output_cap_tokens = body.get("max_output_tokens")
    capped = out.output_cap_tokens is not None
    error = capped_exchange_error(exchange) if capped else exchange_error(exchange)
    if error is not None and session.timed_out:
        error = f"{error}; {CANCELLED_NOTE}"
    fill_metrics(out, exchange, rollout.context_tokens_estimate(turn.index))
    if injected is not None:
        error = injected.error or error
        _fill_injects(out, injected, turn, result)
    if lag_ms and out.ttft_ms is not None and out.turn_e2e_ms is not None:
        out.ttft_ms += lag_ms
        out.turn_e2e_ms += lag_ms
        out.ttfe_ms = None if out.ttfe_ms is None else out.ttfe_ms + lag_ms
    if error is not None:
        out.error = error
        out.ttft_ms = out.ttfe_ms = out.turn_e2e_ms = out.tpot_ms = None
        out.itl_gaps_ms = []
        return out
    assert exchange.response is not None
    output = exchange.response.output_items()
    out.emitted_call_ids = tuple(
        str(i.get("call_id")) for i in output if i.get("type") == "function_call"
    )
    if options.send_script:
        out.reproduced = reproduces(output, turn.output)
    out.reached_output_cap = capped and reached_output_cap(exchange.final_response)
    out.ok = True
    state.observe(turn, answers.items, exchange)
    return out


def _fill_injects(
    out: TurnResult, injected: InjectedExchange, turn: Turn, result: RolloutResult
) -> None:
    """A multi-agent turn: its injects' timings; the time it waited for tools is tool time (out
    of the turn's e2e and decode spans, into the rollout's recorded and waited tool time)."""
    out.injects = len(injected.injects)
    out.inject_ack_ms = [t.ack_ms for t in injected.injects if t.ack_ms is not None]
    out.inject_resume_ms = [t.resume_ms for t in injected.injects if t.resume_ms is not None]
    waited = injected.waited_ms
    out.tool_wait_recorded_ms += turn.inject_wait_ms
    out.tool_wait_waited_ms += waited
    result.recorded_tool_ms += turn.inject_wait_ms
    result.waited_tool_ms += waited
    if out.turn_e2e_ms is not None:
        out.turn_e2e_ms -= waited
        if out.ttft_ms is not None and out.output_tokens > 1:
            out.tpot_ms = (out.turn_e2e_ms - out.ttft_ms) / (out.output_tokens - 1)
    if out.decode_ms is not None:
        out.decode_ms = max(out.decode_ms - waited, 0.0)


def with_mode(options: ReplayOptions, mode: Mode) -> ReplayOptions:
    return replace(options, mode=mode)
