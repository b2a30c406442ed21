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
tokens. A turn whose recorded output holds a function call asks ``CALL_CAP_HEADROOM`` times its
recorded length, so the call arrives whole. A response that ends ``incomplete`` because it
reached the cap is a turn done; each turn records the cap it asked for, and the bench reports
the turns whose target produced more (the cap ignored) or less than asked
(:func:`harness.load.bench.output_caps.output_cap_summary`). A function call the cap cut all the
same (``status: incomplete``, or its arguments unfinished JSON) ends the rollout after that
turn, **in every mode**: answering it would resend cut arguments (over ``http`` in the history,
through a gateway from the chain), which the API refuses, and dropping it in one mode only would
make the modes' conversations differ. The turn is ok and marked ``cut_call``; the rollout is ok
with ``stopped`` saying why it ended early (docs/OUTPUT-CAPS.md).

Abandoned turns are cancelled on the target: a turn that times out, or that a probe or the
run's duration limit gives up, has its stream closed (HTTP: the connection is dropped, never
returned to the keep-alive pool; ws: the socket is closed), which is how the API cancels a
streaming response; the turn's error says so (:data:`CANCELLED_NOTE`).

Failures are counted apart: a failed turn yields a sample with ``ok=False`` and its error, no
latency values, and ends the rollout (its e2e is not a latency sample either).

A multi-agent rollout (trace version 2, PROTOCOL.md §2.2) replays over ``ws`` only: each create
carries the rollout's ``multi_agent``, and the turn's calls are answered in flight with
``response.inject`` (``harness.load.core.injects``); the time the response waited for those tools
counts as tool time, like the time before a turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from harness.errors import TransportError
from harness.load.core.exchange_outcome import capped_exchange_error, exchange_error, fill_metrics
from harness.load.core.injects import InjectedExchange
from harness.load.core.measurements import RolloutResult, TurnResult
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.core.rollout_requests import RolloutState, cut_call, reproduces
from harness.load.core.session import HttpClientPool, Session
from harness.load.core.target_watch import TargetWatch
from harness.protocol.events import reached_output_cap
from harness.traces.format import Rollout, Turn

#: what a timed-out or abandoned turn's error ends with: its stream was closed on the target
CANCELLED_NOTE = "cancelled on the target (stream closed)"


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
    before its first (harness/load/core/target_watch.py).

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
            if turn_result.cut_call:  # never answered nor resent (module docstring)
                if turn is not turns[-1]:
                    result.stopped = (
                        f"turn {turn.index}: a function call cut by max_output_tokens "
                        f"({turn_result.output_cap_tokens}) ends the rollout in every mode"
                    )
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
    out.cut_call = capped and any(cut_call(i) for i in output)
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
