"""One multi-agent turn replayed (trace format version 2, PROTOCOL.md §2.2): a single create whose
client-owned function calls are answered in flight with `response.inject`.

The driver reads the response's events as they come. The k-th function call the response emits
is the turn's k-th recorded call. With the recorded output as `wsmode.script` (the reference
server: the emitted calls are the recorded ones) each recorded inject is sent once every call it
answers is out, its recorded tool time (× `time_scale`) after the last of them, exactly as
recorded. Against any other target each emitted call is answered on its own, with its recorded
twin's output and wait (or `"ok"` at once for a call the trace does not have): a multi-agent
response waits for every call it emitted, so every one is answered and the replay cannot stall
on a grouping the target did not reproduce.

Each inject is timed: `ack_ms` (inject sent → `response.inject.created`) and `resume_ms` (inject
sent → the response's first output event after that reply: it goes on). A
`response.inject.failed`, an error, or no terminal within the turn's timeout fails the turn.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from harness.errors import TransportError
from harness.load.core.replay_options import GENERIC_OUTPUT
from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.beta import INJECT
from harness.protocol.requests import create_event
from harness.protocol.stream import BetaReply, RequestError, StreamAccumulator
from harness.protocol.timing_marks import is_output_event
from harness.traces.format import Inject, Turn
from harness.transport.exchange import Exchange
from harness.transport.failures import TargetTimeout
from harness.transport.ws import WsClient


@dataclass(slots=True)
class InjectTiming:
    call_ids: tuple[str, ...]  # as emitted
    sent_ns: int
    ack_ns: int | None = None
    resumed_ns: int | None = None

    @property
    def ack_ms(self) -> float | None:
        return None if self.ack_ns is None else (self.ack_ns - self.sent_ns) / 1e6

    @property
    def resume_ms(self) -> float | None:
        return None if self.resumed_ns is None else (self.resumed_ns - self.sent_ns) / 1e6


@dataclass(slots=True)
class InjectedExchange:
    """The turn's exchange and what its injects did."""

    exchange: Exchange
    injects: list[InjectTiming] = field(default_factory=list)
    error: str | None = None  # an inject refused
    # (calls out, inject sent) in loop seconds: while these run the response waits for tools
    waits: list[tuple[float, float]] = field(default_factory=list)

    @property
    def waited_ms(self) -> float:
        """Tool time actually waited: the union of the waits (parallel ones count once)."""
        total, end = 0.0, float("-inf")
        for start, stop in sorted(self.waits):
            if stop > end:
                total += stop - max(start, end)
                end = stop
        return total * 1000


@dataclass(slots=True)
class _Planned:
    """An inject to send once its calls are out: its items (emitted ids) and recorded wait."""

    recorded: tuple[str, ...]  # the recorded call ids it answers
    items: list[dict[str, Any]]
    wait_s: float


def _plans(turn: Turn, scripted: bool, time_scale: float) -> list[_Planned]:
    if scripted:
        return [
            _Planned(i.call_ids, [dict(x) for x in i.input], i.tool_wait_ms * time_scale / 1000)
            for i in turn.injects
        ]
    return []  # one per emitted call, made as the calls come (`_for_call`)


def _for_call(turn: Turn, index: int, call_id: str, time_scale: float) -> _Planned:
    """The answer to the `index`-th emitted call: its recorded twin's output and wait."""
    recorded = turn.call_ids[index] if index < len(turn.call_ids) else None
    source: Inject | None = next((i for i in turn.injects if recorded in i.call_ids), None)
    if recorded is None or source is None:
        item = {"type": "function_call_output", "call_id": call_id, "output": GENERIC_OUTPUT}
        return _Planned((call_id,), [item], 0.0)
    answer = next(x for x in source.input if x.get("call_id") == recorded)
    return _Planned(
        (recorded,), [{**answer, "call_id": call_id}], source.tool_wait_ms * time_scale / 1000
    )


