"""The field rules that need the request (`field_rules.request_problems`), filed where every
reader of a live exchange finds its violations: on the response's accumulator.

A create's reader (certify's `Conn.read`, the load client's `ws_exchange`) calls `judge_exchange`
once, when the exchange ends, with what it sent and every event it read for it. The violations
join the response's own (`ResponseAccumulator.violations`), so the case's findings, the load
results' MUST rule ids and the stream's `all_violations()` carry them like any stream rule; an
exchange answered only by a request error files them with the stream (`StreamAccumulator`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.beta import is_beta_event
from harness.protocol.events import TERMINAL_TYPES
from harness.protocol.field_rules import request_problems
from harness.protocol.stream import StreamAccumulator, is_unnumbered_error
from harness.protocol.stream_rules import Violation


def judge_exchange(
    request: Mapping[str, Any],
    events: Iterable[Mapping[str, Any]],
    response: ResponseAccumulator | None,
    stream: StreamAccumulator,
    *,
    now_s: float | None = None,
) -> list[Violation]:
    """Judge one exchange against its create and file the violations (returned too)."""
    if request.get("type") not in (None, "response.create"):
        return []
    own = response.response_id if response is not None else None
    found = [
        Violation(rule_id, message)
        for rule_id, message in request_problems(request, events, now_s=now_s, response_id=own)
    ]
    (response.violations if response is not None else stream.violations).extend(found)
    return found


@dataclass(slots=True)
class PairedExchange:
    """A create of a recorded connection and the events that answered it."""

    request: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False


def pair_exchanges(frames: Iterable[tuple[str, Any]]) -> list[PairedExchange]:
    """A recorded connection's frames (`("send" | "recv", decoded JSON)`, in order) as the
    creates it sent, each with the events that answered it.

    Pairing follows the lanes (§5.2): an event goes to the oldest unanswered create of the lane
    it names, else (a mis-tagged event) to the oldest unanswered create of any lane, so the lane
    rules see it. A terminal or a request-level error ends an exchange. Beta replies, events no
    create asked for (a steered response's successor) and errors answering frames that were no
    create (a malformed frame, a steer) are left out.
    """
    exchanges: list[PairedExchange] = []
    pending: dict[str | None, list[PairedExchange | None]] = {}  # None: a frame that is no create
    for direction, frame in frames:
        if not isinstance(frame, dict):
            if direction == "send":
                pending.setdefault(None, []).append(None)
            continue
        if direction == "send":
            if frame.get("type") == "response.create":
                lane = frame.get("stream_id")
                exchange = PairedExchange(dict(frame))
                exchanges.append(exchange)
                pending.setdefault(lane if isinstance(lane, str) else None, []).append(exchange)
            elif frame.get("type") != "response.steer" and frame.get("type") != "response.inject":
                pending.setdefault(None, []).append(None)  # its error must not end a create
            continue
        if is_beta_event(frame):
            continue
        target = _answering(pending, frame)
        if target is None:
            continue
        target.events.append(frame)
        if frame.get("type") in TERMINAL_TYPES or is_unnumbered_error(frame):
            target.done = True
    return exchanges


def _answering(
    pending: dict[str | None, list[PairedExchange | None]], event: Mapping[str, Any]
) -> PairedExchange | None:
    """The unanswered create `event` belongs to (removed from `pending` once `event` ends it)."""
    tag = event.get("stream_id")
    lane = tag if isinstance(tag, str) else None
    queue = pending.get(lane, [])
    if is_unnumbered_error(event):
        if lane is None and None in queue:
            queue.remove(None)  # the error of a frame that was no create
            return None
        creates = [(i, item) for i, item in enumerate(queue) if item is not None]
        unanswered = [(i, item) for i, item in creates if not item.events]
        chosen = (unanswered or creates)[:1]
        if not chosen:
            return None
        del queue[chosen[0][0]]
        return chosen[0][1]
    if not any(queue):  # a mis-tagged event: the oldest create of any lane
        queue = next((q for q in pending.values() if any(q)), [])
    index = next((i for i, item in enumerate(queue) if item is not None), None)
    if index is None:
        return None
    target = queue[index]
    if event.get("type") in TERMINAL_TYPES:
        del queue[index]
    return target


def judge_recorded(frames: Iterable[tuple[str, Any]]) -> list[Violation]:
    """The request rules over a recorded connection (no wall clock: a recording is judged by
    unit and order only, never against today's clock)."""
    found: list[Violation] = []
    for exchange in pair_exchanges(frames):
        if exchange.done:
            found += [
                Violation(rule_id, message)
                for rule_id, message in request_problems(exchange.request, exchange.events)
            ]
    return found
