"""A connection's lanes, read as they interleave (PROTOCOL.md §5.2): each create's answer, filed
under its lane, in arrival order. Cases open it with `conn.lanes()` (harness.conformance.context).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.conformance.fifo import judge_fifo
from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.errors import ApiError
from harness.protocol.events import TERMINAL_TYPES, reached_output_cap
from harness.protocol.stream import RequestError
from harness.transport.events import TimedEvent

if TYPE_CHECKING:  # the connection that opens this (context.py imports this module)
    from harness.conformance.context import Conn


@dataclass(frozen=True, slots=True)
class LaneAnswer:
    """How one create on a lane ended: its terminal event, or its request-level error."""

    lane: str | None  # the event's stream_id; None: the default lane (or none echoed)
    position: int  # index of the answering event in `LaneTraffic.arrivals`
    event: dict[str, Any]
    error: ApiError | None = None

    @property
    def response(self) -> dict[str, Any]:
        response = self.event.get("response") if self.error is None else None
        return response if isinstance(response, dict) else {}

    @property
    def completed(self) -> bool:
        """Answered: response.completed, or response.incomplete cut by max_output_tokens (every
        request a lanes case sends asks for a short answer, capped: `CaseContext.body`)."""
        kind = self.event.get("type")
        if self.error is not None or kind not in ("response.completed", "response.incomplete"):
            return False
        return kind == "response.completed" or reached_output_cap(self.response)

    def describe(self) -> str:
        if self.error is not None:
            status = f"{self.error.status} " if self.error.status else ""
            return f"error {status}{self.error.code}"
        return str(self.event.get("type"))


class LaneTraffic:
    """One connection's lanes, read as they interleave (PROTOCOL.md §5.2).

    Responses of different lanes share the socket, so a case cannot read one exchange at a time.
    This reads every event in arrival order, each through the connection's stream accumulator
    (the stream rules are judged per lane), files it under its lane (the event's `stream_id`;
    None for the default lane) and counts *answers*: a terminal event or a request-level error
    ends one create. Positions are indices in `arrivals`, so a case compares the order of events
    across lanes without trusting timestamps. Only events read through this object count.
    """

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.arrivals: list[tuple[str | None, TimedEvent]] = []
        self.answers: list[LaneAnswer] = []

    async def send(self, body: Mapping[str, Any]) -> None:
        await self.conn.send(body)

    async def read_answers(self, count: int, *, timeout_s: float | None = None) -> None:
        """Read until `count` answers have arrived in all (whatever their lanes)."""
        await self.read_until(lambda: len(self.answers) >= count, timeout_s=timeout_s)

    async def read_until(self, done: Callable[[], bool], *, timeout_s: float | None = None) -> None:
        """Read events until `done()` holds; each wait is bounded by the event timeout."""
        ctx = self.conn.ctx
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else ctx.case_timeout_s)
        while not done():
            remaining = min(deadline - time.monotonic(), ctx.event_timeout_s)
            self._file(await self.conn.client.recv(max(remaining, 0.001)))

    def _file(self, timed: TimedEvent) -> None:
        event = timed.event
        stream_id = event.get("stream_id")
        lane = stream_id if isinstance(stream_id, str) else None
        routed = self.conn.stream.feed(event)
        position = len(self.arrivals)
        self.arrivals.append((lane, timed))
        if isinstance(routed, RequestError):
            self.answers.append(LaneAnswer(lane, position, dict(event), routed.error))
        elif timed.type in TERMINAL_TYPES:
            stray = isinstance(routed, ResponseAccumulator) and routed.event_count == 1
            if not stray:  # a second terminal of a finished response answers nothing
                self.answers.append(LaneAnswer(lane, position, dict(event)))

    # -- what arrived ----------------------------------------------------------------------------
    def answers_of(self, lane: str | None) -> list[LaneAnswer]:
        return [a for a in self.answers if a.lane == lane]

    def positions(self, lane: str | None, event_type: str | None = None) -> list[int]:
        """Where the events of `event_type` (default: any) on `lane` arrived, in order."""
        return [
            i
            for i, (on, timed) in enumerate(self.arrivals)
            if on == lane and (event_type is None or timed.type == event_type)
        ]

    def events_of(self, lane: str | None) -> list[tuple[int, dict[str, Any]]]:
        """The events of `lane` with their arrival positions."""
        return [(i, timed.event) for i, (on, timed) in enumerate(self.arrivals) if on == lane]

    def judge_fifo(self, lane: str | None, sent_tags: list[str], rule_id: str) -> None:
        """Record FIFO findings for `lane` (see harness.conformance.fifo) in the case."""
        where = "the socket" if lane is None else f"lane {lane}"
        verdict = judge_fifo(self.events_of(lane), sent_tags, rule_id=rule_id, where=where)
        for rule, message in verdict.findings:
            self.conn.ctx.check(False, rule, message)
        for note in verdict.notes:
            self.conn.ctx.note(note)

    def first(self, lane: str | None, event_type: str | None = None) -> int | None:
        found = self.positions(lane, event_type)
        return found[0] if found else None

    def summary(self) -> str:
        """What each lane answered, for findings: `a: response.completed; b: error 400 ...`."""
        lanes: dict[str | None, list[str]] = {}
        for answer in self.answers:
            lanes.setdefault(answer.lane, []).append(answer.describe())
        parts = [f"{lane or '(default)'}: {', '.join(got)}" for lane, got in lanes.items()]
        return "; ".join(parts) or "no answers"