async def multi_agent_exchange(
    client: WsClient,
    body: dict[str, Any],
    turn: Turn,
    *,
    scripted: bool,
    time_scale: float,
    timeout_s: float,
) -> InjectedExchange:
    """Send the turn's create and answer its calls in flight until its terminal (module doc)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    stream = StreamAccumulator()
    payload = create_event(**body)
    result = InjectedExchange(Exchange(dict(payload), time.perf_counter_ns()))
    exchange = result.exchange
    queue = _plans(turn, scripted, time_scale)
    emitted: dict[str, float] = {}  # recorded (scripted) or emitted call id -> when it was done
    mapping: dict[str, str] = {}  # recorded call id -> emitted call id
    awaiting_resume: list[InjectTiming] = []
    try:
        exchange.bytes_sent = await client.send_json(payload)
        exchange.sent_ns = client.last_sent_ns
        while True:
            due = await _send_due(client, queue, emitted, mapping, result, loop)
            timed = client.recv_nowait()
            if timed is None:
                try:
                    timed = await client.recv_until(deadline if due is None else min(deadline, due))
                except TargetTimeout:
                    if loop.time() < deadline:
                        continue  # an inject fell due
                    raise TargetTimeout(f"no terminal event within {timeout_s} s") from None
            exchange.events.append(timed)
            routed = stream.feed(timed.event)
            if isinstance(routed, RequestError):
                exchange.request_error = routed.error
                return result
            if isinstance(routed, BetaReply):
                acked = _on_reply(routed, result, timed.received_ns)
                if acked is None:
                    return result  # an inject was refused: the response would wait forever
                awaiting_resume.extend(acked)
                continue
            if not isinstance(routed, ResponseAccumulator):
                continue
            exchange.response = routed
            if awaiting_resume and is_output_event(timed.event):
                for timing in awaiting_resume:
                    timing.resumed_ns = timed.received_ns
                awaiting_resume.clear()
            item = timed.event.get("item")
            if timed.type == "response.output_item.done" and _is_call(item):
                _call_done(turn, item, scripted, time_scale, queue, emitted, mapping, loop)
            if routed.done:
                return result
    except TransportError as exc:
        exchange.transport_error = exc
    finally:
        client.clear_deadline()
    return result


def _is_call(item: object) -> TypeGuard[dict[str, Any]]:
    return isinstance(item, dict) and item.get("type") == "function_call"


def _call_done(
    turn: Turn,
    item: dict[str, Any],
    scripted: bool,
    time_scale: float,
    queue: list[_Planned],
    emitted: dict[str, float],
    mapping: dict[str, str],
    loop: asyncio.AbstractEventLoop,
) -> None:
    call_id = str(item.get("call_id"))
    index = len(mapping)
    if scripted:
        recorded = turn.call_ids[index] if index < len(turn.call_ids) else call_id
        mapping[recorded] = call_id
        emitted[recorded] = loop.time()
        if recorded not in turn.injected_call_ids:  # a call the trace does not have
            generic = _for_call(turn, len(turn.call_ids), call_id, time_scale)
            queue.append(_Planned((recorded,), generic.items, 0.0))
        return
    planned = _for_call(turn, index, call_id, time_scale)
    mapping[planned.recorded[0]] = call_id
    emitted[planned.recorded[0]] = loop.time()
    queue.append(planned)


async def _send_due(
    client: WsClient,
    queue: list[_Planned],
    emitted: dict[str, float],
    mapping: dict[str, str],
    result: InjectedExchange,
    loop: asyncio.AbstractEventLoop,
) -> float | None:
    """Send every planned inject that is due; the loop time the next one falls due, if known."""
    next_due: float | None = None
    for planned in list(queue):
        if not all(call in emitted for call in planned.recorded):
            continue
        due = max(emitted[call] for call in planned.recorded) + planned.wait_s
        if due > loop.time():
            next_due = due if next_due is None else min(next_due, due)
            continue
        queue.remove(planned)
        result.waits.append((due - planned.wait_s, loop.time()))
        items = [
            {**x, "call_id": mapping.get(str(x.get("call_id")), x.get("call_id"))}
            for x in planned.items
        ]
        response_id = result.exchange.response_id
        await client.send_json({"type": INJECT, "response_id": response_id, "input": items})
        timing = InjectTiming(tuple(str(x["call_id"]) for x in items), client.last_sent_ns)
        result.injects.append(timing)
    return next_due


def _on_reply(
    reply: BetaReply, result: InjectedExchange, received_ns: int
) -> list[InjectTiming] | None:
    """Note an inject's reply (replies come in order): the timing it acknowledged, or None
    when it was refused (the turn fails)."""
    event = reply.event
    pending = [t for t in result.injects if t.ack_ns is None]
    if event.get("type") == INJECT + ".created" and pending:
        pending[0].ack_ns = received_ns
        return [pending[0]]
    if event.get("type") == INJECT + ".failed":
        error = event.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        result.error = f"response.inject.failed ({code or 'no code'})"
        return None
    return []
